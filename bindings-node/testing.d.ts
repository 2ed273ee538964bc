// Types of `mqstate/testing` (testing.js): `LocalStore`, an emulated state store in this
// process to test an application against.
import type { Value } from './index.js'

/** Options of `store.restart()`. */
export interface RestartOptions {
  /** Keep the keys SET with `persist: true` (the others are always lost); default `false`. */
  keepData?: boolean
}

/**
 * An emulated state store running in this process, on a free loopback port, with faults on
 * demand. A running store does not keep the process alive; `stop()` it after each test.
 */
export declare class LocalStore {
  private constructor ()
  /** Starts a store on `127.0.0.1` at a free port; resolves once it serves requests. */
  static start (): Promise<LocalStore>
  /** Where clients connect: `mqtt://127.0.0.1:PORT`. */
  readonly url: string
  /** The TCP port (the same after a restart). */
  readonly port: number
  /** Whether the store runs (false after `stop()`, after a failed restart, and during either). */
  readonly isRunning: boolean
  /** Stops the store, closes its connections and removes its data; again does nothing. */
  stop (): Promise<void>
  /** Resets every client connection (sessions kept: clients resume); resolves to how many it closed. */
  cutConnections (): Promise<number>
  /** Answers nothing for `durationMs` milliseconds (at least 1), then what queued, in order. In effect when it returns. */
  pause (durationMs: number): void
  /** What `kill -9` and a restart do, on the same port: connections and sessions lost; only persisted keys kept, and only with `keepData`. */
  restart (keepData?: boolean): Promise<void>
  restart (options: RestartOptions): Promise<void>
  /** Answers the next `n` requests (only those of `command`, if given) with the state store error whose code is `error`. */
  failNext (n: number, error: string, command?: string | null): void
  /** The keys that match the glob `pattern` (default `'*'`), in byte order. */
  keys (pattern?: string | Uint8Array): Buffer[]
  /** A key's value and version, read inside the store, or `null`. */
  get (key: string | Uint8Array): Value | null
  /** Deletes every key (observers are told); how many it deleted. */
  clear (): number
  /** How many requests a `pause()` holds now (wait for yours before a cut or a restart). */
  heldRequests (): number
  /** Drops every notification the store sends for `durationMs` milliseconds (at least 1), unsent: a notification path gone silent; requests still answered. In effect when it returns. */
  dropNotifications (durationMs: number): void
  /** How many notifications `dropNotifications()` has dropped so far. */
  droppedNotifications (): number
  /** Forgets every client's KEYNOTIFY registrations, connections up (a store restarted behind its broker); how many there were. */
  forgetRegistrations (): number
  /** `stop()`: for `await using store = await LocalStore.start()`. */
  [Symbol.asyncDispose] (): Promise<void>
}
