/**
 * The npm package `mqstate`: a client of the Azure IoT Operations MQTT5 state store and the
 * protocol's pure layers (`codec`, `hlc`, `topics`), over the mqstate Rust core.
 *
 * Versions and fencing tokens are `hlc.Hlc` values (pass an `Hlc` or its text back);
 * durations are milliseconds, in options named `…Ms` (`expiryMs`, `timeoutMs`, `leaseMs`
 * …); keys and values accept `string` (UTF-8), `Buffer` and `Uint8Array`, and values come
 * back as `Buffer`s.
 */
import { codec, hlc, topics, errorCodes, storeErrorKinds } from './native'

export { codec, hlc, topics, errorCodes, storeErrorKinds }

/** A key or a value: a string is sent as UTF-8. */
export type Bytes = string | Buffer | Uint8Array
/** A fencing token: an `Hlc` or its text. */
export type FencingToken = hlc.Hlc | string

/** Options every call takes. */
export interface CallOptions {
  /** Aborting rejects the call with an `AbortError` and cancels it in the core. */
  signal?: AbortSignal
}

/** Options of a call that waits for a response. */
export interface RequestOptions extends CallOptions {
  /** This call's timeout in milliseconds instead of the client's `requestTimeout`. */
  timeoutMs?: number
}

/** A SET condition, in any case: `'nx'`: only if the key is missing; `'nex'`: only if missing or already equal. */
export type SetCondition = 'nx' | 'nex' | 'NX' | 'NEX'

/** Options of `set`. */
export interface SetOptions extends RequestOptions {
  /** `'nx'`: only if the key is missing; `'nex'`: only if missing or already equal (any case). */
  condition?: SetCondition
  /** The key expires this many milliseconds after the set (at least 1). */
  expiryMs?: number
  /** Write fenced by a lock's token. */
  fencingToken?: FencingToken
  /** Ask the service to persist the value. */
  persist?: boolean
}

/** Options of `get`. */
export interface GetOptions extends RequestOptions {
  /** Read from the store even when the client-side cache could answer (its answer still updates the cache); default `false`. */
  bypassCache?: boolean
}

/** Options of `delete` and `vdel`. */
export interface DeleteOptions extends RequestOptions {
  /** Delete fenced by a lock's token. */
  fencingToken?: FencingToken
}

/**
 * Connection and client settings: the core's settings table in camelCase (see
 * `settings()`), with the syntax every mqstate language shares. Durations are text
 * (`'30s'`, `'250ms'`, `'2m'`; bare digits are seconds): a number is refused there.
 */
export interface ConnectOptions extends CallOptions {
  /** `mqtt://host:port` or `mqtts://…`; query items are settings. */
  url?: string
  host?: string
  port?: number | string
  useTls?: boolean | string
  caFile?: string
  certFile?: string
  keyFile?: string
  keyPasswordFile?: string
  clientId?: string
  keepAlive?: string
  cleanStart?: boolean | string
  sessionExpiry?: string
  username?: string
  password?: string
  passwordFile?: string
  satFile?: string
  maxPacketSize?: number | string
  connectTimeout?: string
  reconnectMinDelay?: string
  reconnectMaxDelay?: string
  /** Default time a call waits for its answer (default 10 s). */
  requestTimeout?: string
  /** Notifications buffered per subscription before the oldest are dropped. */
  observerCapacity?: number | string
  responseTopic?: string
  /** Keep what `get` reads in memory, kept fresh by the store's notifications (default `false`; every `cache…` setting turns it on). */
  cache?: boolean | string
  /** The keys cached: glob patterns separated by commas, a comma inside one written `\,` (default `'*'`). */
  cacheKeys?: string
  /** The most entries cached; the least recently read goes first (default 10000). */
  cacheMaxEntries?: number | string
  /** The most key and value bytes cached; a larger value is never cached (default 64 MiB). */
  cacheMaxBytes?: number | string
  /** While disconnected, how long after the cut cached entries may still answer, as text (`'2s'`; default `'0'`: never). */
  cacheMaxStaleness?: string
  /** The most a cached read may lag the store, in any failure (the freshness lease's bound), as text (`'300ms'`; default `'1s'`, at least 10 ms). */
  cacheFreshness?: string
  /** Any other setting of the core's table (an unknown name is refused with `invalid_argument`). */
  [setting: string]: string | number | boolean | AbortSignal | undefined
}

