'use strict'
/**
 * @file The option objects of the client's calls. Each call names the options it takes;
 * any other name given a value is refused with `invalid_argument` (a typo must not pass
 * silently), and a duration under its name without the `Ms` suffix — the name it has in
 * Rust, Python and Kotlin, where it is not milliseconds — is refused with a message naming
 * the new one. Values are converted and checked by the native layer (the core's converters).
 */

const { invalidArgument } = require('./errors.js')

/**
 * The options object of a call, checked against the names it takes.
 * @param {unknown} value what the caller passed (`undefined` / `null`: no options)
 * @param {readonly string[]} names the option names the call takes
 * @param {string} what the call, for messages (`'client.set()'`)
 * @returns {Record<string, any>}
 */
function checked (value, names, what) {
  if (value === undefined || value === null) return {}
  if (typeof value !== 'object' || Array.isArray(value)) throw invalidArgument(`${what}: options must be an object`)
  for (const [name, given] of Object.entries(value)) {
    if (names.includes(name) || given === undefined) continue
    if (names.includes(`${name}Ms`)) {
      throw invalidArgument(`${what}: option ${name} is now ${name}Ms (milliseconds)`)
    }
    throw invalidArgument(`${what}: unknown option ${name} (it takes ${names.join(', ') || 'none'})`)
  }
  return /** @type {Record<string, any>} */ (value)
}

module.exports = { checked }
