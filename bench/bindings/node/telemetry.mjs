// What OpenTelemetry costs a Node caller (docs/benchmarks.md, "OpenTelemetry"): a cached hit
// and an uncached `get` at one request in flight, in child processes timed in turns:
// `absent` (`@opentelemetry/*` cannot be resolved), `noop` (the API without an SDK),
// `recording` (the SDK's tracer provider with a batch processor into an exporter that drops
// what it gets, and a meter provider with a reader), and `app-span` (the same SDK, but
// mqstate cannot resolve the API: its calls are untraced, each inside a CLIENT span the
// application makes itself, to tell the SDK's own span from mqstate's share), and
// `spans-only` (`recording` without a meter provider: mqstate's span without its histogram).
//
//   node bench/bindings/node/telemetry.mjs URL [SECONDS] [ROUNDS] [MODE,...]
//
// URL is a running store (`mqstate serve`). Prints per mode the median and the best over
// ROUNDS (default 3) of CPU µs per call of the client process (user + system) and wall µs,
// and each mode's median ratio to `absent` (default modes: absent, noop, recording; the first
// named is the base). Uses bindings-node with its dev dependencies (the API and SDK pinned there).
import { spawnSync } from 'node:child_process'
import { fileURLToPath } from 'node:url'

const pkg = fileURLToPath(new URL('../../../bindings-node', import.meta.url))
const url = process.argv[2]
const seconds = Number(process.argv[3] ?? 2)
const rounds = Number(process.argv[4] ?? 3)
const modes = (process.argv[5] ?? 'absent,noop,recording').split(',')

const child = `
const Module = require('node:module')
const [mode, url, seconds] = process.argv.slice(1)
const lib = ${JSON.stringify(pkg + '/lib/')}
if (mode === 'absent' || mode === 'app-span') {
  // app-span: refused to mqstate's own modules only; the application resolves the SDK.
  const resolve = Module._resolveFilename
  Module._resolveFilename = function (request, parent, ...rest) {
    if (request.startsWith('@opentelemetry/') && (mode === 'absent' || parent?.filename?.startsWith(lib))) {
      const e = new Error('Cannot find module ' + request); e.code = 'MODULE_NOT_FOUND'; throw e
    }
    return resolve.call(this, request, parent, ...rest)
  }
}
const fromPkg = Module.createRequire(${JSON.stringify(pkg + '/package.json')})
let around = (call) => call()
if (mode === 'recording' || mode === 'app-span' || mode === 'spans-only') {
  const api = fromPkg('@opentelemetry/api')
  const { BasicTracerProvider, BatchSpanProcessor } = fromPkg('@opentelemetry/sdk-trace-base')
  const { MeterProvider, InMemoryMetricExporter, PeriodicExportingMetricReader, AggregationTemporality } = fromPkg('@opentelemetry/sdk-metrics')
  const drop = { export: (spans, done) => done({ code: 0 }), shutdown: async () => {} }
  api.trace.setGlobalTracerProvider(new BasicTracerProvider({ spanProcessors: [new BatchSpanProcessor(drop)] }))
  const reader = new PeriodicExportingMetricReader({ exporter: new InMemoryMetricExporter(AggregationTemporality.CUMULATIVE), exportIntervalMillis: 60000 })
  if (mode !== 'spans-only') api.metrics.setGlobalMeterProvider(new MeterProvider({ readers: [reader] }))
  if (mode === 'app-span') {
    const tracer = api.trace.getTracer('app')
    around = async (call) => {
      const span = tracer.startSpan('GET', { kind: api.SpanKind.CLIENT }, api.context.active())
      try { return await call() } finally { span.end() }
    }
  }
}
const { Client } = fromPkg('mqstate')
const keys = Array.from({ length: 100 }, (_, i) => 'telemetry-bench/' + i)
async function timed (client) {
  for (const k of keys) await around(() => client.get(k))
  let n = 0
  const c0 = process.cpuUsage()
  const w0 = performance.now()
  for (;;) {
    for (const k of keys) await around(() => client.get(k))
    n += keys.length
    const w = performance.now() - w0
    if (w >= seconds * 1000) {
      const c = process.cpuUsage(c0)
      return [(c.user + c.system) / n, (w * 1000) / n]
    }
  }
}
;(async () => {
  const plain = await Client.connect(url)
  const cached = await Client.connect({ url, cache: true })
  for (const k of keys) await plain.set(k, 'v'.repeat(16))
  const hit = await timed(cached)
  const get = await timed(plain)
  await plain.close()
  await cached.close()
  console.log(JSON.stringify({ hit, get }))
  process.exit(0)
})().catch((e) => { console.error(e); process.exit(1) })
`

/** @type {Record<string, {hit: number[][], get: number[][]}>} */
const results = Object.fromEntries(modes.map((m) => [m, { hit: [], get: [] }]))
for (let r = 0; r < rounds; r++) {
  for (const mode of modes) {
    const out = spawnSync(process.execPath, ['-e', child, mode, url, String(seconds)], { encoding: 'utf8', cwd: pkg })
    if (out.status !== 0) throw new Error(`${mode}: ${out.stderr}`)
    const got = JSON.parse(out.stdout)
    results[mode].hit.push(got.hit)
    results[mode].get.push(got.get)
    console.log(`round ${r + 1} ${mode.padEnd(9)} hit ${got.hit[0].toFixed(2)} CPU-µs  get ${got.get[0].toFixed(1)} CPU-µs ${got.get[1].toFixed(1)} wall-µs`)
  }
}
/** @param {number[]} xs */
const median = (xs) => { const s = [...xs].sort((a, b) => a - b); return s[Math.floor(s.length / 2)] }
console.log(`\nmedians (best) over ${rounds} rounds (CPU µs per call of the client process; wall µs)`)
const first = results[modes[0]]
const base = { hit: median(first.hit.map((x) => x[0])), get: median(first.get.map((x) => x[0])) }
for (const mode of modes) {
  const row = ['hit', 'get'].map((what) => {
    const cpu = median(results[mode][what].map((x) => x[0]))
    const best = Math.min(...results[mode][what].map((x) => x[0]))
    const wall = median(results[mode][what].map((x) => x[1]))
    return `${what} ${cpu.toFixed(2)} (${best.toFixed(2)}) CPU-µs (${(cpu / base[what]).toFixed(2)}x) ${wall.toFixed(2)} wall-µs`
  })
  console.log(`  ${mode.padEnd(9)} ${row.join('   ')}`)
}
