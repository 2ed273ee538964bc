// Every case of every shared conformance vector file, through the public package API.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { readdirSync } from 'node:fs'
import { mqstate, vectorsDir, loadVectors, cases, bytes, throwsCode, parseLossless } from './support.mjs'

const { codec, hlc, topics } = mqstate
const { Hlc } = hlc

test('the vector folder holds exactly the files this suite runs', () => {
  const files = readdirSync(vectorsDir).filter((f) => f.endsWith('.json')).sort()
  assert.deepEqual(files, ['hlc.json', 'notifications.json', 'requests.json', 'responses.json', 'scan.json', 'topics.json'])
})

test('the lossless JSON reader keeps u64 values exact', () => {
  const v = parseLossless('{"a": 18446744073709551615, "b": "1e400 \\" 99999999999999999", "c": [5, -2, 1.5]}')
  assert.equal(BigInt(v.a), 18446744073709551615n)
  assert.equal(v.b, '1e400 " 99999999999999999')
  assert.deepEqual(v.c, [5, -2, 1.5])
})

function requestCall (cmd, name) {
  const key = bytes(cmd.key)
  switch (cmd.verb) {
    case 'SET': return codec.encodeSet(key, bytes(cmd.value), { condition: cmd.condition, pxMs: cmd.px_ms })
    case 'GET': return codec.encodeGet(key)
    case 'DEL': return codec.encodeDel(key)
    case 'VDEL': return codec.encodeVdel(key, bytes(cmd.value))
    case 'KEYNOTIFY': return codec.encodeKeynotify(key, { stop: cmd.stop ?? false })
    default: assert.fail(`${name}: unknown verb ${cmd.verb}`)
  }
}

test('requests.json: encode each command, and decode it back as the service does', () => {
  for (const c of cases(loadVectors('requests.json'), 'requests.json')) {
    const cmd = c.command
    const expected = bytes(c.payload)
    const encoded = requestCall(cmd, c.name)
    assert.ok(Buffer.isBuffer(encoded), c.name)
    assert.deepEqual(encoded, expected, `${c.name}: encode`)

    const decoded = codec.decodeRequest(expected)
    assert.equal(decoded.verb, cmd.verb, `${c.name}: verb`)
    assert.deepEqual(decoded.key, bytes(cmd.key), `${c.name}: key`)
    if (cmd.verb === 'SET' || cmd.verb === 'VDEL') {
      assert.deepEqual(decoded.value, bytes(cmd.value), `${c.name}: value`)
    } else {
      assert.equal(decoded.value, undefined, `${c.name}: value`)
    }
    if (cmd.verb === 'SET') {
      assert.equal(decoded.condition, cmd.condition ?? undefined, `${c.name}: condition`)
      const px = decoded.pxMs === undefined ? null : BigInt(decoded.pxMs)
      assert.equal(px, cmd.px_ms == null ? null : BigInt(cmd.px_ms), `${c.name}: pxMs`)
    }
    if (cmd.verb === 'KEYNOTIFY') assert.equal(decoded.stop, cmd.stop ?? false, `${c.name}: stop`)
  }
})

test('responses.json: decode each payload for its verb', () => {
  for (const c of cases(loadVectors('responses.json'), 'responses.json')) {
    const payload = bytes(c.payload)
    const expect = c.expect
    if (expect.kind === 'malformed') {
      throwsCode(() => codec.decodeResponse(payload, c.verb), 'malformed', c.name)
      continue
    }
    const got = codec.decodeResponse(payload, c.verb)
    assert.equal(got.kind, expect.kind, c.name)
    switch (expect.kind) {
      case 'value':
        assert.deepEqual(got.value, bytes(expect.value), c.name)
        break
      case 'count':
        assert.equal(BigInt(got.count), BigInt(expect.count), c.name)
        break
      case 'error':
        // The vectors spell the unknown store error `unknown`; mqstate names it one way.
        assert.equal(got.errorKind, expect.error_kind === 'unknown' ? 'unknown_store_error' : expect.error_kind, c.name)
        assert.equal(got.errorText, expect.error_text, c.name)
        break
      case 'ok': case 'not_applied': case 'not_found':
        assert.equal(got.value, undefined, c.name)
        assert.equal(got.count, undefined, c.name)
        break
      default:
        assert.fail(`${c.name}: unknown expected kind ${expect.kind}`)
    }
    if (expect.applied !== undefined) assert.equal(got.kind === 'ok', expect.applied, `${c.name}: applied`)
    // Without a verb the form is the same (the verb only refuses forms).
    assert.deepEqual(codec.decodeResponse(payload), got, `${c.name}: without verb`)
  }
})

