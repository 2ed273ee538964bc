// GET/SET ops/s at 1 and 64 in flight, side by side in one run: the Node client (this
// package), the Rust client (`mqstate bench`), and a hand-written mqtt.js request/response
// loop doing the same exchange (the spec §2 envelope, the mqstate codec for payloads).
// A benchmark, not a test; release builds only: run it with `bench/run node` (run.sh here).
//
// Env: MQSTATE_BIN (release CLI), BENCH_URL (a broker with mqstate serve behind it),
// BENCH_SECONDS (measured seconds per run, default 4), BENCH_ROUNDS (alternating rounds, 3).
//
// One run instead (what bench/bindings.sh alternates with the other languages):
//   node bench/bindings/node/compare.mjs URL node|mqttjs DEPTH SECONDS [WATCH_PID]
// prints `CLIENT DEPTH OPS_PER_S CPU_US_PER_OP WATCHED_CPU_US_PER_OP`: the CPU time (user +
// system) of this process, and of process WATCH_PID (the store) if given, per request over
// the measured window (`-` when not measured).
import { spawnSync } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'

// The package and its dev dependency mqtt.js resolve from bindings-node/ (this file lives in
// bench/, outside the package; `scripts/setup node` installs bindings-node/node_modules).
const fromPackage = createRequire(new URL('../../../bindings-node/package.json', import.meta.url))
/** @type {typeof import('mqtt').default} */
const mqtt = fromPackage('mqtt')
/** @type {typeof import('mqstate')} */
const { Client, codec, hlc, topics } = fromPackage('mqstate')

const single = process.argv.length > 2
const URL_ = single ? process.argv[2] : process.env.BENCH_URL ?? 'mqtt://127.0.0.1:1883'
const SECONDS = Number(single ? process.argv[5] : process.env.BENCH_SECONDS ?? 4)
const WATCH = single && process.argv[6] ? Number(process.argv[6]) : undefined
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3)
const KEYS = 1000
const VALUE = Buffer.alloc(16, 'v')

/** User + system CPU ticks of process `pid` (undefined: not readable). @param {number | undefined} pid */
function cpuTicks (pid) {
  if (pid === undefined) return undefined
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(')').at(-1)?.trim().split(/\s+/) ?? []
    return Number(fields[11]) + Number(fields[12])
  } catch {
    return undefined
  }
}

/** CPU µs per request of this process and of WATCH over the last load() window. */
let lastCpu = '- -'

/**
 * Closed-loop load: `depth` requests outstanding, 50 % SET / 50 % GET of 1000 keys, 1 s
 * warm-up, then `SECONDS` measured. Resolves to ops/s.
 * @param {(i: number) => Promise<unknown>} op
 * @param {number} depth
 */
async function load (op, depth) {
  let measuring = false
  let done = 0
  let stop = false
  let i = 0
  const worker = async () => {
    while (!stop) {
      await op(i++)
      if (measuring) done++
    }
  }
  const workers = Array.from({ length: depth }, worker)
  await new Promise((resolve) => setTimeout(resolve, 1000))
  const cpu0 = process.cpuUsage()
  const watched0 = cpuTicks(WATCH)
  measuring = true
  const start = process.hrtime.bigint()
  await new Promise((resolve) => setTimeout(resolve, SECONDS * 1000))
  measuring = false
  const elapsed = Number(process.hrtime.bigint() - start) / 1e9
  const counted = done
  const cpu = process.cpuUsage(cpu0)
  const watched1 = cpuTicks(WATCH)
  const per = Math.max(counted, 1)
  lastCpu = `${((cpu.user + cpu.system) / per).toFixed(1)} ` +
    (watched0 !== undefined && watched1 !== undefined ? ((watched1 - watched0) * 1e4 / per).toFixed(1) : '-')
  stop = true
  await Promise.all(workers)
  return counted / elapsed
}

/** The Node client. @param {number} depth */
async function nodeClient (depth) {
  const client = await Client.connect(URL_)
  try {
    return await load((i) => (i % 2 === 0
      ? client.set(`bench/${i % KEYS}`, VALUE)
      : client.get(`bench/${i % KEYS}`)), depth)
  } finally {
    await client.close()
  }
}

