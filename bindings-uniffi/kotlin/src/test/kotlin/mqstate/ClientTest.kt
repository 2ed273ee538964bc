// The client's surface: the basic calls with bytes and text, options, error codes and
// families, the tables, settings, clock values, closing.
package mqstate

import kotlin.time.Duration
import kotlin.time.Duration.Companion.milliseconds
import kotlin.time.Duration.Companion.seconds
import kotlinx.coroutines.runBlocking
import org.junit.jupiter.api.Assertions.assertArrayEquals
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertFalse
import org.junit.jupiter.api.Assertions.assertNotNull
import org.junit.jupiter.api.Assertions.assertNull
import org.junit.jupiter.api.Assertions.assertThrows
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.Test

/** Runs [block] and returns the MqstateError it throws. */
fun errorOf(block: () -> Unit): MqstateError =
    assertThrows(MqstateError::class.java) { block() }

class ClientTest {
    private val ns = LiveStore.prefix("client")

    @Test
    fun `set get delete vdel with text and bytes`() = runBlocking {
        Client.connect(LiveStore.url).use { client ->
            val set = client.set("${ns}k", "v1")
            assertTrue(set.applied)
            val got = client.get("${ns}k")!!
            assertEquals("v1", got.text)
            assertEquals(0, got.version!!.compareTime(set.version!!))

            val binary = byteArrayOf(0, -1, 13, 10)
            client.set("${ns}bin".encodeToByteArray(), binary)
            assertArrayEquals(binary, client.get("${ns}bin")!!.value)

            assertFalse(client.set("${ns}k", "v2", SetOptions(condition = SetCondition.NX)).applied)
            assertTrue(client.set("${ns}k", "v1", SetOptions(condition = SetCondition.NEX)).applied)
            assertEquals(VdelOutcome.VALUE_MISMATCH, client.vdel("${ns}k", "other"))
            assertEquals(VdelOutcome.DELETED, client.vdel("${ns}k", "v1"))
            assertEquals(VdelOutcome.NOT_FOUND, client.vdel("${ns}k", "v1"))
            assertNull(client.get("${ns}k"))
            assertEquals(1UL, client.delete("${ns}bin"))
            assertEquals(0UL, client.delete("${ns}bin"))
            assertTrue(client.connected)
            assertTrue(client.linkInfo().connections >= 1UL)
        }
    }

    @Test
    fun `settings by name in either case, as pairs or a map`() = runBlocking {
        Client.connect(LiveStore.url, "clientId" to "kt-${ns.hashCode()}", "request_timeout" to 3.seconds, "keepAlive" to 30)
            .use { client -> assertEquals("kt-${ns.hashCode()}", client.clientId) }
        val e = errorOf { runBlocking { Client.connect(LiveStore.url, mapOf("keepAlive" to "soon")) } }
        assertTrue(e is InvalidArgumentError)
        assertEquals("invalid_argument", e.code)
        assertEquals("invalid_argument", errorOf { checkSettings(settings = mapOf("noSuchSetting" to "1")) }.code)
        checkSettings("mqtt://127.0.0.1:1", mapOf("connectTimeout" to "250ms"))
        assertTrue(settingsTable().any { it.name == "request_timeout" && it.kind == "duration" })
    }

    @Test
    fun `fromEnv reads the Azure IoT Operations variables, settings on top`() = runBlocking {
        // The test JVM has AIO_BROKER_HOSTNAME=127.0.0.1 and AIO_MQTT_USE_TLS=false (pom.xml).
        val port = LiveStore.url.substringAfterLast(':')
        Client.fromEnv(mapOf("port" to port)).use { client ->
            assertTrue(client.set("${ns}env", "v").applied)
            assertEquals("v", client.get("${ns}env")!!.text)
        }
        val e = errorOf { runBlocking { Client.fromEnv(mapOf("keepAlive" to "soon")) } }
        assertEquals("invalid_argument", e.code)
    }

