// The names kept for code written against an earlier release: the deprecated
// MqstateException alias still compiles and catches every mqstate error, and the top-level
// connect(…) the 0.2.0 CHANGELOG names is the client's own connect.
package mqstate

import kotlinx.coroutines.runBlocking
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.Test

class CompatTest {
    private val ns = LiveStore.prefix("compat")

    @Test
    @Suppress("DEPRECATION")
    fun `0_1 code that catches MqstateException still compiles and catches`() {
        val caught: MqstateException = try {
            checkSettings(settings = mapOf("noSuchSetting" to "1"))
            error("checkSettings accepted an unknown setting")
        } catch (e: MqstateException) {
            e
        }
        assertTrue(caught is InvalidArgumentError)
        assertEquals("invalid_argument", caught.code)
        // The alias is the base class itself, not a subclass: every code's class is one.
        val timeout: MqstateException = MqstateTimeoutError("no answer")
        assertEquals("timeout", timeout.code)
    }

    @Test
    fun `top-level connect is Client connect`() = runBlocking {
        connect(LiveStore.url).use { client ->
            assertTrue(client.set("${ns}k", "v").applied)
            assertEquals("v", client.get("${ns}k")?.text)
        }
        connect(LiveStore.url, "clientId" to "kt-compat-${ns.hashCode()}").use { client ->
            assertEquals("kt-compat-${ns.hashCode()}", client.clientId)
        }
        connect(LiveStore.url, mapOf("requestTimeout" to "3s")).use { client -> assertTrue(client.connected) }
    }
}
