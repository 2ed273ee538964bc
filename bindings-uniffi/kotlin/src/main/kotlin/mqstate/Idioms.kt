// The idiomatic Kotlin layer over the generated bindings (mqstate.kt): text overloads of
// every key and value, settings as pairs, the error's stable code on the base exception,
// notifications and scanned keys as Flows, a listener from lambdas, fenced edits and leadership from
// suspending lambdas, and scoped lock/leadership helpers. No protocol logic lives here:
// every function converts and calls one generated method.

package mqstate

import java.util.concurrent.atomic.AtomicReference
import kotlinx.coroutines.NonCancellable
import kotlinx.coroutines.flow.Flow
import kotlinx.coroutines.flow.emitAll
import kotlinx.coroutines.flow.flow
import kotlinx.coroutines.runBlocking
import kotlinx.coroutines.withContext

private fun String.bytes(): ByteArray = encodeToByteArray()

// ---- errors ---------------------------------------------------------------------------

private fun MqstateException.parts(): Triple<String, String, Boolean> = when (this) {
    is MqstateException.InvalidArgument -> Triple(code, detail, mayHaveApplied)
    is MqstateException.Malformed -> Triple(code, detail, mayHaveApplied)
    is MqstateException.Clock -> Triple(code, detail, mayHaveApplied)
    is MqstateException.Store -> Triple(code, detail, mayHaveApplied)
    is MqstateException.Rpc -> Triple(code, detail, mayHaveApplied)
    is MqstateException.Timeout -> Triple(code, detail, mayHaveApplied)
    is MqstateException.ConnectionLost -> Triple(code, detail, mayHaveApplied)
    is MqstateException.Connect -> Triple(code, detail, mayHaveApplied)
    is MqstateException.Closed -> Triple(code, detail, mayHaveApplied)
    is MqstateException.NotHeld -> Triple(code, detail, mayHaveApplied)
    is MqstateException.Cancelled -> Triple(code, detail, mayHaveApplied)
    is MqstateException.Callback -> Triple(code, detail, mayHaveApplied)
    is MqstateException.Other -> Triple(code, detail, mayHaveApplied)
}

/** The stable code of the error (`"timeout"`, `"fencing_token_required"`, … see [errorTable]). */
val MqstateException.code: String get() = parts().first

/** What went wrong, for people (for a store error: the service's exact text). */
val MqstateException.detail: String get() = parts().second

/** Whether the request had been sent: the service may have applied it. */
val MqstateException.mayHaveApplied: Boolean get() = parts().third

// ---- values ---------------------------------------------------------------------------

/** The value decoded as UTF-8. */
val Value.text: String get() = value.decodeToString()

/** The new value of a set decoded as UTF-8, or null for a deletion. */
val Event.Change.text: String? get() = value?.decodeToString()

/** Parses the text form `{wall_ms}:{counter}:{node_id}` of a clock value. */
fun Hlc.Companion.parse(text: String): Hlc = parseHlc(text)

/** Writes this text (UTF-8) as the edited key's new value. */
fun Edit.Companion.set(text: String): Edit = Edit.Set(text.bytes())

// ---- connecting -----------------------------------------------------------------------

private fun settingText(value: Any): String = when (value) {
    is java.time.Duration -> "${value.toNanos() / 1_000_000.0}ms"
    is kotlin.time.Duration -> "${value.inWholeMicroseconds / 1000.0}ms"
    else -> value.toString()
}

/**
 * Connects with settings as pairs, named as in [settingsTable] (camelCase or snake_case):
 * `Client.connect("mqtt://localhost:1883", "clientId" to "me", "requestTimeout" to 2.seconds)`.
 * Values are text, numbers, booleans or durations.
 */
suspend fun Client.Companion.connect(url: String?, vararg settings: Pair<String, Any>): Client =
    Client.connect(url, settings.associate { (name, value) -> name to settingText(value) })

// ---- text keys and values -------------------------------------------------------------

/** Sets [key] to [value] (UTF-8). */
suspend fun Client.set(key: String, value: String, options: SetOptions = SetOptions()): SetResult =
    set(key.bytes(), value.bytes(), options)

/** Sets [key] (UTF-8) to the bytes [value]. */
suspend fun Client.set(key: String, value: ByteArray, options: SetOptions = SetOptions()): SetResult =
    set(key.bytes(), value, options)

/** The value of [key] (UTF-8) and its version, or null. */
suspend fun Client.get(key: String, options: GetOptions = GetOptions()): Value? =
    get(key.bytes(), options)

/** Deletes [key] (UTF-8): the number of keys deleted. */
suspend fun Client.delete(key: String, options: DelOptions = DelOptions()): ULong =
    delete(key.bytes(), options)

/** Deletes [key] only if it holds [value] (both UTF-8). */
suspend fun Client.vdel(key: String, value: String, options: DelOptions = DelOptions()): VdelOutcome =
    vdel(key.bytes(), value.bytes(), options)

/** Observes [key] (UTF-8). */
suspend fun Client.observe(key: String, options: ObserveOptions = ObserveOptions()): Subscription =
    observe(key.bytes(), options)

/** A leased lock on [key] (UTF-8). */
fun Client.lock(key: String, options: LockOptions = LockOptions()): Lock = lock(key.bytes(), options)

