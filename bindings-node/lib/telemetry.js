'use strict'
/**
 * @file OpenTelemetry spans and metrics, through `@opentelemetry/api` when the application
 * has it (an optional peer dependency). It is looked for once, when the first client is
 * made; when it cannot be required, nothing else here runs and nothing is imported.
 *
 * Every name (span attributes, events, metrics, units, bucket boundaries) is the core's
 * (`mqstate::telemetry`, read from the addon by `telemetryVocabulary()`); this file only
 * hands them to the API:
 * - each call that goes to the store runs in a CLIENT span named by its verb (`GET`, `SET`,
 *   `DEL`, `VDEL`, `KEYNOTIFY`, `SCAN`), a child of the active context; when the span is
 *   recording, the call's requests carry its W3C trace context (MQTT5 user properties
 *   `traceparent` / `tracestate`) and what the core noted on the way (resendings,
 *   connection waits, a `no_store` refusal) becomes span events with their times. A cache
 *   hit makes no span (the `mqstate.cache.hits` counter counts it). A span that is not
 *   recording costs the no-op `startSpan` and nothing more: no attributes, no traced call.
 * - each lock and election operation runs in an INTERNAL span named by the core
 *   (`mqstate.lock.acquire` …; `operationCall`): the requests the core makes for it carry
 *   its context through a traced copy of the lock (election); no duration is recorded.
 * - the histogram `db.client.operation.duration` (seconds) records each call that went to
 *   the store, with `db.operation.name` and, on failure, `error.type` (the error's code);
 *   the other metrics (link and cache) are observed at collection from the live clients.
 */

const native = require('./native-addon.js')
const { call } = require('./calls.js')
const { invalidArgument } = require('./errors.js')
const { checked } = require('./options.js')

/** @type {string} */
const VERSION = require('../package.json').version

/**
 * `undefined` until looked for; `null` when `@opentelemetry/api` is not there.
 * @type {Telemetry | null | undefined}
 */
let state

/** Whether spans carry each call's key (`mqstate.key`): off unless `configure()` says so. */
let recordKeys = false

/**
 * Telemetry's options (the same in every mqstate language): `recordKeys` puts each call's key
 * on its span as `mqstate.key` (text; bytes that are not UTF-8 escaped). Off by default:
 * keys can name people, devices or secrets.
 * @param {{ recordKeys?: boolean }} [options]
 */
function configure (options) {
  const o = checked(options, ['recordKeys'], 'telemetry.configure()')
  if (o.recordKeys !== undefined && typeof o.recordKeys !== 'boolean') throw invalidArgument('recordKeys must be a boolean')
  recordKeys = o.recordKeys === true
}


/**
 * The live clients the observable metrics read (weakly held: a client dropped without
 * `close()` is not kept alive by its metrics).
 * @type {Set<WeakRef<import('../native.js').NativeClient>>}
 */
const clients = new Set()

/**
 * What this module keeps once the API was found.
 * @typedef {object} Telemetry
 * @property {any} api `@opentelemetry/api`
 * @property {ReturnType<typeof native.telemetryVocabulary>} vocabulary the core's names
 * @property {any} tracer
 * @property {any} provider the meter provider the instruments were made with
 * @property {any} duration the call-duration histogram of `provider`
 */

/**
 * The telemetry state, or `null` when `@opentelemetry/api` cannot be required (looked for
 * once).
 * @returns {Telemetry | null}
 */
function telemetry () {
  if (state !== undefined) return state
  let api
  try {
    api = require('@opentelemetry/api')
  } catch {
    state = null
    return state
  }
  const vocabulary = native.telemetryVocabulary()
  state = {
    api,
    vocabulary,
    tracer: api.trace.getTracer(vocabulary.names.scope, VERSION),
    provider: undefined,
    duration: undefined
  }
  return state
}

/**
 * The call-duration histogram of the global meter provider now; the instruments are made
 * again when the application registers another provider (the API's global meter provider
 * is no proxy: a meter taken before the registration would stay a no-op).
 * @param {Telemetry} t
 */
