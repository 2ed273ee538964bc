// The error model: every thrown error is an Error with a stable `code` from the core's
// ErrorKind; store errors add `storeKind` and keep the service's exact text.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { mqstate, throwsCode } from './support.mjs'

const { codec, hlc, topics } = mqstate
const { Hlc, Clock } = hlc

const STORE_KINDS = [
  'timestamp_skew', 'fencing_token_required', 'fencing_token_skew', 'fencing_token_lower_version',
  'quota_exceeded', 'syntax_error', 'not_authorized', 'unknown_command', 'wrong_number_of_arguments',
  'timestamp_missing', 'timestamp_malformed', 'key_length_zero', 'unknown_store_error'
]
const CODES = [
  'invalid_argument', 'malformed', 'clock_drift', 'clock_overflow', 'timeout', 'connection_lost',
  'connect_failed', 'connect_refused', 'connect_timeout', 'connect_unauthorized', 'tls', 'no_store', 'closed',
  'rpc_error', 'not_held', 'cancelled', 'unsupported', 'callback',
  ...STORE_KINDS
]

test('the pure layers throw the class of the code, as the client does', () => {
  const malformed = throwsCode(() => Hlc.parse('1:2'), 'malformed')
  assert.ok(malformed instanceof mqstate.MalformedError && malformed instanceof mqstate.MqstateError)
  assert.equal(malformed.name, 'MalformedError')
  assert.ok(throwsCode(() => codec.encodeGet(5), 'invalid_argument') instanceof mqstate.InvalidArgumentError)
  const store = throwsCode(() => codec.decodeRequest(''), 'syntax_error')
  assert.ok(store instanceof mqstate.StoreSyntaxError && store instanceof mqstate.StoreError)
  const drift = throwsCode(() => new Hlc(1000, 0, 'a').tick(0, 10), 'clock_drift')
  assert.ok(drift instanceof mqstate.ClockDriftError && drift instanceof mqstate.ClockError)
})

test('errorCodes() and storeErrorKinds() list the core kinds', () => {
  assert.deepEqual([...mqstate.errorCodes()].sort(), [...CODES].sort())
  assert.deepEqual(mqstate.storeErrorKinds(), STORE_KINDS)
})

test('decodeRequest throws the store error the service would answer', () => {
  const table = [
    ['', 'syntax_error', 'syntax error'],
    ['+OK\r\n', 'syntax_error', 'syntax error'],
    ['*4\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n$2\r\nXX\r\n', 'syntax_error', 'syntax error'],
    ['*2\r\n$3\r\nget\r\n$1\r\nk\r\n', 'unknown_command', 'unknown command'],
    ['*1\r\n$3\r\nGET\r\n', 'wrong_number_of_arguments', 'wrong number of arguments'],
    ['*2\r\n$3\r\nGET\r\n$0\r\n\r\n', 'key_length_zero', 'the key length is zero']
  ]
  for (const [payload, kind, text] of table) {
    const err = throwsCode(() => codec.decodeRequest(Buffer.from(payload, 'latin1')), kind, JSON.stringify(payload))
    assert.equal(err.storeKind, kind)
    assert.equal(err.message, text)
    assert.ok(mqstate.errorCodes().includes(err.code))
  }
})

test('a store error in a response is a decoded value, not a throw', () => {
  const got = codec.decodeResponse('-ERR a fencing token is required for this request\r\n', 'SET')
  assert.deepEqual(got, {
    kind: 'error',
    errorKind: 'fencing_token_required',
    errorText: 'a fencing token is required for this request'
  })
})

test('malformed input throws code malformed, without storeKind', () => {
  const cases = [
    () => codec.decodeResponse('+OK'),
    () => codec.decodeResponse('$1\r\nx\r\n', 'SET'),
    () => codec.decodeNotification('not/a/notification/topic', '*2\r\n$6\r\nNOTIFY\r\n$6\r\nDELETE\r\n'),
    () => topics.parseNotificationTopic(topics.notificationFilter('c').replace('+', 'XYZ')),
    () => topics.hexDecode('ABC'),
    () => Hlc.parse('1:2'),
    () => new Hlc(1, 0, 'n').compare('not an hlc')
  ]
  for (const run of cases) {
    const err = throwsCode(run, 'malformed', run.toString())
    assert.equal(err.storeKind, undefined)
    assert.ok(err.message.length > 0)
  }
})

test('clock errors carry clock_drift and clock_overflow', () => {
  throwsCode(() => Hlc.parse('100000:0:me').tick(2000, 60000), 'clock_drift')
  throwsCode(() => Hlc.parse('1:0:me').receive('100000:0:them', 2000), 'clock_drift')
  throwsCode(() => Hlc.parse('3000:18446744073709551615:me').tick(2000), 'clock_overflow')
  throwsCode(() => Hlc.parse('3000:18446744073709551615:me').receive('3000:0:them', 2000), 'clock_overflow')
})

test('invalid arguments carry invalid_argument', () => {
  throwsCode(() => codec.encodeGet(''), 'invalid_argument', 'empty key')
  throwsCode(() => codec.encodeSet(Buffer.alloc(0), 'v'), 'invalid_argument', 'empty key')
  throwsCode(() => new Hlc(1, 0, 'a:b'), 'invalid_argument', 'node id with colon')
  throwsCode(() => new Hlc(1, 0, ''), 'invalid_argument', 'empty node id')
  throwsCode(() => new Clock(''), 'invalid_argument', 'empty clock node id')
  throwsCode(() => topics.checkResponseTopic(topics.REQUEST_TOPIC), 'invalid_argument', 'request topic')
})

/** A small deterministic generator, so the sweep below is the same on every run. */
function * randomPayloads (seed, count) {
  const pieces = ['*', '$', ':', '+', '-', 'ERR ', 'OK', '\r\n', '\r', '\n', '-1', '0', '1', '3', '99999999999999999999',
    'SET', 'GET', 'DEL', 'VDEL', 'KEYNOTIFY', 'NOTIFY', 'DELETE', 'VALUE', 'NX', 'NEX', 'PX', 'STOP', 'k', '\u0000', '\u00ff']
  let state = seed >>> 0
  const next = () => { state = (Math.imul(state, 1664525) + 1013904223) >>> 0; return state }
  for (let i = 0; i < count; i++) {
    let s = ''
    const n = next() % 12
    for (let j = 0; j < n; j++) s += pieces[next() % pieces.length]
    yield Buffer.from(s, 'latin1')
  }
}

test('arbitrary input never crashes: each call returns or throws a coded Error', () => {
  const codes = new Set(mqstate.errorCodes())
  const topic = topics.notificationTopic('c', 'k')
  const calls = [
    (p) => codec.decodeResponse(p),
    (p) => codec.decodeResponse(p, 'GET'),
    (p) => codec.decodeRequest(p),
    (p) => codec.decodeNotification(topic, p),
    (p) => codec.decodeNotification(p.toString('latin1'), p),
    (p) => Hlc.parse(p.toString('latin1')),
    (p) => topics.hexDecode(p.toString('latin1'))
  ]
  let thrown = 0
  let returned = 0
  for (const payload of randomPayloads(20240601, 1500)) {
    for (const call of calls) {
      try {
        call(payload)
        returned++
      } catch (err) {
        thrown++
        assert.ok(err instanceof Error, `not an Error for ${JSON.stringify(payload.toString('latin1'))}`)
        assert.ok(codes.has(err.code), `code ${err.code} for ${JSON.stringify(payload.toString('latin1'))}`)
      }
    }
  }
  assert.ok(thrown > 0 && returned > 0, `thrown ${thrown}, returned ${returned}`)
})
