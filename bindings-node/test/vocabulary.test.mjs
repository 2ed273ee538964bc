// The public API against the core's vocabulary (core/vocabulary.json): the error classes
// (generated from it, drift-checked here), every operation of every object (client, lock,
// election, subscription, pager) and its options under their Node names — in the
// declarations (index.d.ts, read with the TypeScript compiler) and at run time against a
// live store (each option is taken, its unit-less name is refused naming the `…Ms` one) —
// the read-only properties, the events' fields under their Node names, SET conditions,
// VDEL outcomes, lock states, the cache counters and the defaults. Every name comes from the
// vocabulary's `names.node`; the only list kept here is what Node adds that the vocabulary
// does not describe (NODE_ONLY_MEMBERS, NODE_ONLY_OPTIONS).
import { after, before, describe, test } from 'node:test'
import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import ts from 'typescript'
import { LiveStore, ns, projectRoot } from './live.mjs'
import { mqstate } from './support.mjs'

const pkg = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')
const require = createRequire(import.meta.url)
const vocabulary = JSON.parse(readFileSync(path.join(projectRoot, 'core', 'vocabulary.json'), 'utf8'))
const { generate } = require(path.join(pkg, 'scripts', 'gen-errors.js'))

/**
 * The JS class of an object of the vocabulary (`client` → `Client`, `pager` → `Pager`).
 * @param {string} owner
 */
const classOf = (owner) => owner[0].toUpperCase() + owner.slice(1)
/** The objects of the vocabulary: the owners of its operations and properties. */
const OWNERS = [...new Set([...vocabulary.operations, ...vocabulary.properties].map((/** @type {any} */ x) => x.owner))]
/** Options Node adds to every call that waits: its `AbortSignal`. */
const NODE_ONLY_OPTIONS = new Set(['signal'])
/**
 * Public members Node adds to the vocabulary's objects (JavaScript idioms and one helper):
 * everything else a class declares must be an operation or a property of the vocabulary.
 */
const NODE_ONLY_MEMBERS = {
  Client: ['linkInfo'], // the connection's history (counts), for diagnostics
  Lock: [],
  Election: [],
  Subscription: ['ready', 'return', 'closed'], // waits for registration; the iterator protocol's return; whether ended
  Pager: ['done'] // whether the last page came
}

/** The declarations, with a type checker. */
const program = ts.createProgram([path.join(pkg, 'index.d.ts')], { strict: true, types: ['node'] })
const checker = program.getTypeChecker()
const entry = /** @type {ts.SourceFile} */ (program.getSourceFile(path.join(pkg, 'index.d.ts')))
const exported = new Map(checker.getExportsOfModule(/** @type {ts.Symbol} */ (checker.getSymbolAtLocation(entry))).map((s) => [s.name, s]))

/**
 * The declared instance type of an exported class.
 * @param {string} name
 */
function classType (name) {
  const symbol = exported.get(name)
  assert.ok(symbol, `index.d.ts exports no ${name}`)
  return checker.getDeclaredTypeOfSymbol(symbol)
}

/**
 * The option names a declared method takes (the properties of its `options` parameter),
 * or `null` when it has none.
 * @param {string} className
 * @param {string} method
 */
function declaredOptions (className, method) {
  const prop = classType(className).getProperty(method)
  assert.ok(prop, `index.d.ts: ${className} has no ${method}`)
  const type = checker.getTypeOfSymbolAtLocation(prop, entry)
  const names = new Set()
  let any = false
  for (const signature of type.getCallSignatures()) {
    const param = signature.getParameters().find((p) => p.name === 'options')
    if (!param) continue
    any = true
    const optionsType = checker.getNonNullableType(checker.getTypeOfSymbolAtLocation(param, entry))
    for (const p of checker.getPropertiesOfType(optionsType)) names.add(p.name)
  }
  return any ? names : null
}

/**
 * The string literals of a declared type (`'a' | 'b'`).
 * @param {ts.Type} type
 */
function literals (type) {
  const parts = type.isUnion() ? type.types : [type]
  return new Set(parts.filter((t) => t.isStringLiteral()).map((t) => /** @type {ts.StringLiteralType} */ (t).value))
}

/**
 * The type of a declared property.
 * @param {string} className
 * @param {string} property
 */
