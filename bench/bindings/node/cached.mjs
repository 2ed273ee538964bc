// The client-side cache from Node: a cached `get` against an uncached one at one request in
// flight, in one run (docs/benchmarks.md, "Client-side cache").
//
//   node bench/bindings/node/cached.mjs URL [SECONDS] [ROUNDS]
//
// URL is a running store (`mqstate serve`). Each round times, SECONDS (default 2) each and in
// turns, `await client.get(key)` without and with `cache: true`, over 1,000 keys read in turn
// (each read once before the window: the cache is warm); prints the medians of ROUNDS
// (default 3) of the mean µs per get, the ratio, and how many reads reached the store.
// Loads the addon the package finds (NAPI_RS_NATIVE_LIBRARY_PATH picks another build).
import { createRequire } from 'node:module'

const fromPackage = createRequire(new URL('../../../bindings-node/package.json', import.meta.url))
/** @type {typeof import('mqstate')} */
const { Client } = fromPackage('mqstate')

const url = process.argv[2]
const seconds = Number(process.argv[3] ?? 2)
const rounds = Number(process.argv[4] ?? 3)
const keys = Array.from({ length: 1000 }, (_, i) => `cached-bench/${i}`)

const writer = await Client.connect(url)
for (const key of keys) await writer.set(key, 'v'.repeat(16))
await writer.close()

/** @param {boolean} cache */
async function timed (cache) {
  const client = await Client.connect({ url, cache })
  for (const key of keys) await client.get(key)
  let n = 0
  const start = performance.now()
  const deadline = start + seconds * 1000
  for (;;) {
    for (let i = 0; i < 100; i++) await client.get(keys[i])
    n += 100
    const now = performance.now()
    if (now >= deadline) {
      const stats = client.cacheStats()
      await client.close()
      return { us: ((now - start) * 1000) / n, stats }
    }
  }
}

/** @param {number[]} xs */
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]
const plain = []
const cached = []
let stats = null
for (let r = 0; r < rounds; r++) {
  plain.push((await timed(false)).us)
  const run = await timed(true)
  cached.push(run.us)
  stats = run.stats
}
console.log(`uncached ${median(plain).toFixed(2)} µs per get (median of ${rounds} rounds of ${seconds} s)`)
console.log(`cached   ${median(cached).toFixed(2)} µs per get`)
console.log(`ratio    ${(median(plain) / median(cached)).toFixed(1)}x faster with the cache`)
if (stats) {
  const reads = stats.hits + stats.misses
  console.log(`cache (last run): ${reads} reads, ${stats.misses} reached the store (${((100 * stats.misses) / Math.max(reads, 1)).toFixed(2)} %: the first read of each key)`)
}
