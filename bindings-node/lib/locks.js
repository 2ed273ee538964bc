'use strict'
/**
 * @file Leased locks, fenced edits and leader elections. Get them from a client:
 * `client.lock(key)`, `client.election(name, candidate)`.
 *
 * A lock is held by writing its holder id with `SET key holder NEX PX lease`; the version
 * of that write is the **fencing token** to pass (`fencingToken`) on writes to the keys the
 * lock protects. Automatic renewal (`autoRenewMs`) starts after a successful acquire and stops
 * at the first failed renewal.
 */

const { call, sync } = require('./calls.js')
const { operationCall } = require('./telemetry.js')
const { EditResult, Value, decision } = require('./events.js')
const { checked } = require('./options.js')
const { Subscription } = require('./subscription.js')

/** The options each call takes (every duration in milliseconds, named `…Ms`). */
const OPTIONS = {
  tryAcquire: ['leaseMs', 'signal'],
  acquire: ['leaseMs', 'timeoutMs', 'signal'],
  edit: ['leaseMs', 'timeoutMs', 'signal'],
  campaign: ['termMs', 'timeoutMs', 'signal'],
  tryCampaign: ['termMs', 'signal'],
  signalOnly: ['signal']
}

/**
 * The `signal` option of a call that takes no other.
 * @param {unknown} options
 * @param {string} what
 */
function signalOnly (options, what) {
  return checked(options, OPTIONS.signalOnly, what).signal
}

/** A leased lock on one key. */
class Lock {
  /** @type {import('../native.js').NativeLock} */
  #native
  /** @type {Set<Subscription>} */
  #owner

  /**
   * Use `client.lock()`.
   * @param {import('../native.js').NativeLock} lock
   * @param {Set<Subscription>} owner the client's open subscriptions
   */
  constructor (lock, owner) {
    this.#native = lock
    this.#owner = owner
  }

  /** The lock key. */
  get key () {
    return this.#native.key
  }

  /** The holder id this lock writes (the client id, or `holder:sessionId`). */
  get holderId () {
    return this.#native.holderId
  }

  /** The fencing token while held, else `null`. */
  get fencingToken () {
    return this.#native.fencingToken
  }

  /** Whether the lock is held now (acquired, not lost or released, lease not over). */
  get isHeld () {
    return this.#native.isHeld
  }