/** The outcome of `set`. */
export interface SetResult {
  /** `false` when an `nx` / `nex` condition failed. */
  applied: boolean
  /** The key's new version when applied (also a lock's fencing token). */
  version: hlc.Hlc | null
}

/** A key's value and its version. */
export declare class Value {
  private constructor ()
  /** The value's bytes. */
  readonly value: Buffer
  /** Its version. */
  readonly version: hlc.Hlc | null
  /** The value as UTF-8 text. */
  get text (): string
}

/** One change of an observed key. */
export declare class Change {
  private constructor ()
  readonly type: 'change'
  /** The key. */
  readonly key: Buffer
  /** `'set'` (with `value`) or `'delete'`. */
  readonly kind: 'set' | 'delete'
  /** The new value of a set, else `null`. */
  readonly value: Buffer | null
  /** The key's new version (`null` for a resync that found it deleted). */
  readonly version: hlc.Hlc | null
  /** Found after a reconnection (intermediate changes are not replayed). */
  readonly resync: boolean
  /** Changes dropped before this one because the reader was slow (oldest first). */
  readonly droppedBefore: number
  /** The new value as UTF-8 text, or `null` for a deletion. */
  get text (): string | null
}

/** A lock's holder (an election's leader) changed. */
export declare class HolderChange {
  private constructor ()
  readonly type: 'holder'
  /** The holder id, or `null` when free. */
  readonly holder: string | null
  /** The lock key's version at the change. */
  readonly version: hlc.Hlc | null
  /** Found after a reconnection. */
  readonly resync: boolean
}

/** This lock's (candidate's) own status. */
export declare class LockStatus {
  private constructor ()
  readonly type: 'status'
  /** `'held'`, `'not_held'` or `'lost'`. */
  readonly state: 'held' | 'not_held' | 'lost'
  /** The fencing token while held. */
  readonly fencingToken: hlc.Hlc | null
  /** The lease in milliseconds while held. */
  readonly leaseMs: number | null
  /** Why it was lost. */
  readonly reason: 'expired' | 'taken_over' | 'renewal_failed' | null
  /** For `renewal_failed`: the renewal's error. */
  readonly error: { code: string, message: string } | null
}

/** `'degraded'`: changes are being missed after a reconnection (`reason`); `'restored'`: back. */
export declare class ConnectionEvent {
  private constructor ()
  readonly type: 'degraded' | 'restored'
  /** Why (degraded only). */
  readonly reason: string | null
}

/** Options of `Subscription.next()`. */
export interface NextOptions extends CallOptions {
  /** Reject with code `'timeout'` when nothing came within this many milliseconds. */
  timeoutMs?: number
}

/**
 * An async iterator of events. Leaving a `for await` loop (or `close()`) ends it: for a
 * key, `KEYNOTIFY … STOP` is sent at once. Buffering is bounded by `observerCapacity`.
 */
export declare class Subscription<E> implements AsyncIterableIterator<E, undefined, NextOptions | undefined> {
  private constructor ()
  /** Waits until registered (rejects if it could not be); resolves to itself. */
  ready (): Promise<this>
  /** The next event, or `{ done: true }` once closed. No event is lost by a timeout or an abort. */
  next (options?: NextOptions): Promise<IteratorResult<E, undefined>>
  /** The next event if one is buffered, else `null`. */
  tryNext (): E | null
  /** Closes it (what `break` does). */
  return (): Promise<IteratorReturnResult<undefined>>
  /** Closes it now (idempotent). */
  close (): void
  /** Whether it has ended. */
  readonly closed: boolean
  [Symbol.asyncIterator] (): this
  [Symbol.asyncDispose] (): Promise<void>
}

