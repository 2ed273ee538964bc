// Observation: ordering, STOP on the wire when a `for await` loop is left, connection
// events and resync after a store restart, the slow reader bounded by observerCapacity.
import { after, before, describe, test } from 'node:test'
import assert from 'node:assert/strict'
import { Client, Change } from 'mqstate'
import { LiveStore, Tap, haveMosquitto, ns } from './live.mjs'

describe('observe (mosquitto + serve --broker)', { skip: !haveMosquitto }, () => {
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

  test('changes arrive in order, sets and deletes, with versions', async () => {
    const key = `${ns()}k`
    const sub = await client.observe(key).ready()
    const versions = []
    for (let i = 0; i < 50; i++) versions.push((await client.set(key, String(i))).version)
    await client.delete(key)
    for (let i = 0; i < 50; i++) {
      const { value } = await sub.next({ timeoutMs: 5000 })
      assert.ok(value instanceof Change)
      assert.equal(value.kind, 'set')
      assert.equal(value.text, String(i))
      assert.equal(String(value.version), String(versions[i]))
      assert.deepEqual(value.key, Buffer.from(key))
    }
    const { value } = await sub.next({ timeoutMs: 5000 })
    assert.ok(value instanceof Change && value.kind === 'delete' && value.value === null)
    assert.equal(sub.tryNext(), null)
    sub.close()
    assert.equal((await sub.next()).done, true)
  })

  test('break out of for await sends KEYNOTIFY … STOP (seen on the wire)', async () => {
    const tap = await Tap.start(live.port)
    try {
      const key = `${ns()}stop`
      const sub = client.observe(key)
      await sub.ready()
      assert.ok(await tap.waitFor(['KEYNOTIFY', key]), 'no KEYNOTIFY registration on the wire')
      assert.equal(tap.payloads().some((p) => p.includes(key) && p.includes('STOP')), false)
      await client.set(key, 'once')
      for await (const change of sub) {
        assert.equal(change.type === 'change' && change.text, 'once')
        break
      }
      assert.equal(sub.closed, true)
      assert.ok(await tap.waitFor(['KEYNOTIFY', key, 'STOP']), 'no KEYNOTIFY … STOP on the wire after break')
    } finally {
      await tap.close()
    }
  })

  test('a key not observed is silent; an abandoned registration is not observed', async () => {
    const key = `${ns()}quiet`
    const sub = await client.observe(`${key}-other`).ready()
    await client.set(key, 'x')
    await assert.rejects(sub.next({ timeoutMs: 300 }), (e) => /** @type {any} */ (e).code === 'timeout')
    const ac = new AbortController()
    const waiting = sub.next({ signal: ac.signal })
    ac.abort()
    await assert.rejects(waiting, (e) => /** @type {any} */ (e).name === 'AbortError')
    await client.set(`${key}-other`, 'seen')
    const { value } = await sub.next({ timeoutMs: 5000 })
    assert.ok(value?.type === 'change' && value.text === 'seen', 'an event was lost by the aborted next()')
    sub.close()
  })

  test('slow reader: at most observerCapacity buffered, drops counted', async () => {
    const small = await Client.connect(live.url, { observerCapacity: 4 })
    try {
      const key = `${ns()}slow`
      const sub = await small.observe(key).ready()
      for (let i = 0; i < 40; i++) await small.set(key, String(i))
      await small.set(`${key}-fence`, 'x')
      await new Promise((resolve) => setTimeout(resolve, 300))
      const got = []
      let change
      while ((change = sub.tryNext()) !== null) got.push(change)
      assert.ok(got.length <= 4, `buffered ${got.length}`)
      assert.ok(got.length >= 1)
      const dropped = got.reduce((n, c) => n + (c.type === 'change' ? c.droppedBefore : 0), 0)
      assert.equal(dropped + got.length, 40)
      const last = got[got.length - 1]
      assert.equal(last.type === 'change' && last.text, '39')
    } finally {
      await small.close()
    }
  })
})

describe('observe across a store restart (embedded broker)', () => {
  test('observation is restored after a store restart (resync or live change)', { timeout: 60000 }, async () => {
    const live = await LiveStore.start('embedded')
    try {
      const client = await Client.connect(live.url, { reconnectMaxDelay: '200ms', requestTimeout: '2s' })
      const key = `${ns()}resync`
      const sub = await client.observe(key).ready()
      await client.set(key, 'before')
      assert.equal((await sub.next({ timeoutMs: 5000 })).value?.type, 'change')
      await live.restartStore() // the in-memory store forgets the key; the client reconnects
      const writer = await Client.connect(live.url)
      for (let i = 0; ; i++) {
        try {
          await writer.set(key, 'after', { timeoutMs: 1000 })
          break
        } catch (err) {
          if (i > 40) throw err
          await new Promise((resolve) => setTimeout(resolve, 200))
        }
      }
      /** @type {string[]} */
      const seen = []
      for (;;) {
        const { value } = await sub.next({ timeoutMs: 20000 })
        assert.ok(value, 'the subscription ended')
        if (value.type === 'change') {
          seen.push(`${value.kind}${value.resync ? ' (resync)' : ''} ${value.text}`)
          if (value.text === 'after') break
        } else {
          seen.push(value.type)
        }
      }
      // Observation is restored: the writer's value arrives (as a resync when the client's
      // GET after reconnecting found it, else as a live change; before it, a resync may
      // report the key the restarted in-memory store forgot).
      assert.ok(seen.at(-1)?.endsWith(' after'), `not restored: ${seen}`)
      sub.close()
      await writer.close()
      await client.close()
    } finally {
      await live.close()
    }
  })
})
