// SCAN through the client: `for await` over keys, `nextPage()` to the end and after it,
// binary keys and patterns, argument errors by code, and pages that time out or are aborted
// leaving the pager usable (retried from its token, not restarted).
import { after, before, describe, test } from 'node:test'
import assert from 'node:assert/strict'
import { setTimeout as sleep } from 'node:timers/promises'
import { Client, MqstateError, CallCancelledError, Pager } from 'mqstate'
import { LiveStore, haveMosquitto, ns } from './live.mjs'

/** The emulator's default page size (keys): more keys than this need several pages. */
const PAGE = 500

/**
 * Sets `n` keys `<prefix>k/0000` … and returns them sorted, as Buffers.
 * @param {Client} client @param {string} prefix @param {number} n
 */
async function fill (client, prefix, n) {
  const keys = Array.from({ length: n }, (_, i) => Buffer.from(`${prefix}k/${String(i).padStart(4, '0')}`))
  await Promise.all(keys.map((k) => client.set(k, 'v')))
  return keys
}

/** @param {Buffer[]} keys */
function sorted (keys) {
  return [...keys].sort(Buffer.compare)
}

/**
 * Asserts that `promise` rejects with an MqstateError of `code`; returns the error.
 * @param {Promise<unknown>} promise @param {string} code
 */
async function rejectsCode (promise, code) {
  /** @type {any} */
  let caught
  await assert.rejects(promise, (e) => { caught = e; return true })
  assert.ok(caught instanceof MqstateError, `not an MqstateError: ${caught}`)
  assert.equal(caught.code, code, caught.message)
  return caught
}

describe('scan (embedded)', () => {
  /** @type {LiveStore} */
  let live
  /** @type {Client} */
  let client
  before(async () => {
    live = await LiveStore.start('embedded')
    client = await Client.connect(live.url)
  })
  after(async () => {
    await client.close()
    await live.close()
  })

  test('for await yields every key once, as Buffers', async () => {
    const k = ns()
    const keys = await fill(client, k, PAGE + 20)
    await client.set(`${k}other`, 'v')
    /** @type {Buffer[]} */
    const got = []
    for await (const key of client.scan(`${k}k/*`)) {
      assert.ok(Buffer.isBuffer(key))
      got.push(key)
    }
    assert.deepEqual(sorted(got), keys)
  })

  test('nextPage page by page, then null after the last, every time', async () => {
    const k = ns()
    const keys = await fill(client, k, PAGE + 20)
    const pager = client.scan(Buffer.from(`${k}k/*`), { timeoutMs: 5000 })
    assert.ok(pager instanceof Pager)
    assert.equal(pager.done, false)
    const first = await pager.nextPage()
    assert.ok(first !== null && first.length > 0 && first.length <= PAGE)
    assert.equal(pager.done, false)
    /** @type {Buffer[]} */
    const rest = []
    for (let page = await pager.nextPage(); page !== null; page = await pager.nextPage()) rest.push(...page)
    assert.equal(pager.done, true)
    assert.deepEqual(sorted([...first, ...rest]), keys)
    assert.equal(await pager.nextPage(), null)
    assert.equal(await pager.nextPage(), null)
    for await (const key of pager) assert.fail(`a key after the end: ${key}`)
  })

  test('an empty namespace is one final empty page', async () => {
    const pager = client.scan(`${ns()}*`)
    assert.deepEqual(await pager.nextPage(), [])
    assert.equal(pager.done, true)
    assert.equal(await pager.nextPage(), null)
  })

  test('binary keys and patterns are byte-exact', async () => {
    const k = Buffer.from(ns())
    const odd = Buffer.concat([k, Buffer.from([0x62, 0x2f, 0x0d, 0x0a, 0x00, 0xff])])
    const plain = Buffer.concat([k, Buffer.from('b/A')])
    await client.set(odd, '1')
    await client.set(plain, '2')
    /** @type {Buffer[]} */
    const all = []
    for await (const key of client.scan(Buffer.concat([k, Buffer.from('b/*')]))) all.push(key)
    assert.deepEqual(sorted(all), sorted([odd, plain]))
    const page = await client.scan(new Uint8Array(Buffer.concat([k, Buffer.from('b/\r\n*')]))).nextPage()
    assert.deepEqual(page, [odd])
    const escaped = await client.scan(Buffer.concat([k, Buffer.from('b/\\A')])).nextPage()
    assert.deepEqual(escaped, [plain])
  })

  test('an empty pattern and bad options throw invalid_argument; a closed client closed', async () => {
    for (const pattern of ['', Buffer.alloc(0)]) {
      assert.throws(() => client.scan(pattern), (/** @type {any} */ e) => e instanceof MqstateError && e.code === 'invalid_argument')
    }
    assert.throws(() => client.scan('x*', { timeoutMs: -1 }), (/** @type {any} */ e) => e.code === 'invalid_argument')
    assert.throws(() => client.scan('x*', { timeoutMs: /** @type {any} */ ('soon') }), (/** @type {any} */ e) => e.code === 'invalid_argument')
    assert.throws(() => client.scan(/** @type {any} */ (42)), (/** @type {any} */ e) => e.code === 'invalid_argument')
    assert.throws(() => client.scan('x*', { signal: /** @type {any} */ ({}) }), (/** @type {any} */ e) => e.code === 'invalid_argument')
    const other = await Client.connect(live.url)
    const pager = other.scan('x*')
    await other.close()
    assert.throws(() => other.scan('x*'), (/** @type {any} */ e) => e.code === 'closed')
    await rejectsCode(pager.nextPage(), 'closed')
  })

  test('an already aborted signal rejects before anything is sent', async () => {
    const pager = client.scan(`${ns()}*`, { signal: AbortSignal.abort() })
    await assert.rejects(pager.nextPage(), CallCancelledError)
    assert.deepEqual(await pager.nextPage({ signal: new AbortController().signal }), [])
  })
})

