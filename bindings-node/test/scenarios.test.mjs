// The behaviour scenarios (tests/scenarios/*.json, format in its README) through the public
// Node API against a live `mqstate serve`, and again each against a LocalStore of its own
// (`mqstate/testing`, in this process; several at once). Every file in the folder runs;
// none is named here.
import { after, before, describe, test } from 'node:test'
import assert from 'node:assert/strict'
import { readdirSync, readFileSync } from 'node:fs'
import path from 'node:path'
import { randomUUID } from 'node:crypto'
import { setTimeout as sleep } from 'node:timers/promises'
import { Client, DELETE, KEEP, MqstateError, hlc } from 'mqstate'
import { LocalStore } from 'mqstate/testing'
import { LiveStore, freePort, projectRoot } from './live.mjs'

const SCENARIOS = path.join(projectRoot, 'tests', 'scenarios')
const FILES = readdirSync(SCENARIOS).filter((f) => f.endsWith('.json')).sort()

/** A wrong expectation of a scenario (not an mqstate error). */
class ScenarioFailure extends Error {}

/** @typedef {Record<string, any>} Step */

/** @param {Step} step */
function valueOf (step) {
  if ('value' in step) return Buffer.from(String(step.value), 'utf8')
  if ('value_hex' in step) return Buffer.from(step.value_hex, 'hex')
  return undefined
}

/** Runs one scenario on its own clients. */
class Runner {
  /** @param {string} url */
  constructor (url) {
    this.url = url
    this.prefix = `scn/${randomUUID()}/`
    /** @type {Map<string, Client>} */
    this.clients = new Map()
    /** @type {Map<string, import('mqstate').Subscription<any>>} */
    this.subs = new Map()
    /** @type {Map<string, import('mqstate').Lock>} */
    this.locks = new Map()
    /** @type {Map<string, import('mqstate').Election>} */
    this.elections = new Map()
    /** @type {Map<string, import('mqstate').hlc.Hlc>} */
    this.vars = new Map()
    /** @type {Map<string, { pager: import('mqstate').Pager, seen: Buffer[] }>} */
    this.pagers = new Map()
  }

  /** A `set` step's key: `key`, or `key_hex` (bytes), namespaced. @param {Step} step */
  setKey (step) {
    if ('key_hex' in step) return Buffer.concat([Buffer.from(this.prefix), Buffer.from(step.key_hex, 'hex')])
    return this.key(step)
  }

  /** A scan step's pattern (`pattern` or `pattern_hex`), namespaced; empty stays empty. @param {Step} step */
  pattern (step) {
    const raw = 'pattern_hex' in step ? Buffer.from(step.pattern_hex, 'hex') : Buffer.from(String(step.pattern), 'utf8')
    if (raw.length === 0) return raw
    // The run prefix holds no glob metacharacter, so it matches itself.
    return Buffer.concat([Buffer.from(this.prefix), raw])
  }

  /**
   * Checks the scan expectations of `step` against the keys a scan returned.
   * @param {Step} step @param {Buffer[]} got
   */
  expectKeys (step, got) {
    const prefix = Buffer.from(this.prefix)
    /** @type {Set<string>} keys without the run prefix, as hex */
    const found = new Set()
    for (const key of got) {
      if (!Buffer.isBuffer(key)) throw new ScenarioFailure(`a key is not a Buffer: ${key}`)
      if (!key.subarray(0, prefix.length).equals(prefix)) throw new ScenarioFailure(`key ${key.toString('latin1')} is outside this run`)
      found.add(key.subarray(prefix.length).toString('hex'))
    }
    const text = (/** @type {string} */ t) => Buffer.from(t, 'utf8').toString('hex')
    const show = (/** @type {Iterable<string>} */ keys) => JSON.stringify([...keys].map((h) => Buffer.from(h, 'hex').toString('latin1')).sort())
    if ('keys' in step || 'keys_hex' in step) {
      const want = new Set([...(step.keys ?? []).map(text), ...(step.keys_hex ?? []).map((/** @type {string} */ h) => h.toLowerCase())])
      if (want.size !== found.size || [...want].some((k) => !found.has(k))) {
        throw new ScenarioFailure(`keys ${show(found)}, want ${show(want)}`)
      }
    }
    for (const key of step.includes ?? []) {
      if (!found.has(text(key))) throw new ScenarioFailure(`${key} is missing`)
    }
    for (const key of step.excludes ?? []) {
      if (found.has(text(key))) throw new ScenarioFailure(`${key} is listed`)
    }
    const total = found.size
    if ((step.total !== undefined && total !== step.total) ||
        (step.min_total !== undefined && total < step.min_total) ||
        (step.max_total !== undefined && total > step.max_total)) {
      throw new ScenarioFailure(`${total} distinct keys`)
    }
    if (step.no_repeats === true && found.size !== got.length) {
      throw new ScenarioFailure(`${got.length} keys returned, ${found.size} distinct`)
    }
  }

