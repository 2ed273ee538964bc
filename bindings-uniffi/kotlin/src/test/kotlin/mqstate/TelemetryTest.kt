// OpenTelemetry through the Kotlin API (Telemetry.kt, OtelCalls.kt), checked with the SDK's
// in-memory span exporter and metric reader registered as GlobalOpenTelemetry: one CLIENT
// span per call that goes to the store, a child of Context.current(), named by the
// operation, with the core's attributes and no key unless asked; a failed call's span has
// error.type and status ERROR; a cache hit makes no span; the metrics carry the core's
// names and units.
package mqstate

import io.opentelemetry.api.GlobalOpenTelemetry
import io.opentelemetry.api.common.AttributeKey
import io.opentelemetry.api.trace.SpanKind
import io.opentelemetry.api.trace.StatusCode
import io.opentelemetry.sdk.OpenTelemetrySdk
import io.opentelemetry.sdk.metrics.SdkMeterProvider
import io.opentelemetry.sdk.testing.exporter.InMemoryMetricReader
import io.opentelemetry.sdk.testing.exporter.InMemorySpanExporter
import io.opentelemetry.sdk.trace.SdkTracerProvider
import io.opentelemetry.sdk.trace.data.SpanData
import io.opentelemetry.sdk.trace.export.SimpleSpanProcessor
import java.io.File
import java.util.concurrent.TimeUnit
import java.util.jar.JarFile
import kotlin.time.Duration.Companion.seconds
import kotlinx.coroutines.delay
import kotlinx.coroutines.runBlocking
import kotlinx.coroutines.withTimeout
import mqstate.testing.LocalStore
import mqstate.testing.LocalStoreExtension
import org.junit.jupiter.api.AfterAll
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertFalse
import org.junit.jupiter.api.Assertions.assertNull
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.BeforeAll
import org.junit.jupiter.api.BeforeEach
import org.junit.jupiter.api.Test
import org.junit.jupiter.api.TestInstance
import org.junit.jupiter.api.assertThrows
import org.junit.jupiter.api.extension.ExtendWith

