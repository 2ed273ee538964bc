// The client against live stores (mqstate serve's embedded broker, and mosquitto with
// mqstate serve --broker): every method and option, errors by code, AbortSignal, 1,000
// concurrent sets, and the faults (store and broker restarts: nothing outlives its timeout).
import { after, before, describe, test } from 'node:test'
import assert from 'node:assert/strict'
import { setTimeout as sleep } from 'node:timers/promises'
import { readFileSync } from 'node:fs'
import path from 'node:path'
import {
  Client, MqstateError, StoreError, ConnectError, CallCancelledError, Value, errorCodes, settings, hlc,
  FencingTokenSkewError, FencingTokenLowerVersionError, FencingTokenRequiredError, ConnectRefusedError,
  InvalidArgumentError, MalformedError, ClosedError, MqstateTimeoutError, CallbackError
} from 'mqstate'
import { LiveStore, freePort, haveMosquitto, ns, projectRoot } from './live.mjs'

/**
 * Asserts that `promise` rejects with an MqstateError of `code`; returns the error.
 * @param {Promise<unknown>} promise
 * @param {string} code
 */
async function rejectsCode (promise, code) {
  /** @type {any} */
  let caught
  await assert.rejects(promise, (e) => { caught = e; return true })
  assert.ok(caught instanceof MqstateError, `not an MqstateError: ${caught}`)
  assert.equal(caught.code, code, caught.message)
  return caught
}