test('scan.json requests: encode each SCAN, and decode it back as the service does', () => {
  for (const c of cases(loadVectors('scan.json').requests, 'scan.json requests')) {
    const cmd = c.command
    assert.equal(cmd.verb, 'SCAN', c.name)
    const expected = bytes(c.payload)
    const options = cmd.token === null ? undefined : { token: bytes(cmd.token) }
    const encoded = codec.encodeScan(bytes(cmd.pattern), options)
    assert.ok(Buffer.isBuffer(encoded), c.name)
    assert.deepEqual(encoded, expected, `${c.name}: encode`)
    // The same bytes from a Uint8Array and from an explicit null token.
    assert.deepEqual(codec.encodeScan(new Uint8Array(bytes(cmd.pattern)), { token: cmd.token === null ? null : new Uint8Array(bytes(cmd.token)) }), expected, `${c.name}: Uint8Array`)

    const decoded = codec.decodeRequest(expected)
    assert.equal(decoded.verb, 'SCAN', `${c.name}: verb`)
    assert.deepEqual(decoded.pattern, bytes(cmd.pattern), `${c.name}: pattern`)
    assert.deepEqual(decoded.key, bytes(cmd.pattern), `${c.name}: key is the pattern`)
    if (cmd.token === null) {
      assert.equal(decoded.token, undefined, `${c.name}: token`)
    } else {
      assert.deepEqual(decoded.token, bytes(cmd.token), `${c.name}: token`)
    }
  }
  throwsCode(() => codec.encodeScan(''), 'invalid_argument', 'empty pattern')
  throwsCode(() => codec.encodeScan(Buffer.alloc(0), { token: 't' }), 'invalid_argument', 'empty pattern with a token')
})

test('scan.json responses: decode each page for SCAN', () => {
  for (const c of cases(loadVectors('scan.json').responses, 'scan.json responses')) {
    const payload = bytes(c.payload)
    const expect = c.expect
    if (expect.kind === 'malformed') {
      throwsCode(() => codec.decodeResponse(payload, c.verb), 'malformed', c.name)
      continue
    }
    const got = codec.decodeResponse(payload, c.verb)
    assert.equal(got.kind, expect.kind, c.name)
    switch (expect.kind) {
      case 'keys':
        assert.ok(Array.isArray(got.keys), `${c.name}: keys`)
        assert.deepEqual(got.keys, expect.keys.map(bytes), `${c.name}: keys`)
        for (const key of got.keys) assert.ok(Buffer.isBuffer(key), `${c.name}: key type`)
        if (expect.token === null) {
          assert.equal(got.token, undefined, `${c.name}: final page has no token`)
        } else {
          assert.deepEqual(got.token, bytes(expect.token), `${c.name}: token`)
        }
        assert.equal(got.value, undefined, c.name)
        assert.equal(got.count, undefined, c.name)
        break
      case 'error':
        assert.equal(got.errorKind, expect.error_kind === 'unknown' ? 'unknown_store_error' : expect.error_kind, c.name)
        assert.equal(got.errorText, expect.error_text, c.name)
        assert.equal(got.keys, undefined, c.name)
        break
      default:
        assert.fail(`${c.name}: unknown expected kind ${expect.kind}`)
    }
    assert.deepEqual(codec.decodeResponse(payload), got, `${c.name}: without verb`)
  }
})

test('notifications.json: decode each topic and payload', () => {
  for (const c of cases(loadVectors('notifications.json'), 'notifications.json')) {
    const payload = bytes(c.payload)
    const expect = c.expect
    if (expect.kind === 'malformed') {
      throwsCode(() => codec.decodeNotification(c.topic, payload), 'malformed', c.name)
      continue
    }
    const got = codec.decodeNotification(c.topic, payload)
    assert.equal(got.clientId, expect.client_id, c.name)
    assert.deepEqual(got.key, bytes(expect.key), c.name)
    assert.equal(got.kind, expect.kind, c.name)
    if (expect.kind === 'set') {
      assert.deepEqual(got.value, bytes(expect.value), c.name)
    } else {
      assert.equal(expect.kind, 'delete', `${c.name}: unknown expected kind`)
      assert.equal(got.value, undefined, c.name)
    }
  }
})

