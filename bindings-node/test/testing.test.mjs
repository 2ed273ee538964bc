// `mqstate/testing`: LocalStore started in this process, as an application's tests use it —
// both entry points, the properties, every fault and look inside against a real client,
// the argument and state errors, isolation between stores, and the process's lifetime (a
// store does not keep it alive, a forgotten one leaves no data behind).
import { describe, test } from 'node:test'
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { createRequire } from 'node:module'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { Client, ClosedError, ConnectionLostError, FencingTokenLowerVersionError, InvalidArgumentError, QuotaExceededError, Value, hlc } from 'mqstate'
import { LocalStore } from 'mqstate/testing'
import * as esm from 'mqstate/testing'

const pkg = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')
const require = createRequire(import.meta.url)

/**
 * A started store and a client connected to it, for `fn`; both closed after.
 * @param {(store: LocalStore, client: Client) => Promise<void>} fn
 */
async function withStore (fn) {
  const store = await LocalStore.start()
  const client = await Client.connect(store.url)
  try {
    await fn(store, client)
  } finally {
    await client.close()
    await store.stop()
  }
}

/**
 * Runs `node -e script` with `env` on top of this process's; resolves to its exit code
 * (`null` when killed after `timeoutMs`) and output.
 * @param {string} script
 * @param {Record<string, string>} env
 * @param {number} timeoutMs
 * @returns {Promise<{ code: number | null, out: string }>}
 */
function runScript (script, env, timeoutMs) {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['-e', script], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] })
    let out = ''
    child.stdout.on('data', (d) => { out += d })
    child.stderr.on('data', (d) => { out += d })
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs)
    child.on('exit', (code, signal) => {
      clearTimeout(timer)
      resolve({ code: signal === 'SIGKILL' ? null : code, out })
    })
  })
}

describe('entry points', () => {
  test('require(\'mqstate/testing\') and the ES module give the same LocalStore', () => {
    const cjs = require('mqstate/testing')
    assert.equal(typeof LocalStore.start, 'function')
    assert.equal(cjs.LocalStore, LocalStore)
    assert.equal(esm.default.LocalStore, LocalStore)
    assert.deepEqual(Object.keys(cjs), ['LocalStore'])
  })

  test('only LocalStore.start() makes one', () => {
    assert.throws(() => new (/** @type {any} */ (LocalStore))(), InvalidArgumentError)
    assert.throws(() => new (/** @type {any} */ (LocalStore))(Symbol('LocalStore.start'), {}), InvalidArgumentError)
  })
})

