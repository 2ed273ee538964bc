// The programs of the documentation run against the live store: examples/Quickstart.kt, and
// every ```kotlin block with a `main` (docblocks.py writes them as test sources, with an
// index), each through its JVM entry point, as `java -cp … CLASS URL` would run it; and
// every block of JUnit tests (a `@Test`), run by the JUnit launcher, which must find tests
// there and see them pass.
package mqstate

import java.io.ByteArrayOutputStream
import java.io.File
import java.io.PrintStream
import java.lang.reflect.Modifier
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.DynamicTest
import org.junit.jupiter.api.Test
import org.junit.jupiter.api.TestFactory
import org.junit.platform.engine.discovery.DiscoverySelectors.selectPackage
import org.junit.platform.launcher.core.LauncherDiscoveryRequestBuilder.request
import org.junit.platform.launcher.core.LauncherFactory
import org.junit.platform.launcher.listeners.SummaryGeneratingListener

/** Runs the JVM entry point of [className] with [args]; what it printed. */
fun runMain(className: String, vararg args: String): String {
    val main = Class.forName(className).methods.firstOrNull { m ->
        m.name == "main" && m.parameterTypes.contentEquals(arrayOf(Array<String>::class.java))
    }
    check(main != null && Modifier.isStatic(main.modifiers) && main.returnType == Void.TYPE) {
        "$className has no entry point `public static void main(String[])` (Main method not found): $main"
    }
    val out = ByteArrayOutputStream()
    val saved = System.out
    System.setOut(PrintStream(out, true))
    try {
        main.invoke(null, args)
    } finally {
        System.setOut(saved)
    }
    return out.toString()
}

class QuickstartTest {
    @Test
    fun `the quickstart example runs`() {
        val text = runMain("mqstate.examples.QuickstartKt", LiveStore.url)
        assertTrue(text.contains("get hello"), text)
        assertTrue(text.contains("observed set hello again"), text)
        assertTrue(text.contains("error code invalid_argument"), text)
        assertTrue(text.trimEnd().endsWith("done"), text)
    }

    @Test
    fun `an entry point that returns a value is found missing`() {
        val e = runCatching { runMain(NotAMain::class.java.name) }.exceptionOrNull()
        assertTrue(e is IllegalStateException && e.message!!.contains("Main method not found"), "$e")
    }

    private val root = File(System.getProperty("mqstate.root") ?: "../..").absoluteFile

    @Test
    fun `every kotlin block of the documentation was compiled`() {
        // What scripts/lib/docblocks lists now (not a stale generation): every kotlin block but
        // the no-run ones.
        val listed = ProcessBuilder("python3", File(root, "scripts/lib/docblocks").path, "list")
            .redirectErrorStream(true).start().inputStream.bufferedReader().readLines()
            .map { it.split('\t') }
            .filter { it.size >= 2 && it[1] == "kotlin" && !it.getOrElse(2) { "" }.startsWith("no-run") }
            .map { it[0] }
        assertTrue(listed.isNotEmpty())
        assertEquals(listed, docblocks.Index.blocks.map { it.first })
        assertTrue(docblocks.Index.blocks.any { it.second != null }, "no block has a main: where is the quickstart?")
    }

    @TestFactory
    fun `every program of the documentation runs`(): List<DynamicTest> =
        docblocks.Index.blocks.mapNotNull { (where, main) ->
            main?.let {
                DynamicTest.dynamicTest(where) {
                    val printed = runMain(it, LiveStore.url)
                    assertTrue(printed.isNotBlank(), "$where printed nothing")
                }
            }
        }
}

/** Runs the JUnit tests of [pkg] (a documentation block's); what failed, or that none ran. */
fun runTests(pkg: String): List<String> {
    val summary = SummaryGeneratingListener()
    LauncherFactory.create().execute(request().selectors(selectPackage(pkg)).build(), summary)
    val s = summary.summary
    val failed = s.failures.map { "${it.testIdentifier.displayName}: ${it.exception}" }
    return if (s.testsSucceededCount == 0L && failed.isEmpty()) listOf("no test ran in $pkg") else failed
}

class DocTestsTest {
    @TestFactory
    fun `every block of tests of the documentation passes`(): List<DynamicTest> =
        docblocks.Index.tests.map { (where, pkg) ->
            DynamicTest.dynamicTest(where) {
                val failed = runTests(pkg)
                assertTrue(failed.isEmpty(), "$where:\n" + failed.joinToString("\n"))
            }
        }

    @Test
    fun `the README's Testing your app section is among them`() {
        assertTrue(docblocks.Index.tests.any { it.first.startsWith("bindings-uniffi/README.md:") }, "${docblocks.Index.tests}")
    }

    @Test
    fun `a failing test of a block is reported`() {
        val failed = runTests("docblocks.control")
        assertEquals(1, failed.size, "$failed")
        assertTrue(failed.single().contains("on purpose"), "$failed")
    }

    @Test
    fun `a package without tests is reported`() {
        assertEquals(listOf("no test ran in docblocks.nothing_here"), runTests("docblocks.nothing_here"))
    }
}

/** Not an entry point: `fun main(args: Array<String>) = runBlocking { …; 1UL }` compiles to this. */
object NotAMain {
    @JvmStatic
    fun main(@Suppress("UNUSED_PARAMETER") args: Array<String>): Long = 1L
}
