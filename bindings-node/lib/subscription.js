'use strict'
/**
 * @file `Subscription`: an async iterator of events (key changes, holder changes, lock
 * status, and the connection events `degraded` / `restored`). Leaving a `for await` loop
 * (`break`, `return`, a throw) calls `return()`, which closes it: for a key the client sends
 * `KEYNOTIFY … STOP` at once. Buffering is bounded by the client's `observerCapacity`
 * (the oldest events are dropped and counted in `droppedBefore`).
 */

const { call } = require('./calls.js')
const { toEvent } = require('./events.js')
const { checked } = require('./options.js')

/** The options of `next()`. */
const NEXT_OPTIONS = ['timeoutMs', 'signal']

/** @typedef {import('../native.js').NativeSubscription} NativeSubscription */

/** An async iterator of events; see the file overview. */
class Subscription {
  /** @type {Promise<NativeSubscription>} */
  #start
  /** @type {NativeSubscription | null} */
  #native = null
  #closed = false
  /** @type {Set<Subscription> | null} */
  #owner

  /**
   * @param {Promise<NativeSubscription> | NativeSubscription} start the registration (or the subscription)
   * @param {Set<Subscription> | null} owner the client's set of open subscriptions
   */
  constructor (start, owner) {
    this.#owner = owner
    if (owner) owner.add(this)
    this.#start = Promise.resolve(start).then((sub) => {
      this.#native = sub
      if (this.#closed) sub.close()
      return sub
    })
    // A failed registration is reported by ready() / next(), not as an unhandled rejection.
    this.#start.catch(() => {})
  }

  /** Waits until the subscription is registered (rejects if it could not be); resolves to itself. */
  async ready () {
    await this.#start
    return this
  }

  /**
   * The next event: `{ done: false, value }`, or `{ done: true }` once closed. With
   * `timeoutMs` rejects with code `'timeout'` when nothing came; with `signal` an abort
   * rejects with an `AbortError`. Either way no event is lost.
   * @param {{ timeoutMs?: number, signal?: AbortSignal }} [options]
   */
  async next (options) {
    const o = checked(options, NEXT_OPTIONS, 'next()')
    const sub = await this.#start
    const raw = await call(o.signal, (cancel) => sub.next(o.timeoutMs, cancel))
    return raw === null ? { done: true, value: undefined } : { done: false, value: toEvent(raw) }
  }

  /** The next event if one is buffered, else `null`. */
  tryNext () {
    const raw = this.#native ? this.#native.tryNext() : null
    return raw === null ? null : toEvent(raw)
  }

  /** Closes the subscription (what `break` out of `for await` does); resolves to `{ done: true }`. */
  async return () {
    this.close()
    return { done: true, value: undefined }
  }

  /** Closes the subscription now (idempotent): for a key, STOP is sent at once. */
  close () {
    if (this.#closed) return
    this.#closed = true
    if (this.#owner) this.#owner.delete(this)
    if (this.#native) this.#native.close()
  }

  /** Whether it has been closed (or ended with its client). */
  get closed () {
    return this.#closed || (this.#native !== null && this.#native.closed)
  }

  [Symbol.asyncIterator] () {
    return this
  }
}

if (Symbol.asyncDispose) {
  Object.defineProperty(Subscription.prototype, Symbol.asyncDispose, {
    value: async function () { this.close() },
    configurable: true,
    writable: true
  })
}

module.exports = { Subscription, NEXT_OPTIONS }