  /** @param {Step} step */
  pager (step) {
    const entry = this.pagers.get(step.pager)
    if (!entry) throw new ScenarioFailure(`no pager ${step.pager}`)
    return entry
  }

  /** @param {Step} step @param {string} [field] */
  key (step, field = 'key') {
    const key = String(step[field])
    return key === '' ? key : this.prefix + key
  }

  /** @param {Step} step */
  client (step) {
    const client = this.clients.get(step.client ?? 'a')
    if (!client) throw new ScenarioFailure(`no client ${step.client ?? 'a'}`)
    return client
  }

  /** @param {Step} step @returns {import('mqstate').hlc.Hlc | string | undefined} */
  token (step) {
    if ('fenced_by' in step) {
      const token = this.locks.get(step.fenced_by)?.fencingToken
      if (!token) throw new MqstateError('the lock is not held', 'not_held')
      return token
    }
    const text = step.fencing_token
    if (text === undefined) return undefined
    return text.startsWith('$') ? this.vars.get(text.slice(1)) : text
  }

  /** @param {Step} step @param {import('mqstate').hlc.Hlc | null} got */
  checkVersion (step, got) {
    const want = step.version
    if ((want === 'none' && got !== null) || (want === 'some' && got === null)) {
      throw new ScenarioFailure(`version ${got}, want ${want}`)
    }
    if (want !== null && typeof want === 'object') {
      const [[how, name]] = Object.entries(want)
      const other = this.vars.get(name)
      if (got === null || other === undefined) throw new ScenarioFailure(`no version to compare (${how} ${name})`)
      const order = got.compareTime(other)
      const wrong = { equal: order !== 0, newer: order <= 0, older: order >= 0 }[/** @type {'equal' | 'newer' | 'older'} */ (how)]
      if (wrong) throw new ScenarioFailure(`version ${got} is not ${how} than ${name}=${other}`)
    }
    for (const field of ['save_version', 'save_token']) {
      if (field in step) {
        if (got === null) throw new ScenarioFailure(`nothing to save as ${step[field]}`)
        this.vars.set(step[field], got)
      }
    }
  }

  /** @param {Step} step @param {string} field @param {unknown} got */
  expect (step, field, got) {
    if (field in step) {
      try {
        assert.deepEqual(got, step[field])
      } catch {
        throw new ScenarioFailure(`${field} ${JSON.stringify(got)}, want ${JSON.stringify(step[field])}`)
      }
    }
  }

  /** @param {Step} step */
  async connect (step) {
    const name = step.client ?? 'a'
    const url = step.target === 'closed_port' ? `mqtt://127.0.0.1:${await freePort()}` : this.url
    /** @type {Record<string, string | number>} */
    const options = { connectTimeout: '5s' }
    for (const [setting, value] of Object.entries(step.settings ?? {})) {
      options[setting.replace(/_([a-z])/g, (_, c) => c.toUpperCase())] = value
    }
    options.clientId = `scn-node-${name}-${randomUUID().slice(0, 12)}`
    this.clients.set(name, await Client.connect(url, options))
  }

