//! `mqstate_local_store`: a state store to test applications against, started in this process
//! (`mqstate_server::testing::LocalStore`: the emulator of `mqstate serve` with its embedded
//! broker, on `127.0.0.1` at a free port), with faults on demand and a look inside without a
//! client. The names are the core's vocabulary (`testing_operations`, `testing_properties` of
//! `core/vocabulary.json`).
//!
//! The store's tasks run on the runtime the library owns, the one its clients use, so a
//! store needs no thread of its own. Each call blocks the calling thread until it has taken
//! effect (driving that runtime while it waits, as a client call does), bounded by
//! [`CALL_LIMIT`] so that nothing can hang; calls on one store from several threads are
//! served one after the other.
//!
//! `mqstate_local_store_stop` stops the store but keeps the handle (its URL and port stay
//! readable, `mqstate_local_store_is_running` says false, every other call fails with
//! `MQSTATE_STATUS_CLOSED`); `mqstate_local_store_free`, the one function that releases the
//! handle, stops it first if needed.

use std::ffi::{CString, c_char};
use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use bytes::Bytes;
use mqstate::bridge::runtime::{on_runtime_thread, shared_runtime};
use mqstate::{Error, ErrorKind, Versioned};
use mqstate_server::testing::LocalStore;
use tokio::sync::{Mutex, OwnedMutexGuard};

use crate::client::guard;
use crate::client::scan::{mqstate_scan_page, new_page};
use crate::client::text::{mqstate_value, new_value};
use crate::ffi::{bytes_arg, maybe, out_arg, put, str_arg};
use crate::status::{Failure, boundary, mqstate_status};

/// The longest any local store call may take; past it the call fails with
/// `MQSTATE_STATUS_TIMEOUT` instead of blocking for ever. The slowest, a restart, takes well
/// under a second (it retries binding its port for at most 5 s).
pub(crate) const CALL_LIMIT: Duration = Duration::from_secs(30);

/// The store and whether `mqstate_local_store_stop` was called (a stopped store stays
/// stopped: `LocalStore::restart` would start it again).
struct Slot {
    store: LocalStore,
    stopped: bool,
}

/// What a `mqstate_local_store` handle holds.
pub(crate) struct Local {
    slot: Arc<Mutex<Slot>>,
    /// `LocalStore::is_running`, as of the end of the last call (read without waiting).
    running: AtomicBool,
    url: CString,
    port: u16,
}

/// A state store running in this process for tests (opaque; thread-safe: calls from several
/// threads are served one after the other), made by `mqstate_local_store_start`. Stop it
/// with `mqstate_local_store_stop` (the handle stays valid), release it with
/// `mqstate_local_store_free`.
pub struct mqstate_local_store {
    guarded: guard::Guarded<Local>,
}

crate::handle!(mqstate_local_store, Local);

/// An I/O error of starting a store (no free port, no temporary directory …).
fn io_failure(what: &str, e: &std::io::Error) -> Error {
    Error::new(
        ErrorKind::Unsupported,
        format!("the local store could not {what}: {e}"),
    )
}

/// Blocks the calling thread on `work`, up to [`CALL_LIMIT`], on the library's runtime: the
/// work runs on this thread (the store's futures need not be `Send`), and the runtime is
/// driven by this thread or by the one already driving it. Refused on a runtime thread (a
/// mqstate callback), where it would deadlock.
fn block<T>(work: impl Future<Output = Result<T, Error>>) -> Result<T, Failure> {
    if on_runtime_thread() {
        return Err(Failure::new(
            mqstate_status::Unsupported,
            "a local store call blocks: it cannot be made from a mqstate callback",
        ));
    }
    match shared_runtime().block_on(async { tokio::time::timeout(CALL_LIMIT, work).await }) {
        Ok(result) => Ok(result?),
        Err(_) => Err(Failure::from(Error::new(
            ErrorKind::Timeout,
            format!("the local store call did not complete within {CALL_LIMIT:?}"),
        ))),
    }
}

/// Runs `op` on the store (after the calls made before it on other threads), blocking as
/// [`block`] does; then notes whether the store runs.
fn call<T, F, Fut>(local: &Local, op: F) -> Result<T, Failure>
where
    F: FnOnce(OwnedMutexGuard<Slot>) -> Fut,
    Fut: Future<Output = Result<T, Error>>,
{
    block(async {
        let result = op(Arc::clone(&local.slot).lock_owned().await).await;
        let running = local.slot.lock().await.store.is_running();
        local.running.store(running, Ordering::SeqCst);
        result
    })
}

