// Types of the ES module entry point (index.mjs): the same exports as index.d.ts.
import * as mqstate from './index.js'
export * from './index.js'
export default mqstate
