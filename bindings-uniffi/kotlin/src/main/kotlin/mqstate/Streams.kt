// Subscriptions and scans of the idiomatic Kotlin layer: a suspending next() (with an
// optional timeout: the core's), a listener from lambdas, and both as Flows. Each call makes
// one call of the raw layer (NativeSubscription, NativePager).

package mqstate

import java.util.concurrent.atomic.AtomicBoolean
import kotlin.time.Duration
import kotlinx.coroutines.flow.Flow
import kotlinx.coroutines.flow.flow

/**
 * A stream of [Event]s: key changes, lock holders and leaders, lock and leadership status.
 * It ends when closed ([close], `use {}`) or when its client closes; ending a key's
 * subscription sends `KEYNOTIFY … STOP` at once.
 */
class Subscription internal constructor(private val native: NativeSubscription) : AutoCloseable {
    private val closed = AtomicBoolean(false)

    /**
     * The next event; null once the subscription has ended and is drained (at once after
     * [close]). With a [timeout], a [MqstateTimeoutError] when none came in time. Neither the
     * timeout nor cancelling the coroutine loses an event.
     */
    suspend fun next(timeout: Duration? = null): Event? = unlessClosed(null) { mapped { native.next(timeout) } }

    /** The next event if one is buffered now, else null (always after [close]). */
    fun tryNext(): Event? = unlessClosed(null) { native.tryNext() }

    /** Whether the subscription has ended (events may still be buffered unless [close]d). */
    fun isClosed(): Boolean = unlessClosed(true) { native.isClosed() }

    /**
     * Pushes every event to [listener] on a thread of this subscription's own instead (in
     * order, never concurrently; the pull methods then see nothing). A second listener is an
     * [InvalidArgumentError].
     */
    fun listen(listener: EventListener) = mapped { native.listen(listener) }

    /**
     * Pushes every event to [onEvent] on a thread of the subscription's own (in order, never
     * concurrently), then calls [onEnd] once when it has ended.
     */
    fun listen(onEnd: () -> Unit = {}, onEvent: (Event) -> Unit) = listen(object : EventListener {
        override fun onEvent(event: Event) = onEvent(event)
        override fun onEnd() = onEnd()
    })

    /**
     * The events as a Flow, until the subscription ends. The subscription is closed when the
     * collection ends (normally, by an exception, or by cancellation): collect it once.
     */
    fun asFlow(): Flow<Event> = flow {
        try {
            while (true) {
                emit(next() ?: break)
            }
        } finally {
            close()
        }
    }

    /**
     * Ends the subscription now (a key's: `KEYNOTIFY … STOP` at once) and frees it. A [next]
     * pending meanwhile returns what is buffered, then null; a listener gets its `onEnd`.
     * Closing again does nothing.
     */
    override fun close() {
        if (closed.compareAndSet(false, true)) {
            native.stop()
            native.close()
        }
    }

    /** [call], or [ended] once closed (also when [close] frees the handle meanwhile). */
    private inline fun <T> unlessClosed(ended: T, call: () -> T): T {
        if (closed.get()) return ended
        return try {
            call()
        } catch (e: IllegalStateException) {
            if (closed.get()) ended else throw e
        }
    }
}

/**
 * A scan of the keys matching a glob pattern, one page per [nextPage]. Every key present for
 * the whole scan is returned at least once; a key created or deleted meanwhile may or may not
 * be. A page that fails (timeout, cancelled coroutine, lost connection) leaves the scan where
 * it was: calling [nextPage] again asks for the same page.
 */
class Pager internal constructor(
    private val native: NativePager,
    /** The client it pages and its pattern: what each page's span names. */
    private val client: NativeClient,
    private val pattern: ByteArray,
) : AutoCloseable {
    /**
     * The next page's keys (possibly none while more follow), or null once the last page was
     * returned. Each page is a request of its own: an OpenTelemetry span `SCAN` when the API
     * is there.
     */
    suspend fun nextPage(): List<ByteArray>? = when {
        !OtelPresence.present || native.isDone() -> mapped { native.nextPage() }
        else -> OtelCalls.page(native, client, pattern) { it.nextPage() }
    }

    /** Whether the last page has been returned (false while a page is being fetched). */
    fun isDone(): Boolean = native.isDone()

    /**
     * The remaining keys as a Flow, a page asked for when the keys of the last one are used
     * up. A failed page ends the collection with its exception (collecting again asks for that
     * page again); cancelling the collection cancels the page.
     */
    fun asFlow(): Flow<ByteArray> = flow {
        while (true) {
            val keys = nextPage() ?: break
            for (key in keys) emit(key)
        }
    }

    /** Frees the pager. */
    override fun close() = native.close()
}
