'use strict'
/**
 * @file `LocalStore` (`mqstate/testing`): an emulated state store in this process, on a free
 * loopback port, with faults on demand — to test an application against, one store per test
 * if need be (no binary to install, no port to pick). It is the Rust emulator
 * (`mqstate_server::testing::LocalStore`) through the native addon; names, units and errors
 * are the client's: every duration is in milliseconds (`…Ms`), every error an
 * `MqstateError` (`invalid_argument` for a bad argument, `closed` on a stopped store).
 *
 * A running store does not keep the process alive (only a pending call does), so a test
 * runner exits even if a test forgot `stop()`; a forgotten store is stopped when its object
 * is garbage-collected or when the process (or the worker thread that started it) ends.
 */

const native = require('./native-addon.js')
const { call, sync } = require('./calls.js')
const { invalidArgument } = require('./errors.js')
const { checked } = require('./options.js')
const { Value } = require('./events.js')

/** The options `restart()` takes when given an object. */
const RESTART_OPTIONS = ['keepData']

/** What `new LocalStore()` may be given: only `LocalStore.start()` has one. */
const TOKEN = Symbol('LocalStore.start')

/** An emulated state store in this process. Get one with `await LocalStore.start()`. */
class LocalStore {
  /** @type {import('../native.js').NativeLocalStore} */
  #native

  /**
   * Use `LocalStore.start()`.
   * @param {unknown} token
   * @param {import('../native.js').NativeLocalStore} store
   */
  constructor (token, store) {
    if (token !== TOKEN || !(store instanceof native.NativeLocalStore)) {
      throw invalidArgument('use LocalStore.start() to start a local store')
    }
    this.#native = store
  }

  /**
   * Starts a store on `127.0.0.1` at a free port; resolves once it serves requests.
   * @returns {Promise<LocalStore>}
   */
  static async start () {
    const store = await call(undefined, () => native.startLocalStore())
    return new LocalStore(TOKEN, store)
  }

  /** Where clients connect: `mqtt://127.0.0.1:PORT` (give it to `Client.connect()`). */
  get url () {
    return `mqtt://127.0.0.1:${this.#native.port}`
  }

  /** The TCP port (the same after a restart). */
  get port () {
    return this.#native.port
  }

  /** Whether the store runs (false after `stop()`, after a failed restart, and during either). */
  get isRunning () {
    return this.#native.isRunning
  }

  /**
   * Stops the store: closes its connections (clients see them lost), ends its tasks and
   * removes its data. Again does nothing.
   * @returns {Promise<void>}
   */
  async stop () {
    return call(undefined, () => this.#native.stop())
  }

  /**
   * Resets every client connection now, as a network failure does; MQTT sessions are kept,
   * so clients reconnect and resume by themselves and their calls in flight complete.
   * Resolves, once every connection has closed, to how many it closed.
   * @returns {Promise<number>}
   */
  async cutConnections () {
    return call(undefined, () => this.#native.cutConnections())
  }

  /**
   * Stops answering requests for `durationMs` milliseconds (at least 1): the shape of a GC
   * pause or a slow network. Requests meanwhile wait and are answered in order after;
   * connections stay up. In effect when it returns (it does not wait for the pause to end).
   * @param {number} durationMs
   */
  pause (durationMs) {
    sync(() => this.#native.pause(durationMs))
  }

  /**
   * What `kill -9` and a restart do, on the same port: connections and MQTT sessions lost
   * (clients reconnect by themselves; their calls in flight reject with `connection_lost`).
   * With `keepData` (`restart(true)` or `restart({ keepData: true })`) the keys SET with
   * `persist: true` survive with their versions; nothing else ever does. Resolves once the
   * new store serves requests.
   * @param {boolean | { keepData?: boolean }} [keepData] default `false`
   * @returns {Promise<void>}
   */
  async restart (keepData) {
    let keep = keepData
    if (keep !== null && typeof keep === 'object') keep = checked(keep, RESTART_OPTIONS, 'restart()').keepData
    if (keep === undefined || keep === null) keep = false
    if (typeof keep !== 'boolean') throw invalidArgument('restart(): keepData must be a boolean')
    return call(undefined, () => this.#native.restart(/** @type {boolean} */ (keep)))
  }

  /**
   * Answers the next `n` requests — only those of `command` (`'SET'`, `'GET'`, `'DEL'`,
   * `'VDEL'`, `'KEYNOTIFY'`, `'SCAN'`; any case) if given — with the state store error whose
   * code is `error` (`'fencing_token_lower_version'`, `'quota_exceeded'` …: the codes of
   * `StoreError`'s classes), exactly as the service sends it; the store is left untouched.
   * Replaces what an earlier call armed; `n = 0` disarms.
   * @param {number} n
   * @param {string} error
   * @param {string | null} [command]
   */
  failNext (n, error, command) {
    sync(() => this.#native.failNext(n, error, command))
  }

  /**
   * The keys that match the glob `pattern` (`*`, `?`, `[…]`, `\` escapes, as `scan()`), in
   * byte order, as `Buffer`s.
   * @param {string | Uint8Array} [pattern] default `'*'`
   * @returns {Buffer[]}
   */
  keys (pattern = '*') {
    return sync(() => this.#native.keys(pattern))
  }

  /**
   * A key's value and version (a `Value`, as `client.get()` resolves to), or `null`; read
   * inside the store, without a client.
   * @param {string | Uint8Array} key
   * @returns {Value | null}
   */
  get (key) {
    const raw = sync(() => this.#native.get(key))
    return raw === null ? null : new Value(raw.value, raw.version ?? null)
  }

  /**
   * Deletes every key, persisted ones too (observers are told, as for a delete); returns how
   * many it deleted.
   * @returns {number}
   */
  clear () {
    return sync(() => this.#native.clear())
  }

  /**
   * How many requests a `pause()` holds now: they reached the store and wait for the pause to
   * end. A test that pauses, sends a request, then cuts the connections or restarts waits
   * until its request is counted here; otherwise the cut can come first, and the request is
   * sent after the reconnection (and answered).
   * @returns {number}
   */
  heldRequests () {
    return sync(() => this.#native.heldRequests())
  }

  /**
   * Drops every notification the store sends for `durationMs` milliseconds (at least 1),
   * unsent: a notification path gone silent (a dead link the keep-alive has not noticed, a
   * hung broker, a broker whose queue for the client is full). Requests are answered as
   * usual. In effect when it returns; a mute armed while one runs extends it if it ends later.
   * @param {number} durationMs
   */
  dropNotifications (durationMs) {
    sync(() => this.#native.dropNotifications(durationMs))
  }

  /**
   * How many notifications `dropNotifications()` has dropped so far (this run of the store).
   * @returns {number}
   */
  droppedNotifications () {
    return sync(() => this.#native.droppedNotifications())
  }

  /**
   * Forgets every client's KEYNOTIFY registrations while their connections and sessions stay
   * up — what a store restarted behind its broker leaves its clients with: no notification of
   * any key they observed, and nothing on the connection to say so. Returns how many there
   * were.
   * @returns {number}
   */
  forgetRegistrations () {
    return sync(() => this.#native.forgetRegistrations())
  }
}

if (Symbol.asyncDispose) {
  Object.defineProperty(LocalStore.prototype, Symbol.asyncDispose, {
    value: function () { return this.stop() },
    configurable: true,
    writable: true
  })
}

module.exports = { LocalStore, RESTART_OPTIONS }
