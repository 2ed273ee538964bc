'use strict'
/**
 * @file The values the client returns and the events its subscriptions yield, built from
 * the native layer's raw objects. Versions and fencing tokens are `hlc.Hlc` values;
 * durations are milliseconds.
 */

/** A key's value (a `Buffer`) with its version. */
class Value {
  /**
   * @param {Buffer} value
   * @param {import('../native.js').hlc.Hlc | null} version
   */
  constructor (value, version) {
    /** The value's bytes. */
    this.value = value
    /** Its version (`null` when the store gave none). */
    this.version = version
  }

  /** The value as UTF-8 text. */
  get text () {
    return this.value.toString('utf8')
  }
}

/** One change of an observed key. */
class Change {
  /** @param {import('../native.js').RawEvent} raw */
  constructor (raw) {
    /** @type {'change'} */
    this.type = 'change'
    /** The key. */
    this.key = /** @type {Buffer} */ (raw.key)
    /** `'set'` (with `value`) or `'delete'`. */
    this.kind = /** @type {'set' | 'delete'} */ (raw.event)
    /** The new value of a set, else `null`. */
    this.value = raw.value ?? null
    /** The key's new version (`null` for a resync that found it deleted). */
    this.version = raw.version ?? null
    /** Found after a reconnection (intermediate changes are not replayed). */
    this.resync = Boolean(raw.resync)
    /** Changes dropped before this one because the reader was slow (oldest first). */
    this.droppedBefore = raw.droppedBefore ?? 0
  }

  /** The new value as UTF-8 text, or `null` for a deletion. */
  get text () {
    return this.value === null ? null : this.value.toString('utf8')
  }
}

/** A lock's holder (an election's leader) changed; `holder` is `null` when free. */
class HolderChange {
  /** @param {import('../native.js').RawEvent} raw */
  constructor (raw) {
    /** @type {'holder'} */
    this.type = 'holder'
    /** The holder id, or `null`. */
    this.holder = raw.holder ?? null
    /** The lock key's version at the change. */
    this.version = raw.version ?? null
    /** Found after a reconnection. */
    this.resync = Boolean(raw.resync)
  }
}

/** This lock's (candidate's) own status: `'held'`, `'not_held'` or `'lost'`. */
class LockStatus {
  /** @param {import('../native.js').RawEvent} raw */
  constructor (raw) {
    /** @type {'status'} */
    this.type = 'status'
    /** `'held' | 'not_held' | 'lost'`. */
    this.state = /** @type {'held' | 'not_held' | 'lost'} */ (raw.state)
    /** The fencing token while held. */
    this.fencingToken = raw.token ?? null
    /** The lease in milliseconds while held. */
    this.leaseMs = raw.leaseMs ?? null
    /** Why it was lost: `'expired' | 'taken_over' | 'renewal_failed'`. */
    this.reason = raw.reason ?? null
    /** For `renewal_failed`: the renewal's error `{ code, message }`. */
    this.error = raw.errorCode === undefined ? null : { code: raw.errorCode, message: raw.errorMessage ?? '' }
  }
}

/**
 * `'degraded'`: after a reconnection the subscription could not be restored yet and
 * changes are being missed (`reason`); `'restored'`: it is back.
 */
class ConnectionEvent {
  /** @param {import('../native.js').RawEvent} raw */
  constructor (raw) {
    /** @type {'degraded' | 'restored'} */
    this.type = /** @type {'degraded' | 'restored'} */ (raw.type)
    /** Why (degraded only). */
    this.reason = raw.reason ?? null
  }
}

/**
 * An event from its raw form.
 * @param {import('../native.js').RawEvent} raw
 */
function toEvent (raw) {
  switch (raw.type) {
    case 'change': return new Change(raw)
    case 'holder': return new HolderChange(raw)
    case 'status': return new LockStatus(raw)
    default: return new ConnectionEvent(raw)
  }
}

/** Returned by an edit function: delete the key. */
const DELETE = Symbol.for('mqstate.DELETE')
/** Returned by an edit function (as `undefined` or `null` are): leave the key as it is. */
const KEEP = Symbol.for('mqstate.KEEP')

/**
 * An edit function's result as the native layer wants it.
 * @param {unknown} out
 * @returns {import('../native.js').RawDecision}
 */
function decision (out) {
  if (out === undefined || out === null || out === KEEP) return { kind: 'keep' }
  if (out === DELETE) return { kind: 'delete' }
  if (typeof out === 'string') return { kind: 'set', value: Buffer.from(out, 'utf8') }
  if (out instanceof Uint8Array) {
    return { kind: 'set', value: Buffer.isBuffer(out) ? out : Buffer.from(out.buffer, out.byteOffset, out.byteLength) }
  }
  throw new TypeError('an edit function returns the new value (string, Buffer or Uint8Array), DELETE, KEEP, undefined or null')
}

/** The outcome of a fenced edit. */
class EditResult {
  /** @param {import('../native.js').RawEditResult} raw */
  constructor (raw) {
    /** What was read under the lock (`null`: the key did not exist). */
    this.previous = raw.previous ? new Value(raw.previous.value, raw.previous.version ?? null) : null
    /** What was written: `'set' | 'delete' | 'keep'`. */
    this.kind = /** @type {'set' | 'delete' | 'keep'} */ (raw.kind)
    /** The key's new version after a set. */
    this.version = raw.version ?? null
    /** The fencing token the write carried. */
    this.token = raw.token
    /** Attempts made (1 when nothing had to be retried). */
    this.attempts = raw.attempts
  }
}

module.exports = { Value, Change, HolderChange, LockStatus, ConnectionEvent, EditResult, DELETE, KEEP, toEvent, decision }