function propertyType (className, property) {
  const prop = classType(className).getProperty(property)
  assert.ok(prop, `index.d.ts: ${className} has no ${property}`)
  return checker.getTypeOfSymbolAtLocation(prop, entry)
}

describe('error classes', () => {
  test('the generated files match what core/vocabulary.json generates', () => {
    for (const [file, want] of generate(vocabulary)) {
      assert.equal(readFileSync(path.join(pkg, file), 'utf8'), want,
        `bindings-node/${file} is stale: run node scripts/gen-errors.js in bindings-node`)
    }
  })

  test('one class per code, named and parented as the table says, from both entry points', async () => {
    const esm = await import('mqstate')
    const base = mqstate[vocabulary.error_base_class]
    assert.equal(typeof base, 'function')
    for (const family of vocabulary.error_families) {
      assert.equal(Object.getPrototypeOf(mqstate[family]), base, family)
      assert.equal(esm[family], mqstate[family], `${family} (ESM)`)
    }
    for (const row of vocabulary.errors) {
      const Class = mqstate[row.class]
      assert.equal(typeof Class, 'function', row.class)
      assert.equal(esm[row.class], Class, `${row.class} (ESM)`)
      assert.equal(Object.getPrototypeOf(Class), mqstate[row.parent], `${row.class} extends ${row.parent}`)
      const err = new Class('m')
      assert.ok(err instanceof Error && err instanceof base)
      assert.equal(err.code, row.code)
      assert.equal(err.name, row.code === 'cancelled' ? 'AbortError' : row.class)
    }
    const names = new Set([vocabulary.error_base_class, ...vocabulary.error_families, ...vocabulary.errors.map((/** @type {any} */ r) => r.class)])
    const errorExports = Object.keys(mqstate).filter((k) => /Error$/.test(k))
    assert.deepEqual(errorExports.filter((k) => !names.has(k)), [], 'error classes the table does not name')
    assert.deepEqual([...mqstate.errorCodes()].sort(), vocabulary.errors.map((/** @type {any} */ r) => r.code).sort())
  })

  test('index.d.ts declares each class with its parent and its code', () => {
    for (const row of vocabulary.errors) {
      const type = classType(row.class)
      const bases = type.getBaseTypes() ?? []
      assert.deepEqual(bases.map((b) => b.symbol.name), [row.parent], row.class)
      assert.deepEqual([...literals(propertyType(row.class, 'code'))], [row.code], row.class)
    }
  })
})