/** Options of `scan`. */
export interface ScanOptions extends CallOptions {
  /** Each page's timeout in milliseconds instead of the client's `requestTimeout`. */
  timeoutMs?: number
}

/**
 * A SCAN: the keys matching a glob pattern, one request per page, the continuation token
 * kept inside. A page that failed, timed out or was aborted leaves the pager where it was:
 * asking again retries that page. `for await (const key of pager)` yields every remaining
 * key; leaving the loop and iterating again continues with the next page.
 */
export declare class Pager implements AsyncIterable<Buffer> {
  private constructor ()
  /** The next page's keys (possibly none while more follow), or `null` after the last page. */
  nextPage (options?: CallOptions): Promise<Buffer[] | null>
  /** Whether the last page has been returned. */
  readonly done: boolean
  [Symbol.asyncIterator] (): AsyncGenerator<Buffer, void, undefined>
}

/** Returned by an edit function: delete the key. */
export declare const DELETE: unique symbol
/** Returned by an edit function (as `undefined` / `null` are): leave the key as it is. */
export declare const KEEP: unique symbol
/** What an edit function returns (or resolves to). */
export type EditDecision = Bytes | typeof DELETE | typeof KEEP | undefined | null

/** The outcome of a fenced edit. */
export declare class EditResult {
  private constructor ()
  /** What was read under the lock (`null`: the key did not exist). */
  readonly previous: Value | null
  /** What was written. */
  readonly kind: 'set' | 'delete' | 'keep'
  /** The key's new version after a set. */
  readonly version: hlc.Hlc | null
  /** The fencing token the write carried. */
  readonly token: hlc.Hlc
  /** Attempts made (1 when nothing had to be retried). */
  readonly attempts: number
}

/** Options of `client.lock()`. */
export interface LockOptions {
  /** The lease of this lock's acquires in milliseconds (default: the core's, 10 s). */
  leaseMs?: number
  /** The holder id written (default: the client id). */
  holder?: string
  /** Tells sessions of one holder apart: the holder id becomes `holder:sessionId`. */
  sessionId?: string
  /** Renew automatically this often (ms) after each acquire; must be shorter than the lease. */
  autoRenewMs?: number
}

/** Options of `lock.tryAcquire()`. */
export interface TryAcquireOptions extends CallOptions {
  /** This acquire's lease in milliseconds instead of the lock's. */
  leaseMs?: number
}

/** Options of `lock.acquire()`. */
export interface AcquireOptions extends TryAcquireOptions {
  /** Give up after this many milliseconds (default: wait until aborted). */
  timeoutMs?: number
}

/** Options of `lock.edit()`. */
export interface EditOptions extends TryAcquireOptions {
  /** The whole edit's limit in milliseconds (default: the core's, 10 s). */
  timeoutMs?: number
}

/** A leased lock on one key. */
export declare class Lock {
  private constructor ()
  /** The lock key. */
  readonly key: Buffer
  /** The holder id this lock writes. */
  readonly holderId: string
  /** The fencing token while held. */
  readonly fencingToken: hlc.Hlc | null
  /** Whether the lock is held now. */
  readonly isHeld: boolean
  /** Tries once: the fencing token, or `null` when someone else holds it. */
  tryAcquire (options?: TryAcquireOptions): Promise<hlc.Hlc | null>
  /** Waits for the lock (up to `timeoutMs`, else until aborted); the fencing token. */
  acquire (options?: AcquireOptions): Promise<hlc.Hlc>
  /** Renews the held lease: the new token, or `null` when no longer held. */
  renew (options?: CallOptions): Promise<hlc.Hlc | null>
  /** Releases the lock; `true` when our hold was deleted. */
  release (options?: CallOptions): Promise<boolean>
  /** The current holder id, or `null` when free. */
  holder (options?: CallOptions): Promise<string | null>
  /** Renew automatically every `periodMs` milliseconds from the next acquire on; `null`: never. */
  setAutoRenew (periodMs: number | null): void
  /** Holder changes: the current holder, then each change. */
  watchHolder (options?: CallOptions): Subscription<HolderChange | ConnectionEvent>
  /** This lock's status: the current one, then each change. */
  watchStatus (): Subscription<LockStatus>
  /**
   * Fenced edit of `key`: acquire, read, `fn(previous)`, write fenced, release; retried when
   * a newer holder wrote meanwhile. What `fn` throws or rejects with is what this rejects
   * with, unchanged.
   */
  edit (key: Bytes, fn: (previous: Value | null) => EditDecision | Promise<EditDecision>,
    options?: EditOptions): Promise<EditResult>
  /** Releases the lock. */
  [Symbol.asyncDispose] (): Promise<void>
}

