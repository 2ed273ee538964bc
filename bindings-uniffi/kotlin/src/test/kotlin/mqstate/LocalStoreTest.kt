// mqstate.testing.LocalStore and LocalStoreExtension: a store in this process, its faults as
// the app's client sees them, the look inside, the errors of a stopped store and of bad
// arguments, and the extension's scope (one store per test, shared with @BeforeEach,
// stopped after the test).
package mqstate

import kotlin.time.Duration
import kotlin.time.Duration.Companion.milliseconds
import kotlin.time.Duration.Companion.seconds
import kotlinx.coroutines.CoroutineStart
import kotlinx.coroutines.async
import kotlinx.coroutines.delay
import kotlinx.coroutines.runBlocking
import kotlinx.coroutines.withTimeout
import mqstate.testing.LocalStore
import mqstate.testing.LocalStoreExtension
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertFalse
import org.junit.jupiter.api.Assertions.assertNotEquals
import org.junit.jupiter.api.Assertions.assertNull
import org.junit.jupiter.api.Assertions.assertSame
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.BeforeAll
import org.junit.jupiter.api.BeforeEach
import org.junit.jupiter.api.MethodOrderer
import org.junit.jupiter.api.Order
import org.junit.jupiter.api.Test
import org.junit.jupiter.api.TestInstance
import org.junit.jupiter.api.TestMethodOrder
import org.junit.jupiter.api.assertThrows
import org.junit.jupiter.api.extension.ExtendWith

/** A client of [store] that gives up quickly (the faults below must not cost the suite seconds). */
private suspend fun clientOf(store: LocalStore): Client = Client.connect(store.url, "requestTimeout" to "5s", "connectTimeout" to "5s")

@ExtendWith(LocalStoreExtension::class)
@TestMethodOrder(MethodOrderer.OrderAnnotation::class)
class LocalStoreTest {
    private var fromBeforeEach: LocalStore? = null

    @BeforeEach
    fun remember(store: LocalStore) {
        fromBeforeEach = store
    }

    @Test
    @Order(1)
    fun `a store answers a client, and shows what it holds`(store: LocalStore): Unit = runBlocking {
        assertTrue(store.isRunning)
        assertEquals("mqtt://127.0.0.1:${store.port}", store.url)
        clientOf(store).use { client ->
            val set = client.set("a/1", "one")
            client.set("a/2", "two")
            client.set("b".encodeToByteArray(), byteArrayOf(0, -1))
            // Shaped as the client's GET: the same value and version.
            val seen = store.get("a/1")!!
            assertEquals("one", seen.text)
            assertEquals(set.version, seen.version)
            assertEquals(client.get("a/1")?.version, seen.version)
            assertTrue(store.get("b".encodeToByteArray())!!.value.contentEquals(byteArrayOf(0, -1)))
            assertNull(store.get("missing"))
            assertEquals(listOf("a/1", "a/2", "b"), store.keys())
            assertEquals(listOf("a/1", "a/2"), store.keys("a/*"))
            assertEquals(listOf("b"), store.keys("b".encodeToByteArray()).map { it.decodeToString() })
            assertEquals(3, store.clear())
            assertEquals(emptyList<String>(), store.keys())
            assertNull(client.get("a/1"))
        }
    }

    @Test
    @Order(2)
    fun `the extension gives a test and its BeforeEach one store`(store: LocalStore) {
        assertSame(fromBeforeEach, store)
        first = store
    }

    @Test
    @Order(3)
    fun `and stops it after the test, the next test getting a new one`(store: LocalStore) {
        val before = first!!
        assertFalse(before.isRunning, "the last test's store still runs")
        assertThrows<ClosedError> { before.keys() }
        assertTrue(store.isRunning)
        assertNotEquals(before.port, store.port)
    }

    @Test
    fun `a cut connection is resumed, and requests in flight complete`(store: LocalStore): Unit = runBlocking {
        clientOf(store).use { client ->
            client.set("k", "v")
            assertEquals(0, store.heldRequests())
            store.pause(2.seconds)
            val inFlight = async(start = CoroutineStart.UNDISPATCHED) { client.get("k") }
            withTimeout(20.seconds) { while (store.heldRequests() == 0) delay(5) }   // it arrived
            assertEquals(1, store.heldRequests())
            assertEquals(1, store.cutConnections())             // the one client's connection
            assertEquals("v", inFlight.await()?.text)           // answered through the new connection
            client.set("k", "w")
            assertEquals("w", store.get("k")?.text)
        }
    }

    @Test
    fun `failNext answers with the store error of its code, of one command only`(store: LocalStore): Unit = runBlocking {
        clientOf(store).use { client ->
            client.set("k", "v")
            store.failNext(2, "fencing_token_lower_version", command = "set")
            assertEquals("v", client.get("k")?.text)            // a GET is not a SET
            val e = assertThrows<FencingTokenLowerVersionError> { client.set("k", "w") }
            assertEquals("fencing_token_lower_version", e.code)
            assertThrows<FencingTokenLowerVersionError> { client.set("k", "w") }
            client.set("k", "x")                                 // only two
            assertEquals("x", store.get("k")?.text)

            store.failNext(1, "quota_exceeded")
            assertThrows<QuotaExceededError> { client.get("k") }
            store.failNext(5, "quota_exceeded")
            store.failNext(0, "quota_exceeded")                  // disarms
            assertEquals("x", client.get("k")?.text)

            assertThrows<InvalidArgumentError> { store.failNext(1, "timeout") }   // not an answer of the service
            assertThrows<InvalidArgumentError> { store.failNext(1, "no_such_code") }
            assertThrows<InvalidArgumentError> { store.failNext(1, "quota_exceeded", command = "PUT") }
            assertThrows<InvalidArgumentError> { store.failNext(-1, "quota_exceeded") }
        }
    }

