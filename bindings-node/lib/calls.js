'use strict'
/**
 * @file Running one native call: `AbortSignal` support (an abort cancels the core call,
 * which then rejects with a `CallCancelledError`) and error mapping. Settings by name.
 */

const native = require('./native-addon.js')
const { errorOf, fromNative, invalidArgument } = require('./errors.js')

/**
 * Checks a `signal` option.
 * @param {unknown} signal
 * @returns {AbortSignal | undefined}
 */
function signalOf (signal) {
  if (signal === undefined || signal === null) return undefined
  if (typeof signal !== 'object' || typeof (/** @type {any} */ (signal)).addEventListener !== 'function') {
    throw invalidArgument('signal must be an AbortSignal')
  }
  return /** @type {AbortSignal} */ (signal)
}

/**
 * The error to reject with.
 * @param {any} e what the native layer rejected with
 * @param {AbortSignal | undefined} signal
 * @param {Map<number, unknown> | undefined} kept
 */
function mapped (e, signal, kept) {
  const id = e !== null && typeof e === 'object' ? e.callbackId : undefined
  if (kept !== undefined && id !== undefined && kept.has(id)) return kept.get(id)
  return fromNative(e, signal)
}

/**
 * Runs `start` (one native call, given the cancel handle or `undefined`) honouring `signal`.
 * What the native layer throws or rejects with becomes an `MqstateError`.
 * With `kept` (a fenced edit's), a `callback` error whose `callbackId` is in it rejects
 * with the value kept there instead: what the user's function threw, unchanged.
 * @template T
 * @param {unknown} signalOption
 * @param {(cancel: import('../native.js').CancelHandle | undefined) => Promise<T>} start
 * @param {Map<number, unknown>} [kept]
 * @returns {Promise<T>}
 */
async function call (signalOption, start, kept) {
  let signal
  try {
    signal = signalOf(signalOption)
  } catch (e) {
    throw fromNative(e)
  }
  if (signal === undefined) {
    try {
      return await start(undefined)
    } catch (e) {
      throw mapped(e, undefined, kept)
    }
  }
  if (signal.aborted) throw errorOf('cancelled', 'the call was aborted before it started', { cause: signal.reason })
  const handle = new native.CancelHandle()
  const onAbort = () => handle.cancel()
  signal.addEventListener('abort', onAbort, { once: true })
  try {
    return await start(handle)
  } catch (e) {
    throw mapped(e, signal, kept)
  } finally {
    signal.removeEventListener('abort', onAbort)
  }
}

/**
 * Runs a synchronous native call; what it throws becomes an `MqstateError`.
 * @template T
 * @param {() => T} fn
 * @returns {T}
 */
function sync (fn) {
  try {
    return fn()
  } catch (e) {
    throw fromNative(e)
  }
}

/**
 * An options object as the `(names, values)` the native `connect` takes (the core parses
 * and checks both). `url` and `signal` are not settings and are skipped.
 * @param {Record<string, unknown>} options
 * @returns {[string[], any[]]}
 */
function settingPairs (options) {
  const names = []
  const values = []
  for (const [name, value] of Object.entries(options)) {
    if (name === 'url' || name === 'signal' || value === undefined) continue
    names.push(name)
    values.push(value)
  }
  return [names, values]
}

module.exports = { call, sync, settingPairs, signalOf }
