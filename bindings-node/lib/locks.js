'use strict'
/**
 * @file Leased locks, fenced edits and leader elections. Get them from a client:
 * `client.lock(key)`, `client.election(name, candidate)`.
 *
 * A lock is held by writing its holder id with `SET key holder NEX PX lease`; the version
 * of that write is the **fencing token** to pass (`fencingToken`) on writes to the keys the
 * lock protects. Automatic renewal (`autoRenew`) starts after a successful acquire and stops
 * at the first failed renewal.
 */

const { call, sync } = require('./calls.js')
const { EditResult, Value, decision, ms } = require('./events.js')
const { Subscription } = require('./subscription.js')

/**
 * Options of a call.
 * @param {unknown} options
 * @returns {Record<string, any>}
 */
function opts (options) {
  return options === undefined || options === null ? {} : /** @type {Record<string, any>} */ (options)
}

/** A leased lock on one key. */
class Lock {
  /** @type {import('../native.js').NativeLock} */
  #native
  #lease
  /** @type {Set<Subscription>} */
  #owner

  /**
   * Use `client.lock()`.
   * @param {import('../native.js').NativeLock} lock
   * @param {number} lease default lease (ms)
   * @param {Set<Subscription>} owner the client's open subscriptions
   */
  constructor (lock, lease, owner) {
    this.#native = lock
    this.#lease = lease
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
   * Tries once: the fencing token, or `null` when someone else holds it.
   * @param {{ lease?: number, signal?: AbortSignal }} [options]
   */
  async tryAcquire (options) {
    const o = opts(options)
    return call(o.signal, (c) => this.#native.tryAcquire(ms(o.lease, 'lease') ?? this.#lease, c))
  }

  /**
   * Waits for the lock, up to `timeout` (ms; without end when absent: abort with `signal`);
   * resolves to the fencing token.
   * @param {{ lease?: number, timeout?: number, signal?: AbortSignal }} [options]
   */
  async acquire (options) {
    const o = opts(options)
    return call(o.signal, (c) => this.#native.acquire(ms(o.lease, 'lease') ?? this.#lease, ms(o.timeout, 'timeout'), c))
  }

  /**
   * Renews the held lease: the new token, or `null` when no longer held.
   * @param {{ signal?: AbortSignal }} [options]
   */
  async renew (options) {
    return call(opts(options).signal, (c) => this.#native.renew(c))
  }

  /**
   * Releases the lock; `true` when our hold was deleted.
   * @param {{ signal?: AbortSignal }} [options]
   */
  async release (options) {
    return call(opts(options).signal, (c) => this.#native.release(c))
  }

  /**
   * The current holder id, or `null` when free.
   * @param {{ signal?: AbortSignal }} [options]
   */
  async holder (options) {
    return call(opts(options).signal, (c) => this.#native.holder(c))
  }

  /**
   * Renew automatically this often (ms) from the next acquire on; `null`: never.
   * @param {number | null} period
   */
  setAutoRenew (period) {
    sync(() => this.#native.setAutoRenew(ms(period, 'period')))
  }

  /**
   * `HolderChange` events: the current holder, then each change.
   * @param {{ signal?: AbortSignal }} [options]
   */
  watchHolder (options) {
    return new Subscription(call(opts(options).signal, (c) => this.#native.watchHolder(c)), this.#owner)
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
   * @param {{ lease?: number, timeout?: number, signal?: AbortSignal }} [options]
   */
  async edit (key, fn, options) {
    const o = opts(options)
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
    const lease = ms(o.lease, 'lease') ?? this.#lease
    const timeout = ms(o.timeout, 'timeout') ?? 10000
    const raw = await call(o.signal, (c) => this.#native.edit(key, decide, lease, timeout, c), thrown)
    return new EditResult(raw)
  }
}

/** A candidate in a leader election. */
class Election {
  /** @type {import('../native.js').NativeElection} */
  #native
  #term
  /** @type {Set<Subscription>} */
  #owner

  /**
   * Use `client.election()`.
   * @param {import('../native.js').NativeElection} election
   * @param {number} term default term (ms)
   * @param {Set<Subscription>} owner the client's open subscriptions
   */
  constructor (election, term, owner) {
    this.#native = election
    this.#term = term
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
   * Waits to become leader (up to `timeout` ms; abort with `signal`); the leader's
   * fencing token. The term is then renewed automatically until `resign()`.
   * @param {{ term?: number, timeout?: number, signal?: AbortSignal }} [options]
   */
  async campaign (options) {
    const o = opts(options)
    return call(o.signal, (c) => this.#native.campaign(ms(o.term, 'term') ?? this.#term, ms(o.timeout, 'timeout'), c))
  }

  /**
   * Becomes leader if nobody is; `true` when leader now.
   * @param {{ term?: number, signal?: AbortSignal }} [options]
   */
  async tryCampaign (options) {
    const o = opts(options)
    return call(o.signal, (c) => this.#native.tryCampaign(ms(o.term, 'term') ?? this.#term, c))
  }

  /**
   * Steps down; `true` when this candidate led.
   * @param {{ signal?: AbortSignal }} [options]
   */
  async resign (options) {
    return call(opts(options).signal, (c) => this.#native.resign(c))
  }

  /**
   * The current leader's id, or `null`.
   * @param {{ signal?: AbortSignal }} [options]
   */
  async leader (options) {
    return call(opts(options).signal, (c) => this.#native.leader(c))
  }

  /**
   * `HolderChange` events of the leadership: the current leader, then each change.
   * @param {{ signal?: AbortSignal }} [options]
   */
  watchLeader (options) {
    return new Subscription(call(opts(options).signal, (c) => this.#native.watchLeader(c)), this.#owner)
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

module.exports = { Lock, Election }