    @Test
    fun `errors carry the stable code of the core table`() = runBlocking {
        val codes = errorTable().map { it.code }
        assertEquals(codes.toSet().size, codes.size)
        assertTrue("fencing_token_required" in codes && "timeout" in codes)

        Client.connect(LiveStore.url).use { client ->
            val empty = errorOf { runBlocking { client.set("", "v") } }
            assertTrue(empty is InvalidArgumentError, "$empty")
            assertEquals("invalid_argument", empty.code)
            assertFalse(empty.mayHaveApplied)

            val lock = client.lock("${ns}lock")
            val token = lock.tryAcquire(5.seconds)!!
            client.set("${ns}fenced", "a", SetOptions(fencingToken = token))
            val unfenced = errorOf { runBlocking { client.set("${ns}fenced", "b") } }
            assertEquals(FencingTokenRequiredError::class, unfenced::class)
            assertTrue(unfenced is StoreError, "$unfenced")
            assertEquals("fencing_token_required", unfenced.code)
            assertTrue(unfenced.detail.isNotEmpty())
            lock.release()

            val malformed = errorOf { Hlc.parse("not a clock") }
            assertTrue(malformed is MalformedError)
            assertEquals("malformed", malformed.code)
        }

        val refused = errorOf { runBlocking { Client.connect("mqtt://127.0.0.1:${LiveStore.freePort()}", mapOf("connectTimeout" to "5")) } }
        assertEquals(ConnectRefusedError::class, refused::class)
        assertTrue(refused is ConnectError, "$refused")
        assertEquals("connect_refused", refused.code)
    }

    @Test
    fun `a short timeout is a timeout error`() = runBlocking {
        Client.connect(LiveStore.url).use { client ->
            val lock = client.lock("${ns}t")
            assertNotNull(client.lock("${ns}t", LockOptions(holder = "someone-else")).tryAcquire(5.seconds))
            val e = errorOf { runBlocking { lock.acquire(5.seconds, 200.milliseconds) } }
            assertTrue(e is MqstateTimeoutError, "$e")
            assertEquals("timeout", e.code)
        }
    }

    @Test
    fun `calls after close fail with closed`() = runBlocking {
        val client = Client.connect(LiveStore.url)
        client.closeAndWait()
        client.closeAndWait() // idempotent
        val e = errorOf { runBlocking { client.get("${ns}x") } }
        assertTrue(e is ClosedError, "$e")
        assertEquals("closed", e.code)
        client.close()
        // Kotlin's close() (use {}) closes the connection too: a subscription made from it ends.
        val other = Client.connect(LiveStore.url)
        val sub = other.observe("${ns}y")
        other.close()
        assertNull(sub.next())
        sub.close()
    }

    @Test
    fun `durations are kotlin Durations, and the core refuses bad ones naming the option`() = runBlocking {
        Client.connect(LiveStore.url).use { client ->
            for (bad in listOf((-1).seconds, Duration.INFINITE)) {
                val e = errorOf { runBlocking { client.get("${ns}d", GetOptions(timeout = bad)) } }
                assertTrue(e is InvalidArgumentError, "$e")
                assertTrue(e.detail.contains("timeout"), e.detail)
            }
            val lease = errorOf { runBlocking { client.lock("${ns}d").tryAcquire(lease = (-5).milliseconds) } }
            assertTrue(lease.detail.contains("lease"), lease.detail)
            // Under the floor of 1 ms: refused by the core, whatever the unit was meant to be.
            val expiry = errorOf { runBlocking { client.set("${ns}d", "v", SetOptions(expiry = 0.5.milliseconds)) } }
            assertTrue(expiry is InvalidArgumentError && expiry.detail.contains("expiry"), expiry.detail)
            val set = client.set("${ns}d", "v", SetOptions(expiry = 1.5.seconds))
            assertTrue(set.applied)
            val lock = client.lock("${ns}d2", LockOptions(lease = 2.seconds))
            lock.tryAcquire()!!
            assertEquals(2.seconds, (lock.status() as LockStatus.Held).lease)
            lock.release()
        }
    }

    @Test
    fun `a subscription's next can time out, losing no event`() = runBlocking {
        Client.connect(LiveStore.url).use { client ->
            client.observe("${ns}next").use { sub ->
                val e = errorOf { runBlocking { sub.next(timeout = 100.milliseconds) } }
                assertTrue(e is MqstateTimeoutError, "$e")
                client.set("${ns}next", "x")
                assertEquals("x", (sub.next(timeout = 5.seconds) as Event.Change).text)
            }
        }
    }

    @Test
    fun `clock values print, parse and compare`() {
        val h = Hlc.parse("000000000000042:00003:node")
        assertEquals(42UL, h.wallMs)
        assertEquals("000000000000042:00003:node", h.toString())
        assertEquals(h, Hlc.parse(h.toString()))
        val later = h.copy(counter = 4UL)
        assertTrue(later > h)
        assertEquals(0, h.compareTime(h.copy(nodeId = "other")))
        assertNotNull(errorTable().firstOrNull { it.number == 1U })
    }
}
