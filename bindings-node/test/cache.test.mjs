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
    const reader = await connect({ cache: true })
    await writer.set('asset:1', 'pump')
    const fresh = stats(reader)
    assert.deepEqual(Object.keys(fresh), vocabulary.cache_counters, 'the vocabulary\'s names, in its order')
    assert.deepEqual(Object.values(fresh), [0, 0, 0, 0, 0, 0])
    assert.equal(await text(reader, 'asset:1'), 'pump')
    assert.deepEqual(stats(reader), { hits: 0, misses: 1, evictions: 0, invalidations: 0, entries: 1, bytes: 'asset:1pump'.length })
    for (let i = 0; i < 20; i++) assert.equal(await text(reader, 'asset:1'), 'pump')
    assert.deepEqual([stats(reader).hits, stats(reader).misses], [20, 1])
    assert.equal(await text(reader, 'missing'), null)
    assert.equal(await text(reader, 'missing'), null, 'a missing key is cached too')
    assert.deepEqual([stats(reader).hits, stats(reader).misses, stats(reader).entries], [21, 2, 2])

    await writer.set('asset:1', 'valve')
    await until('the reader reads the new value', async () => (await text(reader, 'asset:1')) === 'valve')
    const after = stats(reader)
    assert.equal(after.misses, 2, `the change came by notification, not by a read of the store: ${JSON.stringify(after)}`)
    assert.ok(after.invalidations >= 1, JSON.stringify(after))
    assert.ok(after.hits > 21, JSON.stringify(after))
  }))

  test('bypassCache reads the store and counts neither a hit nor a miss', { timeout: TEST_MS }, () => withStore(async (store, connect) => {
    const reader = await connect({ cache: 'true' })
    await reader.set('k', 'v')
    assert.equal(await text(reader, 'k'), 'v')
    const before = stats(reader)
    assert.deepEqual([before.hits, before.misses], [0, 1])
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
    assert.equal(await text(reader, key), 'old')
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
    const reader = await connect({ cache: true })
    await aFaultInvalidates(store, reader, writer, 'cut')
    await aFaultInvalidates(store, reader, writer, 'restart')
    assert.ok(reader.linkInfo().sessions >= 2, 'the restart lost the session')
    // A client whose MQTT session ends with each connection: the cut loses it.
    const noSession = await connect({ cache: true, sessionExpiry: '0' })
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
    assert.deepEqual(stats(narrow), { hits: 0, misses: 0, evictions: 0, invalidations: 0, entries: 0, bytes: 0 }, 'k is not covered')
    await assert.rejects(connect({ cache: true, cacheMaxStaleness: /** @type {any} */ (2000) }),
      (e) => e instanceof InvalidArgumentError && /cacheMaxStaleness is a duration/.test(e.message))
    await assert.rejects(connect({ cacheMaxEntries: 0 }), InvalidArgumentError)
    await narrow.close()
    assert.throws(() => narrow.cacheStats(), ClosedError)
  }))
})