describe('a running store', () => {
  test('url, port and isRunning; stop() ends it, and again does nothing', async () => {
    const store = await LocalStore.start()
    assert.ok(Number.isInteger(store.port) && store.port > 0 && store.port < 65536, String(store.port))
    assert.equal(store.url, `mqtt://127.0.0.1:${store.port}`)
    assert.equal(store.isRunning, true)
    const client = await Client.connect(store.url)
    await client.set('k', 'v')
    await store.stop()
    assert.equal(store.isRunning, false)
    await client.close()
  })

  test('every call on a stopped store is refused with ClosedError', async () => {
    const store = await LocalStore.start()
    await store.stop()
    await assert.rejects(store.cutConnections(), ClosedError)
    await assert.rejects(store.restart(), ClosedError)
    assert.throws(() => store.pause(10), ClosedError)
    assert.throws(() => store.failNext(1, 'quota_exceeded'), ClosedError)
    assert.throws(() => store.keys(), ClosedError)
    assert.throws(() => store.get('k'), ClosedError)
    assert.throws(() => store.clear(), ClosedError)
    assert.throws(() => store.heldRequests(), ClosedError)
    assert.throws(() => store.dropNotifications(10), ClosedError)
    assert.throws(() => store.droppedNotifications(), ClosedError)
    assert.throws(() => store.forgetRegistrations(), ClosedError)
  })

  test('get: a Value with the version the client saw; keys: in byte order, by glob; clear: how many', () => withStore(async (store, client) => {
    const { version } = await client.set('b/1', 'one')
    await client.set('a/2', Buffer.from([0, 255]))
    await client.set('b/2', 'two')
    const got = store.get('b/1')
    assert.ok(got instanceof Value)
    assert.equal(got.text, 'one')
    assert.ok(got.version instanceof hlc.Hlc)
    assert.equal(String(got.version), String(version))
    assert.deepEqual(store.get(Buffer.from('a/2'))?.value, Buffer.from([0, 255]))
    assert.equal(store.get('missing'), null)
    assert.deepEqual(store.keys().map(String), ['a/2', 'b/1', 'b/2'])
    assert.deepEqual(store.keys('b/*').map(String), ['b/1', 'b/2'])
    assert.ok(store.keys().every((k) => Buffer.isBuffer(k)))
    assert.equal(store.clear(), 3)
    assert.deepEqual(store.keys(), [])
    assert.equal(await client.get('b/1'), null)
  }))

  test('two stores in one process share nothing', async () => {
    const [a, b] = await Promise.all([LocalStore.start(), LocalStore.start()])
    try {
      assert.notEqual(a.port, b.port)
      const client = await Client.connect(a.url)
      await client.set('only-in-a', 'v')
      await client.close()
      assert.deepEqual(a.keys().map(String), ['only-in-a'])
      assert.deepEqual(b.keys(), [])
      b.failNext(5, 'quota_exceeded')
      const other = await Client.connect(a.url)
      await other.set('still-fine', 'v') // a's requests are not b's faults
      await other.close()
    } finally {
      await a.stop()
      await b.stop()
    }
  })

  test('Symbol.asyncDispose stops it (what `await using` calls)', { skip: !Symbol.asyncDispose }, async () => {
    const store = await LocalStore.start()
    assert.equal(store.isRunning, true)
    await /** @type {any} */ (store)[Symbol.asyncDispose]()
    assert.equal(store.isRunning, false)
  })
})