for (const kind of /** @type {const} */ (['embedded', 'mosquitto'])) {
  describe(`client (${kind})`, { skip: kind === 'mosquitto' && !haveMosquitto }, () => {
    /** @type {LiveStore} */
    let live
    /** @type {Client} */
    let client
    before(async () => {
      live = await LiveStore.start(kind)
      client = await Client.connect(live.url)
    })
    after(async () => {
      await client.close()
      await live.close()
    })

    test('set, get, delete, vdel with every key and value type', async () => {
      const k = ns()
      for (const key of [`${k}s`, Buffer.from(`${k}b`), new Uint8Array(Buffer.from(`${k}u`))]) {
        for (const value of ['text', Buffer.from([0, 255, 13, 10]), new Uint8Array([1, 2, 3])]) {
          const r = await client.set(key, value)
          assert.equal(r.applied, true)
          assert.ok(r.version instanceof hlc.Hlc)
          const got = await client.get(key)
          assert.ok(got instanceof Value)
          assert.deepEqual(got.value, Buffer.from(typeof value === 'string' ? Buffer.from(value) : value))
          assert.equal(got.version?.toString(), r.version.toString())
        }
        assert.equal(await client.vdel(key, 'other'), 'value_mismatch')
        assert.equal(await client.vdel(key, new Uint8Array([1, 2, 3])), 'deleted')
        assert.equal(await client.vdel(key, 'x'), 'not_found')
        assert.equal(await client.get(key), null)
        await client.set(key, 'v')
        assert.equal(await client.delete(key), 1)
        assert.equal(await client.delete(key), 0)
      }
      const got = await client.set(`${k}t`, 'héllo').then(() => client.get(`${k}t`))
      assert.equal(got?.text, 'héllo')
    })

    test('set options: condition, expiry, fencingToken, persist, timeout', async () => {
      const k = ns()
      assert.equal((await client.set(`${k}a`, '1', { condition: 'nx' })).applied, true)
      const refused = await client.set(`${k}a`, '2', { condition: 'nx' })
      assert.deepEqual(refused, { applied: false, version: null })
      assert.equal((await client.set(`${k}a`, '1', { condition: 'nex' })).applied, true)
      assert.equal((await client.set(`${k}a`, '3', { condition: 'nex' })).applied, false)
      await client.set(`${k}e`, 'x', { expiryMs: 200 })
      await new Promise((resolve) => setTimeout(resolve, 600))
      assert.equal(await client.get(`${k}e`), null)
      assert.equal((await client.set(`${k}p`, 'x', { persist: true, timeoutMs: 5000 })).applied, true)
      const lock = client.lock(`${k}lock`)
      const token = await lock.tryAcquire({ leaseMs: 5000 })
      assert.ok(token)
      await client.set(`${k}f`, 'fenced', { fencingToken: token })
      await rejectsCode(client.set(`${k}f`, 'unfenced'), 'fencing_token_required')
      await client.set(`${k}f`, 'again', { fencingToken: token.toString() })
      await rejectsCode(client.delete(`${k}f`), 'fencing_token_required')
      await rejectsCode(client.vdel(`${k}f`, 'again'), 'fencing_token_required')
      assert.equal(await client.vdel(`${k}f`, 'again', { fencingToken: token }), 'deleted')
      await lock.release()
      await rejectsCode(client.set(`${k}x`, 'v', { condition: /** @type {any} */ ('xx') }), 'invalid_argument')
      await rejectsCode(client.set(`${k}x`, 'v', { expiryMs: -1 }), 'invalid_argument')
      await rejectsCode(client.set(`${k}x`, 'v', { expiryMs: 0 }), 'invalid_argument')
      await rejectsCode(client.set(`${k}x`, 'v', { fencingToken: 'not a clock' }), 'malformed')
      await rejectsCode(client.set(/** @type {any} */ (42), 'v'), 'invalid_argument')
      await rejectsCode(client.get(''), 'invalid_argument')
    })

    test('options: unknown names refused, unit-less duration names refused naming the new one', async () => {
      const k = ns()
      const old = await rejectsCode(client.set(`${k}o`, 'v', /** @type {any} */ ({ expiry: 60 })), 'invalid_argument')
      assert.match(old.message, /option expiry is now expiryMs \(milliseconds\)/)
      assert.equal(await client.get(`${k}o`), null, 'nothing was sent')
      const typo = await rejectsCode(client.get(`${k}o`, /** @type {any} */ ({ timout: 5 })), 'invalid_argument')
      assert.match(typo.message, /unknown option timout/)
      assert.throws(() => client.lock(`${k}L`, /** @type {any} */ ({ lease: 5 })), /option lease is now leaseMs/)
      assert.throws(() => client.election(`${k}E`, 'c', /** @type {any} */ ({ term: 5 })), /option term is now termMs/)
      await rejectsCode(client.lock(`${k}L`).acquire(/** @type {any} */ ({ timeout: 5 })), 'invalid_argument')
      await rejectsCode(client.lock(`${k}L`).tryAcquire({ leaseMs: 0.5 }), 'invalid_argument')
      await rejectsCode(client.set(`${k}x`, 'v', { expiryMs: 0.5 }), 'invalid_argument')
      await rejectsCode(client.set(`${k}x`, 'v', { expiryMs: Number.NaN }), 'invalid_argument')
      await rejectsCode(client.set(`${k}x`, 'v', { expiryMs: /** @type {any} */ ('60s') }), 'invalid_argument')
      const sub = client.observe(`${k}o`)
      await rejectsCode(sub.next(/** @type {any} */ ({ timeout: 5 })), 'invalid_argument')
      const late = await rejectsCode(sub.next({ timeoutMs: 50 }), 'timeout')
      assert.ok(late instanceof MqstateTimeoutError)
      sub.close()
      // the lock's lease is its acquires' lease; a call's own lease overrides it
      const lock = client.lock(`${k}L`, { leaseMs: 2500 })
      const status = lock.watchStatus()
      await lock.acquire()
      let held = await status.next({ timeoutMs: 5000 })
      while (held.value?.type === 'status' && held.value.state !== 'held') held = await status.next({ timeoutMs: 5000 })
      assert.equal(held.value?.type === 'status' && held.value.leaseMs, 2500)
      await lock.release()
      await lock.tryAcquire({ leaseMs: 1500 })
      held = await status.next({ timeoutMs: 5000 })
      while (held.value?.type === 'status' && held.value.state !== 'held') held = await status.next({ timeoutMs: 5000 })
      assert.equal(held.value?.type === 'status' && held.value.leaseMs, 1500)
      await lock.release()
      status.close()
    })

    test('every user-provokable error kind by code and class', async () => {
      const k = ns()
      const store = await rejectsCode(client.set(`${k}f`, 'v', { fencingToken: '004102444800000:00000:far-future' }), 'fencing_token_skew')
      assert.ok(store instanceof FencingTokenSkewError && store instanceof StoreError)
      assert.equal(store.name, 'FencingTokenSkewError')
      assert.equal(typeof store.message, 'string')
      const lock = client.lock(`${k}L`)
      const t1 = await lock.tryAcquire({ leaseMs: 5000 })
      await client.set(`${k}g`, 'v', { fencingToken: /** @type {any} */ (t1) })
      const t2 = await lock.renew()
      await client.set(`${k}g`, 'v', { fencingToken: /** @type {any} */ (t2) })
      const lower = await rejectsCode(client.set(`${k}g`, 'v', { fencingToken: /** @type {any} */ (t1) }), 'fencing_token_lower_version')
      assert.ok(lower instanceof FencingTokenLowerVersionError)
      assert.ok((await rejectsCode(client.delete(`${k}g`), 'fencing_token_required')) instanceof FencingTokenRequiredError)
      await lock.release()
      await rejectsCode(lock.renew().then((t) => { if (t === null) throw new MqstateError('not held', 'not_held') }), 'not_held')
      const refused = await rejectsCode(Client.connect(`mqtt://127.0.0.1:${await freePort()}`, { connectTimeout: '2s' }), 'connect_refused')
      assert.ok(refused instanceof ConnectRefusedError && refused instanceof ConnectError)
      assert.ok((await rejectsCode(Client.connect(live.url, { hots: 'x' }), 'invalid_argument')) instanceof InvalidArgumentError)
      await rejectsCode(Client.connect(live.url, { keepAlive: 'soon' }), 'invalid_argument')
      await rejectsCode(Client.connect('http://nope'), 'invalid_argument')
      assert.ok((await rejectsCode(client.set(`${k}x`, 'v', { fencingToken: 'not a clock' }), 'malformed')) instanceof MalformedError)
      const ac = new AbortController()
      ac.abort()
      const aborted = await rejectsCode(client.get(`${k}x`, { signal: ac.signal }), 'cancelled')
      assert.ok(aborted instanceof CallCancelledError)
      assert.equal(aborted.name, 'AbortError')
      const other = await Client.connect(live.url)
      await other.close()
      const closed = await rejectsCode(other.get(`${k}x`), 'closed')
      assert.ok(closed instanceof ClosedError)
      // The same words in every language (core/vocabulary.json's closed_message).
      const vocabulary = JSON.parse(readFileSync(path.join(projectRoot, 'core', 'vocabulary.json'), 'utf8'))
      assert.equal(closed.message, vocabulary.closed_message)
      assert.throws(() => other.observe(`${k}x`), ClosedError)
      await other.close() // idempotent
      const fail = new CallbackError('mine')
      assert.equal(fail.code, 'callback')
      await assert.rejects(lock.edit(`${k}x`, () => { throw fail }), (err) => err === fail)
      for (const code of ['invalid_argument', 'malformed', 'timeout', 'connect_refused', 'closed', 'not_held', 'cancelled', 'callback', 'fencing_token_required', 'fencing_token_skew', 'fencing_token_lower_version']) {
        assert.ok(errorCodes().includes(code), code)
      }
    })

    test('settings by name: camelCase names, text as the core parses it, durations never numbers', async () => {
      const names = settings().map((s) => s.name)
      for (const name of ['host', 'port', 'clientId', 'keepAlive', 'requestTimeout', 'observerCapacity', 'connectTimeout']) {
        assert.ok(names.includes(name), name)
      }
      const refused = await rejectsCode(Client.connect(live.url, /** @type {any} */ ({ requestTimeout: 2000 })), 'invalid_argument')
      assert.match(refused.message, /requestTimeout is a duration: give it as text, such as '2000ms' or '2s'/)
      await rejectsCode(Client.connect(live.url, { request_timeout: 5 }), 'invalid_argument')
      await rejectsCode(Client.connect(live.url, { port: /** @type {any} */ ({}) }), 'invalid_argument')
      const url = new URL(live.url)
      const c = await Client.connect({ host: url.hostname, port: Number(url.port), clientId: `node-settings-${Date.now()}`, keepAlive: '30s', requestTimeout: '2s', cleanStart: true, observerCapacity: 8 })
      assert.match(c.clientId, /^node-settings-/)
      assert.equal(c.connected, true)
      assert.equal(c.linkInfo().connections, 1)
      await c.close()
      assert.equal(c.connected, false)
    })

    test('1,000 concurrent sets all apply, versions all distinct', async () => {
      const k = ns()
      const results = await Promise.all(Array.from({ length: 1000 }, (_, i) => client.set(`${k}${i}`, String(i))))
      assert.equal(results.filter((r) => r.applied).length, 1000)
      assert.equal(new Set(results.map((r) => String(r.version))).size, 1000)
      const values = await Promise.all(Array.from({ length: 1000 }, (_, i) => client.get(`${k}${i}`)))
      values.forEach((v, i) => assert.equal(v?.text, String(i)))
    })

    test('abort of a pending acquire and campaign cancels them', async () => {
      const k = ns()
      const other = await Client.connect(live.url)
      const held = other.lock(`${k}L`)
      assert.ok(await held.tryAcquire({ leaseMs: 10000 }))
      const ac = new AbortController()
      const waiting = client.lock(`${k}L`).acquire({ signal: ac.signal })
      setTimeout(() => ac.abort(new Error('enough')), 200)
      const e = await rejectsCode(waiting, 'cancelled')
      assert.equal(/** @type {Error} */ (e.cause).message, 'enough')
      assert.ok(await other.election(`${k}E`, 'first').tryCampaign({ termMs: 10000 }))
      const ac2 = new AbortController()
      const campaign = client.election(`${k}E`, 'second').campaign({ signal: ac2.signal })
      setTimeout(() => ac2.abort(), 200)
      await rejectsCode(campaign, 'cancelled')
      await rejectsCode(client.lock(`${k}L`).acquire({ timeoutMs: 300 }), 'timeout')
      await other.close()
    })

    test('locks: holder, fencing token, watchHolder, watchStatus, autoRenew, edit', async () => {
      const k = ns()
      const lock = client.lock(`${k}L`, { leaseMs: 3000, sessionId: 's1' })
      assert.match(lock.holderId, /:s1$/)
      assert.deepEqual(lock.key, Buffer.from(`${k}L`))
      assert.equal(lock.isHeld, false)
      assert.equal(lock.fencingToken, null)
      const status = lock.watchStatus()
      const holders = lock.watchHolder()
      await holders.ready()
      assert.equal((await status.next()).value?.type, 'status')
      const first = await holders.next()
      assert.equal(first.value?.type === 'holder' && first.value.holder, null)
      const token = await lock.acquire()
      assert.equal(lock.isHeld, true)
      assert.equal(String(lock.fencingToken), token.toString())
      assert.equal(await lock.holder(), lock.holderId)
      const held = await status.next({ timeoutMs: 5000 })
      assert.ok(held.value?.type === 'status' && held.value.state === 'held' && held.value.leaseMs === 3000)
      const change = await holders.next({ timeoutMs: 5000 })
      assert.ok(change.value?.type === 'holder' && change.value.holder === lock.holderId)
      lock.setAutoRenew(500)
      assert.equal(await lock.release(), true)
      assert.equal(await lock.release(), false)
      holders.close()
      status.close()
      const renewing = client.lock(`${k}R`, { leaseMs: 1000, autoRenewMs: 300 })
      const t0 = await renewing.acquire()
      await new Promise((resolve) => setTimeout(resolve, 1500))
      assert.equal(renewing.isHeld, true)
      assert.equal(renewing.fencingToken?.compareTime(t0), 1)
      await renewing.release()
      await client.set(`${k}n`, '1')
      const r = await lock.edit(`${k}n`, async (prev) => String(Number(prev?.text) + 1))
      assert.equal(r.kind, 'set')
      assert.equal(r.previous?.text, '1')
      assert.equal(r.attempts, 1)
      assert.equal((await client.get(`${k}n`))?.text, '2')
      const bad = await assert.rejects(lock.edit(`${k}n`, () => /** @type {any} */ (42)), TypeError).then(() => true)
      assert.ok(bad)
      const thrown = { not: 'an error' }
      await assert.rejects(lock.edit(`${k}n`, () => Promise.reject(thrown)), (e) => e === thrown)
      assert.equal(await lock.holder(), null)
    })

    test('elections: campaign, tryCampaign, resign, leader, isLeader, watchLeader, watchStatus', async () => {
      const k = ns()
      const a = client.election(`${k}E`, 'alice', { termMs: 3000 })
      const other = await Client.connect(live.url)
      const b = other.election(`${k}E`, 'bob', { termMs: 3000 })
      assert.equal(a.candidateId, 'alice')
      assert.equal(await a.leader(), null)
      const leaders = a.watchLeader()
      await leaders.ready()
      const token = await a.campaign({ timeoutMs: 5000 })
      assert.ok(token instanceof hlc.Hlc)
      assert.equal(a.isLeader, true)
      assert.equal(a.fencingToken?.toString(), token.toString())
      assert.equal(await b.tryCampaign(), false)
      assert.equal(await b.leader(), 'alice')
      const bobWins = b.campaign({ timeoutMs: 10000 })
      assert.equal(await a.resign(), true)
      await bobWins
      assert.equal(b.isLeader, true)
      assert.equal(a.isLeader, false)
      const seen = []
      for await (const event of leaders) {
        if (event.type === 'holder') seen.push(event.holder)
        if (seen.includes('bob')) break
      }
      assert.ok(seen.includes('alice') && seen.includes('bob'), String(seen))
      assert.equal(leaders.closed, true)
      const status = b.watchStatus()
      const st = await status.next()
      assert.ok(st.value?.type === 'status' && st.value.state === 'held')
      status.close()
      await b.resign()
      await other.close()
    })
  })
}

