// Locks and elections of the idiomatic Kotlin layer: each call converts and makes one call
// of the raw layer (NativeLock, NativeElection), its error thrown as the class of its code;
// fenced edits and leadership take suspending lambdas, and the scoped helpers release (resign)
// whatever happens. Durations left null are the core's defaults (the lock's own lease).

package mqstate

import java.util.concurrent.atomic.AtomicReference
import kotlin.time.Duration
import kotlinx.coroutines.NonCancellable
import kotlinx.coroutines.runBlocking
import kotlinx.coroutines.withContext

/**
 * A leased lock on one key (`client.lock(key, LockOptions(lease = 10.seconds))`). Waiting
 * calls are cancellable: cancelling the coroutine of an [acquire] cancels it in the core, so
 * the lock is never taken later for nobody.
 */
class Lock internal constructor(private val native: NativeLock) : AutoCloseable {
    /** One operation: in an OpenTelemetry span named by the core's [name] when the API is there. */
    private suspend fun <T> op(name: String, call: suspend (NativeLock) -> T): T =
        if (OtelPresence.present) OtelCalls.lock(native, name, call) else mapped { call(native) }

    /** The lock key. */
    val key: ByteArray get() = native.key()

    /** The holder id this lock writes. */
    val holderId: String get() = native.holderId()

    /** Tries once for [lease] (null: the lock's lease): the fencing token, or null when someone else holds it. */
    suspend fun tryAcquire(lease: Duration? = null): Hlc? = op("SPAN_LOCK_TRY_ACQUIRE") { it.tryAcquire(lease) }

    /**
     * Waits for the lock, up to [timeout] (null: until the coroutine is cancelled), for
     * [lease] (null: the lock's lease): the fencing token.
     */
    suspend fun acquire(lease: Duration? = null, timeout: Duration? = null): Hlc =
        op("SPAN_LOCK_ACQUIRE") { it.acquire(lease, timeout) }

    /** Renews the held lease: the new token, or null when no longer held. */
    suspend fun renew(): Hlc? = op("SPAN_LOCK_RENEW") { it.renew() }

    /** Releases the lock: true when our hold was deleted. */
    suspend fun release(): Boolean = op("SPAN_LOCK_RELEASE") { it.release() }

    /** The current holder id, or null when free. */
    suspend fun holder(): String? = mapped { native.holder() }

    /** The fencing token while held. */
    val fencingToken: Hlc? get() = native.fencingToken()

    /** Whether the lock is held now. */
    val isHeld: Boolean get() = native.isHeld()

    /** The lock's status now. */
    fun status(): LockStatus = native.status()

    /** Renew automatically this often from the next acquire on (null: never). */
    fun setAutoRenew(period: Duration?) = mapped { native.setAutoRenew(period) }

    /** [Event.Status] events: the current status, then each change. */
    fun watchStatus(): Subscription = Subscription(native.watchStatus())

    /** [Event.Holder] events: the current holder, then each change. */
    suspend fun watchHolder(): Subscription = Subscription(mapped { native.watchHolder() })

    /**
     * Edits [key] under this lock: acquires it, reads the key, calls [decide] with the value
     * (null: missing), writes its answer fenced with the lock's token ([Edit.Set],
     * [Edit.Delete] or [Edit.Keep]), releases; retried while a newer holder wrote meanwhile,
     * up to [timeout] (null: the core's edit timeout). [decide] runs on a library thread,
     * once per attempt; whatever it throws ends the edit and is rethrown here unchanged.
     */
    suspend fun edit(
        key: ByteArray,
        lease: Duration? = null,
        timeout: Duration? = null,
        decide: suspend (Value?) -> Edit,
    ): EditResult {
        val raised = AtomicReference<Throwable?>(null)
        val function = object : EditFunction {
            // Called on a blocking thread of the library, never a coroutine's.
            override fun decide(current: Value?): Edit = try {
                runBlocking { decide(current) }
            } catch (e: Throwable) {
                raised.set(e)
                throw DecideException.Failed("the edit function threw $e")
            }
        }
        return op("SPAN_LOCK_EDIT") { lock ->
            try {
                lock.edit(key, function, lease, timeout)
            } catch (e: NativeException) {
                throw raised.get() ?: e.toMqstateError()
            }
        }
    }

