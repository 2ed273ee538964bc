// The client's surface: the basic calls with bytes and text, options, error codes and
// families, the tables, settings, clock values, closing.
package mqstate

import java.time.Duration
import kotlinx.coroutines.runBlocking
import org.junit.jupiter.api.Assertions.assertArrayEquals
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertFalse
import org.junit.jupiter.api.Assertions.assertNotNull
import org.junit.jupiter.api.Assertions.assertNull
import org.junit.jupiter.api.Assertions.assertThrows
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.Test

/** Runs [block] and returns the MqstateException it throws. */
fun errorOf(block: () -> Unit): MqstateException =
    assertThrows(MqstateException::class.java) { block() }

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
            assertTrue(client.isConnected())
            assertTrue(client.linkInfo().connections >= 1UL)
        }
    }

    @Test
    fun `settings by name in either case, as pairs or a map`() = runBlocking {
        Client.connect(LiveStore.url, "clientId" to "kt-${ns.hashCode()}", "request_timeout" to Duration.ofSeconds(3), "keepAlive" to 30)
            .use { client -> assertEquals("kt-${ns.hashCode()}", client.clientId()) }
        val e = errorOf { runBlocking { Client.connect(LiveStore.url, mapOf("keepAlive" to "soon")) } }
        assertTrue(e is MqstateException.InvalidArgument)
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
            assertTrue(empty is MqstateException.InvalidArgument)
            assertEquals("invalid_argument", empty.code)
            assertFalse(empty.mayHaveApplied)

            val lock = client.lock("${ns}lock")
            val token = lock.tryAcquire(Duration.ofSeconds(5))!!
            client.set("${ns}fenced", "a", SetOptions(fencingToken = token))
            val unfenced = errorOf { runBlocking { client.set("${ns}fenced", "b") } }
            assertTrue(unfenced is MqstateException.Store)
            assertEquals("fencing_token_required", unfenced.code)
            assertTrue(unfenced.message!!.contains("fencing_token_required"))
            lock.release()

            val malformed = errorOf { Hlc.parse("not a clock") }
            assertEquals("malformed", malformed.code)
        }

        val refused = errorOf { runBlocking { Client.connect("mqtt://127.0.0.1:${LiveStore.freePort()}", mapOf("connectTimeout" to "5")) } }
        assertTrue(refused is MqstateException.Connect, "$refused")
        assertEquals("connect_refused", refused.code)
    }

    @Test
    fun `a short timeout is a timeout error`() = runBlocking {
        Client.connect(LiveStore.url).use { client ->
            val lock = client.lock("${ns}t")
            assertNotNull(client.lock("${ns}t", LockOptions(holder = "someone-else")).tryAcquire(Duration.ofSeconds(5)))
            val e = errorOf { runBlocking { lock.acquire(Duration.ofSeconds(5), Duration.ofMillis(200)) } }
            assertTrue(e is MqstateException.Timeout, "$e")
            assertEquals("timeout", e.code)
        }
    }

    @Test
    fun `calls after close fail with closed`() = runBlocking {
        val client = Client.connect(LiveStore.url)
        client.closeAndWait()
        client.closeAndWait() // idempotent
        val e = errorOf { runBlocking { client.get("${ns}x") } }
        assertTrue(e is MqstateException.Closed, "$e")
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
