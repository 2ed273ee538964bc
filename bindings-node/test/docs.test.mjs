// Docs that run: every ```js block of every README and docs page (extracted by
// scripts/lib/docblocks) runs against a live `mqstate serve`, each in its own Node process, from
// a project made the way a user makes one (`npm init -y`: CommonJS) with `mqstate` (this
// package) and `mqtt` (for the pure-layer example) in its node_modules.
//
// A block that loads the package itself (`require(...)` or `import ... from`) is a whole
// program: it runs as written, as CommonJS (`.js` in that project) or as an ES module
// (`.mjs`). Any other block is a snippet of the quickstart's `main`: it runs inside an ES
// module that connects `client` and puts every export of the package in scope, and closes
// the client afterwards. In both, only the broker address `mqtt://localhost:1883` is
// replaced by the live store's.
import { after, before, describe, test } from 'node:test'
import assert from 'node:assert/strict'
import { spawn, spawnSync } from 'node:child_process'
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { LiveStore, projectRoot } from './live.mjs'
import { mqstate } from './support.mjs'

const pkg = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')
const DOC_URL = 'mqtt://localhost:1883'

/**
 * The js blocks of the documentation, as scripts/lib/docblocks extracts them.
 * @param {string} dir
 * @returns {{ name: string, code: string }[]}
 */
function extractBlocks (dir) {
  const r = spawnSync('python3', [path.join(projectRoot, 'scripts', 'lib', 'docblocks'), 'extract', 'js', dir], { encoding: 'utf8' })
  assert.equal(r.status, 0, r.stderr)
  return r.stdout.split('\n').filter(Boolean).map((file) => ({
    name: path.basename(file, '.js'),
    code: readFileSync(file, 'utf8')
  }))
}

/**
 * How a block runs: a whole CommonJS or ES module program, or a snippet.
 * @param {string} code
 * @returns {'cjs' | 'esm' | 'snippet'}
 */
function kindOf (code) {
  if (/^import\s.*\sfrom\s/m.test(code)) return 'esm'
  if (/\brequire\(/.test(code)) return 'cjs'
  return 'snippet'
}

/**
 * A snippet inside an ES module with `client` connected and every export in scope.
 * @param {string} code
 * @param {string} url
 */
function wrapSnippet (code, url) {
  const names = Object.keys(mqstate).join(', ')
  return [
    "import * as mqstate from 'mqstate'",
    `const { ${names} } = mqstate`,
    `const client = await Client.connect(${JSON.stringify(url)})`,
    'try {',
    code,
    '} finally {',
    '  await client.close()',
    '}',
    ''
  ].join('\n')
}

/**
 * Runs `node file` in `cwd`; resolves to its exit code (`null` when killed after
 * `timeoutMs`) and output.
 * @param {string} file
 * @param {string} cwd
 * @param {number} timeoutMs
 * @returns {Promise<{ code: number | null, out: string }>}
 */
function runNode (file, cwd, timeoutMs) {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [file], { cwd, stdio: ['ignore', 'pipe', 'pipe'] })
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

/** @type {LiveStore} */
let live
/** @type {string} */
let dir
/** @type {string} */
let app
const extracted = mkdtempSync(path.join(os.tmpdir(), 'mqstate-docblocks-'))
const blocks = extractBlocks(extracted)

before(async () => {
  live = await LiveStore.start('embedded')
  dir = mkdtempSync(path.join(os.tmpdir(), 'mqstate-docs-'))
  app = path.join(dir, 'app')
  mkdirSync(path.join(app, 'node_modules'), { recursive: true })
  const init = spawnSync('npm', ['init', '-y'], { cwd: app, encoding: 'utf8' })
  assert.equal(init.status, 0, init.stderr)
  assert.notEqual(JSON.parse(readFileSync(path.join(app, 'package.json'), 'utf8')).type, 'module')
  symlinkSync(pkg, path.join(app, 'node_modules', 'mqstate'), 'dir')
  symlinkSync(path.join(pkg, 'node_modules', 'mqtt'), path.join(app, 'node_modules', 'mqtt'), 'dir')
})
after(async () => {
  rmSync(extracted, { recursive: true, force: true })
  if (dir) rmSync(dir, { recursive: true, force: true })
  await live?.close()
})

describe('documentation blocks run against a live store', () => {
  test('the Node README has js blocks, among them a CommonJS and an ES module quickstart', () => {
    const ours = blocks.filter((b) => b.name.startsWith('bindings-node_README-'))
    assert.ok(ours.length >= 8, `only ${ours.length} blocks`)
    assert.ok(ours.some((b) => kindOf(b.code) === 'cjs' && b.code.includes('Client.connect')))
    assert.ok(ours.some((b) => kindOf(b.code) === 'esm' && b.code.includes('Client.connect')))
  })

  test('the pure layers\' error block is a whole program (it is not inside the quickstart)', () => {
    // It runs without a client, so it must load what it uses itself: as a snippet it had
    // every export in scope here and threw `MalformedError is not defined` for people.
    const block = blocks.find((b) => b.name.startsWith('bindings-node_README-') && b.code.includes('MalformedError'))
    assert.ok(block, 'the README has the pure layers\' error block')
    assert.equal(kindOf(block.code), 'cjs', block.code)
  })

  for (const block of blocks) {
    const kind = kindOf(block.code)
    test(`${block.name} (${kind})`, { timeout: 60000 }, async (t) => {
      assert.ok(block.code.includes(DOC_URL) || kind === 'snippet' || !block.code.includes('mqtt://'),
        'a block connects to another address than the documented one')
      const code = block.code.replaceAll(DOC_URL, live.url)
      const file = path.join(app, `${block.name}.${kind === 'cjs' ? 'js' : 'mjs'}`)
      writeFileSync(file, kind === 'snippet' ? wrapSnippet(code, live.url) : code)
      const r = await runNode(file, app, 45000)
      for (const line of r.out.trimEnd().split('\n').filter(Boolean)) t.diagnostic(line)
      assert.equal(r.code, 0, `${block.name} ${r.code === null ? 'did not finish' : `exited with ${r.code}`}:\n${r.out}`)
    })
  }
})
