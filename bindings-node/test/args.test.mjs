// Argument types: what each export accepts, and that anything else is refused with
// code invalid_argument (never napi's own status codes, never a crash).
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { mqstate, throwsCode } from './support.mjs'

const { codec, hlc, topics } = mqstate
const { Hlc, Clock } = hlc

const GET_K = Buffer.from('*2\r\n$3\r\nGET\r\n$1\r\nk\r\n', 'latin1')

test('bytes accept Buffer, Uint8Array (views too) and string (as UTF-8)', () => {
  const backing = new Uint8Array([0x78, 0x6b, 0x79])
  for (const key of ['k', Buffer.from('k'), new Uint8Array([0x6b]), backing.subarray(1, 2), Buffer.from('xky').subarray(1, 2)]) {
    const got = codec.encodeGet(key)
    assert.ok(Buffer.isBuffer(got))
    assert.deepEqual(got, GET_K, String(key))
  }
  assert.deepEqual(
    codec.encodeSet('é', new Uint8Array(0)),
    Buffer.from('*3\r\n$3\r\nSET\r\n$2\r\n\u00c3\u00a9\r\n$0\r\n\r\n', 'latin1')
  )
  assert.equal(topics.hexEncode('é'), 'C3A9')
  assert.equal(topics.hexEncode(new Uint8Array([0, 255])), '00FF')
  assert.deepEqual(codec.decodeResponse('$1\r\nx\r\n'), codec.decodeResponse(Buffer.from('$1\r\nx\r\n')))
})

test('anything else as bytes is invalid_argument', () => {
  const wrong = [undefined, null, 5, 5n, true, {}, [0x6b], new Int16Array(1), new Uint8ClampedArray(1),
    new ArrayBuffer(1), new DataView(new ArrayBuffer(1)), Symbol('k'), () => 'k']
  for (const key of wrong) {
    throwsCode(() => codec.encodeGet(key), 'invalid_argument', `key ${String(key)}`)
    throwsCode(() => codec.encodeVdel('k', key), 'invalid_argument', `value ${String(key)}`)
    throwsCode(() => codec.decodeResponse(key), 'invalid_argument', `payload ${String(key)}`)
    throwsCode(() => topics.notificationTopic('c', key), 'invalid_argument', `topic key ${String(key)}`)
  }
  throwsCode(() => codec.encodeGet(), 'invalid_argument', 'missing key')
})

test('strings are required where the API says string', () => {
  for (const bad of [undefined, null, 5, Buffer.from('c'), {}]) {
    throwsCode(() => topics.responseTopic(bad), 'invalid_argument', String(bad))
    throwsCode(() => topics.isResponseTopicAllowed(bad), 'invalid_argument', String(bad))
    throwsCode(() => topics.hexDecode(bad), 'invalid_argument', String(bad))
    throwsCode(() => codec.decodeNotification(bad, '*2\r\n$6\r\nNOTIFY\r\n$6\r\nDELETE\r\n'), 'invalid_argument', String(bad))
    throwsCode(() => Hlc.parse(bad), 'invalid_argument', String(bad))
    throwsCode(() => new Clock(bad), 'invalid_argument', String(bad))
  }
})

test('encodeSet options', () => {
  const set = (options) => codec.encodeSet('k', 'v', options).toString('latin1')
  const plain = '*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n'
  assert.equal(set(), plain)
  assert.equal(set(null), plain)
  assert.equal(set({}), plain)
  assert.equal(set({ condition: null, pxMs: undefined }), plain)
  assert.equal(set({ condition: 'NX' }), '*4\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n$2\r\nNX\r\n')
  assert.ok(set({ pxMs: 10n }).endsWith('$2\r\nPX\r\n$2\r\n10\r\n'))
  assert.ok(set({ pxMs: Number.MAX_SAFE_INTEGER }).endsWith(`$${String(Number.MAX_SAFE_INTEGER).length}\r\n${Number.MAX_SAFE_INTEGER}\r\n`))
  assert.ok(set({ pxMs: 18446744073709551615n }).endsWith('$20\r\n18446744073709551615\r\n'))

  for (const options of ['NX', 5, true]) {
    throwsCode(() => set(options), 'invalid_argument', `options ${String(options)}`)
  }
  // any case, as the core parses a condition in every language
  assert.equal(set({ condition: 'nx' }), set({ condition: 'NX' }))
  assert.ok(set({ condition: 'Nex' }).endsWith('$3\r\nNEX\r\n'))
  for (const condition of ['XX', '', 'nxx', 5, true]) {
    throwsCode(() => set({ condition }), 'invalid_argument', `condition ${String(condition)}`)
  }
  for (const pxMs of [0, 0n, -1, -1n, 1.5, NaN, Infinity, 2 ** 53, '10', 18446744073709551616n, {}]) {
    throwsCode(() => set({ pxMs }), 'invalid_argument', `pxMs ${String(pxMs)}`)
  }
})

