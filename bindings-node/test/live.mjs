// Live infrastructure for the client tests: `mqstate serve` (the CLI binary the test
// script builds) with its embedded broker, or behind Debian's mosquitto; a wire tap
// (mosquitto_sub on the request topic) to see what the client really sends; free ports.
import { spawn, spawnSync } from 'node:child_process'
import { existsSync, mkdtempSync, openSync, readdirSync, readFileSync, readlinkSync, rmSync, writeFileSync } from 'node:fs'
import net from 'node:net'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { setTimeout as sleep } from 'node:timers/promises'

const here = path.dirname(fileURLToPath(import.meta.url))
/** The project root (the workspace). */
export const projectRoot = path.resolve(here, '..', '..')
/** The state store's request topic. */
export const REQUEST_TOPIC = 'statestore/v1/FA9AE35F-2F64-47CD-9BFF-08E2B32A0FE8/command/invoke'

/** The `mqstate` CLI: `$MQSTATE_BIN`, else the shared target directory's debug build. */
export function mqstateBin () {
  if (process.env.MQSTATE_BIN) return process.env.MQSTATE_BIN
  const target = process.env.CARGO_TARGET_DIR || path.join(projectRoot, 'target')
  const bin = path.join(target, process.env.CARGO_BUILD_TARGET || '', 'debug', 'mqstate')
  if (!existsSync(bin)) throw new Error(`${bin} is missing: build it with \`cargo build -p mqstate-cli\``)
  return bin
}

/** A free TCP port on 127.0.0.1. @returns {Promise<number>} */
export function freePort () {
  return new Promise((resolve, reject) => {
    const server = net.createServer()
    server.once('error', reject)
    server.listen(0, '127.0.0.1', () => {
      const address = /** @type {net.AddressInfo} */ (server.address())
      server.close(() => resolve(address.port))
    })
  })
}

/**
 * Whether process `pid` itself holds a socket listening on `port` (Linux `/proc`). A
 * connect alone also succeeds when another test took the port and the process is exiting
 * with "address in use": the test would then talk to someone else's broker.
 * @param {number} pid
 * @param {number} port
 */
export function listens (pid, port) {
  const suffix = ':' + port.toString(16).toUpperCase().padStart(4, '0')
  const inodes = new Set()
  for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
    let lines = []
    try { lines = readFileSync(table, 'utf8').split('\n').slice(1) } catch { continue }
    for (const line of lines) {
      const cols = line.trim().split(/\s+/)
      if (cols.length > 9 && cols[1].endsWith(suffix) && cols[3] === '0A') inodes.add(`socket:[${cols[9]}]`)
    }
  }
  if (inodes.size === 0) return false
  let fds = []
  try { fds = readdirSync(`/proc/${pid}/fd`) } catch { return false }
  return fds.some((fd) => {
    try { return inodes.has(readlinkSync(`/proc/${pid}/fd/${fd}`)) } catch { return false }
  })
}

/** The process exited before it listened: most often another test took its port. */
export class PortLost extends Error {}

/**
 * Waits until `proc` itself listens on `port`; rejects with {@link PortLost} if it exits first.
 * @param {import('node:child_process').ChildProcess} proc
 * @param {number} port
 * @param {number} [timeoutMs]
 */
export async function waitListening (proc, port, timeoutMs = 10000) {
  const deadline = Date.now() + timeoutMs
  while (!listens(proc.pid ?? -1, port)) {
    if (proc.exitCode !== null || proc.signalCode !== null) {
      throw new PortLost(`the process exited (${proc.exitCode ?? proc.signalCode}) before it listened on ${port}`)
    }
    if (Date.now() > deadline) throw new Error(`pid ${proc.pid} does not listen on 127.0.0.1:${port} after ${timeoutMs} ms`)
    await sleep(10)
  }
}

/**
 * Stops a child process and waits for it.
 * @param {import('node:child_process').ChildProcess | null} proc
 */
async function stop (proc) {
  if (proc === null || proc.exitCode !== null || proc.signalCode !== null) return
  const exited = new Promise((resolve) => proc.once('exit', resolve))
  proc.kill('SIGTERM')
  const timer = setTimeout(() => proc.kill('SIGKILL'), 5000)
  await exited
  clearTimeout(timer)
}

/**
 * A running state store: `kind` is `'embedded'` (mqstate serve with its broker) or
 * `'mosquitto'` (mosquitto + mqstate serve --broker). `url` is where clients connect.
 */
export class LiveStore {
  /** @param {'embedded' | 'mosquitto'} kind */
  constructor (kind) {
    this.kind = kind
    this.port = 0
    this.url = ''
    this.dir = mkdtempSync(path.join(os.tmpdir(), 'mqstate-node-'))
    /** @type {import('node:child_process').ChildProcess | null} */
    this.broker = null
    /** @type {import('node:child_process').ChildProcess | null} */
    this.store = null
  }

  /** @param {'embedded' | 'mosquitto'} kind */
  static async start (kind) {
    const live = new LiveStore(kind)
    // A free port can be taken by another test before the listener binds it: then start
    // again on another one.
    for (let attempt = 0; ; attempt++) {
      live.port = await freePort()
      live.url = `mqtt://127.0.0.1:${live.port}`
      try {
        if (kind === 'mosquitto') await live.startBroker()
        await live.startStore()
        return live
      } catch (e) {
        await live.stopBroker()
        if (!(e instanceof PortLost) || attempt === 4) throw e
      }
    }
  }