describe('scan pages that fail (mosquitto, store stopped)', { skip: !haveMosquitto }, () => {
  /** @type {LiveStore} */
  let live
  /** @type {Client} */
  let client
  before(async () => {
    live = await LiveStore.start('mosquitto')
    client = await Client.connect(live.url)
  })
  after(async () => {
    await client.close()
    await live.close()
  })

  test('a timed-out or aborted page is retried from the same token', async () => {
    const k = ns()
    const keys = await fill(client, k, PAGE + 50)
    const pager = client.scan(`${k}k/*`, { timeoutMs: 500 })
    const first = await pager.nextPage()
    assert.ok(first !== null)
    assert.equal(first.length, PAGE)
    assert.equal(pager.done, false)

    await live.stopStore()
    for (let i = 0; i < 2; i++) {
      await rejectsCode(pager.nextPage(), 'timeout')
      assert.equal(pager.done, false)
    }
    // The scan's signal aborts the page in flight.
    const controller = new AbortController()
    const slow = client.scan(`${k}k/*`, { timeoutMs: 30000, signal: controller.signal })
    const inFlight = slow.nextPage()
    await sleep(200)
    controller.abort(new Error('enough'))
    const aborted = await rejectsCode(inFlight, 'cancelled')
    assert.ok(aborted instanceof CallCancelledError)
    assert.equal(slow.done, false)

    // The store comes back empty; refilled with the same keys, the scan goes on after the
    // first page instead of starting again.
    await live.startStore()
    await fill(client, k, PAGE + 50)
    /** @type {Buffer[]} */
    const rest = []
    for await (const key of client.scan(`${k}k/*`, { timeoutMs: 5000 })) rest.push(key)
    assert.equal(rest.length, PAGE + 50, 'a fresh scan sees every key')
    /** @type {Buffer[]} */
    const after = []
    for (let page = await pager.nextPage(); page !== null; page = await pager.nextPage()) after.push(...page)
    assert.equal(after.length, 50, 'the scan restarted instead of continuing from its token')
    assert.deepEqual(sorted([...first, ...after]), keys)
    assert.equal(pager.done, true)
  })
})
