// OpenTelemetry through @opentelemetry/api (an optional peer dependency), against in-process
// LocalStores, with the SDK's in-memory span exporter and a metric reader collected on
// demand: each call that goes to the store is a CLIENT span named by its verb, a child of
// the active context, attributed with the core's names (never the key), with `error.type`
// on failure; its requests carry the span's traceparent (seen by a wire tap on the store's
// broker); what the core noted becomes span events; a cache hit makes no span; the metrics
// carry the core's names and units. With the API and no SDK, calls carry no trace context;
// with the API not resolvable, nothing of it is required and calls work.
import { after, before, beforeEach, describe, test } from 'node:test'
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { createRequire } from 'node:module'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { context, metrics, trace, SpanKind, SpanStatusCode } from '@opentelemetry/api'
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base'
import { MeterProvider, MetricReader } from '@opentelemetry/sdk-metrics'
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks'
import { Client, InvalidArgumentError, telemetry, version } from 'mqstate'
import { LocalStore } from 'mqstate/testing'
import { REQUEST_TOPIC } from './live.mjs'

const pkg = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')
const load = createRequire(import.meta.url)
/** The wire tap's MQTT client (untyped: its declarations need the DOM's). */
const mqtt = load('mqtt')
/** The core's vocabulary, as the addon hands it to the JS layer. */
const vocabulary = load('../native.js').telemetryVocabulary()
const N = vocabulary.names
const TEST_MS = 60000

/** A reader the test collects from when it wants. */
class TestReader extends MetricReader {
  async onForceFlush () {}
  async onShutdown () {}
}

const exporter = new InMemorySpanExporter()
const tracerProvider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] })
const reader = new TestReader()
const meterProvider = new MeterProvider({ readers: [reader] })
context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable())
trace.setGlobalTracerProvider(tracerProvider)
metrics.setGlobalMeterProvider(meterProvider)
const app = trace.getTracer('app')

/**
 * The finished spans named `name`.
 * @param {string} name
 */
function spans (name) {
  return exporter.getFinishedSpans().filter((s) => s.name === name)
}

/**
 * The parent span id of a finished span (SDK 2: `parentSpanContext`).
 * @param {any} span
 */
function parentOf (span) {
  return span.parentSpanContext?.spanId ?? span.parentSpanId
}

/** Every metric collected now, by name. */
async function collect () {
  const { resourceMetrics, errors } = await reader.collect()
  assert.deepEqual(errors, [])
  /** @type {Map<string, any>} */
  const byName = new Map()
  for (const scope of resourceMetrics.scopeMetrics) {
    for (const m of scope.metrics) byName.set(m.descriptor.name, { ...m, scope: scope.scope })
  }
  return byName
}