describe('faults', () => {
  test('cutConnections: how many it closed; the client resumes and its calls work', () => withStore(async (store, client) => {
    const other = await Client.connect(store.url)
    try {
      await client.set('k', '1')
      const before = client.linkInfo().connections
      assert.equal(await store.cutConnections(), 2)
      assert.equal((await client.get('k'))?.text, '1')
      assert.ok(client.linkInfo().connections > before, 'the client reconnected')
      await other.set('k', '2')
    } finally {
      await other.close()
    }
  }))

  test('pause: requests wait for it, then are answered in order', () => withStore(async (store, client) => {
    await client.set('k', '0')
    store.pause(300)
    const started = performance.now()
    const writes = [client.set('k', '1'), client.set('k', '2')]
    const read = client.get('k')
    await Promise.all(writes)
    assert.equal((await read)?.text, '2')
    assert.ok(performance.now() - started >= 250, 'answered before the pause ended')
  }))

  test('pause: durationMs is milliseconds, at least 1, and required', () => withStore(async (store) => {
    for (const bad of [0, 0.5, -1, NaN, Infinity, '10', undefined, null]) {
      assert.throws(() => store.pause(/** @type {any} */ (bad)), (e) => e instanceof InvalidArgumentError && /durationMs/.test(e.message), String(bad))
    }
    store.pause(1)
  }))

  test('dropNotifications: durationMs is milliseconds, at least 1, and required', () => withStore(async (store) => {
    for (const bad of [0, 0.5, -1, NaN, Infinity, '10', undefined, null]) {
      assert.throws(() => store.dropNotifications(/** @type {any} */ (bad)), (e) => e instanceof InvalidArgumentError && /durationMs/.test(e.message), String(bad))
    }
    assert.equal(store.droppedNotifications(), 0)
  }))

  test('dropNotifications: observers hear nothing for a while, then again', () => withStore(async (store, client) => {
    const sub = await client.observe('k').ready()
    try {
      store.dropNotifications(500)
      await client.set('k', 'lost')
      const deadline = performance.now() + 20000
      while (store.droppedNotifications() === 0) {
        assert.ok(performance.now() < deadline, 'the notification was never dropped')
        await new Promise((resolve) => setTimeout(resolve, 5))
      }
      assert.equal(store.droppedNotifications(), 1)
      await assert.rejects(sub.next({ timeoutMs: 100 }), (e) => /** @type {any} */ (e).code === 'timeout')
      await new Promise((resolve) => setTimeout(resolve, 600)) // the mute's span: this test is about it passing
      await client.set('k', 'seen')
      const { value } = await sub.next({ timeoutMs: 10000 })
      assert.equal(/** @type {any} */ (value).text, 'seen')
      assert.equal(store.droppedNotifications(), 1)
    } finally {
      sub.close()
    }
  }))

  test('forgetRegistrations: every registration gone, counted; nothing tells the client', () => withStore(async (store, client) => {
    const a = await client.observe('a').ready()
    const b = await client.observe('b').ready()
    try {
      assert.equal(store.forgetRegistrations(), 2)
      assert.equal(store.forgetRegistrations(), 0)
      await client.set('a', 'unseen')
      await assert.rejects(a.next({ timeoutMs: 200 }), (e) => /** @type {any} */ (e).code === 'timeout')
    } finally {
      a.close()
      b.close()
    }
  }))

  test('failNext: the next n requests of the command fail with the error, as the service sends it', () => withStore(async (store, client) => {
    await client.set('k', 'v0')
    store.failNext(2, 'fencing_token_lower_version', 'set')
    assert.equal((await client.get('k'))?.text, 'v0') // a GET is not a SET
    for (let i = 0; i < 2; i++) {
      await assert.rejects(client.set('k', 'v1'), (e) => e instanceof FencingTokenLowerVersionError && e.storeKind === 'fencing_token_lower_version')
    }
    await client.set('k', 'v2')
    assert.equal(store.get('k')?.text, 'v2')
    store.failNext(1, 'quota_exceeded')
    await assert.rejects(client.get('k'), QuotaExceededError) // any command
    store.failNext(3, 'quota_exceeded', null)
    store.failNext(0, 'quota_exceeded') // disarms
    assert.equal((await client.get('k'))?.text, 'v2')
  }))

  test('failNext: only state store error codes, only commands, n a count', () => withStore(async (store) => {
    for (const code of ['timeout', 'connection_lost', 'unknown_store_error', 'nope']) {
      assert.throws(() => store.failNext(1, code), (e) => e instanceof InvalidArgumentError && /quota_exceeded/.test(e.message), code)
    }
    assert.throws(() => store.failNext(1, 'quota_exceeded', 'PUT'), InvalidArgumentError)
    for (const n of [-1, 1.5, '1', NaN]) {
      assert.throws(() => store.failNext(/** @type {any} */ (n), 'quota_exceeded'), InvalidArgumentError, String(n))
    }
    assert.throws(() => store.failNext(1, /** @type {any} */ (42)), InvalidArgumentError)
  }))

  test('restart: sessions and non-persisted keys lost; persisted ones kept only with keepData', () => withStore(async (store, client) => {
    const port = store.port
    const { version } = await client.set('kept', 'p', { persist: true })
    await client.set('lost', 'x')
    await store.restart(true)
    assert.equal(store.port, port)
    assert.equal(store.isRunning, true)
    assert.deepEqual(store.keys().map(String), ['kept'])
    assert.equal(String(store.get('kept')?.version), String(version))
    assert.equal((await client.get('kept'))?.text, 'p') // the client reconnected by itself
    await store.restart({ keepData: true })
    assert.deepEqual(store.keys().map(String), ['kept'])
    await store.restart({ keepData: false })
    assert.deepEqual(store.keys(), [])
    await client.set('kept', 'p', { persist: true })
    await store.restart()
    assert.deepEqual(store.keys(), [], 'restart() keeps nothing')
  }))

  test('restart: a call in flight fails with connection_lost', () => withStore(async (store, client) => {
    await client.set('k', 'v')
    assert.equal(store.heldRequests(), 0)
    store.pause(5000)
    const pending = client.get('k', { timeoutMs: 10000 })
    pending.catch(() => {})
    // Restarted before the request arrives, the store would answer it after the reconnect.
    for (let i = 0; i < 4000 && store.heldRequests() === 0; i++) await new Promise((resolve) => setTimeout(resolve, 5))
    assert.equal(store.heldRequests(), 1, 'the pause never held the request')
    await store.restart(true)
    await assert.rejects(pending, ConnectionLostError)
  }))

  test('restart: keepData is a boolean or { keepData }', () => withStore(async (store) => {
    await assert.rejects(store.restart(/** @type {any} */ ('yes')), InvalidArgumentError)
    await assert.rejects(store.restart(/** @type {any} */ ({ keep: true })), (e) => e instanceof InvalidArgumentError && /unknown option keep/.test(e.message))
    await assert.rejects(store.restart(/** @type {any} */ ({ keepData: 1 })), InvalidArgumentError)
  }))
})

