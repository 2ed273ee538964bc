// The client-side cache through the Node API, against in-process LocalStores and their
// faults: `get` counts hits and misses under the vocabulary's counter names, another
// client's write arrives by notification without a new miss, `bypassCache` reads the store
// and counts neither way, a cut, a restart and a lost session each invalidate what was
// cached, and `cacheStats()` is `null` while the cache is off. Every wait is a poll with a
// deadline (BOUND_MS), so a broken cache fails a test instead of hanging it.
import { describe, test } from 'node:test'
import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import path from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { Client, ClosedError, InvalidArgumentError, QuotaExceededError } from 'mqstate'
import { LocalStore } from 'mqstate/testing'
import { projectRoot } from './live.mjs'

const vocabulary = JSON.parse(readFileSync(path.join(projectRoot, 'core', 'vocabulary.json'), 'utf8'))

/** How long anything that should happen may take (a busy 2-core machine included). */
const BOUND_MS = 30000
/**
 * A lease bound no busy machine's renewal misses, for the tests that count hits and misses
 * exactly (a lease that failed would send a read to the store they do not count on); the
 * lease's own tests use short bounds.
 */
const STEADY = '30s'
/** Each test's own limit, well past the waits inside it. */
const TEST_MS = 120000

/**
 * The cache's counters of `client`, which must have its cache on.
 * @param {Client} client
 */
function stats (client) {
  const s = client.cacheStats()
  assert.ok(s !== null, 'the cache is on')
  return s
}

/**
 * What `client` reads for `key`, as text (`null`: missing).
 * @param {Client} client
 * @param {string} key
 * @param {import('mqstate').GetOptions} [options]
 */
async function text (client, key, options) {
  return (await client.get(key, options))?.text ?? null
}

/**
 * Polls `check` until it returns true, failing with `what` after BOUND_MS.
 * @param {string} what
 * @param {() => boolean | Promise<boolean>} check
 */
async function until (what, check) {
  const deadline = performance.now() + BOUND_MS
  while (!(await check())) {
    assert.ok(performance.now() < deadline, `not within ${BOUND_MS} ms: ${what}`)
    await sleep(10)
  }
}

/** The counters' names in Node: the vocabulary's, in camelCase. */
const COUNTERS = vocabulary.cache_counters.map((/** @type {string} */ name) => name.replace(/_([a-z])/g, (_, c) => c.toUpperCase()))

/**
 * [hits, misses] as they would be with the lease always held: a read the lease sent to the
 * store (`leaseMisses`, before the first renewal came back) counted as the hit it would have
 * been. Counts that depend on how fast the first renewal travels would be flaky.
 * @param {import('mqstate').CacheStats} s
 */
function settled (s) {
  return [s.hits + s.leaseMisses, s.misses - s.leaseMisses]
}

/**
 * Reads `key` until a read is answered from the cache (bounded): the lease is proven.
 * @param {Client} client
 * @param {string} key
 */
async function untilHit (client, key) {
  const deadline = performance.now() + BOUND_MS
  for (;;) {
    const before = stats(client).hits
    await client.get(key)
    if (stats(client).hits > before) return
    assert.ok(performance.now() < deadline, `${key} never hit: ${JSON.stringify(stats(client))}`)
    await sleep(2)
  }
}

/**
 * A started store and the clients `fn` connects, all closed after it.
 * @param {(store: LocalStore, connect: (options?: import('mqstate').ConnectOptions) => Promise<Client>) => Promise<void>} fn
 */
async function withStore (fn) {
  const store = await LocalStore.start()
  /** @type {Client[]} */
  const clients = []
  try {
    await fn(store, async (options) => {
      const client = await Client.connect(store.url, options)
      clients.push(client)
      return client
    })
  } finally {
    for (const client of clients) await client.close()
    await store.stop()
  }
}

