'use strict'
/**
 * @file `Pager`: a SCAN (listing the keys that match a glob pattern), one request per page.
 * The continuation token stays in the core; a page that failed, timed out or was aborted
 * leaves it unchanged, so `nextPage()` asks for the same page again. `for await (const key
 * of pager)` yields every remaining key (an adapter over `nextPage()`; leaving the loop
 * early and iterating again continues with the next page).
 */

const { pageCall } = require('./telemetry.js')
const { checked } = require('./options.js')

/** The options of `nextPage()`. */
const PAGE_OPTIONS = ['signal']

/** @typedef {import('../native.js').NativePager} NativePager */

/** A caller-driven pager over the keys matching a glob pattern; see the file overview. */
class Pager {
  /** @type {NativePager} */
  #native
  /** @type {AbortSignal | undefined} */
  #signal
  /** @type {import('../native.js').NativeClient} the client it pages (for its spans) */
  #client
  /** @type {string | Uint8Array} the pattern (a page span's `mqstate.key`, when asked) */
  #pattern

  /**
   * Use `client.scan()`.
   * @param {NativePager} pager
   * @param {AbortSignal | undefined} signal cancels any page in flight
   * @param {import('../native.js').NativeClient} client the client it pages
   * @param {string | Uint8Array} pattern
   */
  constructor (pager, signal, client, pattern) {
    this.#native = pager
    this.#signal = signal
    this.#client = client
    this.#pattern = pattern
  }

  /**
   * The next page's keys (possibly none while more pages follow), or `null` after the
   * last page. `signal` (default: the scan's) aborts this page with an `AbortError`; a
   * timeout rejects with code `'timeout'`. Either way the pager stays usable.
   * @param {{ signal?: AbortSignal }} [options]
   * @returns {Promise<Buffer[] | null>}
   */
  async nextPage (options) {
    const signal = checked(options, PAGE_OPTIONS, 'nextPage()').signal ?? this.#signal
    // Each page is a call of its own (its own span), its request carrying the span's
    // context through a traced copy of the pager (the scan's position shared).
    return pageCall(this.#client, this.#native, signal, (pager, cancel) => pager.nextPage(cancel), this.#pattern)
  }

  /** Whether the last page has been returned. */
  get done () {
    return this.#native.done
  }

  /** Every remaining key, page by page. */
  async * [Symbol.asyncIterator] () {
    for (let page = await this.nextPage(); page !== null; page = await this.nextPage()) {
      yield * page
    }
  }
}

module.exports = { Pager, PAGE_OPTIONS }
