// The README's "Testing your app" examples for Jest and Vitest, run under Jest and Vitest
// (the node:test one is an ordinary js block: test/docs.test.mjs runs it). Each is taken from
// the README as written (scripts/lib/docblocks), saved in a project of its own whose
// node_modules links this package (and vitest), and run by the framework's CLI from this
// package's devDependencies; the run must pass all four tests of the example.
import { after, before, describe, test } from 'node:test'
import assert from 'node:assert/strict'
import { spawn, spawnSync } from 'node:child_process'
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { projectRoot } from './live.mjs'

const pkg = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')

/** The README's js blocks marked as run under `framework` (in their no-run reason). */
function blocksFor (/** @type {string} */ framework) {
  const r = spawnSync('python3', [path.join(projectRoot, 'scripts', 'lib', 'docblocks'), 'json', 'js'], { encoding: 'utf8' })
  assert.equal(r.status, 0, r.stderr)
  /** @type {{ path: string, flags: string, code: string }[]} */
  const all = JSON.parse(r.stdout)
  return all.filter((b) => b.path === 'bindings-node/README.md' && b.flags.includes(`runs it under ${framework}`))
}

/**
 * Runs a command; resolves to its exit code (`null` when killed after `timeoutMs`) and output.
 * @param {string[]} args arguments of `node`
 * @param {string} cwd
 * @param {number} timeoutMs
 * @returns {Promise<{ code: number | null, out: string }>}
 */
function runNode (args, cwd, timeoutMs) {
  return new Promise((resolve) => {
    /** @type {NodeJS.ProcessEnv} */
    const env = { ...process.env, CI: 'true', NO_COLOR: '1' }
    delete env.NODE_TEST_CONTEXT // the frameworks are not node:test children
    const child = spawn(process.execPath, args, { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] })
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

/** @type {string} */
let dir
before(() => { dir = mkdtempSync(path.join(os.tmpdir(), 'mqstate-frameworks-')) })
after(() => { if (dir) rmSync(dir, { recursive: true, force: true }) })

/**
 * A project in `dir/name` with this package (and `links`, from this package's
 * node_modules) in its node_modules, holding `file` with `code`.
 * @param {string} name
 * @param {string} file
 * @param {string} code
 * @param {string[]} links
 */
function project (name, file, code, links) {
  const app = path.join(dir, name)
  mkdirSync(path.join(app, 'node_modules'), { recursive: true })
  writeFileSync(path.join(app, 'package.json'), JSON.stringify({ name: `app-${name}`, private: true }))
  symlinkSync(pkg, path.join(app, 'node_modules', 'mqstate'), 'dir')
  for (const link of links) symlinkSync(path.join(pkg, 'node_modules', link), path.join(app, 'node_modules', link), 'dir')
  writeFileSync(path.join(app, file), code)
  return app
}

describe('the README\'s LocalStore examples under Jest and Vitest', () => {
  test('the README has one example for each', () => {
    assert.equal(blocksFor('Jest').length, 1)
    assert.equal(blocksFor('Vitest').length, 1)
  })

  test('Jest runs the Jest example: 4 tests pass', { timeout: 120000 }, async () => {
    const [block] = blocksFor('Jest')
    assert.match(block.code, /require\('mqstate\/testing'\)/)
    const app = project('jest', 'visits.test.js', block.code, [])
    const jest = path.join(pkg, 'node_modules', 'jest', 'bin', 'jest.js')
    const r = await runNode([jest, '--rootDir', app, '--ci', '--colors=false', 'visits.test.js'], app, 110000)
    assert.equal(r.code, 0, `jest ${r.code === null ? 'did not finish' : `exited with ${r.code}`}:\n${r.out}`)
    assert.match(r.out, /Tests:\s+4 passed, 4 total/, r.out)
  })

  test('Vitest runs the Vitest example: 4 tests pass', { timeout: 120000 }, async () => {
    const [block] = blocksFor('Vitest')
    assert.match(block.code, /from 'mqstate\/testing'/)
    const app = project('vitest', 'visits.test.mjs', block.code, ['vitest'])
    const vitest = path.join(pkg, 'node_modules', 'vitest', 'vitest.mjs')
    const r = await runNode([vitest, 'run', '--root', app, '--reporter=verbose', 'visits.test.mjs'], app, 110000)
    assert.equal(r.code, 0, `vitest ${r.code === null ? 'did not finish' : `exited with ${r.code}`}:\n${r.out}`)
    assert.match(r.out, /Tests\s+4 passed \(4\)/, r.out)
  })
})
