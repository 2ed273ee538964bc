// SCAN through the Kotlin API: the pager followed to the end (more keys than one of the
// emulator's 500-key pages), binary keys and patterns, the Flow idioms, the empty pattern,
// a cancelled page asked for again, and a pager outliving its client.
package mqstate

import java.io.File
import kotlinx.coroutines.CoroutineStart
import kotlinx.coroutines.async
import kotlinx.coroutines.awaitAll
import kotlinx.coroutines.cancelAndJoin
import kotlinx.coroutines.delay
import kotlinx.coroutines.coroutineScope
import kotlinx.coroutines.flow.take
import kotlinx.coroutines.flow.toList
import kotlinx.coroutines.launch
import kotlinx.coroutines.runBlocking
import org.junit.jupiter.api.Assertions.assertArrayEquals
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertFalse
import org.junit.jupiter.api.Assertions.assertNull
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.Test

class ScanTest {
    private val ns = LiveStore.prefix("scan")
    private val binary = "${ns}b".encodeToByteArray() + byteArrayOf(0, 13, 10, -1)

    private suspend fun fill(client: Client, n: Int) {
        (0 until n).chunked(64).forEach { chunk ->
            coroutineScope { chunk.map { i -> async { client.set("${ns}k${"%04d".format(i)}", "v") } }.awaitAll() }
        }
        client.set(binary, "v".encodeToByteArray())
    }

    @Test
    fun `pages to the end, then the Flow idioms`() = runBlocking {
        Client.connect(LiveStore.url).use { client ->
            fill(client, 520)
            val pager = client.scan("$ns*")
            assertFalse(pager.isDone())
            val keys = mutableListOf<ByteArray>()
            var pages = 0
            while (true) {
                keys += pager.nextPage() ?: break
                pages++
            }
            assertTrue(pages >= 2, "$pages pages")
            assertEquals(521, keys.size)
            assertEquals(521, keys.map { it.toList() }.toSet().size)
            assertTrue(keys.any { it.contentEquals(binary) })
            assertTrue(pager.isDone())
            assertNull(pager.nextPage())
            pager.close()

            // A binary pattern, and a class with ?.
            val bin = client.scanFlow("${ns}b".encodeToByteArray() + byteArrayOf(0, 13, '*'.code.toByte())).toList()
            assertEquals(1, bin.size)
            assertArrayEquals(binary, bin[0])
            assertEquals(50, client.scanFlow("${ns}k00[0-4]?").toList().size)
            // take() stops asking for pages.
            assertEquals(10, client.scanFlow("$ns*").take(10).toList().size)
            assertEquals(521, client.scan("$ns*").asFlow().toList().size)
        }
    }

    @Test
    fun `an empty pattern is an invalid argument`() = runBlocking {
        Client.connect(LiveStore.url).use { client ->
            val e = errorOf { client.scan("") }
            assertTrue(e is InvalidArgumentError)
            assertEquals("invalid_argument", e.code)
        }
    }

    /** Starts a store of this test's own (it is paused below); its URL and process. */
    private fun ownStore(): Pair<String, Process> {
        val port = LiveStore.freePort()
        val p = ProcessBuilder(LiveStore.bin, "serve", "--listen", "127.0.0.1:$port")
            .redirectErrorStream(true).redirectOutput(ProcessBuilder.Redirect.DISCARD).start()
        val deadline = System.nanoTime() + 10_000_000_000L
        while (System.nanoTime() < deadline) {
            try {
                java.net.Socket().use { it.connect(java.net.InetSocketAddress("127.0.0.1", port), 200) }
                return "mqtt://127.0.0.1:$port" to p
            } catch (_: java.io.IOException) {
                Thread.sleep(20)
            }
        }
        p.destroyForcibly()
        error("mqstate serve did not start")
    }

    private fun signal(p: Process, sig: String) {
        assertEquals(0, ProcessBuilder("kill", "-$sig", p.pid().toString()).start().waitFor())
        // `kill` returns once the signal is sent, not once every thread has stopped: under
        // load a store thread went on for milliseconds and answered the page sent next.
        if (sig == "STOP") awaitStopped(p.pid())
    }

    /** Waits until every thread of process `pid` is stopped (state `T` in /proc). */
    private fun awaitStopped(pid: Long) {
        val deadline = System.nanoTime() + 10_000_000_000L
        while (System.nanoTime() < deadline) {
            val tasks = File("/proc/$pid/task").listFiles() ?: return
            val stopped = tasks.all { t ->
                runCatching { File(t, "stat").readText().substringAfterLast(')').trim().startsWith("T") }
                    .getOrDefault(true)
            }
            if (stopped) return
            Thread.sleep(1)
        }
        error("process $pid did not stop")
    }

    @Test
    fun `a cancelled page is asked for again, and a closed client ends the pager`() = runBlocking {
        val (url, store) = ownStore()
        try {
            val client = Client.connect(url)
            fill(client, 3)
            val pager = client.scan("${ns}k*")
            // The store is paused, so the page is in flight when its coroutine is cancelled:
            // the scan has not moved, and the next page asked for is the first one again.
            signal(store, "STOP")
            val job = launch(start = CoroutineStart.UNDISPATCHED) { pager.nextPage() }
            delay(200)
            assertTrue(job.isActive)
            job.cancelAndJoin()
            assertTrue(job.isCancelled)
            signal(store, "CONT")
            val page = pager.nextPage()!!
            assertEquals(3, page.size)
            assertEquals("${ns}k0000", page[0].decodeToString())
            assertTrue(pager.isDone())
            assertNull(pager.nextPage())

            client.closeAndWait()
            val p2 = client.scan("${ns}k*")
            assertEquals("closed", errorOf { runBlocking { p2.nextPage() } }.code)
            pager.close()
            p2.close()
            client.close()
        } finally {
            signal(store, "CONT")
            store.destroy()
            store.waitFor()
        }
    }
}