describe('OpenTelemetry', { timeout: TEST_MS }, () => {
  /** @type {LocalStore} */
  let store
  /** @type {Client} */
  let client
  before(async () => {
    store = await LocalStore.start()
    client = await Client.connect(store.url)
  })
  after(async () => {
    await client?.close()
    await store?.stop()
  })
  beforeEach(() => exporter.reset())

  test('a call inside an app span is its CLIENT child, named by its verb, with the core\'s attributes and no key', async () => {
    const parent = await app.startActiveSpan('app work', async (span) => {
      await client.set('secret/alice', 'v1')
      await client.get('secret/alice')
      await client.delete('secret/alice')
      await client.vdel('secret/alice', 'v1')
      span.end()
      return span.spanContext()
    })
    for (const name of ['SET', 'GET', 'DEL', 'VDEL']) {
      const [s] = spans(name)
      assert.ok(s, `a ${name} span: ${exporter.getFinishedSpans().map((x) => x.name)}`)
      assert.equal(s.kind, SpanKind.CLIENT)
      assert.equal(s.spanContext().traceId, parent.traceId)
      assert.equal(parentOf(s), parent.spanId)
      assert.equal(s.instrumentationScope.name, 'mqstate')
      assert.equal(s.instrumentationScope.version, version)
      assert.deepEqual(s.attributes, {
        [N.dbSystemName]: N.dbSystem,
        [N.dbOperationName]: name,
        [N.serverAddress]: '127.0.0.1',
        [N.serverPort]: store.port
      })
      assert.ok(!JSON.stringify(s.attributes).includes('alice'), 'no key value by default')
      assert.notEqual(s.status.code, SpanStatusCode.ERROR)
    }
    assert.equal(N.dbSystemName, 'db.system.name')
  })

  test('keys only after telemetry.configure({ recordKeys: true }), bytes that are not UTF-8 escaped', async () => {
    assert.throws(() => telemetry.configure(/** @type {any} */ ({ recordKey: true })), InvalidArgumentError)
    assert.throws(() => telemetry.configure(/** @type {any} */ ({ recordKeys: 'yes' })), InvalidArgumentError)
    telemetry.configure({ recordKeys: true })
    try {
      await client.set('secret/bob', 'v')
      await client.get(Buffer.from([0x6b, 0xc3, 0xa9, 0xff, 0x21]))
    } finally {
      telemetry.configure()
    }
    assert.equal(spans('SET')[0].attributes[N.key], 'secret/bob')
    assert.equal(spans('GET')[0].attributes[N.key], 'k\u00e9\\xff!')
    exporter.reset()
    await client.set('secret/bob', 'v')
    assert.equal(spans('SET')[0].attributes[N.key], undefined)
  })

  test('a call with no active span is a root span', async () => {
    await client.set('k', 'v')
    const [s] = spans('SET')
    assert.equal(parentOf(s), undefined)
  })

  test('observe and every scan page run in spans', async () => {
    await client.set('scan/a', '1')
    const sub = client.observe('scan/a')
    await sub.ready()
    await sub.close()
    const keys = []
    for await (const key of client.scan('scan/*')) keys.push(key.toString())
    assert.deepEqual(keys, ['scan/a'])
    assert.equal(spans('KEYNOTIFY').length >= 1, true, 'a KEYNOTIFY span')
    assert.ok(spans('SCAN').length >= 1, 'a SCAN span per page')
  })

  test('a refused call: error.type is the error code, status ERROR; the duration records it too', async () => {
    store.failNext(1, 'quota_exceeded', 'SET')
    await assert.rejects(client.set('q', 'v'), (e) => /** @type {any} */ (e).code === 'quota_exceeded')
    const [s] = spans('SET')
    assert.equal(s.attributes[N.errorType], 'quota_exceeded')
    assert.equal(s.status.code, SpanStatusCode.ERROR)
    assert.ok(s.status.message)
    const duration = (await collect()).get(vocabulary.callDuration)
    assert.ok(duration.dataPoints.some((/** @type {any} */ p) =>
      p.attributes[N.dbOperationName] === 'SET' && p.attributes[N.errorType] === 'quota_exceeded'))
  })

  test('a timed-out call: error.type timeout', async () => {
    store.pause(1500)
    await assert.rejects(client.get('slow', { timeoutMs: 200 }), (e) => /** @type {any} */ (e).code === 'timeout')
    const [s] = spans('GET')
    assert.equal(s.attributes[N.errorType], 'timeout')
    assert.equal(s.status.code, SpanStatusCode.ERROR)
    // The held request is answered once the pause ends, before the next test.
    for (const deadline = Date.now() + 10000; store.heldRequests() > 0 && Date.now() < deadline;) {
      await new Promise((resolve) => setTimeout(resolve, 20))
    }
  })

  test('what the call met becomes span events with their times (a wait for the connection)', async (t) => {
    const before = Date.now()
    await store.restart()
    // The call must start while the client is still reconnecting (it backs off first).
    if (client.connected) {
      t.skip('the client reconnected before the call began')
      return
    }
    await client.set('after-restart', 'v', { timeoutMs: 20000 })
    const [s] = spans('SET')
    const waits = s.events.filter((e) => e.name === N.eventConnectionWait)
    assert.ok(waits.length >= 1, `events: ${JSON.stringify(s.events)}`)
    const [sec, nanos] = waits[0].time
    const at = sec * 1000 + nanos / 1e6
    assert.ok(at >= before - 1 && at <= Date.now() + 1, `${at} in [${before}, now]`)
    assert.equal(typeof waits[0].attributes?.[N.waitedMs], 'number')
  })

  test('the request carries the span\'s traceparent as an MQTT5 user property', async () => {
    const tap = await mqtt.connectAsync(store.url, { protocolVersion: 5 })
    try {
      /** @type {Record<string, any>[]} */
      const seen = []
      tap.on('message', (/** @type {string} */ _topic, /** @type {Buffer} */ _payload, /** @type {any} */ packet) => seen.push(packet.properties?.userProperties ?? {}))
      await tap.subscribeAsync(REQUEST_TOPIC)
      await app.startActiveSpan('app', async (span) => {
        await client.set('wire', 'v')
        span.end()
      })
      const [s] = spans('SET')
      const c = s.spanContext()
      const want = `00-${c.traceId}-${c.spanId}-${c.traceFlags.toString(16).padStart(2, '0')}`
      const deadline = Date.now() + 10000
      while (!seen.some((p) => p[N.traceparent] === want) && Date.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, 20))
      }
      assert.ok(seen.some((p) => p[N.traceparent] === want), `${want} in ${JSON.stringify(seen)}`)
    } finally {
      await tap.endAsync()
    }
  })

  test('each SCAN page\'s request carries its own span\'s traceparent', async () => {
    await client.set('paged/a', '1')
    const tap = await mqtt.connectAsync(store.url, { protocolVersion: 5 })
    try {
      /** @type {Record<string, any>[]} */
      const seen = []
      tap.on('message', (/** @type {string} */ _topic, /** @type {Buffer} */ _payload, /** @type {any} */ packet) => seen.push(packet.properties?.userProperties ?? {}))
      await tap.subscribeAsync(REQUEST_TOPIC)
      exporter.reset()
      await app.startActiveSpan('app', async (span) => {
        const keys = []
        for await (const key of client.scan('paged/*')) keys.push(key.toString())
        assert.deepEqual(keys, ['paged/a'])
        span.end()
      })
      const pages = spans('SCAN')
      assert.ok(pages.length >= 1)
      const wanted = pages.map((s) => {
        const c = s.spanContext()
        return `00-${c.traceId}-${c.spanId}-${c.traceFlags.toString(16).padStart(2, '0')}`
      })
      const deadline = Date.now() + 10000
      const missing = () => wanted.filter((w) => !seen.some((p) => p[N.traceparent] === w))
      while (missing().length > 0 && Date.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, 20))
      }
      assert.deepEqual(missing(), [], `every page's span context on the wire: ${JSON.stringify(seen)}`)
    } finally {
      await tap.endAsync()
    }
  })

  test('lock and election operations are INTERNAL spans named by the core, children of the active context', async () => {
    await app.startActiveSpan('app', async (parent) => {
      const lock = client.lock('tel/lock', { leaseMs: 5000 })
      assert.ok(await lock.tryAcquire())
      assert.ok(await lock.renew())
      assert.equal(await lock.release(), true)
      await lock.acquire()
      await lock.release()
      await lock.edit('tel/edited', () => 'v')
      const election = client.election('tel/election', 'a', { termMs: 5000 })
      assert.equal(await election.tryCampaign(), true)
      assert.equal(await election.resign(), true)
      await election.campaign()
      await election.resign()
      parent.end()
    })
    const [parent] = spans('app')
    const ops = exporter.getFinishedSpans().filter((s) => s.kind === SpanKind.INTERNAL && s.name.startsWith('mqstate.'))
    assert.deepEqual(ops.map((s) => s.name), [
      N.spanLockTryAcquire, N.spanLockRenew, N.spanLockRelease, N.spanLockAcquire, N.spanLockRelease,
      N.spanLockEdit, N.spanElectionTryCampaign, N.spanElectionResign, N.spanElectionCampaign, N.spanElectionResign
    ])
    assert.equal(ops[0].name, 'mqstate.lock.try_acquire', 'the core\'s spelling')
    for (const s of ops) {
      assert.equal(parentOf(s), parent.spanContext().spanId)
      assert.equal(s.attributes[N.dbSystemName], N.dbSystem)
      assert.equal(s.attributes[N.key], undefined, 'no lock key unless asked')
      assert.equal(s.attributes[N.errorType], undefined)
    }
  })

  test('a failed lock operation: error.type, status ERROR, and the lock key when asked', async () => {
    const holder = await Client.connect(store.url)
    try {
      assert.ok(await holder.lock('tel/held', { leaseMs: 5000 }).tryAcquire())
      telemetry.configure({ recordKeys: true })
      exporter.reset()
      await assert.rejects(client.lock('tel/held').acquire({ timeoutMs: 200 }), (e) => /** @type {any} */ (e).code === 'timeout')
      const [s] = spans(N.spanLockAcquire)
      assert.equal(s.attributes[N.errorType], 'timeout')
      assert.equal(s.status.code, SpanStatusCode.ERROR)
      assert.equal(s.attributes[N.key], 'tel/held')
    } finally {
      telemetry.configure({ recordKeys: false })
      await holder.close()
    }
  })

  test('a cache hit makes no span; the cache metrics count it', async () => {
    const cached = await Client.connect(store.url, { cache: true, cacheFreshness: '30s' })
    try {
      await client.set('hot', 'v')
      assert.equal((await cached.get('hot'))?.text, 'v')
      exporter.reset()
      for (let i = 0; i < 5; i++) assert.equal((await cached.get('hot'))?.text, 'v')
      assert.deepEqual(exporter.getFinishedSpans().map((s) => s.name), [])
      const hits = (await collect()).get('mqstate.cache.hits')
      const point = hits.dataPoints.find((/** @type {any} */ p) => p.attributes[N.clientId] === cached.clientId)
      assert.ok(point && point.value >= 5, JSON.stringify(hits.dataPoints))
    } finally {
      await cached.close()
    }
  })

  test('metrics: the core\'s names, units and buckets; link and cache ones from the live clients', async () => {
    const cached = await Client.connect(store.url, { cache: true })
    try {
      await client.get('m')
      const got = await collect()
      for (const m of vocabulary.metrics) {
        const metric = got.get(m.name)
        assert.ok(metric, `${m.name} collected (got ${[...got.keys()]})`)
        assert.equal(metric.descriptor.unit, m.unit, m.name)
        assert.equal(metric.descriptor.description, m.description, m.name)
        assert.equal(metric.scope.name, 'mqstate')
      }
      const duration = got.get(vocabulary.callDuration)
      const get = duration.dataPoints.find((/** @type {any} */ p) => p.attributes[N.dbOperationName] === 'GET' && !(N.errorType in p.attributes))
      assert.deepEqual(get.value.buckets.boundaries, vocabulary.callDurationBuckets)
      const up = got.get('mqstate.connection.up').dataPoints
      assert.ok(up.some((/** @type {any} */ p) => p.attributes[N.clientId] === client.clientId && p.value === 1))
      // A meter provider registered later is used from the next call on, and a closed
      // client is no longer observed (a new provider's reader, which never saw it).
      const id = cached.clientId
      await cached.close()
      const second = new TestReader()
      metrics.disable()
      metrics.setGlobalMeterProvider(new MeterProvider({ readers: [second] }))
      await client.get('m')
      const { resourceMetrics } = await second.collect()
      const all = resourceMetrics.scopeMetrics.flatMap((s) => s.metrics)
      const later = all.find((m) => m.descriptor.name === 'mqstate.connection.up')?.dataPoints ?? []
      assert.ok(later.some((/** @type {any} */ p) => p.attributes[N.clientId] === client.clientId), JSON.stringify(later))
      assert.ok(!later.some((/** @type {any} */ p) => p.attributes[N.clientId] === id))
      assert.ok(all.some((m) => m.descriptor.name === vocabulary.callDuration))
    } finally {
      await cached.close()
    }
  })
})