/// The error of a call on a store that `mqstate_local_store_stop` stopped.
fn stopped() -> Error {
    Error::new(ErrorKind::Closed, "the local store is stopped")
}

/// Arms the timed fault `fault` of `store` for `duration_ms` (the store refuses less than
/// 1 ms: `invalid_argument`, its message naming the parameter as C spells it).
fn timed_fault(
    store: *const mqstate_local_store,
    duration_ms: u64,
    fault: fn(&LocalStore, Duration) -> Result<(), Error>,
) -> mqstate_status {
    boundary(|| {
        let local = enter(store)?;
        let duration = Duration::from_millis(duration_ms);
        call(&local, move |slot| async move {
            if slot.stopped {
                return Err(stopped());
            }
            fault(&slot.store, duration).map_err(|e| match e.kind() {
                ErrorKind::InvalidArgument => {
                    Error::invalid_argument(format!("duration_ms = {duration_ms}: {e}"))
                }
                _ => e,
            })
        })
    })
}

/// Enters a store handle (NULL is `invalid_argument`).
///
/// # Safety
/// `store` must be NULL or a live store.
fn enter<'a>(store: *const mqstate_local_store) -> Result<guard::Entered<'a, Local>, Failure> {
    guard::enter(store, "store")
}

/// Starts a state store in this process, on `127.0.0.1` at a free port, and returns once
/// it answers requests: `*out` is the store (NULL on failure). Connect clients to
/// `mqstate_local_store_url`. Each store is separate: several in one process share no
/// state and no port. Its tasks run on the library's runtime, the one clients use.
///
/// Errors: `MQSTATE_STATUS_INVALID_ARGUMENT` (`out` is NULL), `MQSTATE_STATUS_UNSUPPORTED`
/// (the store could not start here: no free port, no temporary directory; or the call was
/// made from a mqstate callback, where it must not block), `MQSTATE_STATUS_TIMEOUT`.
///
/// # Safety
/// `out` must be NULL or writable.
#[unsafe(no_mangle)]
pub extern "C" fn mqstate_local_store_start(out: *mut *mut mqstate_local_store) -> mqstate_status {
    boundary(|| {
        let out = out_arg(out, std::ptr::null_mut(), "out")?;
        let store = block(async {
            LocalStore::start()
                .await
                .map_err(|e| io_failure("start", &e))
        })?;
        let url = CString::new(store.url()).map_err(|_| Failure::invalid("the URL has a NUL"))?;
        *out = guard::new(Local {
            port: store.port(),
            url,
            running: AtomicBool::new(store.is_running()),
            slot: Arc::new(Mutex::new(Slot {
                store,
                stopped: false,
            })),
        });
        Ok(())
    })
}

/// Stops the store and waits until its connections, broker and tasks are gone, and removes
/// its data. The handle stays valid: `mqstate_local_store_url` and `_port` still answer,
/// `mqstate_local_store_is_running` is false, and every other call fails with
/// `MQSTATE_STATUS_CLOSED`; release it with `mqstate_local_store_free`. Stopping again, and
/// stopping NULL, do nothing and return `MQSTATE_STATUS_OK`.
///
/// Errors: `MQSTATE_STATUS_UNSUPPORTED` from a mqstate callback (where it must not block),
/// `MQSTATE_STATUS_TIMEOUT`.
///
/// # Safety
/// `store` must be NULL or a live store.
#[unsafe(no_mangle)]
pub extern "C" fn mqstate_local_store_stop(store: *const mqstate_local_store) -> mqstate_status {
    boundary(|| {
        if store.is_null() {
            return Ok(());
        }
        let local = enter(store)?;
        call(&local, |mut slot| async move {
            slot.stopped = true;
            slot.store.stop().await;
            Ok(())
        })
    })
}

/// Stops the store if it runs (as `mqstate_local_store_stop`, waiting) and frees the handle
/// (NULL is ignored). The one function that releases a store; calls in flight on other
/// threads end first, and no call may start on it afterwards. From a mqstate callback, where
/// it must not block, the store is told to stop without waiting.
///
/// # Safety
/// `store` must be NULL or a live store, freed once.
#[unsafe(no_mangle)]
pub extern "C" fn mqstate_local_store_free(store: *mut mqstate_local_store) {
    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        guard::close(store, |local| {
            let _ = call(local, |mut slot| async move {
                slot.stopped = true;
                slot.store.stop().await;
                Ok(())
            });
        });
    }));
}