    @Test
    fun `a pause holds the answers back`(store: LocalStore): Unit = runBlocking {
        clientOf(store).use { client ->
            client.set("k", "v")
            store.pause(2.seconds)
            assertThrows<MqstateTimeoutError> { client.get("k", GetOptions(timeout = 200.milliseconds)) }
            assertThrows<InvalidArgumentError> { store.pause(Duration.ZERO) }
            assertThrows<InvalidArgumentError> { store.pause((-1).seconds) }
            assertThrows<InvalidArgumentError> { store.pause(Duration.INFINITE) }
        }
    }

    @Test
    fun `dropped notifications reach no observer for a while, then they do again`(store: LocalStore): Unit = runBlocking {
        assertThrows<InvalidArgumentError> { store.dropNotifications(Duration.ZERO) }
        assertThrows<InvalidArgumentError> { store.dropNotifications((-1).seconds) }
        assertThrows<InvalidArgumentError> { store.dropNotifications(Duration.INFINITE) }
        assertEquals(0, store.droppedNotifications())
        clientOf(store).use { client ->
            client.observe("k").use { changes ->
                store.dropNotifications(500.milliseconds)
                client.set("k", "lost")
                withTimeout(20.seconds) { while (store.droppedNotifications() == 0) delay(5) }
                assertEquals(1, store.droppedNotifications())
                assertThrows<MqstateTimeoutError> { changes.next(100.milliseconds) }
                delay(600) // the mute's span: this test is about it passing
                client.set("k", "seen")
                val change = changes.next(10.seconds) as Event.Change
                assertEquals("seen", change.text, "the dropped one never came")
                assertEquals(1, store.droppedNotifications())
            }
        }
    }

    @Test
    fun `forgotten registrations are counted, and nothing tells the client`(store: LocalStore): Unit = runBlocking {
        clientOf(store).use { client ->
            client.observe("a").use { a ->
                client.observe("b").use {
                    assertEquals(2, store.forgetRegistrations())
                    assertEquals(0, store.forgetRegistrations())
                    client.set("a", "unseen")
                    assertThrows<MqstateTimeoutError> { a.next(200.milliseconds) } // nothing tells the client
                }
            }
        }
    }

    @Test
    fun `a restart loses the connections and the keys not persisted`(store: LocalStore): Unit = runBlocking {
        val port = store.port
        clientOf(store).use { client ->
            val kept = client.set("kept", "1", SetOptions(persist = true))
            client.set("lost", "2")
            store.restart(keepData = true)
            assertEquals(port, store.port)
            assertTrue(store.isRunning)
            assertEquals(listOf("kept"), store.keys())
            assertEquals(kept.version, store.get("kept")?.version)
            store.restart()                                      // keepData = false: nothing kept
            assertEquals(emptyList<String>(), store.keys())
        }
    }

    @Test
    fun `a stopped store says closed, and stopping again does nothing`(store: LocalStore): Unit = runBlocking {
        store.stop()
        assertFalse(store.isRunning)
        assertThrows<ClosedError> { store.keys() }
        assertThrows<ClosedError> { store.get("k") }
        assertThrows<ClosedError> { store.clear() }
        assertThrows<ClosedError> { store.heldRequests() }
        assertThrows<ClosedError> { store.dropNotifications(1.seconds) }
        assertThrows<ClosedError> { store.droppedNotifications() }
        assertThrows<ClosedError> { store.forgetRegistrations() }
        assertThrows<ClosedError> { store.failNext(1, "quota_exceeded") }
        assertThrows<ClosedError> { store.pause(1.seconds) }
        assertThrows<ClosedError> { store.cutConnections() }
        assertThrows<ClosedError> { store.restart(keepData = true) }
        store.stop()
        store.close()
        store.close()
        assertThrows<ClosedError> { store.keys() }
    }

    @Test
    fun `stores started by hand share nothing, and close stops them`(): Unit = runBlocking {
        val one = LocalStore.start()
        val two = LocalStore.start()
        try {
            assertNotEquals(one.port, two.port)
            clientOf(one).use { it.set("only-in-one", "1") }
            assertEquals(listOf("only-in-one"), one.keys())
            assertEquals(emptyList<String>(), two.keys())
        } finally {
            one.close()
            two.use { }
        }
        assertFalse(one.isRunning)
        assertFalse(two.isRunning)
        assertTrue(one.toString().contains("stopped"), one.toString())
    }

    private companion object {
        /** The store of the test of order 2, seen by the test of order 3. */
        var first: LocalStore? = null
    }
}

/** A store asked for by `@BeforeAll` is the whole class's: every test gets that one. */
@ExtendWith(LocalStoreExtension::class)
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class LocalStoreBeforeAllTest {
    private lateinit var shared: LocalStore

    @BeforeAll
    fun start(store: LocalStore) {
        shared = store
    }

    @Test
    fun `one test gets the class's store`(store: LocalStore) {
        assertSame(shared, store)
        store.clear()
    }

    @Test
    fun `and so does another`(store: LocalStore) {
        assertSame(shared, store)
        assertTrue(store.isRunning)
    }
}
