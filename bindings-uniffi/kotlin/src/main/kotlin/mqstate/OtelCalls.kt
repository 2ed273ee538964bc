// The spans and metrics of mqstate's calls through `io.opentelemetry:opentelemetry-api`.
// Loaded only when OtelPresence has found the API (Client checks it before every call that
// names this object), so a program without OpenTelemetry never links these imports.

package mqstate

import io.opentelemetry.api.GlobalOpenTelemetry
import io.opentelemetry.api.OpenTelemetry
import io.opentelemetry.api.common.AttributeKey
import io.opentelemetry.api.common.Attributes
import io.opentelemetry.api.metrics.DoubleHistogram
import io.opentelemetry.api.metrics.ObservableLongMeasurement
import io.opentelemetry.api.trace.Span
import io.opentelemetry.api.trace.SpanKind
import io.opentelemetry.api.trace.StatusCode
import io.opentelemetry.api.trace.Tracer
import io.opentelemetry.context.Context
import java.util.Collections
import java.util.WeakHashMap
import java.util.concurrent.TimeUnit
import kotlin.coroutines.cancellation.CancellationException

internal object OtelCalls {
    private val n = Telemetry.names
    private val SYSTEM = AttributeKey.stringKey(n.getValue("DB_SYSTEM_NAME"))
    private val SYSTEM_VALUE = n.getValue("DB_SYSTEM")
    private val OPERATION = AttributeKey.stringKey(n.getValue("DB_OPERATION_NAME"))
    private val ADDRESS = AttributeKey.stringKey(n.getValue("SERVER_ADDRESS"))
    private val PORT = AttributeKey.longKey(n.getValue("SERVER_PORT"))
    private val ERROR_TYPE = AttributeKey.stringKey(n.getValue("ERROR_TYPE"))
    private val KEY = AttributeKey.stringKey(n.getValue("KEY"))
    private val CLIENT_ID = AttributeKey.stringKey(n.getValue("CLIENT_ID"))
    private val SCOPE = n.getValue("SCOPE")
    private val CALL_DURATION = n.getValue("CALL_DURATION")

    /** The clients the observable instruments read (weakly: a dropped client leaves). */
    private val clients: MutableSet<NativeClient> = Collections.synchronizedSet(Collections.newSetFromMap(WeakHashMap()))

    /** The tracer and instruments of one registered OpenTelemetry (remade if it changes). */
    private class Instruments(val otel: OpenTelemetry) {
        val tracer: Tracer = otel.getTracer(SCOPE, Mqstate.VERSION)
        val duration: DoubleHistogram

        init {
            val meter = otel.meterBuilder(SCOPE).setInstrumentationVersion(Mqstate.VERSION).build()
            val spec = Telemetry.metrics.first { it.name == CALL_DURATION }
            val builder = meter.histogramBuilder(spec.name).setUnit(spec.unit).setDescription(spec.description)
            try {
                builder.setExplicitBucketBoundariesAdvice(Telemetry.callDurationBuckets)
            } catch (e: NoSuchMethodError) {
                // An API older than 1.32 takes no advice: the SDK's default buckets.
            } catch (e: AbstractMethodError) {
            }
            duration = builder.build()
            for (m in Telemetry.metrics) {
                if (m.source == "call") continue
                val read = reader(m)
                val observe = { out: ObservableLongMeasurement -> observeAll(out, read) }
                if (m.kind == "gauge") {
                    meter.gaugeBuilder(m.name).ofLongs().setUnit(m.unit).setDescription(m.description).buildWithCallback(observe)
                } else {
                    meter.counterBuilder(m.name).setUnit(m.unit).setDescription(m.description).buildWithCallback(observe)
                }
            }
        }
    }

    @Volatile
    private var current: Instruments? = null

    /** The instruments of the registered OpenTelemetry, or null while none is registered. */
    private fun instruments(): Instruments? {
        val registered = try {
            GlobalOpenTelemetry.isSet()
        } catch (e: NoSuchMethodError) {
            true // an API older than isSet(): get() answers a no-op until one is set
        }
        if (!registered) return null
        val otel = GlobalOpenTelemetry.get()
        current?.let { if (it.otel === otel) return it }
        synchronized(this) {
            current?.let { if (it.otel === otel) return it }
            return Instruments(otel).also { current = it }
        }
    }

    /** Lets the observable instruments read [native] (a connected client). */
    fun watch(native: NativeClient) {
        clients.add(native)
        instruments()
    }

    /** Stops reading [native] (its client is closing). */
    fun forget(native: NativeClient) {
        clients.remove(native)
    }

    private fun observeAll(out: ObservableLongMeasurement, read: (NativeClient) -> Long?) {
        val now = synchronized(clients) { clients.toList() }
        for (c in now) {
            try {
                val value = read(c) ?: continue
                out.record(value, Attributes.of(CLIENT_ID, c.clientId()))
            } catch (e: Exception) {
                clients.remove(c) // closed meanwhile
            }
        }
    }

    /** How to read the metric [m] from a client: the core's value of that name, if any. */
    private fun reader(m: MetricInfo): (NativeClient) -> Long? =
        { c -> c.metricValues()[m.name]?.toLong() }

    /** A native handle traced for one call: the handle to call, its trace, and how to free both. */
    private class Traced<N>(val native: N, val trace: NativeTrace, val free: () -> Unit)