  async startBroker () {
    const conf = path.join(this.dir, 'mosquitto.conf')
    const lines = [`listener ${this.port} 127.0.0.1`, 'allow_anonymous true', 'set_tcp_nodelay true',
      'persistence false', 'log_dest topic', 'log_type all']
    if (process.getuid && process.getuid() === 0) lines.push('user root')
    writeFileSync(conf, lines.join('\n') + '\n')
    const binary = existsSync('/usr/sbin/mosquitto') ? '/usr/sbin/mosquitto' : 'mosquitto'
    this.broker = spawn(binary, ['-c', conf], { stdio: 'ignore' })
    await waitListening(this.broker, this.port)
  }

  async startStore () {
    const args = ['serve']
    if (this.kind === 'mosquitto') args.push('--broker', this.url)
    else args.push('--listen', `127.0.0.1:${this.port}`)
    const file = path.join(this.dir, 'serve.log')
    const from = existsSync(file) ? readFileSync(file).length : 0
    const log = openSync(file, 'a')
    this.store = spawn(mqstateBin(), args, { stdio: ['ignore', log, log] })
    // Ready once the server says so: subscribed to the request topic (a fixed pause was
    // too short on a loaded machine, and requests sent before the subscription are lost).
    const deadline = Date.now() + 15000
    const store = this.store
    while (!readFileSync(file).subarray(from).includes('state store ready')) {
      const exited = store.exitCode !== null || store.signalCode !== null
      if (exited || Date.now() > deadline) {
        const said = readFileSync(file).subarray(from).toString('utf8')
        const Class = exited && said.includes('in use') ? PortLost : Error
        throw new Class(`mqstate serve not ready:\n${said}`)
      }
      await sleep(20)
    }
  }

  async stopStore () { await stop(this.store); this.store = null }
  async stopBroker () { await stop(this.broker); this.broker = null }

  async restartStore () {
    await this.stopStore()
    await this.startStore()
  }

  /**
   * Restarts mosquitto and the store behind it. The store is stopped first: a store left
   * running would reconnect to the new broker, take the clients' re-registrations, and then
   * be restarted, losing them.
   */
  async restartBroker () {
    await this.stopStore()
    await this.stopBroker()
    await this.startBroker()
    await this.startStore()
  }

  async close () {
    await this.stopStore()
    await this.stopBroker()
    rmSync(this.dir, { recursive: true, force: true })
  }
}

/** `mosquitto_sub` on the request topic: every request payload, in order. */
/** What the wire tap publishes to its own topic to know it is subscribed. */
const MARKER = 'mqstate-tap-subscribed'
const MARKER_HEX = Buffer.from(MARKER).toString('hex')

export class Tap {
  /** @param {number} port */
  static async start (port) {
    const tap = new Tap()
    tap.file = path.join(mkdtempSync(path.join(os.tmpdir(), 'mqstate-tap-')), 'tap.txt')
    const out = openSync(tap.file, 'a')
    // A topic of its own after the request topic: a message published there and seen proves
    // both subscriptions are in place (a fixed sleep does not, on a busy machine).
    const marker = `mqstate-tap/${process.pid}/${Math.random().toString(16).slice(2)}`
    tap.proc = spawn('mosquitto_sub', ['-V', 'mqttv5', '-h', '127.0.0.1', '-p', String(port), '-t', REQUEST_TOPIC, '-t', marker, '-F', '%x'],
      { stdio: ['ignore', out, 'ignore'] })
    const deadline = Date.now() + 20000
    while (!readFileSync(tap.file, 'utf8').includes(MARKER_HEX)) {
      if (Date.now() > deadline) {
        await tap.close()
        throw new Error('the wire tap (mosquitto_sub) never subscribed')
      }
      spawnSync('mosquitto_pub', ['-V', 'mqttv5', '-h', '127.0.0.1', '-p', String(port), '-t', marker, '-m', MARKER])
      await sleep(50)
    }
    return tap
  }

  constructor () {
    this.file = ''
    /** @type {import('node:child_process').ChildProcess | null} */
    this.proc = null
  }

  /** Every request payload seen so far. */
  payloads () {
    return readFileSync(this.file, 'utf8').split('\n').map((l) => l.trim()).filter((l) => l && l !== MARKER_HEX).map((l) => Buffer.from(l, 'hex'))
  }

  /**
   * Whether a request containing every one of `parts` was seen within `timeoutMs`.
   * @param {string[]} parts
   * @param {number} [timeoutMs]
   */
  async waitFor (parts, timeoutMs = 5000) {
    const deadline = Date.now() + timeoutMs
    while (Date.now() < deadline) {
      if (this.payloads().some((p) => parts.every((part) => p.includes(part)))) return true
      await sleep(50)
    }
    return false
  }

  async close () {
    await stop(this.proc)
    rmSync(path.dirname(this.file), { recursive: true, force: true })
  }
}

/** Whether mosquitto is installed (the mosquitto variant and the wire tap need it). */
export const haveMosquitto = spawnSync('sh', ['-c', 'command -v mosquitto_sub && (command -v mosquitto || test -x /usr/sbin/mosquitto)']).status === 0

/** A key prefix unique to one test. */
export function ns () {
  return `node/${Math.random().toString(16).slice(2)}${Date.now().toString(16)}/`
}
