// Hlc as a value and Clock as a process clock, beyond the vectors: immutability, text
// forms, and the Clock's tick/receive/drift rules on the real system time.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { mqstate, throwsCode } from './support.mjs'

const { Hlc, Clock } = mqstate.hlc

test('Hlc is an immutable value with a canonical text', () => {
  const h = Hlc.parse('1696374425000:1:StateStore')
  const next = h.tick(1696374425000)
  assert.equal(h.toString(), '001696374425000:00001:StateStore')
  assert.equal(next.toString(), '001696374425000:00002:StateStore')
  assert.equal(JSON.stringify({ version: h }), '{"version":"001696374425000:00001:StateStore"}')
  assert.equal(`${h}`, h.toString())
  assert.ok(Hlc.parse(h.toString()).equals(h))
  assert.ok(h.equals('1696374425000:00001:StateStore'))
  assert.ok(!h.equals(next))
})

test('compareTime ignores the node id, compare does not', () => {
  const a = Hlc.parse('5:1:A')
  const b = Hlc.parse('5:1:B')
  assert.equal(a.compareTime(b), 0)
  assert.equal(a.compare(b), -1)
  assert.equal(b.compare(a), 1)
  assert.equal(Hlc.parse('5:2:A').compareTime(b), 1)
})

test('sorting by compare orders versions', () => {
  const texts = ['2:0:a', '1:5:b', '1:5:a', '10:0:a', '1:10:a']
  const sorted = texts.map((t) => Hlc.parse(t)).sort((x, y) => x.compare(y)).map((h) => h.toString())
  assert.deepEqual(sorted, [
    '000000000000001:00005:a', '000000000000001:00005:b', '000000000000001:00010:a',
    '000000000000002:00000:a', '000000000000010:00000:a'
  ])
})

test('Clock starts at the system time and ticks strictly upward', () => {
  const before = Date.now()
  const clock = new Clock('node-1')
  const after = Date.now()
  const start = clock.current
  assert.equal(start.nodeId, 'node-1')
  assert.ok(start.wallMs >= before && start.wallMs <= after, `${start.wallMs} not in [${before}, ${after}]`)
  assert.equal(clock.maxDriftMs, 60000)
  let last = start
  for (let i = 0; i < 50; i++) {
    const t = clock.tick()
    assert.equal(t.compare(last), 1, `${t} after ${last}`)
    assert.ok(clock.current.equals(t))
    last = t
  }
})

test('Clock.receive merges other nodes, ignores its own, refuses the far future', () => {
  const clock = new Clock('me')
  const ahead = new Hlc(clock.current.wallMs + 30000, 7, 'them')
  const merged = clock.receive(ahead)
  assert.equal(merged.wallMs, ahead.wallMs)
  assert.equal(merged.counter, 8n)
  assert.equal(merged.nodeId, 'me')
  assert.ok(clock.current.equals(merged))

  // Its own node id: nothing changes.
  assert.ok(clock.receive(new Hlc(merged.wallMs + 40000, 0, 'me')).equals(merged))

  // More than a minute ahead: clock_drift, and the clock is unchanged.
  throwsCode(() => clock.receive(new Hlc(Date.now() + 3600000, 0, 'them')), 'clock_drift')
  assert.ok(clock.current.equals(merged))

  // Text works as well as an Hlc.
  const viaText = clock.receive(`${merged.wallMs}:100:them`)
  assert.equal(viaText.counter, 101n)
})

test('Clock honours its maximum drift', () => {
  const relaxed = new Clock('me', 7200000)
  assert.equal(relaxed.maxDriftMs, 7200000)
  const far = new Hlc(Date.now() + 3600000, 0, 'them')
  assert.equal(relaxed.receive(far).wallMs, far.wallMs)
  throwsCode(() => new Clock('me', 0).receive(new Hlc(Date.now() + 3600000, 0, 'them')), 'clock_drift')
})