  /**
   * Tries once: the fencing token, or `null` when someone else holds it. `leaseMs`: this
   * acquire's lease instead of the lock's.
   * @param {{ leaseMs?: number, signal?: AbortSignal }} [options]
   */
  async tryAcquire (options) {
    const o = checked(options, OPTIONS.tryAcquire, 'tryAcquire()')
    return operationCall(this.#native, 'spanLockTryAcquire', o.signal, (n, c) => n.tryAcquire(o.leaseMs, c), () => this.#native.key)
  }

  /**
   * Waits for the lock, up to `timeoutMs` (without end when absent: abort with `signal`);
   * resolves to the fencing token.
   * @param {{ leaseMs?: number, timeoutMs?: number, signal?: AbortSignal }} [options]
   */
  async acquire (options) {
    const o = checked(options, OPTIONS.acquire, 'acquire()')
    return operationCall(this.#native, 'spanLockAcquire', o.signal, (n, c) => n.acquire(o.leaseMs, o.timeoutMs, c), () => this.#native.key)
  }

  /**
   * Renews the held lease: the new token, or `null` when no longer held.
   * @param {{ signal?: AbortSignal }} [options]
   */
  async renew (options) {
    return operationCall(this.#native, 'spanLockRenew', signalOnly(options, 'renew()'), (n, c) => n.renew(c), () => this.#native.key)
  }

  /**
   * Releases the lock; `true` when our hold was deleted.
   * @param {{ signal?: AbortSignal }} [options]
   */
  async release (options) {
    return operationCall(this.#native, 'spanLockRelease', signalOnly(options, 'release()'), (n, c) => n.release(c), () => this.#native.key)
  }

  /**
   * The current holder id, or `null` when free.
   * @param {{ signal?: AbortSignal }} [options]
   */
  async holder (options) {
    return call(signalOnly(options, 'holder()'), (c) => this.#native.holder(c))
  }

  /**
   * Renew automatically every `periodMs` milliseconds from the next acquire on; `null`: never.
   * @param {number | null} periodMs
   */
  setAutoRenew (periodMs) {
    sync(() => this.#native.setAutoRenew(periodMs))
  }

  /**
   * `HolderChange` events: the current holder, then each change.
   * @param {{ signal?: AbortSignal }} [options]
   */
  watchHolder (options) {
    const signal = signalOnly(options, 'watchHolder()')
    return new Subscription(call(signal, (c) => this.#native.watchHolder(c)), this.#owner)
  }

  /** `LockStatus` events of this lock: the current status, then each change. */
  watchStatus () {
    return new Subscription(this.#native.watchStatus(), this.#owner)
  }

  /**
   * Edits `key` under this lock: acquires it, reads the key, calls `fn` with the value
   * (a `Value` or `null`), writes what `fn` returns (or resolves to) fenced with the lock's
   * token, and releases the lock; retried when a newer holder wrote meanwhile. `fn` returns
   * the new value (string, Buffer, Uint8Array), `DELETE`, or `KEEP` / `undefined`. What it
   * throws (or rejects with) is what `edit` rejects with, unchanged.
   * @param {string | Uint8Array} key
   * @param {(previous: Value | null) => unknown} fn
   * `leaseMs` (default the lock's) and `timeoutMs` (of the whole edit; default the core's).
   * @param {{ leaseMs?: number, timeoutMs?: number, signal?: AbortSignal }} [options]
   */
  async edit (key, fn, options) {
    const o = checked(options, OPTIONS.edit, 'edit()')
    /** @type {Map<number, unknown>} */
    const thrown = new Map()
    /** @param {import('../native.js').RawValue | null} raw */
    const decide = async (raw) => {
      try {
        return decision(await fn(raw ? new Value(raw.value, raw.version ?? null) : null))
      } catch (e) {
        const id = thrown.size + 1
        thrown.set(id, e)
        return { kind: 'error', errorId: id }
      }
    }
    const raw = await operationCall(this.#native, 'spanLockEdit', o.signal, (n, c) => n.edit(key, decide, o.leaseMs, o.timeoutMs, c), () => this.#native.key, thrown)
    return new EditResult(raw)
  }
}

/** A candidate in a leader election. */
class Election {
  /** @type {import('../native.js').NativeElection} */
  #native
  /** @type {Set<Subscription>} */
  #owner

  /**
   * Use `client.election()`.
   * @param {import('../native.js').NativeElection} election
   * @param {Set<Subscription>} owner the client's open subscriptions
   */
  constructor (election, owner) {
    this.#native = election
    this.#owner = owner
  }

  /** This candidate's id. */
  get candidateId () {
    return this.#native.candidateId
  }

  /** Whether this candidate leads now (false at once when a renewal fails). */
  get isLeader () {
    return this.#native.isLeader
  }

  /** The leader's fencing token while this candidate leads, else `null`. */
  get fencingToken () {
    return this.#native.fencingToken
  }

  /**
   * Waits to become leader (up to `timeoutMs`; abort with `signal`); the leader's
   * fencing token. The term (`termMs`, default the election's) is then renewed
   * automatically until `resign()`.
   * @param {{ termMs?: number, timeoutMs?: number, signal?: AbortSignal }} [options]
   */
  async campaign (options) {
    const o = checked(options, OPTIONS.campaign, 'campaign()')
    return operationCall(this.#native, 'spanElectionCampaign', o.signal, (n, c) => n.campaign(o.termMs, o.timeoutMs, c), undefined)
  }

  /**
   * Becomes leader if nobody is; `true` when leader now.
   * @param {{ termMs?: number, signal?: AbortSignal }} [options]
   */
  async tryCampaign (options) {
    const o = checked(options, OPTIONS.tryCampaign, 'tryCampaign()')
    return operationCall(this.#native, 'spanElectionTryCampaign', o.signal, (n, c) => n.tryCampaign(o.termMs, c), undefined)
  }

  /**
   * Steps down; `true` when this candidate led.
   * @param {{ signal?: AbortSignal }} [options]
   */
  async resign (options) {
    return operationCall(this.#native, 'spanElectionResign', signalOnly(options, 'resign()'), (n, c) => n.resign(c), undefined)
  }

  /**
   * The current leader's id, or `null`.
   * @param {{ signal?: AbortSignal }} [options]
   */
  async leader (options) {
    return call(signalOnly(options, 'leader()'), (c) => this.#native.leader(c))
  }

  /**
   * `HolderChange` events of the leadership: the current leader, then each change.
   * @param {{ signal?: AbortSignal }} [options]
   */
  watchLeader (options) {
    const signal = signalOnly(options, 'watchLeader()')
    return new Subscription(call(signal, (c) => this.#native.watchLeader(c)), this.#owner)
  }

  /** `LockStatus` events of this candidate's own leadership. */
  watchStatus () {
    return new Subscription(this.#native.watchStatus(), this.#owner)
  }
}

for (const [Class, method] of /** @type {const} */ ([[Lock, 'release'], [Election, 'resign']])) {
  if (Symbol.asyncDispose) {
    Object.defineProperty(Class.prototype, Symbol.asyncDispose, {
      value: async function () { await this[method]() },
      configurable: true,
      writable: true
    })
  }
}

module.exports = { Lock, Election, OPTIONS }
