'use strict'
/**
 * @file The client's error classes. Every rejection of the client is an `MqstateError`
 * (or a subclass) whose `code` is the core's stable error code, shared by every mqstate
 * language (`'timeout'`, `'not_held'`, `'fencing_token_required'` …); branch on `code`,
 * never on `message`. The native layer rejects with plain objects carrying the code and
 * the details; {@link fromNative} picks the class.
 */

const native = require('../native.js')

/** Codes of the connection failures. */
const CONNECT_CODES = new Set([
  'connect_failed', 'connect_refused', 'connect_timeout', 'connect_unauthorized', 'tls'
])
/** Codes of the store's own errors (the message is the service's exact text). */
const STORE_CODES = new Set(native.storeErrorKinds())

/** The base class of every error the client rejects with. */
class MqstateError extends Error {
  /**
   * @param {string} message for people
   * @param {string} code the stable code (see `errorCodes()`)
   * @param {{ storeKind?: string, status?: number, rpc?: object, mayHaveApplied?: boolean, cause?: unknown }} [details]
   */
  constructor (message, code, details = {}) {
    super(message, 'cause' in details ? { cause: details.cause } : undefined)
    this.name = new.target.name
    /** The stable code. */
    this.code = code
    /** Whether a sent request may have been applied although it failed (timeout, lost connection). */
    this.mayHaveApplied = Boolean(details.mayHaveApplied)
    if (details.storeKind !== undefined) this.storeKind = details.storeKind
    if (details.status !== undefined) this.status = details.status
    if (details.rpc !== undefined) this.rpc = details.rpc
  }
}

/** The state store refused the request; `message` is the service's exact text. */
class StoreError extends MqstateError {}

/** The service's RPC layer refused the request; `status` and `rpc` say why. */
class RpcError extends MqstateError {}

/** Connecting to the broker failed (`connect_failed`, `connect_refused`, `connect_timeout`, `connect_unauthorized`, `tls`). */
class ConnectError extends MqstateError {}

/**
 * The call was aborted (its `AbortSignal`) or cancelled: `name` is `'AbortError'`, `code`
 * is `'cancelled'`, and `cause` is the signal's reason.
 */
class AbortError extends MqstateError {
  /**
   * @param {string} [message]
   * @param {{ cause?: unknown }} [details]
   */
  constructor (message = 'the call was aborted', details = {}) {
    super(message, 'cancelled', details)
    this.name = 'AbortError'
  }
}

/**
 * The error class for a code.
 * @param {string} code
 */
function classOf (code) {
  if (code === 'cancelled') return AbortError
  if (code === 'rpc_error') return RpcError
  if (STORE_CODES.has(code)) return StoreError
  if (CONNECT_CODES.has(code)) return ConnectError
  return MqstateError
}

/**
 * An `MqstateError` for what the native layer threw or rejected with.
 * @param {any} err
 * @param {AbortSignal | undefined} [signal] the call's signal: an abort gives its reason as `cause`
 * @returns {unknown}
 */
function fromNative (err, signal) {
  if (err instanceof MqstateError || err === null || typeof err !== 'object' || typeof err.code !== 'string') {
    return err
  }
  if (err.code === 'cancelled') {
    return new AbortError(err.message, signal && signal.aborted ? { cause: signal.reason } : {})
  }
  const Class = classOf(err.code)
  return new Class(err.message, err.code, err)
}

/**
 * An `invalid_argument` error made by the JS layer.
 * @param {string} message
 */
function invalidArgument (message) {
  return new MqstateError(message, 'invalid_argument')
}

module.exports = { MqstateError, StoreError, RpcError, ConnectError, AbortError, fromNative, invalidArgument }
