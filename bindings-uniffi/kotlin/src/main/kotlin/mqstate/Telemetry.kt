// OpenTelemetry for the Kotlin layer, without OpenTelemetry: the core's vocabulary and the
// one check for `io.opentelemetry:opentelemetry-api` on the classpath. Nothing in this file
// names an OpenTelemetry type, so the JVM never links one when the API is absent: the spans
// and metrics are made in OtelCalls.kt, which is loaded only once the check has found it.

package mqstate

/**
 * mqstate's OpenTelemetry instrumentation (docs/telemetry.md). With
 * `io.opentelemetry:opentelemetry-api` on the classpath and an SDK registered as
 * `GlobalOpenTelemetry`, each call that goes to the store (`set`, `get` past the cache,
 * `delete`, `vdel`) runs in a CLIENT span of the tracer `mqstate`, a child of
 * `Context.current()`, named by the operation (`SET`, `GET`, `DEL`, `VDEL`), and its
 * duration is recorded in the histogram `db.client.operation.duration`; the clients' links
 * and caches are observed when the SDK's metric reader collects. The span's W3C trace
 * context travels with the request, so a store that records it (`mqstate serve
 * --otlp-endpoint`) shows its side in the same trace. A cache hit makes no span.
 *
 * In coroutines, carry the caller's context into the coroutine the usual way
 * (`withContext(Context.current().asContextElement())`, from
 * `io.opentelemetry:opentelemetry-extension-kotlin`): the span's parent is whatever
 * `Context.current()` is on the thread the call starts on.
 *
 * Without the API nothing changes: no OpenTelemetry class is loaded and a call pays one
 * field read. Nothing is reported before the application registers its SDK
 * (`GlobalOpenTelemetry.isSet()`), so that an early call never fixes the global to a no-op.
 */
object Telemetry {
    private val vocabulary: TelemetryVocabulary by lazy { telemetryVocabulary() }

    /** The core's span, attribute and event names, by constant (`names["ERROR_TYPE"]` is `error.type`). */
    val names: Map<String, String> by lazy { vocabulary.names.associate { it.constant to it.value } }

    /** Every metric mqstate reports, with its unit, kind and source (the core's `METRICS`). */
    val metrics: List<MetricInfo> get() = vocabulary.metrics

    /** The bucket boundaries of `db.client.operation.duration`, in seconds. */
    val callDurationBuckets: List<Double> get() = vocabulary.buckets

    /**
     * Put each call's key on its span (`mqstate.key`, as text; bytes that are not UTF-8
     * replaced). Off by default: keys can name people, devices or secrets.
     */
    @Volatile
    var recordKeys: Boolean = false

    /** Whether `io.opentelemetry:opentelemetry-api` is on the classpath (checked once). */
    val available: Boolean get() = OtelPresence.present
}

/**
 * The one check for the OpenTelemetry API, in a class of its own so that its answer is
 * computed once, on first use, and costs a static field read after.
 */
internal object OtelPresence {
    @JvmField
    val present: Boolean = try {
        Class.forName("io.opentelemetry.api.GlobalOpenTelemetry", false, OtelPresence::class.java.classLoader)
        true
    } catch (e: ClassNotFoundException) {
        false
    } catch (e: LinkageError) {
        false
    }
}