  /** @param {Step} step */
  async step (step) {
    const op = step.op
    const ms = (/** @type {string} */ name) => step[name]
    switch (op) {
      case 'connect': return this.connect(step)
      case 'close': return this.client(step).close()
      case 'sleep': return sleep(step.ms)
      case 'set': {
        const r = await this.client(step).set(this.setKey(step), valueOf(step) ?? '', {
          condition: step.condition, expiryMs: ms('expiry_ms'), fencingToken: this.token(step),
          persist: step.persist ?? false, timeoutMs: ms('timeout_ms')
        })
        this.expect(step, 'applied', r.applied)
        return this.checkVersion(step, r.version)
      }
      case 'get': {
        const got = await this.client(step).get(this.key(step), { timeoutMs: ms('timeout_ms') })
        const want = valueOf(step)
        if (step.missing && got !== null) throw new ScenarioFailure(`want missing, got ${got.text}`)
        if (!step.missing && want !== undefined && (got === null || !got.value.equals(want))) {
          throw new ScenarioFailure(`value ${got && got.text}, want ${want}`)
        }
        return this.checkVersion(step, got === null ? null : got.version)
      }
      case 'del':
        return this.expect(step, 'count', await this.client(step).delete(this.key(step), { fencingToken: this.token(step) }))
      case 'vdel':
        return this.expect(step, 'outcome', await this.client(step).vdel(this.key(step), valueOf(step) ?? '', { fencingToken: this.token(step) }))
      case 'observe': {
        const sub = this.client(step).observe(this.key(step))
        this.subs.set(step.as, await sub.ready())
        return
      }
      case 'unobserve': {
        this.subs.get(step.subscription)?.close()
        this.subs.delete(step.subscription)
        return
      }
      case 'expect_notification': return this.notification(step)
      case 'expect_no_notification': return this.noNotification(step)
      case 'lock':
        this.locks.set(step.as, this.client(step).lock(this.key(step), {
          holder: step.holder, sessionId: step.session_id, autoRenewMs: step.auto_renew_ms
        }))
        return
      case 'fill': {
        const client = this.client(step)
        const value = valueOf(step)
        if (value === undefined) throw new ScenarioFailure('fill needs a value')
        const sets = []
        for (let i = 0; i < step.count; i++) {
          sets.push(client.set(`${this.prefix}${step.key_prefix}${String(i).padStart(4, '0')}`, value))
        }
        await Promise.all(sets)
        return
      }
      case 'scan': {
        /** @type {Buffer[]} */
        const keys = []
        for await (const key of this.client(step).scan(this.pattern(step), { timeoutMs: ms('timeout_ms') })) keys.push(key)
        return this.expectKeys(step, keys)
      }
      case 'scan_start':
        this.pagers.set(step.as, { pager: this.client(step).scan(this.pattern(step)), seen: [] })
        return
      case 'scan_page': {
        const { pager, seen } = this.pager(step)
        const page = await pager.nextPage()
        if (page === null) throw new ScenarioFailure('the scan had already ended')
        seen.push(...page)
        return this.expect(step, 'last', pager.done)
      }
      case 'scan_rest': {
        const { pager, seen } = this.pager(step)
        for (let page = await pager.nextPage(); page !== null; page = await pager.nextPage()) seen.push(...page)
        return this.expectKeys(step, seen)
      }
      case 'election':
        this.elections.set(step.as, this.client(step).election(this.key(step, 'name'), step.candidate))
        return
      default:
        if (['try_acquire', 'acquire', 'renew', 'release', 'holder', 'is_held', 'edit'].includes(op)) return this.lockStep(step)
        if (['campaign', 'try_campaign', 'resign', 'leader', 'is_leader'].includes(op)) return this.electionStep(step)
        throw new ScenarioFailure(`unknown op ${op}`)
    }
  }

  /** @param {Step} step */
  sub (step) {
    const sub = this.subs.get(step.subscription)
    if (!sub) throw new ScenarioFailure(`no subscription ${step.subscription}`)
    return sub
  }

  /** @param {Step} step */
  async notification (step) {
    const sub = this.sub(step)
    let event
    for (;;) {
      const next = await sub.next({ timeoutMs: step.timeout_ms ?? 5000 })
      if (next.done) throw new ScenarioFailure('the subscription ended')
      if (next.value.type === 'change') { event = next.value; break }
    }
    if (step.event !== undefined && event.kind !== step.event) throw new ScenarioFailure(`notified ${event.kind}, want ${step.event}`)
    const want = valueOf(step)
    if (step.event === 'set' && want !== undefined && !(event.value && event.value.equals(want))) {
      throw new ScenarioFailure(`notified ${event.text}, want ${want}`)
    }
    this.checkVersion(step, event.version)
  }

  /** @param {Step} step */
  async noNotification (step) {
    const sub = this.sub(step)
    const deadline = Date.now() + (step.for_ms ?? 300)
    for (;;) {
      const left = deadline - Date.now()
      if (left <= 0) return
      let next
      try {
        next = await sub.next({ timeoutMs: left })
      } catch (e) {
        if (e instanceof MqstateError && e.code === 'timeout') return
        throw e
      }
      if (!next.done && next.value.type === 'change') throw new ScenarioFailure(`unexpected ${next.value.kind} ${next.value.text}`)
      if (next.done) return
    }
  }

  /** @param {Step} step */
  async lockStep (step) {
    const lock = this.locks.get(step.lock)
    if (!lock) throw new ScenarioFailure(`no lock ${step.lock}`)
    const lease = step.lease_ms ?? 5000
    switch (step.op) {
      case 'try_acquire': {
        const token = await lock.tryAcquire({ leaseMs: lease })
        this.expect(step, 'acquired', token !== null)
        return this.checkVersion(step, token)
      }
      case 'acquire':
        return this.checkVersion(step, await lock.acquire({ leaseMs: lease, timeoutMs: step.timeout_ms }))
      case 'renew': {
        const token = await lock.renew()
        this.expect(step, 'renewed', token !== null)
        return this.checkVersion(step, token)
      }
      case 'release': return this.expect(step, 'released', await lock.release())
      case 'is_held': return this.expect(step, 'held', lock.isHeld)
      case 'holder': {
        const got = await lock.holder()
        const want = 'holder_of' in step ? this.locks.get(step.holder_of)?.holderId : step.holder ?? null
        if (got !== want) throw new ScenarioFailure(`holder ${got}, want ${want}`)
        return
      }
      default: {
        const action = step.action
        const result = await lock.edit(this.key(step), (current) => {
          if (action === 'delete') return DELETE
          if (action === 'keep') return KEEP
          if ('fail' in action) throw new MqstateError(action.fail, 'callback')
          if ('set' in action) return action.set
          return Buffer.concat([current ? current.value : Buffer.alloc(0), Buffer.from(action.append)])
        }, { leaseMs: lease, timeoutMs: step.timeout_ms ?? 10000 })
        return this.checkVersion(step, result.version)
      }
    }
  }

