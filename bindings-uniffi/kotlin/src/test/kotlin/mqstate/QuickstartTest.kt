// The example (examples/Quickstart.kt, compiled with the tests) runs against the live store.
package mqstate

import java.io.ByteArrayOutputStream
import java.io.PrintStream
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.Test

class QuickstartTest {
    @Test
    fun `the quickstart runs`() {
        val out = ByteArrayOutputStream()
        val saved = System.out
        System.setOut(PrintStream(out, true))
        try {
            mqstate.examples.main(arrayOf(LiveStore.url))
        } finally {
            System.setOut(saved)
        }
        val text = out.toString()
        assertTrue(text.contains("get hello"), text)
        assertTrue(text.contains("observed SET hello again"), text)
        assertTrue(text.contains("error code invalid_argument"), text)
        assertTrue(text.trimEnd().endsWith("done"), text)
    }
}