describe('the process', () => {
  test('a forgotten store neither keeps the process alive nor leaves its data behind', { timeout: 30000 }, async () => {
    const tmp = mkdtempSync(path.join(os.tmpdir(), 'mqstate-forgotten-'))
    try {
      const script = `
        const { LocalStore } = require(${JSON.stringify(path.join(pkg, 'testing.js'))})
        const { Client } = require(${JSON.stringify(pkg)})
        const fs = require('node:fs')
        ;(async () => {
          const store = await LocalStore.start()
          globalThis.kept = store // forgotten, not dropped: garbage collection would stop it
          const client = await Client.connect(store.url)
          await client.set('k', 'v', { persist: true })
          await client.close()
          console.log('dirs while running:', fs.readdirSync(process.env.TMPDIR).length)
        })()`
      const r = await runScript(script, { TMPDIR: tmp }, 20000)
      assert.equal(r.code, 0, `exited with ${r.code}: ${r.out}`)
      assert.match(r.out, /dirs while running: 1/, 'the store had its data directory there')
      assert.deepEqual(readdirSync(tmp), [], 'data left behind')
    } finally {
      rmSync(tmp, { recursive: true, force: true })
    }
  })

  test('a store started in a worker thread is stopped when the worker ends', { timeout: 30000 }, async () => {
    const tmp = mkdtempSync(path.join(os.tmpdir(), 'mqstate-worker-'))
    try {
      const script = `
        const { Worker } = require('node:worker_threads')
        const fs = require('node:fs')
        // The worker keeps its store (one it dropped could be garbage-collected, and so stopped,
        // first) and stays alive until terminated: a store does not hold an event loop, so a
        // worker with nothing else to do would end by itself, and stop its store, at once.
        const code = 'require(' + JSON.stringify(${JSON.stringify(path.join(pkg, 'testing.js'))}) + ').LocalStore.start().then((s) => { globalThis.kept = s; setInterval(() => {}, 60000); require("node:worker_threads").parentPort.postMessage(s.url) })'
        const worker = new Worker(code, { eval: true })
        worker.once('message', (url) => {
          console.log('running:', fs.readdirSync(process.env.TMPDIR).length)
          worker.terminate().then(() => console.log('after:', fs.readdirSync(process.env.TMPDIR).length))
        })`
      const r = await runScript(script, { TMPDIR: tmp }, 20000)
      assert.equal(r.code, 0, `exited with ${r.code}: ${r.out}`)
      assert.match(r.out, /running: 1\nafter: 0/, r.out)
    } finally {
      rmSync(tmp, { recursive: true, force: true })
    }
  })

  test('the control: a pending call keeps the process alive', { timeout: 30000 }, async () => {
    const script = `
      const { LocalStore } = require(${JSON.stringify(path.join(pkg, 'testing.js'))})
      const { Client } = require(${JSON.stringify(pkg)})
      ;(async () => {
        const store = await LocalStore.start()
        const client = await Client.connect(store.url)
        store.pause(60000)
        client.get('k', { timeoutMs: 60000 })
      })()`
    const r = await runScript(script, {}, 1500)
    assert.equal(r.code, null, `exited with ${r.code}: ${r.out}`)
  })
})