test('topics.json: every list', () => {
  const file = loadVectors('topics.json')
  const known = ['request_topic', 'response_topic', 'notification_filter', 'notification_topic', 'response_topic_allowed']
  assert.deepEqual(Object.keys(file).sort(), [...known].sort(), 'topics.json sections')

  assert.equal(topics.REQUEST_TOPIC, file.request_topic)
  for (const c of cases(file.response_topic, 'response_topic')) {
    assert.equal(topics.responseTopic(c.client_id), c.topic)
  }
  for (const c of cases(file.notification_filter, 'notification_filter')) {
    assert.equal(topics.notificationFilter(c.client_id), c.filter)
  }
  for (const c of cases(file.notification_topic, 'notification_topic')) {
    assert.equal(topics.notificationTopic(c.client_id, bytes(c.key)), c.topic)
    const parsed = topics.parseNotificationTopic(c.topic)
    assert.equal(parsed.clientId, c.client_id, c.topic)
    assert.deepEqual(parsed.key, bytes(c.key), c.topic)
  }
  for (const c of cases(file.response_topic_allowed, 'response_topic_allowed')) {
    assert.equal(topics.isResponseTopicAllowed(c.topic), c.allowed, JSON.stringify(c.topic))
    if (c.allowed) {
      assert.doesNotThrow(() => topics.checkResponseTopic(c.topic), c.topic)
    } else {
      throwsCode(() => topics.checkResponseTopic(c.topic), 'invalid_argument', JSON.stringify(c.topic))
    }
  }
})

/** Compares an Hlc's fields with a vector's, losslessly (u64 fields as BigInt). */
function assertFields (h, wallMs, counter, nodeId, what) {
  assert.ok(h instanceof Hlc, `${what}: not an Hlc`)
  assert.equal(BigInt(h.wallMs), BigInt(wallMs), `${what}: wallMs`)
  assert.equal(typeof h.counter, 'bigint', `${what}: counter type`)
  assert.equal(h.counter, BigInt(counter), `${what}: counter`)
  assert.equal(h.nodeId, nodeId, `${what}: nodeId`)
}

function assertClockResult (expect, run, what) {
  if (expect === 'error:drift') return throwsCode(run, 'clock_drift', what)
  if (expect === 'error:overflow') return throwsCode(run, 'clock_overflow', what)
  assert.ok(!expect.startsWith('error:'), `${what}: unknown expectation ${expect}`)
  const want = Hlc.parse(expect)
  assertFields(run(), want.wallMs, want.counter, want.nodeId, what)
}

test('hlc.json: every list', () => {
  const file = loadVectors('hlc.json')
  assert.deepEqual(Object.keys(file).sort(), ['compare', 'format', 'parse', 'receive', 'tick'], 'hlc.json sections')

  for (const c of cases(file.parse, 'parse')) {
    const what = `parse ${JSON.stringify(c.text)}`
    if (!c.ok) {
      throwsCode(() => Hlc.parse(c.text), 'malformed', what)
      continue
    }
    const h = Hlc.parse(c.text)
    assertFields(h, c.wall_ms, c.counter, c.node_id, what)
    assert.ok(Hlc.parse(h.toString()).equals(h), `${what}: canonical text round trip`)
  }
  for (const c of cases(file.format, 'format')) {
    const h = new Hlc(BigInt(c.wall_ms), BigInt(c.counter), c.node_id)
    assert.equal(h.toString(), c.text)
    assert.equal(String(h), c.text)
  }
  const orders = { less: -1, equal: 0, greater: 1 }
  for (const c of cases(file.compare, 'compare')) {
    const want = orders[c.order]
    assert.notEqual(want, undefined, `unknown order ${c.order}`)
    const a = Hlc.parse(c.a)
    const b = Hlc.parse(c.b)
    assert.equal(a.compare(b), want, `${c.a} vs ${c.b}`)
    assert.equal(b.compare(a), -want || 0, `${c.b} vs ${c.a}`)
    assert.equal(a.compare(c.b), want, `${c.a} vs text ${c.b}`)
    assert.equal(a.equals(b), want === 0, `${c.a} equals ${c.b}`)
  }
  for (const c of cases(file.tick, 'tick')) {
    const clock = Hlc.parse(c.clock)
    assertClockResult(c.expect, () => clock.tick(BigInt(c.now_ms), BigInt(c.max_drift_ms)), c.name)
  }
  for (const c of cases(file.receive, 'receive')) {
    const clock = Hlc.parse(c.clock)
    const other = Hlc.parse(c.other)
    assertClockResult(c.expect, () => clock.receive(other, BigInt(c.now_ms), BigInt(c.max_drift_ms)), c.name)
  }
})