    /** [edit] of a UTF-8 key. */
    suspend fun edit(
        key: String,
        lease: Duration? = null,
        timeout: Duration? = null,
        decide: suspend (Value?) -> Edit,
    ): EditResult = edit(key.bytes(), lease, timeout, decide)

    /**
     * Acquires the lock (waiting up to [timeout]), runs [block] with the fencing token, and
     * releases the lock whatever happened (also when the coroutine is cancelled).
     */
    suspend fun <T> withLock(
        lease: Duration? = null,
        timeout: Duration? = null,
        block: suspend (token: Hlc) -> T,
    ): T = scoped({ acquire(lease, timeout) }, { release() }, block)

    /** Frees the lock object (a held lock is not released: its lease runs out). */
    override fun close() = native.close()
}

/**
 * A candidate in one election (`client.election(name, candidate, ElectionOptions(term = 10.seconds))`).
 * Cancelling the coroutine of a [campaign] cancels it in the core.
 */
class Election internal constructor(private val native: NativeElection) : AutoCloseable {
    /** One operation: in an OpenTelemetry span named by the core's [name] when the API is there. */
    private suspend fun <T> op(name: String, call: suspend (NativeElection) -> T): T =
        if (OtelPresence.present) OtelCalls.election(native, name, call) else mapped { call(native) }

    /** This candidate's id. */
    val candidateId: String get() = native.candidateId()

    /**
     * Waits to become leader, up to [timeout] (null: until the coroutine is cancelled), for
     * [term] (null: the election's term): the leader's fencing token. The term is then renewed
     * until [resign].
     */
    suspend fun campaign(term: Duration? = null, timeout: Duration? = null): Hlc =
        op("SPAN_ELECTION_CAMPAIGN") { it.campaign(term, timeout) }

    /** Becomes leader if nobody is: true when leader now. */
    suspend fun tryCampaign(term: Duration? = null): Boolean = op("SPAN_ELECTION_TRY_CAMPAIGN") { it.tryCampaign(term) }

    /** Steps down: true when this candidate led. */
    suspend fun resign(): Boolean = op("SPAN_ELECTION_RESIGN") { it.resign() }

    /** The current leader's id, or null. */
    suspend fun leader(): String? = mapped { native.leader() }

    /** Whether this candidate leads now. */
    val isLeader: Boolean get() = native.isLeader()

    /** The leader's fencing token while this candidate leads. */
    val fencingToken: Hlc? get() = native.fencingToken()

    /** [Event.Holder] events of the leadership: the current leader, then each change. */
    suspend fun watchLeader(): Subscription = Subscription(mapped { native.watchLeader() })

    /** [Event.Status] events of this candidate's own leadership. */
    fun watchStatus(): Subscription = Subscription(native.watchStatus())

    /**
     * Campaigns (waiting up to [timeout]), runs [block] as leader with the leader's fencing
     * token, and resigns whatever happened (also when the coroutine is cancelled).
     */
    suspend fun <T> lead(
        term: Duration? = null,
        timeout: Duration? = null,
        block: suspend (token: Hlc) -> T,
    ): T = scoped({ campaign(term, timeout) }, { resign() }, block)

    /** Frees the candidate object. */
    override fun close() = native.close()
}

/** Runs [block] with the token [begin] returns, then [end] whatever happened (also on cancellation). */
private suspend fun <T> scoped(begin: suspend () -> Hlc, end: suspend () -> Any, block: suspend (Hlc) -> T): T {
    val token = begin()
    try {
        return block(token)
    } finally {
        withContext(NonCancellable) { end() }
    }
}