describe('operations, options and properties', () => {
  /** @type {LiveStore} */
  let live
  /** @type {import('mqstate').Client} */
  let client
  before(async () => {
    live = await LiveStore.start('embedded')
    client = await mqstate.Client.connect(live.url)
  })
  after(async () => {
    await client?.close()
    await live?.close()
  })

  test('the vocabulary\'s objects are the classes here', () => {
    assert.deepEqual([...OWNERS].sort(), ['client', 'election', 'lock', 'pager', 'subscription'])
    assert.deepEqual(Object.keys(NODE_ONLY_MEMBERS).sort(), OWNERS.map(classOf).sort())
  })

  test('index.d.ts: every operation, with exactly the vocabulary\'s options (plus signal)', () => {
    for (const op of vocabulary.operations) {
      const className = classOf(op.owner)
      const want = op.options.map((/** @type {any} */ o) => o.names.node)
      const got = declaredOptions(className, op.names.node)
      if (got === null) {
        assert.deepEqual(want, [], `${className}.${op.names.node} takes no options in index.d.ts`)
        continue
      }
      assert.deepEqual([...got].filter((n) => !NODE_ONLY_OPTIONS.has(n)).sort(), [...want].sort(), `${className}.${op.names.node}`)
    }
  })

  test('index.d.ts and the classes: no public member the vocabulary does not name (but the Node-only ones)', () => {
    for (const owner of OWNERS) {
      const className = classOf(owner)
      const named = new Set([
        ...vocabulary.operations.filter((/** @type {any} */ o) => o.owner === owner).map((/** @type {any} */ o) => o.names.node),
        ...vocabulary.properties.filter((/** @type {any} */ p) => p.owner === owner).map((/** @type {any} */ p) => p.names.node),
        ...NODE_ONLY_MEMBERS[/** @type {keyof typeof NODE_ONLY_MEMBERS} */ (className)]
      ])
      // Symbol-keyed members (`[Symbol.asyncIterator]`, `[Symbol.asyncDispose]`) are protocols, not names.
      const declared = classType(className).getProperties().map((p) => p.name).filter((n) => !n.startsWith('__@'))
      assert.deepEqual(declared.filter((n) => !named.has(n)), [], `index.d.ts: ${className}`)
      const Class = /** @type {any} */ (mqstate)[className]
      const defined = Object.getOwnPropertyNames(Class.prototype).filter((n) => n !== 'constructor')
      assert.deepEqual(defined.filter((n) => !named.has(n)), [], className)
      for (const n of named) assert.ok(defined.includes(n), `${className} has no ${n}`)
    }
  })

  /**
   * A live object of the vocabulary's `owner`, under the fresh prefix `k`.
   * @param {string} owner
   * @param {string} k
   * @returns {any}
   */
  function objectOf (owner, k) {
    switch (owner) {
      case 'client': return client
      case 'lock': return client.lock(`${k}lock`)
      case 'election': return client.election(`${k}election`, 'probe')
      case 'subscription': return client.observe(`${k}observed`)
      case 'pager': return client.scan(`${k}*`)
      default: assert.fail(`an object of the vocabulary with no class here: ${owner}`)
    }
  }

  /**
   * Calls `op` of a fresh object of its owner with `options`; resolves to what it threw or
   * rejected with (`undefined` when it succeeded).
   * @param {any} op
   * @param {Record<string, unknown>} options
   */
  async function attempt (op, options) {
    const k = ns()
    const method = op.names.node
    // `client.close()` is tried on a client of its own: the others are still needed.
    const target = op.owner === 'client' && method === 'close' ? await mqstate.Client.connect(live.url) : objectOf(op.owner, k)
    const args = {
      set: [`${k}key`, 'v', options],
      vdel: [`${k}key`, 'v', options],
      edit: [`${k}key`, () => undefined, options],
      election: [`${k}election`, 'probe', options],
      lock: [`${k}key`, options],
      setAutoRenew: [null]
    }[/** @type {string} */ (method)] ?? (op.owner === 'client' && method !== 'close' ? [`${k}key`, options] : [options])
    try {
      const out = /** @type {any} */ (target)[method](...args)
      if (out && typeof out.then === 'function') await out
      if (out && typeof out.ready === 'function') {
        try {
          await out.ready() // a subscription reports a refused registration here
        } finally {
          out.close()
        }
      }
      return undefined
    } catch (e) {
      return e
    } finally {
      if (op.owner === 'subscription') target.close()
    }
  }

  test('at run time every operation exists, every option is taken, and its unit-less name is refused naming it', async () => {
    const probe = Symbol('not a valid value of any option')
    for (const op of vocabulary.operations) {
      const where = `${op.owner}.${op.names.node}`
      assert.equal(typeof /** @type {any} */ (mqstate)[classOf(op.owner)].prototype[op.names.node], 'function', where)
      if (op.options.length === 0) {
        assert.equal(await attempt(op, {}), undefined, `${where}() failed`)
      }
      for (const option of op.options) {
        const name = option.names.node
        const taken = await attempt(op, { [name]: probe })
        assert.ok(taken instanceof mqstate.InvalidArgumentError, `${where} { ${name}: <symbol> }: ${taken}`)
        assert.doesNotMatch(taken.message, /unknown option/, `${where} does not take ${name}`)
        if (option.unit === 'duration') {
          assert.ok(name.endsWith('Ms'), `${where}: ${name} is a duration without Ms`)
          const unitless = name.slice(0, -2) // the name it has where it is not milliseconds
          const old = await attempt(op, { [unitless]: 1 })
          assert.ok(old instanceof mqstate.InvalidArgumentError, `${where} took ${unitless}`)
          assert.match(old.message, new RegExp(`option ${unitless} is now ${name} \\(milliseconds\\)`), where)
        }
      }
      if (declaredOptions(classOf(op.owner), op.names.node) === null) continue
      const bogus = await attempt(op, { noSuchOption: 1 })
      assert.ok(bogus instanceof mqstate.InvalidArgumentError, `${where} took noSuchOption: ${bogus}`)
      assert.match(bogus.message, /unknown option noSuchOption/, where)
    }
  })

  test('properties: read-only in index.d.ts and at run time, readable on a live object', () => {
    for (const property of vocabulary.properties) {
      const className = classOf(property.owner)
      const name = property.names.node
      const declared = classType(className).getProperty(name)
      assert.ok(declared, `index.d.ts: ${className} has no ${name}`)
      const readonly = (declared.getDeclarations() ?? []).every((d) =>
        ts.isGetAccessorDeclaration(d) || (ts.getCombinedModifierFlags(d) & ts.ModifierFlags.Readonly) !== 0)
      assert.ok(readonly, `index.d.ts: ${className}.${name} is not read-only`)
      const descriptor = Object.getOwnPropertyDescriptor(/** @type {any} */ (mqstate)[className].prototype, name)
      assert.ok(descriptor && typeof descriptor.get === 'function' && descriptor.set === undefined,
        `${className}.${name} is not a getter without a setter`)
      const object = objectOf(property.owner, ns())
      assert.notEqual(object[name], undefined, `${className}.${name}`)
    }
  })

  test('events at run time carry their fields under the Node names', async () => {
    const fields = Object.fromEntries(vocabulary.events.map((/** @type {any} */ e) => [e.name, e.names.node]))
    const k = ns()
    /**
     * The first event of type `type` from `sub`, closing it.
     * @param {import('mqstate').Subscription<any>} sub
     * @param {string} type
     */
    async function first (sub, type) {
      try {
        for (;;) {
          const { value } = await sub.next({ timeoutMs: 5000 })
          if (value?.type === type) return value
        }
      } finally {
        sub.close()
      }
    }
    const observed = await client.observe(`${k}key`).ready()
    await client.set(`${k}key`, 'v')
    const lock = client.lock(`${k}lock`)
    const seen = {
      change: await first(observed, 'change'),
      holder: await first(lock.watchHolder(), 'holder'),
      status: await first(lock.watchStatus(), 'status')
    }
    for (const [type, event] of Object.entries(seen)) {
      for (const field of fields[type]) assert.ok(field in event, `${type} event: ${field}`)
    }
  })

  test('defaults are the core\'s: a lock\'s lease and an election\'s term', async () => {
    const k = ns()
    const lock = client.lock(`${k}L`)
    const status = lock.watchStatus()
    await lock.acquire()
    let event = await status.next({ timeoutMs: 5000 })
    while (event.value?.type === 'status' && event.value.state !== 'held') event = await status.next({ timeoutMs: 5000 })
    assert.equal(event.value?.type === 'status' && event.value.leaseMs, vocabulary.defaults_ms.lease)
    status.close()
    await lock.release()
    const election = client.election(`${k}E`, 'me')
    const mine = election.watchStatus()
    await election.campaign({ timeoutMs: 5000 })
    event = await mine.next({ timeoutMs: 5000 })
    while (event.value?.type === 'status' && event.value.state !== 'held') event = await mine.next({ timeoutMs: 5000 })
    assert.equal(event.value?.type === 'status' && event.value.leaseMs, vocabulary.defaults_ms.term)
    mine.close()
    await election.resign()
  })
})