test('encodeKeynotify options', () => {
  const start = '*2\r\n$9\r\nKEYNOTIFY\r\n$1\r\nk\r\n'
  assert.equal(codec.encodeKeynotify('k').toString('latin1'), start)
  assert.equal(codec.encodeKeynotify('k', { stop: false }).toString('latin1'), start)
  assert.equal(codec.encodeKeynotify('k', { stop: true }).toString('latin1'), '*3\r\n$9\r\nKEYNOTIFY\r\n$1\r\nk\r\n$4\r\nSTOP\r\n')
  for (const stop of ['yes', 1, {}]) {
    throwsCode(() => codec.encodeKeynotify('k', { stop }), 'invalid_argument', `stop ${String(stop)}`)
  }
})

test('decodeResponse verb is a wire verb name or left out', () => {
  assert.equal(codec.decodeResponse('+OK\r\n', undefined).kind, 'ok')
  assert.equal(codec.decodeResponse('+OK\r\n', null).kind, 'ok')
  assert.equal(codec.decodeResponse('+OK\r\n', 'KEYNOTIFY').kind, 'ok')
  for (const verb of ['set', 'PING', '', 5, {}]) {
    throwsCode(() => codec.decodeResponse('+OK\r\n', verb), 'invalid_argument', `verb ${String(verb)}`)
  }
})

test('Hlc fields: numbers, bigints, and decimal strings for the counter', () => {
  const max = 18446744073709551615n
  assert.equal(new Hlc(5, 7, 'n').toString(), '000000000000005:00007:n')
  assert.equal(new Hlc(5n, max, 'n').counter, max)
  assert.equal(new Hlc(5, '18446744073709551615', 'n').counter, max)
  assert.equal(new Hlc(Number.MAX_SAFE_INTEGER, 0, 'n').wallMs, Number.MAX_SAFE_INTEGER)

  for (const wallMs of [-1, 1.5, NaN, 2 ** 53, '5', -1n, max + 1n, null, undefined]) {
    throwsCode(() => new Hlc(wallMs, 0, 'n'), 'invalid_argument', `wallMs ${String(wallMs)}`)
  }
  for (const counter of ['', '12a', '-1', '+1', ' 1', '18446744073709551616', -1, 0.5, max + 1n, -1n, null]) {
    throwsCode(() => new Hlc(1, counter, 'n'), 'invalid_argument', `counter ${String(counter)}`)
  }
  for (const nodeId of [5, null, undefined, Buffer.from('n')]) {
    throwsCode(() => new Hlc(1, 0, nodeId), 'invalid_argument', `nodeId ${String(nodeId)}`)
  }
})

test('Hlc arguments: other clocks are Hlc instances or text; times are numbers or bigints', () => {
  const h = Hlc.parse('1000:0:me')
  for (const other of [{}, new Clock('x'), 5, null, undefined, Buffer.from('1:0:x')]) {
    throwsCode(() => h.compare(other), 'invalid_argument', `other ${String(other)}`)
    throwsCode(() => h.receive(other, 2000), 'invalid_argument', `other ${String(other)}`)
  }
  for (const nowMs of ['2000', -1, 1.5, null, undefined]) {
    throwsCode(() => h.tick(nowMs), 'invalid_argument', `nowMs ${String(nowMs)}`)
  }
  throwsCode(() => h.tick(2000, 'x'), 'invalid_argument', 'maxDriftMs')
  assert.equal(h.tick(500, null).toString(), '000000000001000:00001:me')
  assert.equal(h.tick(1000n, 0n).toString(), '000000000001000:00001:me')
  throwsCode(() => Hlc.parse('1500:0:me').tick(500, 999), 'clock_drift', 'drift beyond an explicit maximum')
})