    /**
     * [call] made with [native] in a CLIENT span named [operation] (the request's verb), a
     * child of `Context.current()`; its error thrown as the class of its code.
     */
    suspend fun <T> call(native: NativeClient, operation: String, key: ByteArray?, call: suspend (NativeClient) -> T): T =
        run(native, operation, operation, { native.server() }, { key }, { n, tp, ts ->
            val t = n.traced(tp, ts)
            Traced(t.client, t.trace) { t.client.close() }
        }, call)

    /** One SCAN page of [pager] (a scan of [client]'s, for [pattern]) in a CLIENT span `SCAN`. */
    suspend fun <T> page(pager: NativePager, client: NativeClient, pattern: ByteArray, call: suspend (NativePager) -> T): T =
        run(pager, "SCAN", "SCAN", { client.server() }, { pattern }, { n, tp, ts ->
            val t = n.traced(tp, ts)
            Traced(t.pager, t.trace) { t.pager.close() }
        }, call)

    /**
     * One operation of [lock] in an INTERNAL span named by the core's constant [name]
     * (`SPAN_LOCK_ACQUIRE`): the requests the core makes for it carry the span's context.
     */
    suspend fun <T> lock(lock: NativeLock, name: String, call: suspend (NativeLock) -> T): T =
        run(lock, n.getValue(name), null, null, { lock.key() }, { l, tp, ts ->
            val t = l.traced(tp, ts)
            Traced(t.lock, t.trace) { t.lock.close() }
        }, call)

    /** One operation of [election] in an INTERNAL span named by the core's constant [name]. */
    suspend fun <T> election(election: NativeElection, name: String, call: suspend (NativeElection) -> T): T =
        run(election, n.getValue(name), null, null, { null }, { e, tp, ts ->
            val t = e.traced(tp, ts)
            Traced(t.election, t.trace) { t.election.close() }
        }, call)

    /**
     * [call] made with [native] in a span named [name], a child of `Context.current()`:
     * CLIENT with the database attributes when it is one request ([operation], its verb;
     * its duration recorded), else INTERNAL (a lock or election operation).
     */
    private suspend fun <N, T> run(
        native: N,
        name: String,
        operation: String?,
        server: (() -> ServerAddress)?,
        key: () -> ByteArray?,
        trace: (N, String, String?) -> Traced<N>,
        call: suspend (N) -> T,
    ): T {
        val inst = instruments() ?: return mapped { call(native) }
        val span = inst.tracer.spanBuilder(name)
            .setSpanKind(if (operation != null) SpanKind.CLIENT else SpanKind.INTERNAL)
            .setParent(Context.current())
            .startSpan()
        val start = System.nanoTime()
        var traced: Traced<N>? = null
        var error: Throwable? = null
        try {
            val target = if (span.isRecording) {
                span.setAttribute(SYSTEM, SYSTEM_VALUE)
                if (operation != null) span.setAttribute(OPERATION, operation)
                if (server != null) {
                    val address = server()
                    span.setAttribute(ADDRESS, address.host)
                    span.setAttribute(PORT, address.port.toLong())
                }
                if (Telemetry.recordKeys) key()?.let { span.setAttribute(KEY, it.decodeToString()) }
                val t = mapped { trace(native, traceparent(span), tracestate(span)) }
                traced = t
                t.native
            } else {
                native
            }
            return mapped { call(target) }
        } catch (e: Throwable) {
            error = e
            throw e
        } finally {
            end(inst, span, operation, start, error, traced)
        }
    }

    /** The span's context as a W3C `traceparent`. */
    private fun traceparent(span: Span): String {
        val c = span.spanContext
        return "00-${c.traceId}-${c.spanId}-${c.traceFlags.asHex()}"
    }

    /** The span's `tracestate` (its entries in order), or null when it has none. */
    private fun tracestate(span: Span): String? {
        val state = span.spanContext.traceState
        if (state.isEmpty) return null
        val out = StringBuilder()
        state.forEach { k, v ->
            if (out.isNotEmpty()) out.append(',')
            out.append(k).append('=').append(v)
        }
        return out.toString()
    }

    private fun end(inst: Instruments, span: Span, operation: String?, start: Long, error: Throwable?, traced: Traced<*>?) {
        val seconds = (System.nanoTime() - start) / 1e9
        val attributes = Attributes.builder()
        if (operation != null) attributes.put(OPERATION, operation)
        if (error != null) {
            val code = when (error) {
                is MqstateError -> error.code
                is CancellationException -> "cancelled"
                else -> error.javaClass.name
            }
            attributes.put(ERROR_TYPE, code)
            if (span.isRecording) {
                span.setAttribute(ERROR_TYPE, code)
                span.setStatus(StatusCode.ERROR, error.message ?: code)
            }
        }
        if (traced != null) {
            try {
                for (e in traced.trace.takeEvents()) {
                    val a = Attributes.builder()
                    for (attr in e.attributes) a.put(AttributeKey.longKey(attr.name), attr.value)
                    span.addEvent(e.name, a.build(), e.unixNanos.toLong(), TimeUnit.NANOSECONDS)
                }
            } finally {
                traced.trace.close()
                traced.free()
            }
        }
        span.end()
        // A lock or election operation is no request: it may wait for long (not a duration).
        if (operation != null) inst.duration.record(seconds, attributes.build())
    }
}
