// Live infrastructure for the tests: `mqstate -v serve` (the CLI binary: $MQSTATE_BIN, else
// the cargo target directory's debug build) with its embedded broker on a free loopback
// port, one per test JVM, stopped at exit. Its -v log has one line per request, which is
// how the tests see what the client really sent (KEYNOTIFY … STOP).
package mqstate

import java.io.File
import java.net.ServerSocket
import java.nio.file.Files
import java.util.UUID
import java.util.concurrent.TimeUnit

object LiveStore {
    private val root: File = File(System.getProperty("mqstate.scenarios") ?: "../../tests/scenarios")
        .absoluteFile.parentFile.parentFile

    /** The `mqstate` CLI. */
    val bin: String by lazy {
        System.getenv("MQSTATE_BIN")?.takeIf { it.isNotEmpty() } ?: run {
            val target = System.getenv("CARGO_TARGET_DIR")?.let(::File) ?: File(root, "target")
            val triple = System.getenv("CARGO_BUILD_TARGET")?.takeIf { it.isNotEmpty() }
            val bin = File(if (triple != null) File(target, triple) else target, "debug/mqstate")
            check(bin.canExecute()) { "$bin is missing: build it with `cargo build -p mqstate-cli` or set MQSTATE_BIN" }
            bin.path
        }
    }

    private val log: File = Files.createTempFile("mqstate-kotlin-serve-", ".log").toFile().apply { deleteOnExit() }
    private var process: Process? = null

    /** Where clients connect. */
    val url: String by lazy { start() }

    private fun start(): String {
        repeat(5) {
            val port = freePort()
            val from = log.length()
            val p = ProcessBuilder(bin, "-v", "serve", "--listen", "127.0.0.1:$port")
                .redirectErrorStream(true)
                .redirectOutput(ProcessBuilder.Redirect.appendTo(log))
                .start()
            if (waitReady(p, from)) {
                process = p
                Runtime.getRuntime().addShutdownHook(Thread { p.destroy(); p.waitFor(5, TimeUnit.SECONDS) })
                return "mqtt://127.0.0.1:$port"
            }
            p.destroyForcibly()
        }
        error("mqstate serve did not start; its log:\n${log.readText()}")
    }

    /** A free TCP port on 127.0.0.1 (nothing listens on it once this returns). */
    fun freePort(): Int = ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress()).use { it.localPort }

    /**
     * Waits until this [p] says it is ready (its own listener bound), reading [log] from
     * [from]. A connect alone also succeeds when another test took the port and [p] is
     * exiting with "address in use"; false when [p] exits (then start on another port).
     */
    private fun waitReady(p: Process, from: Long): Boolean {
        val deadline = System.nanoTime() + 10_000_000_000L
        while (System.nanoTime() < deadline) {
            if (!p.isAlive) return false
            val said = log.readBytes().let { String(it, from.toInt(), it.size - from.toInt()) }
            if (said.contains("state store ready")) return true
            Thread.sleep(20)
        }
        return false
    }

    /** Whether the serve log has a line with every one of [parts], within [timeoutMs]. */
    fun sawRequest(vararg parts: String, timeoutMs: Long = 5000): Boolean {
        val deadline = System.nanoTime() + timeoutMs * 1_000_000
        while (true) {
            if (log.readLines().any { line -> parts.all { line.contains(it) } }) return true
            if (System.nanoTime() > deadline) return false
            Thread.sleep(50)
        }
    }

    /** A unique key prefix for one test. */
    fun prefix(name: String): String = "kt/$name/${UUID.randomUUID()}/"
}