  /** @param {Step} step */
  async electionStep (step) {
    const e = this.elections.get(step.election)
    if (!e) throw new ScenarioFailure(`no election ${step.election}`)
    const term = step.term_ms ?? 5000
    switch (step.op) {
      case 'campaign': return this.checkVersion(step, await e.campaign({ termMs: term, timeoutMs: step.timeout_ms }))
      case 'try_campaign': return this.expect(step, 'elected', await e.tryCampaign({ termMs: term }))
      case 'resign': return this.expect(step, 'resigned', await e.resign())
      case 'is_leader': return this.expect(step, 'leader_now', e.isLeader)
      default: {
        const got = await e.leader()
        if (got !== (step.leader ?? null)) throw new ScenarioFailure(`leader ${got}, want ${step.leader}`)
      }
    }
  }

  /** @param {{ steps: Step[] }} scenario */
  async run (scenario) {
    const clientOps = new Set(['close', 'set', 'get', 'del', 'vdel', 'observe', 'lock', 'election', 'fill', 'scan', 'scan_start'])
    const names = [...new Set(scenario.steps.filter((s) => clientOps.has(s.op)).map((s) => s.client ?? 'a'))].sort()
    for (const name of names) await this.connect({ client: name })
    try {
      for (const [i, step] of scenario.steps.entries()) {
        const want = step.error
        try {
          await this.step(step)
        } catch (e) {
          if (e instanceof MqstateError) {
            if (e.code !== want) throw new ScenarioFailure(`step ${i} ${JSON.stringify(step)}: rejected with ${e.code} (${e.message}), want ${want ?? 'success'}`)
            continue
          }
          if (e instanceof ScenarioFailure) throw new ScenarioFailure(`step ${i} ${JSON.stringify(step)}: ${e.message}`)
          throw e
        }
        if (want !== undefined) throw new ScenarioFailure(`step ${i} ${JSON.stringify(step)}: succeeded, want error ${want}`)
      }
    } finally {
      for (const client of this.clients.values()) await client.close()
    }
  }
}

/** @type {LiveStore} */
let live
before(async () => { live = await LiveStore.start('embedded') })
after(async () => { await live.close() })

test('there are scenarios', () => {
  assert.ok(FILES.length >= 40, `only ${FILES.length} scenario files`)
})

for (const file of FILES) {
  test(`scenario ${file.replace(/\.json$/, '')}`, { timeout: 60000 }, async () => {
    const scenario = JSON.parse(readFileSync(path.join(SCENARIOS, file), 'utf8'))
    await new Runner(live.url).run(scenario)
  })
}

// A LocalStore gives every scenario what `mqstate serve` does (it is the same emulator), so
// none is left out. A few run at once: most of a scenario's time is waiting (expiries,
// leases), and one store per scenario keeps them apart.
describe('against a LocalStore of its own (mqstate/testing)', { concurrency: 6 }, () => {
  for (const file of FILES) {
    test(`scenario ${file.replace(/\.json$/, '')}`, { timeout: 60000 }, async () => {
      const scenario = JSON.parse(readFileSync(path.join(SCENARIOS, file), 'utf8'))
      const store = await LocalStore.start()
      try {
        await new Runner(store.url).run(scenario)
      } finally {
        await store.stop()
      }
    })
  }
})

test('negative control: a changed expectation fails the scenario', async () => {
  const scenario = JSON.parse(readFileSync(path.join(SCENARIOS, 'set_then_get_returns_value_and_version.json'), 'utf8'))
  let changed = 0
  for (const step of scenario.steps) {
    if (step.op === 'get') { step.value = 'not what was set'; changed++ }
  }
  assert.ok(changed > 0)
  await assert.rejects(new Runner(live.url).run(scenario), ScenarioFailure)
})

test('negative control: an expected error that does not happen fails the scenario', async () => {
  const scenario = JSON.parse(readFileSync(path.join(SCENARIOS, 'set_nx_applies_to_a_missing_key.json'), 'utf8'))
  scenario.steps[scenario.steps.length - 1].error = 'fencing_token_required'
  await assert.rejects(new Runner(live.url).run(scenario), ScenarioFailure)
})

export { hlc }