/// Where clients connect: `mqtt://127.0.0.1:PORT` (the same after a restart and after a
/// stop), valid while the handle lives; NULL for NULL.
///
/// # Safety
/// `store` must be NULL or a live store.
#[unsafe(no_mangle)]
pub extern "C" fn mqstate_local_store_url(store: *const mqstate_local_store) -> *const c_char {
    maybe(store).map_or(std::ptr::null(), |s| {
        guard::Handle::guarded(s).inner.url.as_ptr()
    })
}

/// The store's TCP port (the same after a restart); 0 for NULL.
///
/// # Safety
/// `store` must be NULL or a live store.
#[unsafe(no_mangle)]
pub extern "C" fn mqstate_local_store_port(store: *const mqstate_local_store) -> u16 {
    maybe(store).map_or(0, |s| guard::Handle::guarded(s).inner.port)
}

/// Whether the store runs: false after `mqstate_local_store_stop`, after a restart that
/// failed, and for NULL. It does not wait for a call in flight on another thread (it
/// answers as of the last call that ended).
///
/// # Safety
/// `store` must be NULL or a live store.
#[unsafe(no_mangle)]
pub extern "C" fn mqstate_local_store_is_running(store: *const mqstate_local_store) -> bool {
    enter(store).is_ok_and(|local| local.running.load(Ordering::SeqCst))
}

/// Resets every client connection now, as a network failure does (no DISCONNECT; each
/// client's will published; MQTT sessions kept, so clients reconnect and resume by
/// themselves and their requests in flight complete), and returns once every connection has
/// closed. `*closed` (may be NULL) is how many it closed (0 on failure).
///
/// Errors: `MQSTATE_STATUS_CLOSED` (the store is stopped), `MQSTATE_STATUS_INVALID_ARGUMENT`
/// (`store` is NULL), `MQSTATE_STATUS_UNSUPPORTED` (from a mqstate callback),
/// `MQSTATE_STATUS_TIMEOUT`.
///
/// # Safety
/// `store` must be NULL or a live store; `closed` NULL or writable.
#[unsafe(no_mangle)]
pub extern "C" fn mqstate_local_store_cut_connections(
    store: *const mqstate_local_store,
    closed: *mut usize,
) -> mqstate_status {
    boundary(|| {
        put(closed, 0);
        let local = enter(store)?;
        let n = call(&local, |slot| async move {
            if slot.stopped {
                return Err(stopped());
            }
            slot.store.cut_connections().await
        })?;
        put(closed, n);
        Ok(())
    })
}

/// Stops answering requests for `duration_ms` milliseconds (the shape of a GC pause or a
/// slow network): requests received meanwhile wait and are answered in order when it ends;
/// connections stay up. A pause armed while one runs extends it if it ends later. Returns
/// at once, the pause in effect. `duration_ms` is required: 0 is
/// `MQSTATE_STATUS_INVALID_ARGUMENT` (a pause lasts at least 1 ms).
///
/// Errors: `MQSTATE_STATUS_CLOSED` (stopped), `MQSTATE_STATUS_INVALID_ARGUMENT`.
///
/// # Safety
/// `store` must be NULL or a live store.
#[unsafe(no_mangle)]
pub extern "C" fn mqstate_local_store_pause(
    store: *const mqstate_local_store,
    duration_ms: u64,
) -> mqstate_status {
    timed_fault(store, duration_ms, LocalStore::pause)
}

/// What `kill -9` and a restart do, on the same port: every connection is reset and every
/// MQTT session lost (clients reconnect by themselves, with new sessions; their requests in
/// flight fail with `MQSTATE_STATUS_CONNECTION_LOST`). With `keep_data`, the keys SET with
/// `persist` survive, with their versions; nothing else does (without it, nothing does).
/// Returns once the store answers again.
///
/// Errors: `MQSTATE_STATUS_CLOSED` (stopped), `MQSTATE_STATUS_UNSUPPORTED` (the store could
/// not come back on its port; it is then not running), `MQSTATE_STATUS_TIMEOUT`.
///
/// # Safety
/// `store` must be NULL or a live store.
#[unsafe(no_mangle)]
pub extern "C" fn mqstate_local_store_restart(
    store: *const mqstate_local_store,
    keep_data: bool,
) -> mqstate_status {
    boundary(|| {
        let local = enter(store)?;
        call(&local, move |mut slot| async move {
            if slot.stopped {
                return Err(stopped());
            }
            slot.store
                .restart(keep_data)
                .await
                .map_err(|e| io_failure("restart", &e))
        })
    })
}