/** mqtt.js with a hand-written correlation map and the spec §2 envelope. @param {number} depth */
async function mqttJs (depth) {
  const clientId = `bench-mqttjs-${randomBytes(4).toString('hex')}`
  const conn = await mqtt.connectAsync(URL_, { protocolVersion: 5, clientId, clean: true, reconnectPeriod: 0 })
  // Node sockets keep Nagle on; the Rust client (and mosquitto here) turn it off.
  const socket = /** @type {any} */ (conn).stream
  socket.setNoDelay(true)
  const responseTopic = topics.responseTopic(clientId)
  await conn.subscribeAsync(responseTopic, { qos: 1 })
  const clock = new hlc.Clock(clientId)
  /** @type {Map<string, { resolve: (v: unknown) => void, verb: 'SET' | 'GET' }>} */
  const pending = new Map()
  conn.on('message', (_topic, payload, packet) => {
    const id = packet.properties?.correlationData?.toString('hex')
    const waiter = id === undefined ? undefined : pending.get(id)
    if (!waiter || id === undefined) return
    pending.delete(id)
    const ts = packet.properties?.userProperties?.__ts
    if (typeof ts === 'string') clock.receive(ts)
    waiter.resolve(codec.decodeResponse(payload, waiter.verb))
  })
  /** @param {'SET' | 'GET'} verb @param {Buffer} payload */
  const request = (verb, payload) => new Promise((resolve) => {
    const correlation = randomBytes(16)
    pending.set(correlation.toString('hex'), { resolve, verb })
    conn.publish(topics.REQUEST_TOPIC, payload, {
      qos: 1,
      properties: {
        responseTopic,
        correlationData: correlation,
        contentType: 'application/octet-stream',
        messageExpiryInterval: 10,
        userProperties: {
          __srcId: clientId, __ts: clock.tick().toString(), __protVer: '1.0', $partition: clientId, $high_priority: ''
        }
      }
    })
  })
  try {
    return await load((i) => (i % 2 === 0
      ? request('SET', codec.encodeSet(`bench/${i % KEYS}`, VALUE))
      : request('GET', codec.encodeGet(`bench/${i % KEYS}`))), depth)
  } finally {
    await conn.endAsync()
  }
}

/** The Rust client, through `mqstate bench`. @param {number} depth */
function rust (depth) {
  const bin = process.env.MQSTATE_BIN ?? 'mqstate'
  const r = spawnSync(bin, ['bench', '--url', URL_, '--depth', String(depth), '--duration', `${SECONDS}s`, '--warmup', '1s'], { encoding: 'utf8' })
  const text = `${r.stdout}\n${r.stderr}`
  const m = text.match(/(\d+) ops\/s\s+p50/)
  if (!m) throw new Error(`cannot read mqstate bench output:\n${text}`)
  return Number(m[1])
}

/** @param {number[]} xs */
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]

if (single) {
  const [which, depth] = [process.argv[3], Number(process.argv[4])]
  const rate = which === 'node' ? await nodeClient(depth) : await mqttJs(depth)
  console.log(`${which} ${depth} ${rate.toFixed(0)} ${lastCpu}`)
  process.exit(0)
}

const rows = []
for (const depth of [1, 64]) {
  /** @type {Record<string, number[]>} */
  const runs = { rust: [], node: [], mqttjs: [] }
  for (let round = 0; round < ROUNDS; round++) {
    runs.rust.push(rust(depth))
    runs.node.push(await nodeClient(depth))
    runs.mqttjs.push(await mqttJs(depth))
    console.error(`depth ${depth} round ${round + 1}: rust ${runs.rust.at(-1)?.toFixed(0)}, node ${runs.node.at(-1)?.toFixed(0)}, mqtt.js ${runs.mqttjs.at(-1)?.toFixed(0)} ops/s`)
  }
  const [r, n, j] = [median(runs.rust), median(runs.node), median(runs.mqttjs)]
  rows.push(`| ${depth} | ${r.toFixed(0)} | ${n.toFixed(0)} | ${j.toFixed(0)} | **${(n / r).toFixed(2)}** | **${(n / j).toFixed(2)}** |`)
}
console.log('| in flight | Rust client | Node client | mqtt.js loop | Node / Rust | Node / mqtt.js |')
console.log('|---|---|---|---|---|---|')
for (const row of rows) console.log(row)
