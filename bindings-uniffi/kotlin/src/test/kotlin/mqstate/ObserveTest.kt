// Observation: order, STOP on the wire (seen in the store's request log) when a
// subscription is stopped, closed (use {}), or its Flow collection ends; the listener
// alternative; a timed-out next() loses no event.
package mqstate

import java.util.concurrent.CountDownLatch
import java.util.concurrent.CopyOnWriteArrayList
import java.util.concurrent.TimeUnit
import kotlinx.coroutines.flow.filterIsInstance
import kotlinx.coroutines.flow.map
import kotlinx.coroutines.flow.take
import kotlinx.coroutines.flow.toList
import kotlinx.coroutines.CoroutineStart
import kotlinx.coroutines.async
import kotlinx.coroutines.runBlocking
import kotlinx.coroutines.withTimeoutOrNull
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertFalse
import org.junit.jupiter.api.Assertions.assertNull
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.Test

class ObserveTest {
    private val ns = LiveStore.prefix("observe")

    private fun stopSeen(key: String) = LiveStore.sawRequest("KEYNOTIFY key=\"$key\" STOP")

    @Test
    fun `notifications arrive in order with the versions of the sets`() = runBlocking {
        Client.connect(LiveStore.url).use { client ->
            client.observe("${ns}order").use { sub ->
                val versions = (1..20).map { client.set("${ns}order", "v$it").version!! }
                client.delete("${ns}order")
                val changes = (1..21).map { sub.next() as Event.Change }
                assertEquals((1..20).map { "v$it" } + listOf(null), changes.map { it.text })
                assertEquals(ChangeKind.DELETE, changes.last().kind)
                versions.zip(changes).forEach { (v, c) -> assertEquals(0, v.compareTime(c.version!!)) }
                assertTrue(changes.zipWithNext().all { (a, b) -> a.version!!.compareTime(b.version!!) < 0 })
            }
        }
    }

    @Test
    fun `close, use and the end of a flow each send KEYNOTIFY STOP`() = runBlocking {
        Client.connect(LiveStore.url).use { client ->
            val closed = client.observe("${ns}stop")
            assertFalse(LiveStore.sawRequest("KEYNOTIFY key=\"${ns}stop\" STOP", timeoutMs = 0), "STOP before close()")
            assertFalse(closed.isClosed())
            // A next() pending meanwhile returns null when the subscription is closed.
            // (Undispatched: it runs into the waiting native call before close() is reached.)
            val pending = async(start = CoroutineStart.UNDISPATCHED) { closed.next() }
            closed.close()
            assertTrue(stopSeen("${ns}stop"), "no STOP after close()")
            assertNull(pending.await())
            assertNull(closed.next())
            assertNull(closed.tryNext())
            assertTrue(closed.isClosed())
            closed.close() // again: nothing

            client.observe("${ns}close").use { }
            assertTrue(stopSeen("${ns}close"), "no STOP after use {} / close()")

            val got = async {
                client.observeFlow("${ns}flow").filterIsInstance<Event.Change>().map { it.text }.take(2).toList()
            }
            // The flow registers when collected: write until both writes are seen.
            while (!LiveStore.sawRequest("KEYNOTIFY key=\"${ns}flow\"", timeoutMs = 50)) kotlinx.coroutines.delay(20)
            kotlinx.coroutines.delay(200)
            client.set("${ns}flow", "a")
            client.set("${ns}flow", "b")
            assertEquals(listOf("a", "b"), got.await())
            assertTrue(stopSeen("${ns}flow"), "no STOP after the flow collection ended")
        }
    }

    @Test
    fun `a listener gets every event in order, then the end`() = runBlocking {
        Client.connect(LiveStore.url).use { client ->
            val sub = client.observe("${ns}listen")
            val seen = CopyOnWriteArrayList<String?>()
            val ended = CountDownLatch(1)
            sub.listen(onEnd = { ended.countDown() }) { e -> if (e is Event.Change) seen += e.text }
            (1..5).forEach { client.set("${ns}listen", "$it") }
            val deadline = System.nanoTime() + 5_000_000_000L
            while (seen.size < 5 && System.nanoTime() < deadline) Thread.sleep(20)
            assertEquals(listOf("1", "2", "3", "4", "5"), seen.toList())
            val again = errorOf { sub.listen { } }
            assertEquals("invalid_argument", again.code)
            sub.close()
            assertTrue(ended.await(5, TimeUnit.SECONDS), "onEnd was not called")
            assertTrue(stopSeen("${ns}listen"))
            sub.close()
        }
    }

    @Test
    fun `a next() cancelled by a timeout loses no event`() = runBlocking {
        Client.connect(LiveStore.url).use { client ->
            client.observe("${ns}timeout").use { sub ->
                assertNull(withTimeoutOrNull(200) { sub.next() })
                client.set("${ns}timeout", "x")
                assertEquals("x", (sub.next() as Event.Change).text)
                assertNull(sub.tryNext())
            }
        }
    }
}