describe('words', () => {
  test('SET conditions (any case), VDEL outcomes, lock states and loss reasons', () => {
    const conditions = literals(checker.getDeclaredTypeOfSymbol(/** @type {ts.Symbol} */ (exported.get('SetCondition'))))
    for (const c of vocabulary.set_conditions) {
      assert.ok(conditions.has(c) && conditions.has(c.toUpperCase()), c)
    }
    assert.equal(conditions.size, vocabulary.set_conditions.length * 2)
    const vdel = classType('Client').getProperty('vdel')
    const signature = checker.getTypeOfSymbolAtLocation(/** @type {ts.Symbol} */ (vdel), entry).getCallSignatures()[0]
    const outcome = /** @type {ts.TypeReference} */ (signature.getReturnType())
    const [resolved] = checker.getTypeArguments(outcome)
    assert.deepEqual([...literals(resolved)].sort(), [...vocabulary.vdel_outcomes].sort())
    assert.deepEqual([...literals(propertyType('LockStatus', 'state'))].sort(), [...vocabulary.lock_states].sort())
    assert.deepEqual([...literals(propertyType('LockStatus', 'reason'))].sort(), [...vocabulary.loss_reasons].sort())
  })

  test('the cache counters: CacheStats in index.d.ts, in the vocabulary\'s order', () => {
    const declared = classType('CacheStats').getProperties().map((p) => p.name)
    // Node's names are camelCase, as every name of the vocabulary (lease_renewals: leaseRenewals).
    const camel = (/** @type {string} */ name) => name.replace(/_([a-z])/g, (_, c) => c.toUpperCase())
    assert.deepEqual(declared, vocabulary.cache_counters.map(camel))
    for (const name of declared) {
      assert.equal(checker.typeToString(propertyType('CacheStats', name)), 'number', `CacheStats.${name}`)
    }
    const cacheStats = classType('Client').getProperty('cacheStats')
    const signature = checker.getTypeOfSymbolAtLocation(/** @type {ts.Symbol} */ (cacheStats), entry).getCallSignatures()[0]
    assert.equal(checker.typeToString(signature.getReturnType()), 'CacheStats | null')
  })

  test('the cache-hit yield is the core\'s number (cache_hit_yield_every)', () => {
    const source = readFileSync(path.join(projectRoot, 'bindings-node', 'lib', 'client.js'), 'utf8')
    const found = /^const CACHE_HIT_YIELD_EVERY = (\d+)$/m.exec(source)
    assert.ok(found, 'lib/client.js declares CACHE_HIT_YIELD_EVERY')
    assert.equal(Number(found[1]), vocabulary.cache_hit_yield_every)
  })

  test('index.d.ts: each event\'s type and its fields under the Node names', () => {
    /** The class of each event (Node has one per shape; degraded and restored share one). */
    const classOfEvent = { change: 'Change', holder: 'HolderChange', status: 'LockStatus', degraded: 'ConnectionEvent', restored: 'ConnectionEvent' }
    assert.deepEqual(Object.keys(classOfEvent).sort(), vocabulary.events.map((/** @type {any} */ e) => e.name).sort())
    for (const event of vocabulary.events) {
      const className = classOfEvent[/** @type {keyof typeof classOfEvent} */ (event.name)]
      assert.ok(literals(propertyType(className, 'type')).has(event.name), `${className}.type`)
      assert.equal(event.names.node.length, event.fields.length, event.name)
      for (const field of event.names.node) propertyType(className, field)
    }
  })
})

