// The client of the idiomatic Kotlin layer: every call converts its arguments (text keys
// and values as UTF-8, settings as pairs or a map) and makes one call of the raw layer
// (NativeClient, generated in mqstate.kt), its error thrown as the class of its code.

package mqstate

import kotlinx.coroutines.flow.Flow
import kotlinx.coroutines.flow.emitAll
import kotlinx.coroutines.flow.flow

/**
 * Connects to [url] (`mqtt://host:port`, `mqtts://…`; default `localhost:1883`) with
 * [settings] by name on top: the same as [Client.connect], for `import mqstate.*` code that
 * reads `connect(url).use { client -> … }`.
 */
suspend fun connect(url: String? = null, settings: Map<String, Any> = emptyMap()): Client =
    Client.connect(url, settings)

/** [connect] with settings as pairs: `connect(url, "clientId" to "me")`. */
suspend fun connect(url: String?, vararg settings: Pair<String, Any>): Client =
    Client.connect(url, linkedMapOf(*settings))

/**
 * A [Client.get] answered from the cache does not suspend; every this many hits in a row it
 * yields instead, so that a loop of hits lets the coroutines beside it run on a dispatcher of
 * one thread (`runBlocking`). The core's number (`mqstate::vocabulary::CACHE_HIT_YIELD_EVERY`,
 * `cache_hit_yield_every` in core/vocabulary.json; VocabularyTest checks it).
 */
internal const val CACHE_HIT_YIELD_EVERY = 64

/**
 * A connection to the state store. Every call is a `suspend` function; cancelling its
 * coroutine cancels it in the core. Keys and values are bytes, with `String` overloads
 * (UTF-8). [close] (what `use {}` calls) closes the connection without waiting,
 * [closeAndWait] waits until it has ended; later calls fail with [ClosedError]. Locks and
 * subscriptions made from a client end when it closes.
 */
class Client private constructor(private val native: NativeClient) : AutoCloseable {
    /** This client's id for [FastGet] (its cache's hits without a uniffi call); 0: no cache. */
    private val reader: Long = native.cacheReader().toLong()

    /** Cache hits answered since [get] last suspended ([CACHE_HIT_YIELD_EVERY]). */
    private val hitsInARow = java.util.concurrent.atomic.AtomicInteger()

    init {
        if (OtelPresence.present) OtelCalls.watch(native)
    }

    /**
     * One call that goes to the store: in an OpenTelemetry span when the API is on the
     * classpath ([Telemetry]), else the call alone; its error thrown as the class of its code.
     */
    private suspend fun <T> store(operation: String, key: ByteArray, call: suspend (NativeClient) -> T): T =
        if (OtelPresence.present) OtelCalls.call(native, operation, key, call) else mapped { call(native) }

    companion object {
        /**
         * Connects to [url] (`mqtt://host:port`, `mqtts://…`; default `localhost:1883`) with
         * [settings] by name on top, in order: the names of [settingsTable] in camelCase or
         * snake_case, the values text, numbers, booleans or durations (`"requestTimeout" to 5.seconds`).
         */
        suspend fun connect(url: String? = null, settings: Map<String, Any> = emptyMap()): Client =
            mapped { Client(nativeConnect(url, settingList(settings))) }

        /** [connect] with settings as pairs: `Client.connect(url, "clientId" to "me")`. */
        suspend fun connect(url: String?, vararg settings: Pair<String, Any>): Client =
            connect(url, linkedMapOf(*settings))

        /**
         * Connects with the Azure IoT Operations environment variables (`AIO_BROKER_HOSTNAME`
         * …), [settings] by name on top.
         */
        suspend fun fromEnv(settings: Map<String, Any> = emptyMap()): Client =
            mapped { Client(nativeConnectFromEnv(settingList(settings))) }

        /** [fromEnv] with settings as pairs. */
        suspend fun fromEnv(vararg settings: Pair<String, Any>): Client = fromEnv(linkedMapOf(*settings))
    }

    /** The MQTT client id. */
    val clientId: String get() = native.clientId()

    /** Whether the connection is up now. */
    val connected: Boolean get() = native.isConnected()

    /** The connection's history. */
    fun linkInfo(): LinkInfo = native.linkInfo()

    /**
     * The client-side cache's counters now — [CacheStats]: `hits`, `misses`, `evictions`,
     * `invalidations`, `entries`, `bytes`, `leaseRenewals`, `leaseExpiries`,
     * `leaseFailures`, `leaseMisses`, `refused` — or null when the client has no cache (the
     * `cache` setting turns it on, and so does any other `cache…` setting:
     * `Client.connect(url, "cache" to true)`).
     */
    fun cacheStats(): CacheStats? = native.cacheStats()

    /** Sets [key] to [value]: whether it was applied (a condition may refuse it) and the new version. */
    suspend fun set(key: ByteArray, value: ByteArray, options: SetOptions = SetOptions()): SetResult =
        store("SET", key) { it.set(key, value, options) }

    /** Sets [key] to [value] (UTF-8). */
    suspend fun set(key: String, value: String, options: SetOptions = SetOptions()): SetResult =
        set(key.bytes(), value.bytes(), options)

    /** Sets [key] (UTF-8) to the bytes [value]. */
    suspend fun set(key: String, value: ByteArray, options: SetOptions = SetOptions()): SetResult =
        set(key.bytes(), value, options)