/** Options of `client.election()`. */
export interface ElectionOptions {
  /** The term of this candidate's campaigns in milliseconds (default: the core's, 10 s). */
  termMs?: number
  /** Tells sessions of one candidate apart. */
  sessionId?: string
  /** Renew the term this often (ms) while leader. */
  renewEveryMs?: number
}

/** Options of `election.tryCampaign()`. */
export interface TryCampaignOptions extends CallOptions {
  /** This campaign's term in milliseconds instead of the election's. */
  termMs?: number
}

/** Options of `election.campaign()`. */
export interface CampaignOptions extends TryCampaignOptions {
  /** Give up after this many milliseconds (default: wait until aborted). */
  timeoutMs?: number
}

/** A candidate in a leader election. */
export declare class Election {
  private constructor ()
  /** This candidate's id. */
  readonly candidateId: string
  /** Whether this candidate leads now. */
  readonly isLeader: boolean
  /** The leader's fencing token while this candidate leads. */
  readonly fencingToken: hlc.Hlc | null
  /** Waits to become leader (up to `timeoutMs`, else until aborted); the leader's fencing token. */
  campaign (options?: CampaignOptions): Promise<hlc.Hlc>
  /** Becomes leader if nobody is; `true` when leader now. */
  tryCampaign (options?: TryCampaignOptions): Promise<boolean>
  /** Steps down; `true` when this candidate led. */
  resign (options?: CallOptions): Promise<boolean>
  /** The current leader's id, or `null`. */
  leader (options?: CallOptions): Promise<string | null>
  /** Leadership changes: the current leader, then each change. */
  watchLeader (options?: CallOptions): Subscription<HolderChange | ConnectionEvent>
  /** This candidate's own status. */
  watchStatus (): Subscription<LockStatus>
  /** Resigns. */
  [Symbol.asyncDispose] (): Promise<void>
}

/** The connection's history. */
export interface LinkInfo {
  connected: boolean
  connections: number
  sessions: number
  brokerMaxPacketSize: number
}

/**
 * The client-side cache's counters (`client.cacheStats()`), named as in every mqstate
 * language (`cache_counters` of the vocabulary).
 */
export interface CacheStats {
  /** Reads answered from the cache. */
  hits: number
  /** Reads of cached keys that went to the store. */
  misses: number
  /** Entries removed to stay within `cacheMaxEntries` and `cacheMaxBytes`. */
  evictions: number
  /** Entries changed or removed by something other than this client's own reads and writes: a notification, a cut, a lost session. */
  invalidations: number
  /** Entries held now. */
  entries: number
  /** Key and value bytes held now. */
  bytes: number
  /** Renewals of the freshness lease sent. */
  leaseRenewals: number
  /** Times the lease ran out with no renewal on its way (nothing read for a while). */
  leaseExpiries: number
  /** Times the lease failed (a renewal refused, lost or late; a notification backlog): every entry made before is read from the store again before it answers. */
  leaseFailures: number
  /** Reads of cached keys sent to the store because the lease did not hold (counted in `misses` too). */
  leaseMisses: number
  /** KEYNOTIFYs the store refused: those keys are read from the store, uncached, until the next connection. */
  refused: number
}

