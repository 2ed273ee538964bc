'use strict'
// The from-source build, run by hand (`node node_modules/mqstate/scripts/install.js`: the
// package has no install lifecycle script, lib/native-addon.js names this command when
// loading finds no addon). Nothing to do when the prebuilt addon of this platform was installed (the
// optional dependency mqstate-<platform>, e.g. mqstate-linux-x64-gnu, that native.js loads).
// Otherwise (another platform, or optional dependencies omitted) it builds the addon from source with cargo (release; debug when
// MQSTATE_NODE_PROFILE=debug), honouring CARGO_TARGET_DIR, and copies it beside the loader
// under the name native.js looks for. The Rust sources are the ones packed into rust/ (an
// npm tarball) or, in a checkout of the repository, the workspace around this folder.
// Skipped when the addon is already there (MQSTATE_NODE_FORCE_BUILD=1 rebuilds) or when
// MQSTATE_NODE_SKIP_BUILD=1. Anything missing fails with one message saying what.
const { spawnSync } = require('node:child_process')
const fs = require('node:fs')
const path = require('node:path')

const pkg = path.resolve(__dirname, '..')

/** @param {string} message */
function fail (message) {
  console.error(`mqstate: cannot build the native addon: ${message}`)
  process.exit(1)
}

/** The platform suffix of the addon file, as native.js (the napi loader) names it. */
function suffix () {
  const { platform, arch } = process
  if (platform === 'linux') {
    const report = /** @type {any} */ (process.report && process.report.getReport())
    const glibc = report && report.header && report.header.glibcVersionRuntime
    const libc = glibc ? 'gnu' : 'musl'
    // 32-bit ARM: napi's name carries the float ABI (linux-arm-gnueabihf).
    return `linux-${arch}-${arch === 'arm' ? `${libc}eabihf` : libc}`
  }
  if (platform === 'darwin') return `darwin-${arch}`
  if (platform === 'win32') return `win32-${arch}-msvc`
  return `${platform}-${arch}`
}

/** The cdylib file cargo writes. */
function libraryName () {
  if (process.platform === 'win32') return 'mqstate_node.dll'
  if (process.platform === 'darwin') return 'libmqstate_node.dylib'
  return 'libmqstate_node.so'
}

/** The workspace manifest holding the sources. */
function manifest () {
  const packed = path.join(pkg, 'rust', 'Cargo.toml')
  if (fs.existsSync(packed)) return packed
  const workspace = path.join(pkg, '..', 'Cargo.toml')
  if (fs.existsSync(workspace) && fs.readFileSync(workspace, 'utf8').includes('"bindings-node"')) return workspace
  return fail('the Rust sources are missing (neither rust/Cargo.toml in the package nor the mqstate workspace around it)')
}

/** Whether the platform package with the prebuilt addon is installed beside this one. */
function prebuilt () {
  try {
    require.resolve(`mqstate-${suffix()}/package.json`, { paths: [pkg] })
    return true
  } catch {
    return false
  }
}

function main () {
  const target = path.join(pkg, `mqstate.${suffix()}.node`)
  if (process.env.MQSTATE_NODE_SKIP_BUILD === '1') return
  if (process.env.MQSTATE_NODE_FORCE_BUILD !== '1' && prebuilt()) return
  if (fs.existsSync(target) && process.env.MQSTATE_NODE_FORCE_BUILD !== '1') return
  const cargo = process.env.CARGO || 'cargo'
  const probe = spawnSync(cargo, ['-vV'], { encoding: 'utf8' })
  if (probe.error || probe.status !== 0) {
    fail(`Rust's cargo was not found (${cargo}); install Rust 1.89 or newer (https://rustup.rs) and install again`)
  }
  // The host's triple, passed as --target the way the napi CLI builds: with a shared
  // CARGO_TARGET_DIR the dependencies `napi build` compiled are reused, not built again.
  const host = (/^host: (\S+)$/m.exec(probe.stdout) || [])[1]
  if (!host) fail(`${cargo} -vV did not name the host triple:\n${probe.stdout}`)
  const toml = manifest()
  const profile = process.env.MQSTATE_NODE_PROFILE === 'debug' ? 'debug' : 'release'
  const targetDir = process.env.CARGO_TARGET_DIR
    ? path.resolve(process.env.CARGO_TARGET_DIR)
    : path.join(path.dirname(toml), 'target')
  const args = ['build', '-p', 'mqstate-node', '--manifest-path', toml, '--target-dir', targetDir, '--target', host]
  if (profile === 'release') args.push('--release')
  console.error(`mqstate: building the native addon (${profile}): ${cargo} ${args.join(' ')}`)
  const build = spawnSync(cargo, args, { stdio: 'inherit' })
  if (build.error || build.status !== 0) fail(`cargo build failed (exit ${build.status}); see its output above`)
  const built = path.join(targetDir, host, profile, libraryName())
  if (!fs.existsSync(built)) fail(`cargo reported success but ${built} does not exist`)
  fs.copyFileSync(built, target)
  console.error(`mqstate: native addon built: ${path.basename(target)}`)
}

main()
