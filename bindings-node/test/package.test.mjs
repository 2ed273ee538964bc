// The package as users get it: `npm pack`, then `npm install <tarball>` in an empty folder
// (no install script runs or is warned about), loading names the platform and the command
// that builds the addon from the packed Rust sources, and that command builds it (cargo,
// sharing CARGO_TARGET_DIR so that dependencies are reused); CommonJS and ES module entry points load there, and the
// examples run against a live store. Also: a missing cargo fails with one clear message,
// and a script that connects, sets, observes and closes exits by itself.
import { after, before, describe, test } from 'node:test'
import assert from 'node:assert/strict'
import { spawn, spawnSync } from 'node:child_process'
import { cpSync, existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { LiveStore, projectRoot } from './live.mjs'

const pkg = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')
const EXAMPLES = readdirSync(path.join(pkg, 'examples')).filter((f) => f.endsWith('.mjs')).sort()

/**
 * Runs a command; resolves to its exit code and output (or `null` code after `timeoutMs`).
 * @param {string} cmd
 * @param {string[]} args
 * @param {{ cwd?: string, env?: NodeJS.ProcessEnv, timeoutMs?: number }} [options]
 * @returns {Promise<{ code: number | null, out: string }>}
 */
function run (cmd, args, options = {}) {
  return new Promise((resolve) => {
    const child = spawn(cmd, args, { cwd: options.cwd, env: options.env ?? process.env, stdio: ['ignore', 'pipe', 'pipe'] })
    let out = ''
    child.stdout.on('data', (d) => { out += d })
    child.stderr.on('data', (d) => { out += d })
    const timer = setTimeout(() => child.kill('SIGKILL'), options.timeoutMs ?? 60000)
    child.on('exit', (code, signal) => {
      clearTimeout(timer)
      resolve({ code: signal === 'SIGKILL' ? null : code, out })
    })
  })
}

/**
 * npm gives every file it installs the time of the install as its mtime, so cargo would take
 * the packed Rust sources for newer than what the repository's builds compiled from the same
 * bytes, and compile our crates again, in place of the repository's units in the shared
 * CARGO_TARGET_DIR (which the next repository build compiles back). Each packed file that is
 * byte-identical to the repository's gets the repository file's mtime: cargo reuses what it
 * built from those bytes and compiles what differs. Returns the packed files that differ.
 * @param {string} packed the installed package's rust/ folder
 * @returns {string[]}
 */
function alignMtimes (packed) {
  /** @type {string[]} */
  const differ = []
  /** @param {string} dir */
  const walk = (dir) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const file = path.join(dir, entry.name)
      if (entry.isDirectory()) { walk(file); continue }
      const rel = path.relative(packed, file)
      const source = path.join(projectRoot, rel)
      if (existsSync(source) && readFileSync(source).equals(readFileSync(file))) {
        const { atime, mtime } = statSync(source)
        utimesSync(file, atime, mtime)
      } else {
        differ.push(rel)
      }
    }
  }
  walk(packed)
  return differ.sort()
}

/** @type {LiveStore} */
let live
before(async () => { live = await LiveStore.start('embedded') })
after(async () => { await live.close() })

describe('process lifetime', () => {
  test('a script that connects, sets, observes and closes exits by itself (30 runs)', { timeout: 300000 }, async () => {
    const script = `
      const { Client } = require(${JSON.stringify(pkg)})
      ;(async () => {
        const client = await Client.connect(${JSON.stringify(live.url)})
        await client.set('exit-test', 'v')
        const sub = client.observe('exit-test')
        await sub.ready()
        const pending = sub.next()
        const lock = client.lock('exit-lock')
        lock.watchStatus()
        await client.close()
        await pending
        console.log('closed')
      })()`
    const runs = await Promise.all(Array.from({ length: 30 }, () => run(process.execPath, ['-e', script], { timeoutMs: 20000 })))
    const bad = runs.filter((r) => r.code !== 0 || !r.out.includes('closed'))
    assert.deepEqual(bad, [], 'runs that did not exit cleanly by themselves')
  })

  test('the control: a pending next() on an unclosed client keeps the process alive', async () => {
    const script = `
      const { Client } = require(${JSON.stringify(pkg)})
      Client.connect(${JSON.stringify(live.url)}).then((c) => c.observe('alive').next())`
    const r = await run(process.execPath, ['-e', script], { timeoutMs: 1500 })
    assert.equal(r.code, null, `exited with ${r.code}: ${r.out}`)
  })
})

