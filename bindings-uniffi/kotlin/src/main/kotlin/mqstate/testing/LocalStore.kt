// The local store of the idiomatic Kotlin layer: a state store in this process to test
// applications against (NativeLocalStore, generated in mqstate.kt, over the Rust
// mqstate_server::testing::LocalStore), its errors thrown as the classes of their codes.

package mqstate.testing

import java.util.concurrent.atomic.AtomicBoolean
import kotlin.time.Duration
import mqstate.ClosedError
import mqstate.InvalidArgumentError
import mqstate.NativeLocalStore
import mqstate.Value
import mqstate.bytes
import mqstate.mapped
import mqstate.nativeStartLocalStore

/**
 * A state store running in this process, on a free `127.0.0.1` port: the emulator of
 * `mqstate serve` with its embedded MQTT broker, started by [start], for tests. Nothing else
 * to install, no fixed port, nothing shared between two stores. Point a client at [url],
 * then make the store misbehave on cue — [cutConnections], [pause], [restart], [failNext] —
 * and look inside without a client: [keys], [get], [clear]. Each call returns once it has
 * taken effect.
 *
 * What waits for the store ([start], [stop], [restart], [cutConnections]) suspends, as a
 * client's requests do; the rest returns at once. [close] (what `use {}` calls) stops the
 * store and blocks until it has stopped (a few milliseconds); later calls fail with
 * [ClosedError]. In JUnit 5 tests, [LocalStoreExtension] gives each test its own store.
 */
class LocalStore private constructor(private val native: NativeLocalStore) : AutoCloseable {
    companion object {
        /**
         * Starts a store on `127.0.0.1` at a free port and returns once it answers requests.
         * A port or data directory that cannot be had is a [mqstate.ConnectFailedError].
         */
        suspend fun start(): LocalStore = LocalStore(mapped { nativeStartLocalStore() })
    }

    private val closed = AtomicBoolean(false)

    /** Where clients connect: `mqtt://127.0.0.1:PORT`. */
    val url: String = native.url()

    /** The TCP port (the same after a [restart]). */
    val port: Int = native.port().toInt()

    /** Whether the store runs: false after [stop] or [close], or after a [restart] that failed. */
    val isRunning: Boolean get() = !closed.get() && native.isRunning()

    /** Runs one call of the raw layer unless this store is closed ([ClosedError] then). */
    private inline fun <T> open(call: () -> T): T {
        if (closed.get()) throw ClosedError("the local store is closed")
        return mapped(call)
    }

    /**
     * Stops the store and waits until its connections, broker and tasks are gone; removes
     * its data. Calling it again does nothing. (Other calls then fail with [ClosedError].)
     */
    suspend fun stop() {
        if (!closed.get()) mapped { native.stop() }
    }

    /**
     * Resets every client connection now, as a network failure does: no DISCONNECT, MQTT
     * sessions kept, so clients reconnect by themselves and their requests in flight
     * complete. Returns, once every connection has closed, how many it closed.
     */
    suspend fun cutConnections(): Int = open { native.cutConnections() }.toInt()

    /**
     * Stops answering requests for [duration] (at least 1 ms; the shape of a GC pause or a
     * slow network): requests received meanwhile wait, and are answered in order when it
     * ends. Connections stay up. Returns at once, the pause in effect.
     */
    fun pause(duration: Duration) = open { native.pause(duration) }

    /**
     * What `kill -9` and a restart do, on the same port: every connection reset and every
     * MQTT session lost (clients reconnect by themselves, with new sessions: their requests
     * in flight fail with [mqstate.ConnectionLostError]). With [keepData], the keys set with
     * `SetOptions(persist = true)` survive with their versions; nothing else does. Returns
     * once the new store answers requests.
     */
    suspend fun restart(keepData: Boolean = false) = open { native.restart(keepData) }

    /**
     * Answers the next [n] requests — only those of [command] (`"SET"`, `"GET"`, `"DEL"`,
     * `"VDEL"`, `"KEYNOTIFY"`, `"SCAN"`; any case) if given — with the state store error
     * whose code is [error] (the codes of [mqstate.errorTable], e.g.
     * `"fencing_token_lower_version"`), exactly as the service sends it; the client throws
     * that code's class ([mqstate.FencingTokenLowerVersionError]). The store is left
     * untouched. Replaces what an earlier call armed; `n = 0` disarms. A code that is not a
     * state store error, or an unknown command, is an [InvalidArgumentError].
     */
    fun failNext(n: Int, error: String, command: String? = null) {
        if (n < 0) throw InvalidArgumentError("failNext: n must not be negative (got $n)")
        open { native.failNext(n.toUInt(), error, command) }
    }

    /**
     * The keys the store holds that match the glob [pattern] (`*`, `?`, `[abc]`, `[a-z]`,
     * `[^a]`, `\` escapes, as a SCAN's; byte-wise), in byte order, decoded as UTF-8.
     */
    fun keys(pattern: String = "*"): List<String> = keys(pattern.bytes()).map { it.decodeToString() }

    /** The keys that match the glob [pattern], as bytes, in byte order. */
    fun keys(pattern: ByteArray): List<ByteArray> = open { native.keys(pattern) }

    /**
     * The value and version of [key] read inside the store — the same [Value] a client's
     * `get` returns (its `text`, `value`, `version`) — or null when it does not exist.
     */
    fun get(key: ByteArray): Value? = open { native.get(key) }

    /** The value and version of [key] (UTF-8), or null. */
    fun get(key: String): Value? = get(key.bytes())

    /**
     * Deletes every key, persisted ones included (observers are notified as for a DEL);
     * returns how many it deleted.
     */
    fun clear(): Int = open { native.clear() }.toInt()

    /**
     * How many requests a [pause] holds now: they reached the store and wait for the pause
     * to end. A test that pauses, sends a request, then cuts the connections or restarts
     * waits until its request is counted here; otherwise the cut can come first, and the
     * request is sent after the reconnection (and answered).
     */
    fun heldRequests(): Int = open { native.heldRequests() }.toInt()

    /**
     * Drops every notification the store sends for [duration] (at least 1 ms), unsent: a
     * notification path gone silent (a dead link the keep-alive has not noticed, a hung
     * broker, a broker whose queue for the client is full). Requests are answered as usual.
     * Returns at once, in effect; a mute armed while one runs extends it if it ends later.
     */
    fun dropNotifications(duration: Duration) = open { native.dropNotifications(duration) }

    /** How many notifications [dropNotifications] has dropped so far (this run of the store). */
    fun droppedNotifications(): Int = open { native.droppedNotifications() }.toInt()

    /**
     * Forgets every client's KEYNOTIFY registrations while their connections and sessions
     * stay up — what a store restarted behind its broker leaves its clients with: no
     * notification of any key they observed, and nothing on the connection to say so.
     * Returns how many there were.
     */
    fun forgetRegistrations(): Int = open { native.forgetRegistrations() }.toInt()

    /**
     * Stops the store, blocking until it has stopped (at most 10 s), and frees it. Calling
     * it again does nothing.
     */
    override fun close() {
        if (!closed.compareAndSet(false, true)) return
        try {
            mapped { native.shutdown() }
        } finally {
            native.close()
        }
    }

    override fun toString(): String = "LocalStore($url${if (isRunning) "" else ", stopped"})"
}
