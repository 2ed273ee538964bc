'use strict'
/**
 * @file `mqstate/testing`: `LocalStore`, an emulated state store started in this process
 * (on a free loopback port, with faults on demand) to test an application against. See
 * `lib/testing.js` and the README's "Testing your app".
 */

const { LocalStore } = require('./lib/testing.js')

module.exports.LocalStore = LocalStore