/** A connection to the state store. */
export declare class Client {
  private constructor ()
  /** Connects with a URL and/or settings; rejects with a `ConnectError` (or `invalid_argument`). */
  static connect (url: string, options?: ConnectOptions): Promise<Client>
  static connect (options?: ConnectOptions): Promise<Client>
  /** Connects with the Azure IoT Operations environment variables, settings on top. */
  static fromEnv (options?: ConnectOptions): Promise<Client>
  /** The MQTT client id. */
  readonly clientId: string
  /** Whether the connection is up now. */
  readonly connected: boolean
  /** The connection's history. */
  linkInfo (): LinkInfo
  /** Sets `key` to `value`. */
  set (key: Bytes, value: Bytes, options?: SetOptions): Promise<SetResult>
  /** The key's value and version, or `null` (from the client-side cache when it is on and holds the key fresh). */
  get (key: Bytes, options?: GetOptions): Promise<Value | null>
  /** Deletes the key: the number of keys deleted (0 or 1). */
  delete (key: Bytes, options?: DeleteOptions): Promise<number>
  /** Deletes the key only if it holds `value`. */
  vdel (key: Bytes, value: Bytes, options?: DeleteOptions): Promise<'deleted' | 'not_found' | 'value_mismatch'>
  /** The key's changes (registration starts now; `ready()` waits for it). */
  observe (key: Bytes, options?: RequestOptions): Subscription<Change | ConnectionEvent>
  /**
   * The keys matching the glob `pattern` (`*`, `?`, `[abc]`, `[a-z]`, `[^a]`, `\` escapes)
   * as a pager; nothing is sent before the first page. Throws `invalid_argument` for an
   * empty pattern.
   */
  scan (pattern: Bytes, options?: ScanOptions): Pager
  /** A leased lock on `key`. */
  lock (key: Bytes, options?: LockOptions): Lock
  /** Candidate `candidate` in the election `name`. */
  election (name: Bytes, candidate: string, options?: ElectionOptions): Election
  /** The client-side cache's counters now, or `null` when the cache is off. */
  cacheStats (): CacheStats | null
  /** Closes the connection and its subscriptions (idempotent); later calls reject with `closed`. */
  close (): Promise<void>
  [Symbol.asyncDispose] (): Promise<void>
}

/** Details of an RPC failure. */
export interface RpcDetails {
  status: number
  statusMessage: string | null
  propertyName: string | null
  propertyValue: string | null
  applicationError: boolean
  supportedMajorVersions: string | null
  requestProtocolVersion: string | null
}

/** What an error carries besides its message and code. */
export interface ErrorDetails {
  storeKind?: string
  status?: number
  rpc?: RpcDetails
  mayHaveApplied?: boolean
  cause?: unknown
}

/**
 * The base class of every error the client throws or rejects with: catch by the class of
 * the code (below) or branch on `code`. A cancelled call's `name` is `'AbortError'`.
 */
export declare class MqstateError extends Error {
  constructor (message: string, code: string, details?: ErrorDetails)
  /** The stable code shared by every mqstate language (see `errorCodes()`). */
  readonly code: string
  /** Whether a sent request may have been applied although it failed. */
  readonly mayHaveApplied: boolean
  /** For store errors: the store error kind. */
  readonly storeKind?: string
  /** For RPC errors: the status. */
  readonly status?: number
  /** For RPC errors: the details. */
  readonly rpc?: RpcDetails
}

