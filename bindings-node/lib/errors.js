'use strict'
/**
 * @file The client's errors. Every rejection of the client is an `MqstateError` whose
 * `code` is the core's stable error code, shared by every mqstate language (`'timeout'`,
 * `'not_held'`, `'fencing_token_required'` …), and whose class is the one the core's error
 * table names for that code (`NotHeldError`, `FencingTokenRequiredError` …, under the
 * families `StoreError`, `ClockError`, `ConnectError`): generated into `error-classes.js`.
 * The native layer throws and rejects with plain `Error`s carrying the code and the
 * details; {@link fromNative} gives them their class.
 */

const { MqstateError } = require('./error-base.js')
const { CLASSES } = require('./error-classes.js')

/**
 * The error of `code` (its class from the core's table; `MqstateError` for a code this
 * version does not know).
 * @param {string} code
 * @param {string} message
 * @param {import('./error-base.js').ErrorDetails} [details]
 * @returns {MqstateError}
 */
function errorOf (code, message, details = {}) {
  const Class = Object.hasOwn(CLASSES, code) ? CLASSES[/** @type {keyof typeof CLASSES} */ (code)] : undefined
  return Class === undefined ? new MqstateError(message, code, details) : new Class(message, details)
}

/**
 * The `MqstateError` for what the native layer threw or rejected with; anything else is
 * returned as it is.
 * @param {any} err
 * @param {AbortSignal | undefined} [signal] the call's signal: an abort gives its reason as `cause`
 * @returns {unknown}
 */
function fromNative (err, signal) {
  if (err instanceof MqstateError || err === null || typeof err !== 'object' || typeof err.code !== 'string') {
    return err
  }
  if (err.code === 'cancelled') {
    return errorOf('cancelled', err.message, signal && signal.aborted ? { cause: signal.reason } : {})
  }
  return errorOf(err.code, err.message, err)
}

/**
 * An `invalid_argument` error made by the JS layer.
 * @param {string} message
 */
function invalidArgument (message) {
  return errorOf('invalid_argument', message)
}

module.exports = { errorOf, fromNative, invalidArgument }
