// The ES module entry point of `mqstate/testing`: the same objects as the CommonJS one (testing.js).
import cjs from './testing.js'

export const { LocalStore } = cjs
export default cjs