// <generated errors: Generated by scripts/gen-errors.js from core/vocabulary.json: do not edit.>
/** The family of `timestamp_skew`, `fencing_token_required`, `fencing_token_skew`, `fencing_token_lower_version`, `quota_exceeded`, `syntax_error`, `not_authorized`, `unknown_command`, `wrong_number_of_arguments`, `timestamp_missing`, `timestamp_malformed`, `key_length_zero`, `unknown_store_error`. */
export declare class StoreError extends MqstateError {}
/** The family of `clock_drift`, `clock_overflow`. */
export declare class ClockError extends MqstateError {}
/** The family of `connect_failed`, `connect_refused`, `connect_timeout`, `connect_unauthorized`, `tls`. */
export declare class ConnectError extends MqstateError {}
/** `invalid_argument`: an argument the protocol cannot carry; nothing was sent. */
export declare class InvalidArgumentError extends MqstateError {
  constructor (message: string, details?: ErrorDetails)
  readonly code: 'invalid_argument'
}
/** `malformed`: bytes from the wire do not follow the protocol. */
export declare class MalformedError extends MqstateError {
  constructor (message: string, details?: ErrorDetails)
  readonly code: 'malformed'
}
/** `clock_drift`: a clock would move too far ahead of the local time. */
export declare class ClockDriftError extends ClockError {
  constructor (message: string, details?: ErrorDetails)
  readonly code: 'clock_drift'
}
/** `clock_overflow`: a clock counter would overflow. */
export declare class ClockOverflowError extends ClockError {
  constructor (message: string, details?: ErrorDetails)
  readonly code: 'clock_overflow'
}
/** `rpc_error`: the service's RPC layer refused the request (see the status and details). */
export declare class RpcError extends MqstateError {
  constructor (message: string, details?: ErrorDetails)
  readonly code: 'rpc_error'
}
/** `timeout`: no answer in time; a sent request may have been applied. */
export declare class MqstateTimeoutError extends MqstateError {
  constructor (message: string, details?: ErrorDetails)
  readonly code: 'timeout'
}
/** `connection_lost`: the connection was lost or is not up; a sent request may have been applied. */
export declare class ConnectionLostError extends MqstateError {
  constructor (message: string, details?: ErrorDetails)
  readonly code: 'connection_lost'
}
/** `connect_failed`: connecting to the broker failed. */
export declare class ConnectFailedError extends ConnectError {
  constructor (message: string, details?: ErrorDetails)
  readonly code: 'connect_failed'
}
/** `closed`: the client or the object is closed. */
export declare class ClosedError extends MqstateError {
  constructor (message: string, details?: ErrorDetails)
  readonly code: 'closed'
}
/** `not_held`: the lock (or leadership) is not held. */
export declare class NotHeldError extends MqstateError {
  constructor (message: string, details?: ErrorDetails)
  readonly code: 'not_held'
}
/** `cancelled`: the call was cancelled by its caller. */
export declare class CallCancelledError extends MqstateError {
  constructor (message: string, details?: ErrorDetails)
  readonly code: 'cancelled'
}
/** `unsupported`: the operation is not supported here. */
export declare class UnsupportedError extends MqstateError {
  constructor (message: string, details?: ErrorDetails)
  readonly code: 'unsupported'
}
/** `callback`: a user callback failed; its own error is attached. */
export declare class CallbackError extends MqstateError {
  constructor (message: string, details?: ErrorDetails)
  readonly code: 'callback'
}
/** `connect_refused`: the connection was refused; retry later. */
export declare class ConnectRefusedError extends ConnectError {
  constructor (message: string, details?: ErrorDetails)
  readonly code: 'connect_refused'
}
/** `connect_timeout`: the connection attempt timed out; retry later. */
export declare class ConnectTimeoutError extends ConnectError {
  constructor (message: string, details?: ErrorDetails)
  readonly code: 'connect_timeout'
}
/** `connect_unauthorized`: the broker refused the credentials; fix them. */
export declare class ConnectUnauthorizedError extends ConnectError {
  constructor (message: string, details?: ErrorDetails)
  readonly code: 'connect_unauthorized'
}
/** `tls`: the TLS handshake failed; fix the TLS settings. */
export declare class TlsError extends ConnectError {
  constructor (message: string, details?: ErrorDetails)
  readonly code: 'tls'
}
/** `no_store`: the broker says no state store is subscribed to the request topic; the request was not applied. */
export declare class NoStoreError extends MqstateError {
  constructor (message: string, details?: ErrorDetails)
  readonly code: 'no_store'
}
/** `timestamp_skew`: the state store refused the request (the message is the service's exact text). */
export declare class TimestampSkewError extends StoreError {
  constructor (message: string, details?: ErrorDetails)
  readonly code: 'timestamp_skew'
}
/** `fencing_token_required`: the state store refused the request (the message is the service's exact text). */
export declare class FencingTokenRequiredError extends StoreError {
  constructor (message: string, details?: ErrorDetails)
  readonly code: 'fencing_token_required'
}
/** `fencing_token_skew`: the state store refused the request (the message is the service's exact text). */
export declare class FencingTokenSkewError extends StoreError {
  constructor (message: string, details?: ErrorDetails)
  readonly code: 'fencing_token_skew'
}
/** `fencing_token_lower_version`: the state store refused the request (the message is the service's exact text). */
export declare class FencingTokenLowerVersionError extends StoreError {
  constructor (message: string, details?: ErrorDetails)
  readonly code: 'fencing_token_lower_version'
}
/** `quota_exceeded`: the state store refused the request (the message is the service's exact text). */
export declare class QuotaExceededError extends StoreError {
  constructor (message: string, details?: ErrorDetails)
  readonly code: 'quota_exceeded'
}
/** `syntax_error`: the state store refused the request (the message is the service's exact text). */
export declare class StoreSyntaxError extends StoreError {
  constructor (message: string, details?: ErrorDetails)
  readonly code: 'syntax_error'
}
/** `not_authorized`: the state store refused the request (the message is the service's exact text). */
export declare class NotAuthorizedError extends StoreError {
  constructor (message: string, details?: ErrorDetails)
  readonly code: 'not_authorized'
}
/** `unknown_command`: the state store refused the request (the message is the service's exact text). */
export declare class UnknownCommandError extends StoreError {
  constructor (message: string, details?: ErrorDetails)
  readonly code: 'unknown_command'
}
/** `wrong_number_of_arguments`: the state store refused the request (the message is the service's exact text). */
export declare class WrongNumberOfArgumentsError extends StoreError {
  constructor (message: string, details?: ErrorDetails)
  readonly code: 'wrong_number_of_arguments'
}
/** `timestamp_missing`: the state store refused the request (the message is the service's exact text). */
export declare class TimestampMissingError extends StoreError {
  constructor (message: string, details?: ErrorDetails)
  readonly code: 'timestamp_missing'
}
/** `timestamp_malformed`: the state store refused the request (the message is the service's exact text). */
export declare class TimestampMalformedError extends StoreError {
  constructor (message: string, details?: ErrorDetails)
  readonly code: 'timestamp_malformed'
}
/** `key_length_zero`: the state store refused the request (the message is the service's exact text). */
export declare class KeyLengthZeroError extends StoreError {
  constructor (message: string, details?: ErrorDetails)
  readonly code: 'key_length_zero'
}
/** `unknown_store_error`: a store error text this version does not know (the text is kept). */
export declare class UnknownStoreError extends StoreError {
  constructor (message: string, details?: ErrorDetails)
  readonly code: 'unknown_store_error'
}
// </generated errors>

/** One setting the client accepts. */
export interface SettingInfo {
  /** camelCase name. */
  name: string
  type: 'text' | 'path' | 'bool' | 'count' | 'duration'
  /** The Azure IoT Operations environment variable, if any. */
  env: string | null
  description: string
}
/** Every setting of the core's table. */
export declare function settings (): SettingInfo[]
/** The package's version, e.g. `0.2.0` (the same in every mqstate language). */
export declare const version: string

/** Options of telemetry's OpenTelemetry spans (see the README's "OpenTelemetry"). */
export interface TelemetryOptions {
  /** Put each call's key on its span as `mqstate.key` (default `false`: keys can name people, devices or secrets). */
  recordKeys?: boolean
}

/** OpenTelemetry support, active when `@opentelemetry/api` is installed. */
export declare const telemetry: {
  /** Sets telemetry's options (each call of `configure` sets them all). */
  readonly configure: (options?: TelemetryOptions) => void
}
