'use strict'
/**
 * @file `Client`: a connection to the Azure IoT Operations state store, over the mqstate
 * core (its connection, correlation engine, observation, locks and elections). Every method
 * converts its options, makes one native call and maps the result or the error.
 */

const native = require('./native-addon.js')
const { call, settingPairs, sync, signalOf } = require('./calls.js')
const { invalidArgument, errorOf } = require('./errors.js')
const { checked } = require('./options.js')
const { Value } = require('./events.js')
const { Subscription } = require('./subscription.js')
const { Pager } = require('./scan.js')
const { Lock, Election } = require('./locks.js')
const { storeCall, register, forget } = require('./telemetry.js')

/**
 * A `get` answered from the cache settles no native Promise: a loop of hits would run as
 * microtasks only, and starve timers, I/O and `setImmediate` callbacks. Every this many hits
 * in a row, `get` resolves after a macrotask (`setImmediate`) instead. The number is the
 * core's (`mqstate::vocabulary::CACHE_HIT_YIELD_EVERY`, `cache_hit_yield_every` in
 * core/vocabulary.json; test/vocabulary.test.mjs checks it).
 */
const CACHE_HIT_YIELD_EVERY = 64

/** The options each call takes (every duration in milliseconds, named `…Ms`). */
const OPTIONS = {
  set: ['condition', 'expiryMs', 'fencingToken', 'persist', 'timeoutMs', 'signal'],
  get: ['timeoutMs', 'bypassCache', 'signal'],
  delete: ['fencingToken', 'timeoutMs', 'signal'],
  vdel: ['fencingToken', 'timeoutMs', 'signal'],
  observe: ['timeoutMs', 'signal'],
  scan: ['timeoutMs', 'signal'],
  lock: ['leaseMs', 'holder', 'sessionId', 'autoRenewMs'],
  election: ['termMs', 'sessionId', 'renewEveryMs']
}

/**
 * Options of `connect` / `fromEnv`: any object (the names are settings, checked by the core).
 * @param {unknown} options
 * @returns {Record<string, any>}
 */
function opts (options) {
  if (options === undefined || options === null) return {}
  if (typeof options !== 'object') throw invalidArgument('options must be an object')
  return /** @type {Record<string, any>} */ (options)
}

/**
 * Connects with settings (`url`, `fromEnv`) and named options.
 * @param {string | undefined} url
 * @param {boolean} fromEnv
 * @param {Record<string, any>} options
 */
async function open (url, fromEnv, options) {
  const store = await call(options.signal, (cancel) => {
    const [names, values] = settingPairs(options)
    return native.connect(url, fromEnv, names, values, cancel)
  })
  return new Client(store)
}

/** A connection to the state store. Get one with `Client.connect()` or `Client.fromEnv()`. */
class Client {
  /** @type {import('../native.js').NativeClient | null} */
  #native
  /** @type {Set<Subscription>} */
  #subscriptions = new Set()
  /** Whether the client has a cache (fixed at connect): a `get` without one never asks it. */
  #cached = false
  /** Cache hits answered since `get` last let the event loop turn (`CACHE_HIT_YIELD_EVERY`). */
  #hitsInARow = 0
  /** This client in the OpenTelemetry metrics' registry (`null` without `@opentelemetry/api`). */
  #registered

  /**
   * Use `Client.connect()`.
   * @param {import('../native.js').NativeClient} store
   */
  constructor (store) {
    if (!(store instanceof native.NativeClient)) {
      throw invalidArgument('use Client.connect() or Client.fromEnv() to make a client')
    }
    this.#native = store
    this.#cached = store.cacheStats() !== null
    this.#registered = register(store)
  }

  /**
   * Connects to the broker (`mqtt://host:port` or `mqtts://…`, whose query items are
   * settings) or with an options object of settings (`host`, `port`, `clientId`,
   * `keepAlive`, `requestTimeout`, `observerCapacity` … the core's settings table, see
   * `settings()`). Values are text in the core's syntax (`'30s'`, `'250ms'`; a bare number
   * is seconds), numbers or booleans. Options may also carry `url` and `signal`.
   * @param {string | Record<string, any>} [urlOrOptions]
   * @param {Record<string, any>} [options]
   */
  static async connect (urlOrOptions, options) {
    if (typeof urlOrOptions === 'string') return open(urlOrOptions, false, opts(options))
    const all = { ...opts(urlOrOptions), ...opts(options) }
    if (all.url !== undefined && typeof all.url !== 'string') throw invalidArgument('url must be a string')
    return open(all.url, false, all)
  }