describe('without @opentelemetry/api', () => {
  test('nothing of OpenTelemetry is required, and calls work', { timeout: TEST_MS }, async () => {
    // A child process in which the API cannot be resolved (as in an app that does not
    // depend on it), running calls against a LocalStore.
    const program = `
      const Module = require('node:module')
      const resolve = Module._resolveFilename
      Module._resolveFilename = function (request, ...rest) {
        if (request.startsWith('@opentelemetry/')) {
          const e = new Error('Cannot find module ' + request); e.code = 'MODULE_NOT_FOUND'; throw e
        }
        return resolve.call(this, request, ...rest)
      }
      const { Client } = require(${JSON.stringify(pkg)})
      const { LocalStore } = require(${JSON.stringify(path.join(pkg, 'testing.js'))})
      ;(async () => {
        const store = await LocalStore.start()
        const client = await Client.connect(store.url, { cache: true })
        await client.set('k', 'v')
        const got = (await client.get('k')).text
        await client.get('k')
        await client.close()
        await store.stop()
        const loaded = Object.keys(require.cache).filter((k) => k.includes('opentelemetry'))
        console.log(JSON.stringify({ got, loaded }))
      })().catch((e) => { console.error(e); process.exit(1) })
    `
    const r = spawnSync(process.execPath, ['-e', program], { encoding: 'utf8', timeout: TEST_MS })
    assert.equal(r.status, 0, r.stderr)
    assert.deepEqual(JSON.parse(r.stdout), { got: 'v', loaded: [] })
  })
})

