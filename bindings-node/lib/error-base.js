'use strict'
/**
 * @file `MqstateError`, the base of the client's error classes (the classes of the codes
 * and their families are generated from the core's table into `error-classes.js`).
 */

/**
 * What an error carries besides its message and code.
 * @typedef {{ storeKind?: string, status?: number, rpc?: object, mayHaveApplied?: boolean, cause?: unknown }} ErrorDetails
 */

/** The base class of every error the client throws or rejects with; `code` is the stable code. */
class MqstateError extends Error {
  /**
   * @param {string} message for people
   * @param {string} code the stable code (see `errorCodes()`)
   * @param {ErrorDetails} [details]
   */
  constructor (message, code, details = {}) {
    super(message, 'cause' in details ? { cause: details.cause } : undefined)
    // A cancelled call is named as Node's own aborted calls are.
    this.name = code === 'cancelled' ? 'AbortError' : new.target.name
    /** The stable code. */
    this.code = code
    /** Whether a sent request may have been applied although it failed (timeout, lost connection). */
    this.mayHaveApplied = Boolean(details.mayHaveApplied)
    if (details.storeKind !== undefined) this.storeKind = details.storeKind
    if (details.status !== undefined) this.status = details.status
    if (details.rpc !== undefined) this.rpc = details.rpc
  }
}

module.exports = { MqstateError }
