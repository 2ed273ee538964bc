'use strict'
/**
 * @file The native addon, loaded once for every module of the package. The package has no
 * install script (npm 11 warns about them, pnpm 10 and Bun skip them): the addon comes in
 * the platform package npm picks (`mqstate-<platform>`), or is built from the packed Rust
 * sources by `scripts/install.js`, run by hand. When neither is there, loading fails with
 * one message naming the platform and that command; napi's own errors are its `cause`.
 */
const path = require('node:path')

/** The platform name of the addon, as napi's loader (native.js) spells it. */
function platformName () {
  const { platform, arch } = process
  if (platform !== 'linux') return `${platform}-${arch}`
  const report = /** @type {any} */ (process.report && process.report.getReport())
  const libc = report && report.header && report.header.glibcVersionRuntime ? 'gnu' : 'musl'
  return `linux-${arch}-${arch === 'arm' ? `${libc}eabihf` : libc}`
}

/** @type {typeof import('../native.js')} */
let native
try {
  native = require('../native.js')
} catch (cause) {
  const plat = platformName()
  const script = path.join(__dirname, '..', 'scripts', 'install.js')
  throw new Error(
    `mqstate: no native addon for ${plat}: no prebuilt package mqstate-${plat} is installed ` +
    `(none is published for this platform, or optional dependencies were omitted). Build it from ` +
    `source (needs Rust's cargo, 1.89 or newer): node ${JSON.stringify(script)}`,
    { cause })
}
module.exports = native