/** Candidate [candidate] in the election [name] (UTF-8). */
fun Client.election(name: String, candidate: String, options: ElectionOptions = ElectionOptions()): Election =
    election(name.bytes(), candidate, options)

// ---- notifications --------------------------------------------------------------------

/**
 * The subscription's events as a Flow, until it ends. The subscription is stopped
 * (`KEYNOTIFY … STOP` for a key) when the collection ends, normally, by an exception, or
 * by cancellation: collect it once.
 */
fun Subscription.asFlow(): Flow<Event> = flow {
    try {
        while (true) {
            emit(next() ?: break)
        }
    } finally {
        stop()
    }
}

/**
 * The changes of [key] as a cold Flow: each collection observes the key (registered before
 * the first change can be missed) and stops observing it when the collection ends.
 */
fun Client.observeFlow(key: ByteArray, options: ObserveOptions = ObserveOptions()): Flow<Event> = flow {
    observe(key, options).use { sub -> sub.asFlow().collect { emit(it) } }
}

/** [observeFlow] of a UTF-8 key. */
fun Client.observeFlow(key: String, options: ObserveOptions = ObserveOptions()): Flow<Event> =
    observeFlow(key.bytes(), options)

/**
 * Pushes every event to [onEvent] on a thread of the subscription's own (in order, never
 * concurrently), then calls [onEnd] once when it has ended.
 */
fun Subscription.listen(onEnd: () -> Unit = {}, onEvent: (Event) -> Unit) {
    listen(object : EventListener {
        override fun onEvent(event: Event) = onEvent(event)
        override fun onEnd() = onEnd()
    })
}

// ---- scans ----------------------------------------------------------------------------

/** A pager over the keys matching the glob [pattern] (UTF-8). */
fun Client.scan(pattern: String, options: ScanOptions = ScanOptions()): Pager = scan(pattern.bytes(), options)

/**
 * The remaining keys of this scan as a Flow, one page asked for when the keys of the last
 * one are used up. A failed page ends the collection with its exception (collecting the
 * pager again asks for that page again); cancelling the collection cancels the page.
 */
fun Pager.asFlow(): Flow<ByteArray> = flow {
    while (true) {
        val keys = nextPage() ?: break
        for (key in keys) emit(key)
    }
}

/**
 * The keys matching the glob [pattern] as a cold Flow: each collection is a new scan
 * (nothing is sent before it starts). `client.scanFlow(pattern).take(10).toList()` stops
 * asking for pages once it has enough.
 */
fun Client.scanFlow(pattern: ByteArray, options: ScanOptions = ScanOptions()): Flow<ByteArray> = flow {
    emitAll(scan(pattern, options).asFlow())
}

/** [scanFlow] of a UTF-8 pattern. */
fun Client.scanFlow(pattern: String, options: ScanOptions = ScanOptions()): Flow<ByteArray> =
    scanFlow(pattern.bytes(), options)

// ---- locks and elections --------------------------------------------------------------

/**
 * Edits [key] under this lock: acquires it, reads the key, calls [decide] with the value
 * (null: missing), writes its answer fenced with the lock's token ([Edit.Set],
 * [Edit.Delete] or [Edit.Keep]), releases. [decide] may run more than once (once per
 * attempt); whatever it throws ends the edit and is rethrown here unchanged.
 */
suspend fun Lock.edit(
    key: ByteArray,
    lease: java.time.Duration? = null,
    timeout: java.time.Duration? = null,
    decide: suspend (Value?) -> Edit,
): EditResult {
    val raised = AtomicReference<Throwable?>(null)
    val function = object : EditFunction {
        // Called on a library thread that may block.
        override fun decide(current: Value?): Edit = try {
            runBlocking { decide(current) }
        } catch (e: Throwable) {
            raised.set(e)
            throw MqstateException.Callback("callback", "the edit function threw $e", false)
        }
    }
    try {
        return edit(key, function, lease, timeout)
    } catch (e: MqstateException.Callback) {
        throw raised.get() ?: e
    }
}

/** [edit] of a UTF-8 key. */
suspend fun Lock.edit(
    key: String,
    lease: java.time.Duration? = null,
    timeout: java.time.Duration? = null,
    decide: suspend (Value?) -> Edit,
): EditResult = edit(key.bytes(), lease, timeout, decide)

/**
 * Acquires the lock (waiting up to [timeout]), runs [block] with the fencing token, and
 * releases the lock whatever happened (also when the coroutine is cancelled).
 */
suspend fun <T> Lock.withLock(
    lease: java.time.Duration? = null,
    timeout: java.time.Duration? = null,
    block: suspend (token: Hlc) -> T,
): T {
    val token = acquire(lease, timeout)
    try {
        return block(token)
    } finally {
        withContext(NonCancellable) { release() }
    }
}

/**
 * Campaigns (waiting up to [timeout]), runs [block] as leader with the leader's fencing
 * token, and resigns whatever happened (also when the coroutine is cancelled).
 */
suspend fun <T> Election.lead(
    term: java.time.Duration? = null,
    timeout: java.time.Duration? = null,
    block: suspend (token: Hlc) -> T,
): T {
    val token = campaign(term, timeout)
    try {
        return block(token)
    } finally {
        withContext(NonCancellable) { resign() }
    }
}