describe('client-side cache', () => {
  test('repeated gets hit; another client\'s SET arrives without a new miss', { timeout: TEST_MS }, () => withStore(async (store, connect) => {
    const writer = await connect()
    const reader = await connect({ cache: true, cacheFreshness: STEADY })
    await writer.set('asset:1', 'pump')
    const fresh = stats(reader)
    assert.deepEqual(Object.keys(fresh), COUNTERS, 'the vocabulary\'s names in camelCase, in its order')
    assert.deepEqual(Object.values(fresh), COUNTERS.map(() => 0))
    assert.equal(await text(reader, 'asset:1'), 'pump')
    const first = stats(reader)
    assert.deepEqual([settled(first), first.entries, first.bytes], [[0, 1], 1, 'asset:1pump'.length], JSON.stringify(first))
    assert.ok(first.leaseRenewals >= 1, `a renewal proves the lease: ${JSON.stringify(first)}`)
    for (let i = 0; i < 20; i++) assert.equal(await text(reader, 'asset:1'), 'pump')
    assert.deepEqual(settled(stats(reader)), [20, 1])
    assert.equal(await text(reader, 'missing'), null)
    assert.equal(await text(reader, 'missing'), null, 'a missing key is cached too')
    assert.deepEqual([...settled(stats(reader)), stats(reader).entries], [21, 2, 2])

    await writer.set('asset:1', 'valve')
    await until('the reader reads the new value', async () => (await text(reader, 'asset:1')) === 'valve')
    const after = stats(reader)
    assert.equal(settled(after)[1], 2, `the change came by notification, not by a read of the store: ${JSON.stringify(after)}`)
    assert.ok(after.invalidations >= 1, JSON.stringify(after))
    assert.ok(settled(after)[0] > 21, `the new value was read from the cache: ${JSON.stringify(after)}`)
  }))

  test('bypassCache reads the store and counts neither a hit nor a miss', { timeout: TEST_MS }, () => withStore(async (store, connect) => {
    const reader = await connect({ cache: 'true', cacheFreshness: STEADY })
    await reader.set('k', 'v')
    assert.equal(await text(reader, 'k'), 'v')
    await untilHit(reader, 'k') // the lease is proven: the next read is answered from memory
    const before = stats(reader)
    // The next GET the store sees fails: a read the cache answers never gets there, one that
    // bypasses it does.
    store.failNext(1, 'quota_exceeded', 'GET')
    assert.equal(await text(reader, 'k'), 'v', 'answered from the cache')
    await assert.rejects(reader.get('k', { bypassCache: true }), QuotaExceededError)
    assert.equal(await text(reader, 'k', { bypassCache: true }), 'v')
    assert.equal(await text(reader, 'k', { bypassCache: false }), 'v')
    const after = stats(reader)
    assert.deepEqual([after.hits, after.misses], [before.hits + 2, before.misses], JSON.stringify(after))
    await assert.rejects(reader.get('k', { bypassCache: /** @type {any} */ ('yes') }),
      (e) => e instanceof InvalidArgumentError && /bypassCache must be a boolean/.test(e.message))
  }))

  /**
   * Caches `key` = "old" in `reader`, applies `fault`, writes "new" from another client as
   * soon as it can, and checks that `reader` reads "new", that `invalidations` rose (the
   * entry went) and that `misses` rose (it was read from the store again).
   * @param {LocalStore} store
   * @param {Client} reader
   * @param {Client} writer
   * @param {'cut' | 'restart' | 'lost session'} fault
   */
  async function aFaultInvalidates (store, reader, writer, fault) {
    const key = `${fault}-key`
    await writer.set(key, 'old', { persist: true })
    assert.equal(await text(reader, key), 'old')
    await untilHit(reader, key)
    const connections = reader.linkInfo().connections
    const before = stats(reader)
    assert.ok(before.hits >= 1 && before.entries >= 1, `${fault}: cached: ${JSON.stringify(before)}`)
    if (fault === 'restart') {
      await store.restart({ keepData: true })
    } else {
      store.pause(200)
      await store.cutConnections()
    }
    // Written as soon as the writer is back: before, or while, the reader comes back.
    await until(`${fault}: the writer writes again`, () =>
      writer.set(key, 'new', { persist: true, timeoutMs: 2000 }).then(() => true, () => false))
    await until(`${fault}: the reader reconnects`, () => reader.connected && reader.linkInfo().connections > connections)
    await until(`${fault}: the reader reads the new value`, () =>
      text(reader, key, { timeoutMs: 2000 }).then((v) => v === 'new', () => false))
    const after = stats(reader)
    assert.ok(after.invalidations > before.invalidations, `${fault}: the entry was invalidated: ${JSON.stringify(before)} → ${JSON.stringify(after)}`)
    assert.ok(after.misses > before.misses, `${fault}: read from the store again: ${JSON.stringify(before)} → ${JSON.stringify(after)}`)
  }

  test('a cut, a restart and a lost session each invalidate what was cached', { timeout: 3 * TEST_MS }, () => withStore(async (store, connect) => {
    const writer = await connect()
    const reader = await connect({ cache: true, cacheFreshness: STEADY })
    await aFaultInvalidates(store, reader, writer, 'cut')
    await aFaultInvalidates(store, reader, writer, 'restart')
    assert.ok(reader.linkInfo().sessions >= 2, 'the restart lost the session')
    // A client whose MQTT session ends with each connection: the cut loses it.
    const noSession = await connect({ cache: true, cacheFreshness: STEADY, sessionExpiry: '0' })
    const sessions = noSession.linkInfo().sessions
    await aFaultInvalidates(store, noSession, writer, 'lost session')
    assert.ok(noSession.linkInfo().sessions > sessions, 'the cut lost the session')
  }))

  test('cacheStats() is null while the cache is off, and its settings turn it on', { timeout: TEST_MS }, () => withStore(async (store, connect) => {
    const plain = await connect()
    await plain.set('k', 'v')
    await plain.get('k')
    await plain.get('k')
    assert.equal(plain.cacheStats(), null)
    assert.equal((await connect({ cache: false })).cacheStats(), null)
    assert.equal((await connect({ cache: 'false' })).cacheStats(), null)
    // Every cache… setting turns it on; cacheKeys narrows what is counted.
    const narrow = await connect({ cacheKeys: 'asset:*', cacheMaxEntries: 10, cacheMaxBytes: 4096, cacheMaxStaleness: '2s' })
    assert.equal(await text(narrow, 'k'), 'v')
    assert.deepEqual(Object.values(stats(narrow)), COUNTERS.map(() => 0), 'k is not covered')
    await assert.rejects(connect({ cache: true, cacheMaxStaleness: /** @type {any} */ (2000) }),
      (e) => e instanceof InvalidArgumentError && /cacheMaxStaleness is a duration/.test(e.message))
    await assert.rejects(connect({ cacheMaxEntries: 0 }), InvalidArgumentError)
    await assert.rejects(connect({ cache: true, cacheFreshness: /** @type {any} */ (300) }),
      (e) => e instanceof InvalidArgumentError && /cacheFreshness is a duration/.test(e.message))
    await assert.rejects(connect({ cacheFreshness: '5ms' }),
      (e) => e instanceof InvalidArgumentError && /cache_freshness must be at least 10ms/.test(e.message))
    assert.ok(stats(await connect({ cacheFreshness: '300ms' })) !== null, 'cacheFreshness turns the cache on')
    await narrow.close()
    assert.throws(() => narrow.cacheStats(), ClosedError)
  }))

  /** The freshness bound of the lease tests: short, so that a lagging read shows. */
  const FRESHNESS_MS = 300

  /**
   * A reader of "k" ("old", cached, the lease proven, with the given bound) and a writer.
   * @param {(options?: import('mqstate').ConnectOptions) => Promise<Client>} connect
   * @param {number} freshnessMs
   */
  async function warmReader (connect, freshnessMs) {
    const reader = await connect({ cache: true, cacheFreshness: `${freshnessMs}ms` })
    const writer = await connect()
    await writer.set('k', 'old')
    await untilHit(reader, 'k')
    return { reader, writer }
  }

  /**
   * Writes "new" to "k" with `writer` and reads it from `reader` until it reads "new": every
   * read that answers "old" must have begun less than `freshnessMs` after the write was
   * acknowledged. Resolves to the longest such lag.
   * @param {Client} reader
   * @param {Client} writer
   * @param {number} freshnessMs
   */
  async function lagOf (reader, writer, freshnessMs) {
    await writer.set('k', 'new')
    const acknowledged = performance.now()
    let lag = 0
    for (;;) {
      const began = performance.now()
      const got = await text(reader, 'k')
      if (got === 'new') return lag
      assert.equal(got, 'old')
      lag = Math.max(lag, began - acknowledged)
      assert.ok(began - acknowledged < freshnessMs,
        `a cached read lagged ${(began - acknowledged).toFixed(1)} ms behind the store (bound ${freshnessMs} ms): ${JSON.stringify(stats(reader))}`)
      assert.ok(performance.now() - acknowledged < BOUND_MS, 'never read the new value')
      await sleep(2)
    }
  }

  /**
   * Reads "k" (whatever it answers) until the reader's lease has failed (bounded).
   * @param {Client} reader
   */
  async function untilLeaseFailed (reader) {
    await until(`the lease fails: ${JSON.stringify(stats(reader))}`, async () => {
      if (stats(reader).leaseFailures > 0) return true
      await reader.get('k')
      return stats(reader).leaseFailures > 0
    })
  }

  test('a silent notification path is noticed within the bound', { timeout: TEST_MS }, () => withStore(async (store, connect) => {
    const { reader, writer } = await warmReader(connect, FRESHNESS_MS)
    // Everything the store publishes is lost for 2 s: the write's notification, and the
    // lease's renewals.
    store.dropNotifications(2000)
    await lagOf(reader, writer, FRESHNESS_MS)
    assert.ok(store.droppedNotifications() >= 1)
    await untilLeaseFailed(reader)
    assert.ok(stats(reader).leaseMisses >= 1, `reads went to the store meanwhile: ${JSON.stringify(stats(reader))}`)
    // Once the path is back, the key is registered anew and others' writes arrive again.
    await sleep(2000) // the mute's span: this test is about it passing
    await untilHit(reader, 'k')
    await writer.set('k', 'newer')
    await until('the reader reads "newer"', async () => (await text(reader, 'k')) === 'newer')
    await untilHit(reader, 'k')
  }))

  test('a store that lost its registrations is noticed within the bound', { timeout: TEST_MS }, () => withStore(async (store, connect) => {
    const { reader, writer } = await warmReader(connect, FRESHNESS_MS)
    // The store restarted behind its broker: connections up, registrations gone.
    assert.ok(store.forgetRegistrations() >= 2, 'k and the canary')
    await lagOf(reader, writer, FRESHNESS_MS)
    await untilLeaseFailed(reader)
    // Registered anew on the next reads: changes come by notification again.
    await untilHit(reader, 'k')
    const misses = stats(reader).misses
    await writer.set('k', 'newer')
    await until('the reader reads "newer"', async () => (await text(reader, 'k')) === 'newer')
    await untilHit(reader, 'k')
    const s = stats(reader)
    assert.ok(s.misses - misses <= s.leaseMisses + 1, `the change came by notification, not by reading the store each time: ${JSON.stringify(s)}`)
  }))

  test('an idle cache sends nothing, and renews when read again', { timeout: TEST_MS }, () => withStore(async (store, connect) => {
    const freshnessMs = 200
    const { reader } = await warmReader(connect, freshnessMs)
    await sleep(freshnessMs) // this test is about time passing with nothing read
    const idle = stats(reader)
    await sleep(freshnessMs * 5)
    const after = stats(reader)
    assert.equal(after.leaseRenewals, idle.leaseRenewals, 'no renewal while nothing is read')
    // The first read after finds the lease expired, goes to the store, and renews.
    assert.equal(await text(reader, 'k'), 'old')
    const s = stats(reader)
    // It expired (or, on a machine too busy for the renewal sent as the warm-up ended to come
    // back within the bound, failed): either way the read went to the store.
    assert.deepEqual([s.hits, s.misses], [after.hits, after.misses + 1], JSON.stringify(s))
    assert.equal(s.leaseRenewals, after.leaseRenewals + 1, JSON.stringify(s))
    assert.equal(s.leaseExpiries + s.leaseFailures, after.leaseExpiries + after.leaseFailures + 1, JSON.stringify(s))
    await untilHit(reader, 'k')
  }))

  test('a loop of hits lets a setImmediate callback beside it run', { timeout: TEST_MS }, () => withStore(async (store, connect) => {
    // A long lease: every read of the loop is a hit, none settles a native Promise.
    const client = await connect({ cache: true, cacheFreshness: '60s' })
    await client.set('k', 'v')
    await untilHit(client, 'k')
    let ran = false
    setImmediate(() => { ran = true })
    const hits = stats(client).hits
    let reads = 0
    while (!ran) {
      await client.get('k')
      reads++
      // The binding's CACHE_HIT_YIELD_EVERY (lib/client.js).
      assert.ok(reads <= 64, `${reads} hits in a row and the callback beside never ran`)
    }
    assert.equal(stats(client).hits - hits, reads, `every read a hit: ${JSON.stringify(stats(client))}`)
  }))
})