describe('install from an npm pack tarball', () => {
  /** @type {string} */
  let dir
  before(() => { dir = mkdtempSync(path.join(os.tmpdir(), 'mqstate-npm-')) })
  after(() => { rmSync(dir, { recursive: true, force: true }) })

  test('npm pack + npm install (no install script) + the from-source command; examples run there', { timeout: 900000 }, async () => {
    // Under a lock on the package folder where flock(1) exists: scripts/package packs it too
    // (the packages step, in another lane of scripts/test), and each pack's prepack writes
    // rust/ there that its postpack removes.
    const npmPack = ['npm', 'pack', '--pack-destination', dir, '--loglevel=error']
    const flock = spawnSync('flock', ['--version']).status === 0
    const pack = await run(flock ? 'flock' : npmPack[0], flock ? [pkg, ...npmPack] : npmPack.slice(1), { cwd: pkg, timeoutMs: 300000 })
    assert.equal(pack.code, 0, pack.out)
    const tarball = readdirSync(dir).find((f) => f.endsWith('.tgz'))
    assert.ok(tarball, `no tarball: ${pack.out}`)
    const list = spawnSync('tar', ['tzf', path.join(dir, tarball)], { encoding: 'utf8' }).stdout
    assert.ok(!/\.node$/m.test(list), 'the tarball must not carry a prebuilt addon')
    assert.match(list, /package\/rust\/core\/src\/lib\.rs/)
    const app = path.join(dir, 'app')
    cpSync(path.join(pkg, 'examples'), app, { recursive: true })
    writeFileSync(path.join(app, 'package.json'), JSON.stringify({ name: 'app', private: true, type: 'module' }))
    const env = {
      ...process.env,
      CARGO_TARGET_DIR: process.env.CARGO_TARGET_DIR || path.join(projectRoot, 'target'),
      MQSTATE_NODE_PROFILE: 'debug'
    }
    // No lifecycle script: npm installs without running or warning about one, and (no
    // platform package here) loading fails with one message naming the platform and the
    // command that builds the addon from the packed sources.
    const install = await run('npm', ['install', '--no-audit', '--no-fund', path.join(dir, tarball)],
      { cwd: app, env, timeoutMs: 120000 })
    assert.equal(install.code, 0, install.out)
    assert.doesNotMatch(install.out, /install.scripts?/i, 'npm warned about an install script')
    const missing = await run(process.execPath, ['-e', "require('mqstate')"], { cwd: app })
    assert.notEqual(missing.code, 0, missing.out)
    assert.match(missing.out, /mqstate: no native addon for linux-x64-(gnu|musl): .*Build it from source .*: node ".*scripts\/install\.js"/)
    // Only the manifests are rewritten by the packing (the workspace's members, the server's
    // test targets); every source file is the repository's.
    const differ = alignMtimes(path.join(app, 'node_modules', 'mqstate', 'rust'))
    assert.deepEqual(differ, ['Cargo.toml', 'server/Cargo.toml'], 'packed files that differ from the repository')
    const script = path.join(app, 'node_modules', 'mqstate', 'scripts', 'install.js')
    const build = await run(process.execPath, [script], { cwd: app, env, timeoutMs: 840000 })
    assert.equal(build.code, 0, build.out)
    // The telemetry example needs the OpenTelemetry packages (the pinned dev dependencies);
    // the other examples then run with the API there and no SDK (a no-op provider).
    const devDependencies = JSON.parse(readFileSync(path.join(pkg, 'package.json'), 'utf8')).devDependencies
    const otel = Object.entries(devDependencies).filter(([name]) => name.startsWith('@opentelemetry/')).map(([name, v]) => `${name}@${v}`)
    const otelInstall = await run('npm', ['install', '--prefer-offline', '--no-audit', '--no-fund', ...otel], { cwd: app, env, timeoutMs: 120000 })
    assert.equal(otelInstall.code, 0, otelInstall.out)
    const cjs = await run(process.execPath, ['-e', "const m = require('mqstate'); console.log(typeof m.Client.connect, typeof m.hlc.Hlc)"], { cwd: app })
    assert.equal(cjs.out.trim(), 'function function', cjs.out)
    for (const example of EXAMPLES) {
      const r = await run(process.execPath, [example], { cwd: app, env: { ...process.env, MQSTATE_URL: live.url }, timeoutMs: 30000 })
      assert.equal(r.code, 0, `${example}: ${r.out}`)
    }
  })

  test('without cargo, install fails with one message naming it', async () => {
    const copy = path.join(dir, 'nocargo')
    cpSync(path.join(pkg, 'scripts'), path.join(copy, 'scripts'), { recursive: true })
    const r = await run(process.execPath, [path.join(copy, 'scripts', 'install.js')],
      { env: { ...process.env, CARGO: path.join(dir, 'no-such-cargo') } })
    assert.equal(r.code, 1)
    assert.match(r.out, /mqstate: cannot build the native addon: Rust's cargo was not found/)
  })
})
