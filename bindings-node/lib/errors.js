'use strict'
/**
 * @file The client's errors. Every rejection of the client is an `MqstateError` whose
 * `code` is the core's stable error code, shared by every mqstate language (`'timeout'`,
 * `'not_held'`, `'fencing_token_required'` …), and whose class is the one the core's error
 * table names for that code (`NotHeldError`, `FencingTokenRequiredError` …, under the
 * families `StoreError`, `ClockError`, `ConnectError`): generated into `error-classes.js`.
 * The classes are registered with the native layer here, at load, so that what it throws
 * or rejects with (the client's errors, and those of `codec`, `hlc` and `topics`) is
 * already of its class; {@link fromNative} adds what only the JS layer knows.
 */

const native = require('./native-addon.js')
const { MqstateError } = require('./error-base.js')
const { CLASSES } = require('./error-classes.js')

native.useErrorClasses(CLASSES)

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
 * What the client rejects with for what the native layer threw or rejected with: the same
 * error, except that a cancellation by the call's aborted `signal` carries the signal's
 * reason as `cause`, and an error of another class than its code's (none, once the classes
 * are registered) gets its class.
 * @param {any} err
 * @param {AbortSignal | undefined} [signal] the call's signal
 * @returns {unknown}
 */
function fromNative (err, signal) {
  if (err === null || typeof err !== 'object' || typeof err.code !== 'string') return err
  if (err.code === 'cancelled' && signal !== undefined && signal.aborted) {
    return errorOf('cancelled', err.message, { cause: signal.reason })
  }
  if (err instanceof MqstateError) return err
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