@ExtendWith(LocalStoreExtension::class)
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class TelemetryTest {
    private val spans = InMemorySpanExporter.create()
    private val metrics = InMemoryMetricReader.create()
    private lateinit var sdk: OpenTelemetrySdk

    @BeforeAll
    fun register() {
        GlobalOpenTelemetry.resetForTest()
        sdk = OpenTelemetrySdk.builder()
            .setTracerProvider(SdkTracerProvider.builder().addSpanProcessor(SimpleSpanProcessor.create(spans)).build())
            .setMeterProvider(SdkMeterProvider.builder().registerMetricReader(metrics).build())
            .build()
        GlobalOpenTelemetry.set(sdk)
    }

    @AfterAll
    fun unregister() {
        sdk.close()
        GlobalOpenTelemetry.resetForTest()
        Telemetry.recordKeys = false
    }

    @BeforeEach
    fun clear() {
        spans.reset()
        Telemetry.recordKeys = false
    }

    private fun mqstateSpans(): List<SpanData> =
        spans.finishedSpanItems.filter { it.instrumentationScopeInfo.name == "mqstate" }

    private fun attr(span: SpanData, name: String): Any? = span.attributes.asMap().entries.firstOrNull { it.key.key == name }?.value

    @Test
    fun `the API is found and the vocabulary is the core's`() {
        assertTrue(Telemetry.available)
        assertEquals("error.type", Telemetry.names["ERROR_TYPE"])
        assertEquals("db.client.operation.duration", Telemetry.metrics.first().name)
        assertEquals(14, Telemetry.callDurationBuckets.size)
    }

    @Test
    fun `each call is a CLIENT span, a child of the caller's, with the core's attributes`(store: LocalStore): Unit = runBlocking {
        Client.connect(store.url).use { client ->
            val app = GlobalOpenTelemetry.getTracer("app").spanBuilder("handle order").startSpan()
            app.makeCurrent().use {
                client.set("orders/42", "paid")
                assertEquals("paid", client.get("orders/42")?.text)
                assertEquals(1uL, client.delete("orders/42"))
                assertEquals(VdelOutcome.NOT_FOUND, client.vdel("orders/42", "paid"))
            }
            app.end()
            val got = mqstateSpans()
            assertEquals(listOf("SET", "GET", "DEL", "VDEL"), got.map { it.name })
            for (s in got) {
                assertEquals(SpanKind.CLIENT, s.kind)
                assertEquals(app.spanContext.traceId, s.traceId)
                assertEquals(app.spanContext.spanId, s.parentSpanId)
                assertEquals("azure.iot_operations.state_store", attr(s, "db.system.name"))
                assertEquals(s.name, attr(s, "db.operation.name"))
                assertEquals("127.0.0.1", attr(s, "server.address"))
                assertEquals(store.port.toLong(), attr(s, "server.port"))
                assertNull(attr(s, "mqstate.key"), "no key unless asked")
                assertNull(attr(s, "error.type"))
                assertEquals(StatusCode.UNSET, s.status.statusCode)
                assertEquals("0.2.0", s.instrumentationScopeInfo.version)
            }
        }
    }

    @Test
    fun `a key is recorded only when asked`(store: LocalStore): Unit = runBlocking {
        Client.connect(store.url).use { client ->
            Telemetry.recordKeys = true
            client.set("asset:7", "on")
            assertEquals("asset:7", attr(mqstateSpans().single(), "mqstate.key"))
        }
    }

    @Test
    fun `a failed call has error type and status ERROR`(store: LocalStore): Unit = runBlocking {
        Client.connect(store.url).use { client ->
            store.failNext(1, "quota_exceeded", command = "SET")
            assertThrows<QuotaExceededError> { client.set("k", "v") }
            val s = mqstateSpans().single()
            assertEquals("SET", s.name)
            assertEquals("quota_exceeded", attr(s, "error.type"))
            assertEquals(StatusCode.ERROR, s.status.statusCode)
        }
    }

    @Test
    fun `what a call met is a span event with its time`(store: LocalStore): Unit = runBlocking {
        Client.connect(store.url, "reconnectMinDelay" to "300ms").use { client ->
            client.set("k", "v")
            assertTrue(store.cutConnections() >= 1)
            withTimeout(30.seconds) { while (client.connected) delay(2) }
            spans.reset()
            client.set("k", "w") // waits for the reconnection
            val s = mqstateSpans().single()
            val wait = s.events.single { it.name == "mqstate.connection_wait" }
            val waited = wait.attributes.get(AttributeKey.longKey("mqstate.waited_ms"))
            assertTrue(waited != null && waited >= 1, "waited: $waited")
            assertTrue(wait.epochNanos in s.startEpochNanos..s.endEpochNanos, "the event's own time, inside the span")
        }
    }

    @Test
    fun `a cache hit makes no span`(store: LocalStore): Unit = runBlocking {
        Client.connect(store.url, "cache" to "true").use { client ->
            client.set("k", "v")
            withTimeout(60.seconds) {
                // Until the cache answers (its freshness lease is proven).
                while (true) {
                    val before = client.cacheStats()!!.hits
                    client.get("k")
                    if (client.cacheStats()!!.hits > before) break
                    delay(10)
                }
            }
            spans.reset()
            repeat(10) { assertEquals("v", client.get("k")?.text) }
            assertTrue(mqstateSpans().isEmpty(), "hits: ${mqstateSpans().map { it.name }}")
        }
    }

    @Test
    fun `metrics carry the core's names and units`(store: LocalStore): Unit = runBlocking {
        Client.connect(store.url, "cache" to "true").use { client ->
            client.set("m", "1")
            client.get("m", GetOptions(bypassCache = true))
            val got = metrics.collectAllMetrics().associateBy { it.name }
            val duration = got.getValue("db.client.operation.duration")
            assertEquals("s", duration.unit)
            val points = duration.histogramData.points
            val ops = points.map { it.attributes.get(AttributeKey.stringKey("db.operation.name")) }.toSet()
            assertTrue(ops.containsAll(listOf("SET", "GET")), "$ops")
            assertEquals(Telemetry.callDurationBuckets, points.first().boundaries)
            for (m in Telemetry.metrics) {
                val metric = got[m.name]
                assertTrue(metric != null, "${m.name} is reported (got ${got.keys})")
                assertEquals(m.unit, metric!!.unit, m.name)
            }
            val up = got.getValue("mqstate.connection.up").longGaugeData.points
            val mine = up.single { it.attributes.get(AttributeKey.stringKey("mqstate.client_id")) == client.clientId }
            assertEquals(1L, mine.value)
        }
    }

    @Test
    fun `nothing is reported while no SDK is registered`(store: LocalStore): Unit = runBlocking {
        GlobalOpenTelemetry.resetForTest()
        try {
            Client.connect(store.url).use { client -> client.set("quiet", "1") }
            assertFalse(GlobalOpenTelemetry.isSet(), "a call does not fix the global to a no-op")
            assertTrue(mqstateSpans().isEmpty())
        } finally {
            GlobalOpenTelemetry.set(sdk)
        }
    }

    @Test
    fun `observe and each SCAN page are CLIENT spans, children of the caller's`(store: LocalStore): Unit = runBlocking {
        Client.connect(store.url).use { client ->
            for (i in 0 until 3) client.set("scan/$i", "v")
            spans.reset()
            val app = GlobalOpenTelemetry.getTracer("app").spanBuilder("handle order").startSpan()
            val keys = app.makeCurrent().use {
                client.observe("scan/0").use { }
                client.scan("scan/*").use { pager ->
                    val all = mutableListOf<String>()
                    while (true) all += (pager.nextPage() ?: break).map { it.decodeToString() }
                    all
                }
            }
            app.end()
            assertEquals(listOf("scan/0", "scan/1", "scan/2"), keys.sorted())
            val got = mqstateSpans().filter { it.name == "KEYNOTIFY" || it.name == "SCAN" }
            assertEquals("KEYNOTIFY", got.first().name)
            assertTrue(got.count { it.name == "SCAN" } >= 1, "a span per page: ${got.map { it.name }}")
            for (s in got) {
                assertEquals(SpanKind.CLIENT, s.kind)
                assertEquals(app.spanContext.spanId, s.parentSpanId)
                assertEquals(s.name, attr(s, "db.operation.name"))
                assertEquals(store.port.toLong(), attr(s, "server.port"))
                assertNull(attr(s, "mqstate.key"), "no key (or pattern) unless asked")
            }
        }
    }

    @Test
    fun `lock and election operations are INTERNAL spans named by the core`(store: LocalStore): Unit = runBlocking {
        Client.connect(store.url).use { client ->
            val app = GlobalOpenTelemetry.getTracer("app").spanBuilder("handle order").startSpan()
            app.makeCurrent().use {
                client.lock("tel/lock", LockOptions(lease = 5.seconds)).use { lock ->
                    assertTrue(lock.tryAcquire() != null)
                    assertTrue(lock.renew() != null)
                    assertTrue(lock.release())
                    lock.acquire()
                    lock.release()
                    lock.edit("tel/edited") { Edit.set("v") }
                }
                client.election("tel/election", "a", ElectionOptions(term = 5.seconds)).use { election ->
                    assertTrue(election.tryCampaign())
                    assertTrue(election.resign())
                    election.campaign()
                    election.resign()
                }
            }
            app.end()
            val n = Telemetry.names
            val ops = mqstateSpans().filter { it.kind == SpanKind.INTERNAL }
            assertEquals(
                listOf(
                    "SPAN_LOCK_TRY_ACQUIRE", "SPAN_LOCK_RENEW", "SPAN_LOCK_RELEASE", "SPAN_LOCK_ACQUIRE",
                    "SPAN_LOCK_RELEASE", "SPAN_LOCK_EDIT", "SPAN_ELECTION_TRY_CAMPAIGN", "SPAN_ELECTION_RESIGN",
                    "SPAN_ELECTION_CAMPAIGN", "SPAN_ELECTION_RESIGN",
                ).map { n.getValue(it) },
                ops.map { it.name },
            )
            assertEquals("mqstate.lock.try_acquire", ops.first().name, "the core's spelling")
            for (s in ops) {
                assertEquals(app.spanContext.spanId, s.parentSpanId)
                assertEquals("azure.iot_operations.state_store", attr(s, "db.system.name"))
                assertNull(attr(s, "mqstate.key"), "no lock key unless asked")
                assertNull(attr(s, "error.type"))
            }
            // The requests are made inside the core: no span of their own.
            assertTrue(mqstateSpans().none { it.kind == SpanKind.CLIENT })
        }
    }

    @Test
    fun `a failed lock operation has error type, and its key when asked`(store: LocalStore): Unit = runBlocking {
        Client.connect(store.url).use { holder ->
            Client.connect(store.url).use { client ->
                holder.lock("tel/held", LockOptions(lease = 5.seconds)).use { assertTrue(it.tryAcquire() != null) }
                spans.reset()
                Telemetry.recordKeys = true
                client.lock("tel/held").use { lock ->
                    val e = assertThrows<MqstateTimeoutError> { lock.acquire(timeout = 0.2.seconds) }
                    val s = mqstateSpans().single { it.name == "mqstate.lock.acquire" }
                    assertEquals(e.code, attr(s, "error.type"))
                    assertEquals("timeout", attr(s, "error.type"))
                    assertEquals(StatusCode.ERROR, s.status.statusCode)
                    assertEquals("tel/held", attr(s, "mqstate.key"))
                }
            }
        }
    }

    /** The test JVM's classpath entries (surefire may hand it over in a manifest-only jar). */
    private fun classpath(): List<String> {
        val entries = System.getProperty("java.class.path").split(File.pathSeparator)
        if (entries.size != 1 || !entries[0].endsWith(".jar")) return entries
        val listed = JarFile(entries[0]).use { it.manifest?.mainAttributes?.getValue("Class-Path") } ?: return entries
        return listed.split(" ").filter { it.isNotBlank() }.map { File(java.net.URI(it)).path }
    }

    @Test
    fun `without the API nothing is loaded and calls go on`() {
        val cp = classpath().filterNot { "opentelemetry" in it }
        val java = File(System.getProperty("java.home"), "bin/java").path
        val p = ProcessBuilder(
            java, "-Xlog:class+load=info", "-Djna.library.path=${System.getProperty("jna.library.path")}",
            "-cp", cp.joinToString(File.pathSeparator), "mqstate.NoOpenTelemetryMainKt", LiveStore.url,
        ).redirectErrorStream(true).start()
        val out = p.inputStream.bufferedReader().readText()
        assertTrue(p.waitFor(120, TimeUnit.SECONDS), "the program ended")
        assertEquals(0, p.exitValue(), out.lines().filterNot { "class,load" in it }.joinToString("\n"))
        assertTrue("no-otel: ok" in out)
        val loaded = out.lines().filter { "class,load" in it }
        assertTrue(loaded.any { " mqstate.Client " in it }, "the log lists the classes loaded")
        val otel = loaded.filter { "io.opentelemetry" in it || "mqstate.OtelCalls" in it }
        assertTrue(otel.isEmpty(), "loaded without the API: $otel")
    }
}
