// Live infrastructure for the tests: `mqstate -v serve` (the CLI binary: $MQSTATE_BIN, else
// the cargo target directory's debug build) with its embedded broker on a free loopback
// port, one per test JVM, stopped at exit. Its -v log has one line per request, which is
// how the tests see what the client really sent (KEYNOTIFY … STOP).
package mqstate

import java.io.File
import java.net.InetSocketAddress
import java.net.ServerSocket
import java.net.Socket
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
            val p = ProcessBuilder(bin, "-v", "serve", "--listen", "127.0.0.1:$port")
                .redirectErrorStream(true)
                .redirectOutput(ProcessBuilder.Redirect.appendTo(log))
                .start()
            if (waitPort(port, p)) {
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

    private fun waitPort(port: Int, p: Process): Boolean {
        val deadline = System.nanoTime() + 10_000_000_000L
        while (System.nanoTime() < deadline) {
            if (!p.isAlive) return false
            try {
                Socket().use { it.connect(InetSocketAddress("127.0.0.1", port), 200) }
                return true
            } catch (_: java.io.IOException) {
                Thread.sleep(20)
            }
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
