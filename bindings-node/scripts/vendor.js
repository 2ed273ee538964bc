'use strict'
// prepack: copies the Rust sources the addon is built from (the core crate, the emulator
// crate `server` that `mqstate/testing` runs, the patched crates of third_party/ (the MQTT
// broker it embeds, the MQTT client), the workspace-hack crate and this binding crate, with a
// workspace manifest and the lock file)
// into rust/, so that the npm
// tarball builds from source on its own (scripts/install.js). `--clean` (postpack) removes
// the copy again. Nothing here is needed when building inside the repository.
const fs = require('node:fs')
const path = require('node:path')

const pkg = path.resolve(__dirname, '..')
const root = path.resolve(pkg, '..')
const out = path.join(pkg, 'rust')

// The licenses and the third-party notice go in the package's root (package.json "files").
const licenseFiles = ['LICENSE-MIT', 'LICENSE-APACHE', 'THIRD-PARTY-NOTICES']
fs.rmSync(out, { recursive: true, force: true })
for (const f of licenseFiles) fs.rmSync(path.join(pkg, f), { force: true })
if (process.argv.includes('--clean')) process.exit(0)

/**
 * Copies a file or folder.
 * @param {string} from
 * @param {string} to
 */
function copy (from, to) {
  fs.cpSync(from, to, { recursive: true, filter: (src) => !src.includes(`${path.sep}target`) })
}

const manifest = fs.readFileSync(path.join(root, 'Cargo.toml'), 'utf8')
const members = /members = \[[^\]]*\]/
if (!members.test(manifest)) throw new Error('vendor: the workspace manifest has no members list')
const vendored = manifest
  .replace(members, 'members = ["core", "server", "bindings-node", "workspace-hack"]')
  .replace(/^default-members = \[[^\]]*\]\n/m, '')
  // Path dependencies other than these are not part of the tarball.
  .split('\n').filter((line) => !/path = "(?!core"|server"|third_party\/)/.test(line)).join('\n')

fs.mkdirSync(out, { recursive: true })
fs.writeFileSync(path.join(out, 'Cargo.toml'), vendored)
fs.copyFileSync(path.join(root, 'Cargo.lock'), path.join(out, 'Cargo.lock'))
fs.mkdirSync(path.join(out, 'core'))
for (const item of ['Cargo.toml', 'src']) copy(path.join(root, 'core', item), path.join(out, 'core', item))
fs.mkdirSync(path.join(out, 'server'))
copy(path.join(root, 'server', 'src'), path.join(out, 'server', 'src'))
// Its manifest without the [[test]] and [[example]] targets, whose files are not packed.
const serverManifest = fs.readFileSync(path.join(root, 'server', 'Cargo.toml'), 'utf8')
  .split(/^(?=\[)/m).filter((section) => !/^\[\[(test|example|bench)\]\]/.test(section)).join('')
fs.writeFileSync(path.join(out, 'server', 'Cargo.toml'), serverManifest)
// Every forked crate of third_party/ (mqstate-rumqttc, mqstate-mqtt5), with upstream's license files.
for (const crate of fs.readdirSync(path.join(root, 'third_party'))) {
  fs.mkdirSync(path.join(out, 'third_party', crate), { recursive: true })
  for (const item of ['Cargo.toml', 'README.md', 'PATCHES.md', 'src', ...fs.readdirSync(path.join(root, 'third_party', crate)).filter((f) => f.startsWith('LICENSE'))]) {
    const from = path.join(root, 'third_party', crate, item)
    if (fs.existsSync(from)) copy(from, path.join(out, 'third_party', crate, item))
  }
}
// The feature-unifying crate (cargo hakari) the binding depends on: with it the dependencies
// build with the feature set of the repository's builds (and reuse them in a shared
// CARGO_TARGET_DIR).
fs.mkdirSync(path.join(out, 'workspace-hack'))
for (const item of ['Cargo.toml', 'build.rs', 'src']) copy(path.join(root, 'workspace-hack', item), path.join(out, 'workspace-hack', item))
fs.mkdirSync(path.join(out, 'bindings-node'))
for (const item of ['Cargo.toml', 'build.rs', 'src']) copy(path.join(pkg, item), path.join(out, 'bindings-node', item))
console.log(`vendor: Rust sources copied into ${path.relative(process.cwd(), out) || out}`)
// Our licenses, and the notice of every crate the addon compiles in (on any platform: the
// package builds from these sources wherever it is installed), generated from Cargo.lock.
const python = fs.existsSync(path.join(root, '.venv', 'bin', 'python')) ? path.join(root, '.venv', 'bin', 'python') : 'python3'
const notice = require('node:child_process').spawnSync(python,
  [path.join(root, 'scripts', 'lib', 'licenses.py'), 'files', '-p', 'mqstate-node', '--target', 'all', '-d', pkg],
  { stdio: 'inherit' })
if (notice.status !== 0) throw new Error('vendor: scripts/lib/licenses.py failed (scripts/lib/setup/licenses installs what it needs)')