describe('with @opentelemetry/api and no SDK', () => {
  test('calls work and carry no trace context (the no-op span does not record)', { timeout: TEST_MS }, async () => {
    const program = `
      const { Client } = require(${JSON.stringify(pkg)})
      const { LocalStore } = require(${JSON.stringify(path.join(pkg, 'testing.js'))})
      const mqtt = require(${JSON.stringify(path.join(pkg, 'node_modules', 'mqtt'))})
      ;(async () => {
        const store = await LocalStore.start()
        const tap = await mqtt.connectAsync(store.url, { protocolVersion: 5 })
        const seen = []
        tap.on('message', (_t, _p, packet) => seen.push(Object.keys(packet.properties?.userProperties ?? {})))
        await tap.subscribeAsync(${JSON.stringify(REQUEST_TOPIC)})
        const client = await Client.connect(store.url)
        await client.set('k', 'v')
        const got = (await client.get('k')).text
        const deadline = Date.now() + 10000
        while (seen.length < 2 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20))
        await tap.endAsync()
        await client.close()
        await store.stop()
        const loaded = Object.keys(require.cache).some((k) => k.includes('@opentelemetry/api'))
        console.log(JSON.stringify({ got, loaded, requests: seen.length, traced: seen.filter((p) => p.includes(${JSON.stringify(N.traceparent)})).length }))
      })().catch((e) => { console.error(e); process.exit(1) })
    `
    const r = spawnSync(process.execPath, ['-e', program], { encoding: 'utf8', timeout: TEST_MS })
    assert.equal(r.status, 0, r.stderr)
    assert.deepEqual(JSON.parse(r.stdout), { got: 'v', loaded: true, requests: 2, traced: 0 })
  })
})