  /**
   * Connects with the Azure IoT Operations environment variables (`AIO_BROKER_HOSTNAME`,
   * `AIO_BROKER_TCP_PORT`, `AIO_MQTT_CLIENT_ID`, `AIO_SAT_FILE` …), options on top.
   * @param {Record<string, any>} [options]
   */
  static async fromEnv (options) {
    return open(undefined, true, opts(options))
  }

  /** @returns {import('../native.js').NativeClient} */
  #store () {
    if (this.#native === null) throw errorOf('closed', 'the client is closed')
    return this.#native
  }

  /** The MQTT client id. */
  get clientId () {
    return this.#store().clientId
  }

  /** Whether the connection to the broker is up now. */
  get connected () {
    return this.#native !== null && this.#native.linkInfo().connected
  }

  /** A snapshot of the connection's history: `{ connected, connections, sessions, brokerMaxPacketSize }`. */
  linkInfo () {
    return this.#store().linkInfo()
  }

  /**
   * The client-side cache's counters — `{ hits, misses, evictions, invalidations, entries,
   * bytes, leaseRenewals, leaseExpiries, leaseFailures, leaseMisses, refused }`, numbers — or
   * `null` when the client has no cache (the `cache` setting and the other `cache…` settings
   * turn it on). A snapshot: read it again for newer counts.
   * @returns {import('../index.js').CacheStats | null}
   */
  cacheStats () {
    return /** @type {import('../index.js').CacheStats | null} */ (this.#store().cacheStats())
  }

  /**
   * Sets `key` to `value`. Options: `condition` (`'nx'`: only if missing; `'nex'`: only if
   * missing or equal; any case), `expiryMs`, `fencingToken` (an `Hlc` or its text),
   * `persist`, `timeoutMs`, `signal`. Resolves to `{ applied, version }`.
   * @param {string | Uint8Array} key
   * @param {string | Uint8Array} value
   * @param {Record<string, any>} [options]
   */
  async set (key, value, options) {
    const o = checked(options, OPTIONS.set, 'set()')
    const r = await storeCall(this.#store(), 'set', o.signal, (s, c) => s.set(key, value, o.condition, o.expiryMs, o.fencingToken, o.persist, o.timeoutMs, c), key)
    return { applied: r.applied, version: r.version ?? null }
  }

  /**
   * The key's value and version, or `null` when it does not exist. With the client-side
   * cache on, a key it holds fresh is answered from memory (every 64th hit in a row after a
   * `setImmediate`, so a loop of hits lets timers and I/O run); `bypassCache: true` reads
   * from the store anyway (its answer still updates the cache).
   * @param {string | Uint8Array} key
   * @param {Record<string, any>} [options] `timeoutMs`, `bypassCache`, `signal`
   */
  async get (key, options) {
    const o = checked(options, OPTIONS.get, 'get()')
    if (this.#cached && o.signal?.aborted !== true) {
      // A hit settles no native Promise: the cache answers here, at once.
      const hit = this.#store().getCached(key, o.timeoutMs, o.bypassCache)
      if (hit !== null) {
        const value = hit.length === 0 ? null : new Value(hit[0].value, hit[0].version ?? null)
        if (++this.#hitsInARow >= CACHE_HIT_YIELD_EVERY) {
          this.#hitsInARow = 0
          await new Promise((resolve) => setImmediate(resolve))
        }
        return value
      }
    }
    this.#hitsInARow = 0
    const r = await storeCall(this.#store(), 'get', o.signal, (s, c) => s.get(key, o.timeoutMs, o.bypassCache, c), key)
    return r === null ? null : new Value(r.value, r.version ?? null)
  }

  /**
   * Deletes the key; resolves to the number of keys deleted (0 or 1).
   * @param {string | Uint8Array} key
   * @param {Record<string, any>} [options] `fencingToken`, `timeoutMs`, `signal`
   */
  async delete (key, options) {
    const o = checked(options, OPTIONS.delete, 'delete()')
    return storeCall(this.#store(), 'del', o.signal, (s, c) => s.del(key, o.fencingToken, o.timeoutMs, c), key)
  }

  /**
   * Deletes the key only if it holds `value`: `'deleted' | 'not_found' | 'value_mismatch'`.
   * @param {string | Uint8Array} key
   * @param {string | Uint8Array} value
   * @param {Record<string, any>} [options] `fencingToken`, `timeoutMs`, `signal`
   */
  async vdel (key, value, options) {
    const o = checked(options, OPTIONS.vdel, 'vdel()')
    return storeCall(this.#store(), 'vdel', o.signal, (s, c) => s.vdel(key, value, o.fencingToken, o.timeoutMs, c), key)
  }

  /**
   * The key's changes as an async iterator (`for await (const change of client.observe(k))`);
   * registration starts now (`await sub.ready()` waits for it). `break` sends STOP.
   * @param {string | Uint8Array} key
   * @param {Record<string, any>} [options] `timeoutMs` (of the registration), `signal`
   */
  observe (key, options) {
    const o = checked(options, OPTIONS.observe, 'observe()')
    const store = this.#store()
    const start = storeCall(store, 'observe', o.signal, (s, c) => s.observe(key, o.timeoutMs, c), key)
    return new Subscription(start, this.#subscriptions)
  }

  /**
   * Lists the keys matching the glob `pattern` (`*`, `?`, `[abc]`, `[a-z]`, `[^a]`, `\`
   * escapes), one request per page: `for await (const key of client.scan('sensor/*'))`,
   * or `await pager.nextPage()` for a page at a time (`null` after the last). Keys are
   * `Buffer`s. Nothing is sent until the first page is asked for; an empty pattern throws
   * (code `'invalid_argument'`).
   * @param {string | Uint8Array} pattern
   * @param {Record<string, any>} [options] `timeoutMs` (of each page), `signal` (aborts the page in flight)
   */
  scan (pattern, options) {
    const o = checked(options, OPTIONS.scan, 'scan()')
    const signal = sync(() => signalOf(o.signal))
    const store = this.#store()
    const pager = sync(() => store.scan(pattern, o.timeoutMs))
    return new Pager(pager, signal, store, pattern)
  }

  /**
   * A leased lock on `key`. Options: `leaseMs` (the lease of its acquires; default the
   * core's), `holder` (default the client id), `sessionId`, `autoRenewMs` (renew this often
   * after each acquire).
   * @param {string | Uint8Array} key
   * @param {Record<string, any>} [options]
   */
  lock (key, options) {
    const o = checked(options, OPTIONS.lock, 'lock()')
    const store = this.#store()
    const lock = sync(() => store.lock(key, o.leaseMs, o.holder, o.sessionId, o.autoRenewMs))
    return new Lock(lock, this.#subscriptions)
  }

  /**
   * Candidate `candidate` in the election `name`. Options: `termMs` (the term of its
   * campaigns; default the core's), `sessionId`, `renewEveryMs` (renew the term this often
   * while leader).
   * @param {string | Uint8Array} name
   * @param {string} candidate
   * @param {Record<string, any>} [options]
   */
  election (name, candidate, options) {
    const o = checked(options, OPTIONS.election, 'election()')
    const store = this.#store()
    const election = sync(() => store.election(name, candidate, o.termMs, o.sessionId, o.renewEveryMs))
    return new Election(election, this.#subscriptions)
  }

  /** Closes the connection and its subscriptions; pending calls reject with code `'closed'`. Idempotent. */
  async close () {
    const store = this.#native
    this.#native = null
    forget(this.#registered)
    this.#registered = null
    for (const sub of [...this.#subscriptions]) sub.close()
    if (store !== null) await call(undefined, () => store.close())
  }
}

if (Symbol.asyncDispose) {
  Object.defineProperty(Client.prototype, Symbol.asyncDispose, {
    value: function () { return this.close() },
    configurable: true,
    writable: true
  })
}

module.exports = { Client, OPTIONS }