/// Answers the next `n` requests — only those of `command` (`"SET"`, `"GET"`, `"DEL"`,
/// `"VDEL"`, `"KEYNOTIFY"`, `"SCAN"`, any case) unless it is NULL — with the state store
/// error whose code is `error` (its name in the error table, as `mqstate_status_name` gives
/// it: e.g. `"fencing_token_lower_version"`), exactly as the service sends it; the store is
/// left untouched. A client then gets that error's status (here
/// `MQSTATE_STATUS_FENCING_TOKEN_LOWER_VERSION`). Replaces what an earlier call armed;
/// `n` 0 disarms.
///
/// Errors: `MQSTATE_STATUS_INVALID_ARGUMENT` (`error` NULL or not the code of a state store
/// error — connection, timeout and client-side errors are not answers the service sends: use
/// `mqstate_local_store_cut_connections` or `_pause` for those —, `command` not a command,
/// text not UTF-8), `MQSTATE_STATUS_CLOSED` (stopped).
///
/// # Safety
/// `store` must be NULL or a live store; `error` and `command` NULL or NUL-terminated.
#[unsafe(no_mangle)]
pub extern "C" fn mqstate_local_store_fail_next(
    store: *const mqstate_local_store,
    n: usize,
    error: *const c_char,
    command: *const c_char,
) -> mqstate_status {
    boundary(|| {
        let local = enter(store)?;
        let error = str_arg(error, "error")?.to_owned();
        let command = if command.is_null() {
            None
        } else {
            Some(str_arg(command, "command")?.to_owned())
        };
        call(&local, move |slot| async move {
            if slot.stopped {
                return Err(stopped());
            }
            slot.store.fail_next(n, &error, command.as_deref())
        })
    })
}

/// The keys the store holds that match the glob `pattern` (`pattern_len` bytes, the syntax
/// of `mqstate_client_scan`: `*`, `?`, `[…]`, `\` escapes), in byte order, read inside the
/// store (no client, no request). An empty pattern (NULL with length 0) is the default,
/// `*`: every key. `*out` is a page of keys, the caller's (read it with
/// `mqstate_scan_page_count` and `mqstate_scan_page_key`, free it with
/// `mqstate_scan_page_free`); NULL on failure.
///
/// Errors: `MQSTATE_STATUS_CLOSED` (stopped), `MQSTATE_STATUS_INVALID_ARGUMENT`.
///
/// # Safety
/// `store` must be NULL or a live store; `pattern` valid for `pattern_len` bytes (or NULL
/// with 0); `out` NULL or writable.
#[unsafe(no_mangle)]
pub extern "C" fn mqstate_local_store_keys(
    store: *const mqstate_local_store,
    pattern: *const u8,
    pattern_len: usize,
    out: *mut *mut mqstate_scan_page,
) -> mqstate_status {
    boundary(|| {
        let out = out_arg(out, std::ptr::null_mut(), "out")?;
        let local = enter(store)?;
        let pattern = match bytes_arg(pattern, pattern_len, "pattern")? {
            [] => Bytes::from_static(b"*"),
            p => Bytes::copy_from_slice(p),
        };
        let keys = call(&local, move |slot| async move {
            if slot.stopped {
                return Err(stopped());
            }
            slot.store.keys(&pattern)
        })?;
        *out = new_page(keys);
        Ok(())
    })
}

/// `key`'s value and version, read inside the store (no client, no request): `*out` is the
/// value (its bytes `mqstate_value_data`, its version `mqstate_value_version`, the version a
/// client's GET returns; free it with `mqstate_value_free`), or NULL when the key does not
/// exist (that is `MQSTATE_STATUS_OK`).
///
/// Errors: `MQSTATE_STATUS_CLOSED` (stopped), `MQSTATE_STATUS_INVALID_ARGUMENT`.
///
/// # Safety
/// `store` must be NULL or a live store; `key` valid for `key_len` bytes; `out` NULL or
/// writable.
#[unsafe(no_mangle)]
pub extern "C" fn mqstate_local_store_get(
    store: *const mqstate_local_store,
    key: *const u8,
    key_len: usize,
    out: *mut *mut mqstate_value,
) -> mqstate_status {
    boundary(|| {
        let out = out_arg(out, std::ptr::null_mut(), "out")?;
        let local = enter(store)?;
        let key = Bytes::copy_from_slice(bytes_arg(key, key_len, "key")?);
        let got = call(&local, move |slot| async move {
            if slot.stopped {
                return Err(stopped());
            }
            slot.store.get(&key)
        })?;
        if let Some(stored) = got {
            *out = new_value(Versioned {
                value: stored.value,
                version: Some(stored.version),
            });
        }
        Ok(())
    })
}