function histogram (t) {
  const provider = t.api.metrics.getMeterProvider()
  if (provider === t.provider) return t.duration
  const { names, metrics, callDuration, callDurationBuckets } = t.vocabulary
  const meter = provider.getMeter(names.scope, VERSION)
  /** @type {any[]} */
  const observables = []
  /** @type {string[]} */
  const observed = []
  let duration
  for (const m of metrics) {
    const options = { unit: m.unit, description: m.description }
    if (m.name === callDuration) {
      duration = meter.createHistogram(m.name, { ...options, advice: { explicitBucketBoundaries: callDurationBuckets } })
    } else if (m.source !== 'call') {
      observables.push(m.kind === 'counter' ? meter.createObservableCounter(m.name, options) : meter.createObservableGauge(m.name, options))
      observed.push(m.name)
    }
  }
  meter.addBatchObservableCallback((/** @type {any} */ result) => {
    for (const ref of clients) {
      const store = ref.deref()
      if (store === undefined) {
        clients.delete(ref)
        continue
      }
      let values
      try {
        values = store.metricValues()
      } catch {
        continue
      }
      const attributes = { [names.clientId]: store.clientId }
      for (let i = 0; i < observed.length; i++) {
        const value = values[observed[i]]
        if (value !== undefined) result.observe(observables[i], value, attributes)
      }
    }
  }, observables)
  t.provider = provider
  t.duration = duration
  return duration
}

/**
 * Registers a connected client for the observable metrics; returns what `forget` takes,
 * or `null` without OpenTelemetry.
 * @param {import('../native.js').NativeClient} store
 * @returns {WeakRef<import('../native.js').NativeClient> | null}
 */
function register (store) {
  const t = telemetry()
  if (t === null) return null
  histogram(t)
  const ref = new WeakRef(store)
  clients.add(ref)
  return ref
}

/**
 * Removes a closed client from the observable metrics.
 * @param {WeakRef<import('../native.js').NativeClient> | null} ref
 */
function forget (ref) {
  if (ref !== null) clients.delete(ref)
}

/**
 * A span context as a W3C `traceparent`.
 * @param {{ traceId: string, spanId: string, traceFlags: number }} c
 */
function traceparent (c) {
  return `00-${c.traceId}-${c.spanId}-${(c.traceFlags & 0xff).toString(16).padStart(2, '0')}`
}

/**
 * An event time (nanoseconds since the epoch) as the API's `HrTime`.
 * @param {bigint} nanos
 * @returns {[number, number]}
 */
function hrTime (nanos) {
  return [Number(nanos / 1000000000n), Number(nanos % 1000000000n)]
}

/**
 * The `error.type` of what a call threw: its code (`timeout`, `no_store` …).
 * @param {any} e
 */
function errorType (e) {
  return e !== null && typeof e === 'object' && typeof e.code === 'string' ? e.code : '_OTHER'
}

/**
 * Runs one call that goes to the store (`call(signal, …)`) in a span, and records its
 * duration. `start` is given what to call — `subject`, or a traced copy of it when the span
 * records — and the cancel handle.
 * @template T
 * @template {Traceable} S
 * @param {Telemetry} t
 * @param {import('../native.js').NativeClient | null} store the client (its server, for the
 * span); `null` for a lock or election operation
 * @param {string} method the `NativeClient` method (`vocabulary.operations` names its verb),
 * or the span name of a lock or election operation
 * @param {unknown} signal
 * @param {(subject: S, cancel: import('../native.js').CancelHandle | undefined) => Promise<T>} start
 * @param {S} subject what the call is made on: the client, its pager, a lock, an election
 * @param {string | Uint8Array | undefined} key the call's key (or pattern)
 * @param {Map<number, unknown>} [kept] what `call` rethrows by id (an edit function's throws)
 * @returns {Promise<T>}
 */
