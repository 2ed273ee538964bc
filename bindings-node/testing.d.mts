// Types of the ES module entry point of `mqstate/testing` (testing.mjs): the same exports as testing.d.ts.
import * as testing from './testing.js'
export * from './testing.js'
export default testing