describe('faults (mosquitto + serve --broker): nothing outlives its timeout', { skip: !haveMosquitto }, () => {
  test('store restart and broker restart mid-request', { timeout: 60000 }, async () => {
    const live = await LiveStore.start('mosquitto')
    try {
      const client = await Client.connect(live.url, { requestTimeout: '1s', reconnectMaxDelay: '200ms' })
      const k = ns()
      await client.set(`${k}a`, '1')
      await live.stopStore()
      let started = Date.now()
      // mosquitto routes it to nobody (PUBACK 0x10) every time: a timeout (1 s, shorter than
      // the no-store window) that names the cause, and the write was never delivered.
      const timedOut = await rejectsCode(client.set(`${k}a`, '2'), 'timeout')
      assert.match(timedOut.message, /no state store is subscribed/)
      assert.equal(timedOut.mayHaveApplied, false)
      assert.ok(Date.now() - started < 3000, `took ${Date.now() - started} ms`)
      await live.startStore()
      assert.equal((await client.set(`${k}a`, '3')).applied, true)
      // Nobody answers the next request (the store is down), so it is surely still in
      // flight when the broker goes: a fast store would otherwise answer it first.
      await live.stopStore()
      const pending = client.set(`${k}a`, '4', { timeoutMs: 1500 })
      await sleep(50)
      await live.stopBroker()
      started = Date.now()
      /** @type {any} */
      let lost
      await assert.rejects(pending, (err) => { lost = err; return true })
      assert.ok(lost instanceof MqstateError && ['timeout', 'connection_lost'].includes(lost.code), String(lost))
      assert.ok(Date.now() - started < 4000, `took ${Date.now() - started} ms`)
      await live.startBroker()
      await live.restartStore()
      for (let i = 0; ; i++) {
        try {
          assert.equal((await client.set(`${k}a`, '5', { timeoutMs: 1000 })).applied, true)
          break
        } catch (err) {
          if (i > 20) throw err
          await new Promise((resolve) => setTimeout(resolve, 200))
        }
      }
      await client.close()
    } finally {
      await live.close()
    }
  })
})
