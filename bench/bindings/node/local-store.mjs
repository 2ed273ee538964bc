// Measures `LocalStore` of `mqstate/testing` as a Node test uses it: the time from
// `await LocalStore.start()` to a store that serves requests, the resident memory each
// running store adds, and the time to a client's first answer on a fresh store.
//
//   bench/run node-local-store [N]        (default 50; node --expose-gc bench/bindings/node/local-store.mjs)
//
// Loads the addon the package finds; to measure another build (e.g. the stripped `dist` one
// scripts/package ships), copy it to a file named `*.node` and set
// NAPI_RS_NATIVE_LIBRARY_PATH to that file. Prints the median and the 90th
// percentile over N stores started one after the other (all kept running), and the growth
// of the process's RSS divided by N. Figures: docs/benchmarks.md, "LocalStore (Node)".
import { createRequire } from 'node:module'

// The package resolves from bindings-node/ (this file lives in bench/, outside the package).
const fromPackage = createRequire(new URL('../../../bindings-node/package.json', import.meta.url))
/** @type {typeof import('mqstate')} */
const { Client } = fromPackage('mqstate')
/** @type {typeof import('mqstate/testing')} */
const { LocalStore } = fromPackage('mqstate/testing')

const n = Number(process.argv[2] ?? 50)

/** @param {number[]} sorted @param {number} p */
const percentile = (sorted, p) => sorted[Math.min(sorted.length - 1, Math.round((sorted.length - 1) * p))]
const ms = (/** @type {number} */ x) => x.toFixed(2)

// Warm-up: the first store pays for the process's one-time set-up (loading the addon's
// code, the stores' thread and runtime): measured apart.
let started = performance.now()
const first = await LocalStore.start()
const cold = performance.now() - started
await first.stop()

globalThis.gc?.()
const before = process.memoryUsage().rss
const stores = []
const ready = []
for (let i = 0; i < n; i++) {
  started = performance.now()
  stores.push(await LocalStore.start())
  ready.push(performance.now() - started)
}
globalThis.gc?.()
const after = process.memoryUsage().rss

// Time to a client's first answer: start + connect + SET on a fresh store.
const answered = []
for (let i = 0; i < Math.min(n, 20); i++) {
  started = performance.now()
  const store = await LocalStore.start()
  const client = await Client.connect(store.url)
  await client.set('k', 'v')
  answered.push(performance.now() - started)
  await client.close()
  await store.stop()
}

ready.sort((a, b) => a - b)
answered.sort((a, b) => a - b)
console.log(`stores: ${n} (kept running), first store in the process: ${ms(cold)} ms`)
console.log(`start to ready: median ${ms(percentile(ready, 0.5))} ms, p90 ${ms(percentile(ready, 0.9))} ms, max ${ms(percentile(ready, 1))} ms`)
console.log(`start + client connect + first SET answered: median ${ms(percentile(answered, 0.5))} ms, p90 ${ms(percentile(answered, 0.9))} ms`)
console.log(`RSS: ${Math.round(before / 1024)} KiB before, ${Math.round(after / 1024)} KiB with ${n} stores: ${Math.round((after - before) / 1024 / n)} KiB per store`)
for (const store of stores) await store.stop()