/// Deletes every key, persisted ones included (observers get a delete notification for
/// each, as for a DEL). `*deleted` (may be NULL) is how many it deleted (0 on failure).
///
/// Errors: `MQSTATE_STATUS_CLOSED` (stopped), `MQSTATE_STATUS_INVALID_ARGUMENT`.
///
/// # Safety
/// `store` must be NULL or a live store; `deleted` NULL or writable.
#[unsafe(no_mangle)]
pub extern "C" fn mqstate_local_store_clear(
    store: *const mqstate_local_store,
    deleted: *mut usize,
) -> mqstate_status {
    count_into(store, deleted, LocalStore::clear)
}

/// How many requests a `mqstate_local_store_pause` holds now (`*held`; 0 on failure): they
/// reached the store and wait for the pause to end. A test that pauses, sends a request, then
/// cuts the connections or restarts waits until its request is counted here; otherwise the
/// cut can come first, and the request is sent after the reconnection (and answered).
///
/// Errors: `MQSTATE_STATUS_CLOSED` (stopped), `MQSTATE_STATUS_INVALID_ARGUMENT`.
///
/// # Safety
/// `store` must be NULL or a live store; `held` NULL or writable.
#[unsafe(no_mangle)]
pub extern "C" fn mqstate_local_store_held_requests(
    store: *const mqstate_local_store,
    held: *mut usize,
) -> mqstate_status {
    count_into(store, held, LocalStore::held_requests)
}

/// Drops every notification the store sends for `duration_ms` milliseconds, unsent (the
/// shape of a notification path gone silent: a dead link the keep-alive has not noticed, a
/// hung broker, a broker whose queue for the client is full). Requests are answered as
/// usual. A mute armed while one runs extends it if it ends later. Returns at once, in
/// effect. `duration_ms` is required: 0 is `MQSTATE_STATUS_INVALID_ARGUMENT` (at least 1 ms).
///
/// Errors: `MQSTATE_STATUS_CLOSED` (stopped), `MQSTATE_STATUS_INVALID_ARGUMENT`.
///
/// # Safety
/// `store` must be NULL or a live store.
#[unsafe(no_mangle)]
pub extern "C" fn mqstate_local_store_drop_notifications(
    store: *const mqstate_local_store,
    duration_ms: u64,
) -> mqstate_status {
    timed_fault(store, duration_ms, LocalStore::drop_notifications)
}

/// How many notifications `mqstate_local_store_drop_notifications` has dropped so far, this
/// run of the store (`*dropped`; 0 on failure).
///
/// Errors: `MQSTATE_STATUS_CLOSED` (stopped), `MQSTATE_STATUS_INVALID_ARGUMENT`.
///
/// # Safety
/// `store` must be NULL or a live store; `dropped` NULL or writable.
#[unsafe(no_mangle)]
pub extern "C" fn mqstate_local_store_dropped_notifications(
    store: *const mqstate_local_store,
    dropped: *mut usize,
) -> mqstate_status {
    count_into(store, dropped, LocalStore::dropped_notifications)
}

/// Forgets every client's KEYNOTIFY registrations while their connections and sessions stay
/// up — what a store restarted behind its broker leaves its clients with: no notification
/// of any key they observed, and nothing on the connection to say so. `*forgotten` (may be
/// NULL) is how many there were (0 on failure).
///
/// Errors: `MQSTATE_STATUS_CLOSED` (stopped), `MQSTATE_STATUS_INVALID_ARGUMENT`.
///
/// # Safety
/// `store` must be NULL or a live store; `forgotten` NULL or writable.
#[unsafe(no_mangle)]
pub extern "C" fn mqstate_local_store_forget_registrations(
    store: *const mqstate_local_store,
    forgotten: *mut usize,
) -> mqstate_status {
    count_into(store, forgotten, LocalStore::forget_registrations)
}

/// Writes the count `read` gives of the running store to `*out` (0 first, so a failure leaves
/// 0): the body of `mqstate_local_store_clear`, `mqstate_local_store_held_requests`,
/// `mqstate_local_store_dropped_notifications` and `mqstate_local_store_forget_registrations`.
///
/// # Safety
/// `store` must be NULL or a live store; `out` NULL or writable.
fn count_into(
    store: *const mqstate_local_store,
    out: *mut usize,
    read: fn(&LocalStore) -> Result<usize, Error>,
) -> mqstate_status {
    boundary(|| {
        put(out, 0);
        let local = enter(store)?;
        let n = call(&local, |slot| async move {
            if slot.stopped {
                return Err(stopped());
            }
            read(&slot.store)
        })?;
        put(out, n);
        Ok(())
    })
}
