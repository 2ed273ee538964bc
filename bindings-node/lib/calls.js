'use strict'
/**
 * @file Running one native call: `AbortSignal` support (an abort cancels the core call,
 * which then rejects with an `AbortError`) and error mapping. Settings by name.
 */

const native = require('../native.js')
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

/** The names of the core's duration settings (snake_case and camelCase). */
const DURATIONS = new Set(native.settingsTable().filter((row) => row.type === 'duration')
  .flatMap((row) => [row.name, row.name.replace(/_([a-z])/g, (_, c) => c.toUpperCase())]))

/**
 * An options object as the `(names, values)` texts the core's settings parse: names as
 * given (the core takes its table's names in camelCase), values as text. A duration
 * setting takes text only (`'500ms'`, `'2s'`, `'1m'`; bare digits are seconds, as in every
 * language): a number there is refused, since in JavaScript it would read as
 * milliseconds. `url` and `signal` are not settings and are skipped.
 * @param {Record<string, unknown>} options
 * @returns {[string[], string[]]}
 */
function settingPairs (options) {
  const names = []
  const values = []
  for (const [name, value] of Object.entries(options)) {
    if (name === 'url' || name === 'signal' || value === undefined) continue
    if (typeof value === 'number' && DURATIONS.has(name)) {
      throw invalidArgument(`setting ${name} is a duration: give it as text such as '${value}ms' or '${value / 1000}s'`)
    }
    if (typeof value !== 'string' && typeof value !== 'number' && typeof value !== 'boolean') {
      throw invalidArgument(`setting ${name} must be a string, number or boolean`)
    }
    names.push(name)
    values.push(String(value))
  }
  return [names, values]
}

module.exports = { call, sync, settingPairs, signalOf }