describe('the testing module (mqstate/testing) against testing_operations and testing_properties', () => {
  const file = path.join(pkg, 'testing.d.ts')
  const tprogram = ts.createProgram([file], { strict: true, types: ['node'] })
  const tchecker = tprogram.getTypeChecker()
  const tentry = /** @type {ts.SourceFile} */ (tprogram.getSourceFile(file))
  const texports = new Map(tchecker.getExportsOfModule(/** @type {ts.Symbol} */ (tchecker.getSymbolAtLocation(tentry))).map((s) => [s.name, s]))
  const symbol = /** @type {ts.Symbol} */ (texports.get('LocalStore'))
  /** The declared instance type and the static side of `LocalStore`. */
  const instance = tchecker.getDeclaredTypeOfSymbol(symbol)
  const statics = tchecker.getTypeOfSymbolAtLocation(symbol, tentry)
  const ops = vocabulary.testing_operations
  const props = vocabulary.testing_properties
  /** Operations on the class itself rather than on a store. */
  const STATIC = new Set(['start'])
  /**
   * Parameters that are an operation's subject, not an option (the vocabulary names options
   * only; as for the client, whose `get(key)` has no `key` option).
   * @type {Record<string, string[]>}
   */
  const SUBJECTS = { get: ['key'] }
  const { LocalStore } = require(path.join(pkg, 'testing.js'))

  /**
   * The names a declared method takes: its parameters' names, and for an `options`
   * parameter the properties of its object type (`restart(keepData)` / `restart({ keepData })`).
   * @param {ts.Type} owner
   * @param {string} method
   */
  function parameterNames (owner, method) {
    const prop = owner.getProperty(method)
    assert.ok(prop, `testing.d.ts: LocalStore has no ${method}`)
    const names = new Set()
    for (const signature of tchecker.getTypeOfSymbolAtLocation(prop, tentry).getCallSignatures()) {
      for (const param of signature.getParameters()) {
        if (param.name !== 'options') {
          names.add(param.name)
          continue
        }
        const type = tchecker.getNonNullableType(tchecker.getTypeOfSymbolAtLocation(param, tentry))
        for (const p of tchecker.getPropertiesOfType(type)) names.add(p.name)
      }
    }
    return names
  }

  test('one owner, local_store: the class LocalStore, exported alone', () => {
    assert.deepEqual([...new Set([...ops, ...props].map((/** @type {any} */ x) => x.owner))], ['local_store'])
    assert.deepEqual([...texports.keys()].filter((n) => n !== 'RestartOptions'), ['LocalStore'])
    assert.equal(typeof LocalStore, 'function')
  })

  test('testing.d.ts: every operation under its Node name, taking exactly its options by their Node names', () => {
    for (const op of ops) {
      const name = op.names.node
      const want = op.options.map((/** @type {any} */ o) => o.names.node).sort()
      const subjects = SUBJECTS[op.name] ?? []
      const got = [...parameterNames(STATIC.has(op.name) ? statics : instance, name)].filter((n) => !subjects.includes(n)).sort()
      assert.deepEqual(got, want, `LocalStore.${name}`)
      for (const option of op.options) {
        if (option.unit === 'duration') assert.ok(option.names.node.endsWith('Ms'), `${name}: ${option.names.node} is a duration without Ms`)
      }
    }
  })

  test('testing.d.ts and the class: no public member the vocabulary does not name', () => {
    const named = new Set([...ops.filter((/** @type {any} */ o) => !STATIC.has(o.name)), ...props].map((/** @type {any} */ x) => x.names.node))
    const declared = instance.getProperties().map((p) => p.name).filter((n) => !n.startsWith('__@'))
    assert.deepEqual(declared.filter((n) => !named.has(n)).sort(), [], 'testing.d.ts: LocalStore')
    for (const n of named) assert.ok(declared.includes(n), `testing.d.ts: LocalStore has no ${n}`)
    const defined = Object.getOwnPropertyNames(LocalStore.prototype).filter((n) => n !== 'constructor')
    assert.deepEqual(defined.filter((n) => !named.has(n)).sort(), [], 'LocalStore.prototype')
    for (const n of named) assert.ok(defined.includes(n), `LocalStore has no ${n}`)
    const staticNames = Object.getOwnPropertyNames(LocalStore).filter((n) => !['length', 'name', 'prototype'].includes(n))
    assert.deepEqual(staticNames.sort(), ops.filter((/** @type {any} */ o) => STATIC.has(o.name)).map((/** @type {any} */ o) => o.names.node).sort())
  })

  test('properties: read-only in testing.d.ts, getters without setters, readable on a store', async () => {
    const store = await LocalStore.start()
    try {
      for (const property of props) {
        const name = property.names.node
        const declared = instance.getProperty(name)
        assert.ok(declared, `testing.d.ts: LocalStore has no ${name}`)
        const readonly = (declared.getDeclarations() ?? []).every((d) =>
          ts.isGetAccessorDeclaration(d) || (ts.getCombinedModifierFlags(d) & ts.ModifierFlags.Readonly) !== 0)
        assert.ok(readonly, `testing.d.ts: LocalStore.${name} is not read-only`)
        const descriptor = Object.getOwnPropertyDescriptor(LocalStore.prototype, name)
        assert.ok(descriptor && typeof descriptor.get === 'function' && descriptor.set === undefined, `LocalStore.${name}`)
        assert.notEqual(store[name], undefined, name)
      }
    } finally {
      await store.stop()
    }
  })

  test('at run time every operation exists and takes its options', async () => {
    const store = await LocalStore.start()
    try {
      for (const op of ops) {
        const target = STATIC.has(op.name) ? LocalStore : store
        assert.equal(typeof target[op.names.node], 'function', op.names.node)
      }
      // Each option by its Node name, as the declarations give it.
      await store.restart({ keepData: true })
      await assert.rejects(store.restart({ keep_data: true }), (e) => e instanceof mqstate.InvalidArgumentError && /unknown option keep_data \(it takes keepData\)/.test(e.message))
      store.pause(1)
      store.failNext(1, 'quota_exceeded', 'GET')
      store.failNext(0, 'quota_exceeded')
      assert.deepEqual(store.keys('*'), [])
    } finally {
      await store.stop()
    }
  })
})
