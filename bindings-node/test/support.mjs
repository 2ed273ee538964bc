// Shared helpers of the Node test suite: the package under test, the shared conformance
// vectors (read in place, never copied), and a JSON reader that keeps u64 values exact.
import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import assert from 'node:assert/strict'

const here = path.dirname(fileURLToPath(import.meta.url))
const packageDir = path.resolve(here, '..')
const projectRoot = path.resolve(packageDir, '..')

/** The npm package `mqstate`, loaded through its public entry point (package.json main). */
export const mqstate = createRequire(import.meta.url)(packageDir)

/** The folder of the conformance vectors: `$MQSTATE_VECTORS`, else the project's own copy in `tests/vectors`. */
export const vectorsDir = process.env.MQSTATE_VECTORS
  ? path.resolve(process.env.MQSTATE_VECTORS)
  : path.resolve(projectRoot, 'tests', 'vectors')

/**
 * JSON.parse, except that integer literals a JS number cannot hold exactly (such as the u64
 * counter 18446744073709551615) come back as their decimal digits in a string, so callers
 * can read every integer losslessly with `BigInt(x)`.
 */
export function parseLossless (text) {
  let out = ''
  let i = 0
  while (i < text.length) {
    const ch = text[i]
    if (ch === '"') {
      let j = i + 1
      while (j < text.length && text[j] !== '"') j += text[j] === '\\' ? 2 : 1
      out += text.slice(i, j + 1)
      i = j + 1
    } else if (ch === '-' || (ch >= '0' && ch <= '9')) {
      let j = i + 1
      while (j < text.length && /[0-9.eE+-]/.test(text[j])) j++
      const token = text.slice(i, j)
      const exact = !/^-?\d+$/.test(token) || Number.isSafeInteger(Number(token))
      out += exact ? token : `"${token}"`
      i = j
    } else {
      out += ch
      i++
    }
  }
  return JSON.parse(out)
}

/** One vector file, parsed losslessly. */
export function loadVectors (name) {
  return parseLossless(readFileSync(path.join(vectorsDir, name), 'utf8'))
}

/** A non-empty list of cases from a vector file. */
export function cases (list, what) {
  assert.ok(Array.isArray(list), `${what} is not a list`)
  assert.ok(list.length > 0, `${what} has no cases`)
  return list
}

/** A bytes field of a vector: one code point per byte. */
export function bytes (s) {
  return Buffer.from(s, 'latin1')
}

/** Asserts that `fn` throws an mqstate error with `code` (and returns the error). */
export function throwsCode (fn, code, what = '') {
  let caught
  assert.throws(fn, (err) => {
    caught = err
    assert.ok(err instanceof Error, `${what}: not an Error: ${err}`)
    assert.equal(err.code, code, `${what}: code (message: ${err.message})`)
    return true
  }, what)
  return caught
}