    /**
     * The value of [key] and its version, or null when it does not exist. With the
     * client-side cache on, a key it holds fresh is answered from memory;
     * `GetOptions(bypassCache = true)` reads from the store anyway. A hit returns at once,
     * without suspending.
     */
    suspend fun get(key: ByteArray, options: GetOptions = GetOptions()): Value? {
        if (!options.bypassCache && reader != 0L && FastGet.available) {
            when (val answer = FastGet.get(reader, key, options.timeout)) {
                is FastGet.Answer.Hit -> {
                    if (hitsInARow.incrementAndGet() >= CACHE_HIT_YIELD_EVERY) {
                        hitsInARow.set(0)
                        kotlinx.coroutines.yield()
                    }
                    return answer.value
                }
                FastGet.Answer.Store -> return store("GET", key) { it.getAfterMiss(key, options) }
                FastGet.Answer.Refused -> {} // the read below throws the error
            }
        }
        return store("GET", key) { it.get(key, options) }
    }

    /** The value of [key] (UTF-8) and its version, or null. */
    suspend fun get(key: String, options: GetOptions = GetOptions()): Value? = get(key.bytes(), options)

    /** Deletes [key]: the number of keys deleted (0 or 1). */
    suspend fun delete(key: ByteArray, options: DelOptions = DelOptions()): ULong =
        store("DEL", key) { it.delete(key, options) }

    /** Deletes [key] (UTF-8). */
    suspend fun delete(key: String, options: DelOptions = DelOptions()): ULong = delete(key.bytes(), options)

    /** Deletes [key] only if it holds [value]. */
    suspend fun vdel(key: ByteArray, value: ByteArray, options: DelOptions = DelOptions()): VdelOutcome =
        store("VDEL", key) { it.vdel(key, value, options) }

    /** Deletes [key] only if it holds [value] (both UTF-8). */
    suspend fun vdel(key: String, value: String, options: DelOptions = DelOptions()): VdelOutcome =
        vdel(key.bytes(), value.bytes(), options)

    /** Observes [key]: a subscription of its changes, registered when this returns. */
    suspend fun observe(key: ByteArray, options: ObserveOptions = ObserveOptions()): Subscription =
        Subscription(store("KEYNOTIFY", key) { it.observe(key, options) })

    /** Observes [key] (UTF-8). */
    suspend fun observe(key: String, options: ObserveOptions = ObserveOptions()): Subscription =
        observe(key.bytes(), options)

    /**
     * The changes of [key] as a cold Flow: each collection observes the key (registered
     * before the first change can be missed) and stops observing it when the collection ends.
     */
    fun observeFlow(key: ByteArray, options: ObserveOptions = ObserveOptions()): Flow<Event> = flow {
        observe(key, options).use { sub -> emitAll(sub.asFlow()) }
    }

    /** [observeFlow] of a UTF-8 key. */
    fun observeFlow(key: String, options: ObserveOptions = ObserveOptions()): Flow<Event> =
        observeFlow(key.bytes(), options)

    /**
     * The keys matching the glob [pattern] (`*`, `?`, `[abc]`, `[a-z]`, `[^a]`, `\` escapes;
     * byte-wise), a page at a time: a pager that sends nothing until its first `nextPage()`.
     * An empty pattern is an [InvalidArgumentError].
     */
    fun scan(pattern: ByteArray, options: ScanOptions = ScanOptions()): Pager =
        Pager(mapped { native.scan(pattern, options) }, native, pattern)

    /** [scan] of a UTF-8 pattern. */
    fun scan(pattern: String, options: ScanOptions = ScanOptions()): Pager = scan(pattern.bytes(), options)

    /**
     * The keys matching the glob [pattern] as a cold Flow: each collection is a new scan
     * (nothing is sent before it starts). `client.scanFlow(pattern).take(10).toList()` stops
     * asking for pages once it has enough.
     */
    fun scanFlow(pattern: ByteArray, options: ScanOptions = ScanOptions()): Flow<ByteArray> = flow {
        scan(pattern, options).use { pager -> emitAll(pager.asFlow()) }
    }

    /** [scanFlow] of a UTF-8 pattern. */
    fun scanFlow(pattern: String, options: ScanOptions = ScanOptions()): Flow<ByteArray> =
        scanFlow(pattern.bytes(), options)

    /** A leased lock on [key]. */
    fun lock(key: ByteArray, options: LockOptions = LockOptions()): Lock = Lock(mapped { native.lock(key, options) })

    /** A leased lock on [key] (UTF-8). */
    fun lock(key: String, options: LockOptions = LockOptions()): Lock = lock(key.bytes(), options)

    /** Candidate [candidate] in the election [name]. */
    fun election(name: ByteArray, candidate: String, options: ElectionOptions = ElectionOptions()): Election =
        Election(mapped { native.election(name, candidate, options) })

    /** Candidate [candidate] in the election [name] (UTF-8). */
    fun election(name: String, candidate: String, options: ElectionOptions = ElectionOptions()): Election =
        election(name.bytes(), candidate, options)

    /**
     * Closes the connection (for every lock and subscription made from it) and waits until it
     * has ended. Idempotent.
     */
    suspend fun closeAndWait() {
        if (OtelPresence.present) OtelCalls.forget(native)
        mapped { native.closeAndWait() }
    }

    /** Closes the connection without waiting (what `use {}` calls). Idempotent. */
    override fun close() {
        if (OtelPresence.present) OtelCalls.forget(native)
        native.close()
    }
}