async function traced (t, store, method, signal, start, subject, key, kept) {
  const { api, vocabulary: { names, operations } } = t
  // A request (its verb, a CLIENT span, its duration recorded), or, with no store, a lock or
  // election operation (`method` the core's span name; INTERNAL; no duration: it may wait).
  const operation = store === null ? null : operations[method]
  const duration = operation === null ? null : histogram(t)
  const span = t.tracer.startSpan(operation ?? method, { kind: operation === null ? api.SpanKind.INTERNAL : api.SpanKind.CLIENT }, api.context.active())
  const recording = span.isRecording()
  let target = subject
  /** @type {import('../native.js').NativeCallTrace | null} */
  let trace = null
  if (recording) {
    span.setAttribute(names.dbSystemName, names.dbSystem)
    if (operation !== null) span.setAttribute(names.dbOperationName, operation)
    const server = store?.server ?? null
    if (server !== null) {
      span.setAttribute(names.serverAddress, server.address)
      span.setAttribute(names.serverPort, server.port)
    }
    if (recordKeys && (typeof key === 'string' || key instanceof Uint8Array)) span.setAttribute(names.key, native.telemetryKeyText(key))
    const context = span.spanContext()
    try {
      trace = native.callTrace(traceparent(context), context.traceState?.serialize() || undefined)
      target = /** @type {S} */ (subject.traced(trace))
    } catch {
      // A context the core refuses (an invalid span context): the call goes untraced.
      trace = null
    }
  }
  const begun = performance.now()
  try {
    const result = await call(signal, (cancel) => start(target, cancel), kept)
    duration?.record((performance.now() - begun) / 1000, { [names.dbOperationName]: operation })
    return result
  } catch (e) {
    const type = errorType(e)
    duration?.record((performance.now() - begun) / 1000, { [names.dbOperationName]: operation, [names.errorType]: type })
    if (recording) {
      span.setAttribute(names.errorType, type)
      span.setStatus({ code: api.SpanStatusCode.ERROR, message: e instanceof Error ? e.message : String(e) })
    }
    throw e
  } finally {
    if (trace !== null) {
      for (const event of trace.takeEvents()) span.addEvent(event.name, event.attributes, hrTime(event.timeUnixNano))
    }
    span.end()
  }
}

/**
 * What a call can be made on with its requests traced: a client or a pager (`traced(trace)`
 * gives the same one, its requests carrying the trace's context).
 * @typedef {{ traced(trace: import('../native.js').NativeCallTrace): unknown }} Traceable
 */

/**
 * Runs one call that goes to the store: in a span when `@opentelemetry/api` is there,
 * else exactly as `call(signal, …)`.
 * @template T
 * @param {import('../native.js').NativeClient} store
 * @param {string} method
 * @param {unknown} signal
 * @param {(store: import('../native.js').NativeClient, cancel: import('../native.js').CancelHandle | undefined) => Promise<T>} start
 * @param {string | Uint8Array} [key] the call's key, for `recordKeys`
 * @returns {Promise<T>}
 */
function storeCall (store, method, signal, start, key) {
  const t = state === undefined ? telemetry() : state
  if (t === null) return call(signal, (cancel) => start(store, cancel))
  return traced(t, store, method, signal, start, store, key)
}

/**
 * One SCAN page of `pager` (a scan of `store`'s): in a span when `@opentelemetry/api` is
 * there, its request carrying the span's context; else exactly as `call(signal, …)`.
 * @template T
 * @param {import('../native.js').NativeClient} store
 * @param {import('../native.js').NativePager} pager
 * @param {unknown} signal
 * @param {(pager: import('../native.js').NativePager, cancel: import('../native.js').CancelHandle | undefined) => Promise<T>} start
 * @param {string | Uint8Array} pattern the scan's pattern, for `recordKeys`
 * @returns {Promise<T>}
 */
function pageCall (store, pager, signal, start, pattern) {
  const t = state === undefined ? telemetry() : state
  // After the last page the pager answers `null` with no request: no span.
  if (t === null || pager.done) return call(signal, (cancel) => start(pager, cancel))
  return traced(t, store, 'scan', signal, start, pager, pattern)
}

/**
 * One lock or election operation of `subject` (a `NativeLock` or `NativeElection`): in an
 * INTERNAL span named by the core (`names[name]`, e.g. `spanLockAcquire`) when
 * `@opentelemetry/api` is there, the requests the core makes for it carrying the span's
 * context; else exactly as `call(signal, …)`.
 * @template T
 * @template {Traceable} S
 * @param {S} subject
 * @param {string} name the camelCase name of the core's constant (`spanLockAcquire`)
 * @param {unknown} signal
 * @param {(subject: S, cancel: import('../native.js').CancelHandle | undefined) => Promise<T>} start
 * @param {(() => string | Uint8Array) | undefined} key the lock key, read only for `recordKeys`
 * @param {Map<number, unknown>} [kept] what `call` rethrows by id
 * @returns {Promise<T>}
 */
function operationCall (subject, name, signal, start, key, kept) {
  const t = state === undefined ? telemetry() : state
  if (t === null) return call(signal, (cancel) => start(subject, cancel), kept)
  return traced(t, null, t.vocabulary.names[name], signal, start, subject, recordKeys && key ? key() : undefined, kept)
}

module.exports = { storeCall, pageCall, operationCall, register, forget, telemetry, configure }
