//! `mqstate_client`: connect, set, get, delete, vdel, observe, close. Every call blocks the
//! calling thread (never a library thread: calling from inside a callback is refused with
//! `MQSTATE_STATUS_UNSUPPORTED`) with a timeout in milliseconds (0: the client's
//! `request_timeout`, see [`timeout`](super::timeout)), on the runtime the library owns, and
//! can be cancelled from another thread through a `mqstate_cancel` token.

use std::ffi::c_char;

use bytes::Bytes;
use mqstate::bridge::ClientHandle;
use mqstate::{DelOptions, GetOptions, Hlc, ObserveOptions, SetOptions, VdelOutcome};

use mqstate::telemetry::{CallTrace, TraceContext};

use super::cache::mqstate_cache_stats;
use super::cancel::{mqstate_cancel, run};
use super::guard;
use super::observer::trace_arg;
use super::settings::mqstate_settings;
use super::subscription::{mqstate_subscription, new_subscription};
use super::text::{mqstate_value, new_value, put_string, reset_string};
use super::timeout;
use crate::condition::condition_arg;
use crate::ffi::{bytes_arg, maybe, out_arg, put};
use crate::status::{Failure, boundary, mqstate_status};

/// A connection to the state store (opaque; thread-safe: any number of threads may call
/// it at once). Close it with `mqstate_client_close`.
pub struct mqstate_client {
    guarded: guard::Guarded<guard::Named<ClientHandle>>,
}

crate::handle!(mqstate_client, guard::Named<ClientHandle>);

/// Options of `mqstate_client_set` (zero-initialise, then set what you need).
#[repr(C)]
pub struct mqstate_set_options {
    /// A `mqstate_set_condition`: `MQSTATE_SET_CONDITION_ALWAYS` (0), `_NX`, `_NEX`.
    pub condition: u32,
    /// Expire the key this many milliseconds after the SET (0: never, the default).
    pub expiry_ms: u64,
    /// Write fenced with this token (HLC text), or NULL.
    pub fencing_token: *const c_char,
    /// Ask the service to persist the value.
    pub persist: bool,
    /// The request's timeout in milliseconds (0: the client's `request_timeout`;
    /// `MQSTATE_WAIT_FOREVER` is refused).
    pub timeout_ms: u32,
    /// Cancels the call when triggered from another thread, or NULL.
    pub cancel: *const mqstate_cancel,
    /// The W3C `traceparent` of the caller's span (`00-<trace id>-<span id>-<flags>`), or
    /// NULL: the request carries it (and `tracestate`) as MQTT5 user properties, so a store
    /// that records them links its side into the caller's trace, and the call observer's
    /// record repeats it. A value that is not W3C's is `MQSTATE_STATUS_INVALID_ARGUMENT`.
    pub traceparent: *const c_char,
    /// The W3C `tracestate` to carry with `traceparent`, or NULL.
    pub tracestate: *const c_char,
}

/// Options of GET, DELETE, VDEL and observe (zero-initialise, then set what you need).
#[repr(C)]
pub struct mqstate_call_options {
    /// DELETE / VDEL fenced with this token (HLC text), or NULL. GET and observe only read:
    /// they refuse a token (`MQSTATE_STATUS_INVALID_ARGUMENT`) rather than ignore it.
    pub fencing_token: *const c_char,
    /// The request's timeout in milliseconds (0: the client's `request_timeout`;
    /// `MQSTATE_WAIT_FOREVER` is refused).
    pub timeout_ms: u32,
    /// Cancels the call when triggered from another thread, or NULL.
    pub cancel: *const mqstate_cancel,
    /// GET only: read from the store even when the client-side cache could answer (what the
    /// store answers still updates the cache); false, the default, reads through the cache
    /// when it is on. DELETE, VDEL and observe refuse it (`MQSTATE_STATUS_INVALID_ARGUMENT`)
    /// rather than ignore it.
    pub bypass_cache: bool,
    /// The W3C `traceparent` of the caller's span, or NULL (see `mqstate_set_options`).
    pub traceparent: *const c_char,
    /// The W3C `tracestate` to carry with `traceparent`, or NULL.
    pub tracestate: *const c_char,
}

/// The outcome of `mqstate_client_vdel`; `MQSTATE_VDEL_OUTCOME_NONE` (0) is what a failed
/// call leaves in its out-parameter. `mqstate_vdel_outcome_name` gives each its name.
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum mqstate_vdel_outcome {
    /// No outcome: the call failed (nothing is known about the key).
    None = 0,
    /// `deleted`: the key held the value and was deleted.
    Deleted = 1,
    /// `not_found`: there was no such key.
    NotFound = 2,
    /// `value_mismatch`: the key holds another value; nothing was deleted.
    ValueMismatch = 3,
}

impl mqstate_vdel_outcome {
    /// Every outcome but `None`, with the core's outcome it stands for.
    const OUTCOMES: [(mqstate_vdel_outcome, VdelOutcome); 3] = [
        (mqstate_vdel_outcome::Deleted, VdelOutcome::Deleted),
        (mqstate_vdel_outcome::NotFound, VdelOutcome::NotFound),
        (
            mqstate_vdel_outcome::ValueMismatch,
            VdelOutcome::ValueMismatch,
        ),
    ];

    fn of(outcome: VdelOutcome) -> mqstate_vdel_outcome {
        Self::OUTCOMES
            .into_iter()
            .find(|(_, core)| *core == outcome)
            .map_or(mqstate_vdel_outcome::None, |(c, _)| c)
    }
}

/// The name of a VDEL outcome, the same in every language (the core's `VdelOutcome::name`):
/// `"deleted"`, `"not_found"`, `"value_mismatch"`; `"none"` for `MQSTATE_VDEL_OUTCOME_NONE`
/// and any other number. A static NUL-terminated string; never NULL, not to be freed.
#[unsafe(no_mangle)]
pub extern "C" fn mqstate_vdel_outcome_name(outcome: u32) -> *const c_char {
    static NAMES: std::sync::OnceLock<Vec<(u32, std::ffi::CString)>> = std::sync::OnceLock::new();
    let names = NAMES.get_or_init(|| {
        mqstate_vdel_outcome::OUTCOMES
            .into_iter()
            .filter_map(|(c, core)| Some((c as u32, std::ffi::CString::new(core.name()).ok()?)))
            .collect()
    });
    names
        .iter()
        .find(|(n, _)| *n == outcome)
        .map_or(c"none".as_ptr(), |(_, name)| name.as_ptr())
}

/// The fencing token of an options struct.
///
/// # Safety
/// `token` must be NULL or a NUL-terminated string.
pub(crate) fn token_arg(token: *const c_char) -> Result<Option<Hlc>, Failure> {
    if token.is_null() {
        return Ok(None);
    }
    let text = crate::ffi::str_arg(token, "fencing_token")?;
    Ok(Some(Hlc::parse(text)?))
}

/// A call's C options, read once into Rust values (NULL options: every default).
struct CallOptions {
    fencing_token: Option<Hlc>,
    timeout: Option<std::time::Duration>,
    cancel: *const mqstate_cancel,
    bypass_cache: bool,
    trace: Option<TraceContext>,
}

/// Which call reads a `mqstate_call_options`: what it refuses follows.
#[derive(Clone, Copy)]
enum CallKind {
    /// GET: a read through the cache (refuses a token).
    Get,
    /// observe: a read, not through the cache (refuses a token and `bypass_cache`).
    Observe,
    /// DELETE, VDEL: writes (refuse `bypass_cache`).
    Write(&'static str),
}

impl CallOptions {
    /// Reads `options` (NULL: the defaults), refusing what `call` does not take: a token
    /// for a read, `bypass_cache` for anything but GET.
    ///
    /// # Safety
    /// `options` must be NULL or valid, its strings NULL or NUL-terminated.
    fn read(options: *const mqstate_call_options, call: CallKind) -> Result<CallOptions, Failure> {
        let o = maybe(options);
        let token = o.map_or(std::ptr::null(), |o| o.fencing_token);
        let bypass_cache = o.is_some_and(|o| o.bypass_cache);
        let (verb, reads, cached) = match call {
            CallKind::Get => ("GET", true, true),
            CallKind::Observe => ("observe", true, false),
            CallKind::Write(verb) => (verb, false, false),
        };
        if reads && !token.is_null() {
            return Err(Failure::invalid(format!(
                "{verb} only reads: it takes no fencing_token"
            )));
        }
        if bypass_cache && !cached {
            return Err(Failure::invalid(format!(
                "{verb} takes no bypass_cache: only GET reads through the client-side cache"
            )));
        }
        Ok(CallOptions {
            fencing_token: token_arg(token)?,
            timeout: timeout::request(o.map_or(0, |o| o.timeout_ms))?,
            cancel: o.map_or(std::ptr::null(), |o| o.cancel),
            bypass_cache,
            trace: match o {
                Some(o) => trace_arg(o.traceparent, o.tracestate)?,
                None => None,
            },
        })
    }

    fn del(&self) -> DelOptions {
        DelOptions {
            fencing_token: self.fencing_token.clone(),
            timeout: self.timeout,
        }
    }
}

impl mqstate_set_options {
    /// Reads `options` once (NULL: the defaults): the SET's options and its cancel token.
    ///
    /// # Safety
    /// `options` must be NULL or valid, its strings NULL or NUL-terminated.
    #[allow(clippy::type_complexity)]
    fn read(
        options: *const Self,
    ) -> Result<(SetOptions, *const mqstate_cancel, Option<TraceContext>), Failure> {
        let o = maybe(options);
        let set = SetOptions {
            condition: condition_arg(o.map_or(0, |o| o.condition))?,
            expiry: timeout::option(o.map_or(0, |o| o.expiry_ms)),
            fencing_token: token_arg(o.map_or(std::ptr::null(), |o| o.fencing_token))?,
            persist: o.is_some_and(|o| o.persist),
            timeout: timeout::request(o.map_or(0, |o| o.timeout_ms))?,
        };
        let trace = match o {
            Some(o) => trace_arg(o.traceparent, o.tracestate)?,
            None => None,
        };
        Ok((set, o.map_or(std::ptr::null(), |o| o.cancel), trace))
    }
}

/// Connects with `settings` (which stay the caller's), waiting up to `timeout_ms` (0: the
/// settings' `connect_timeout`; `MQSTATE_WAIT_FOREVER` is refused). On success `*out` is the
/// client; on failure NULL.
///
/// Errors: `MQSTATE_STATUS_CONNECT_REFUSED` / `_CONNECT_TIMEOUT` (retry later),
/// `_CONNECT_UNAUTHORIZED` / `_TLS` (fix the settings), `_CONNECT_FAILED`, `_INVALID_ARGUMENT`.
///
/// # Safety
/// `settings` must be a live handle; `out` NULL or writable.
#[unsafe(no_mangle)]
pub extern "C" fn mqstate_client_connect(
    settings: *const mqstate_settings,
    timeout_ms: u32,
    out: *mut *mut mqstate_client,
) -> mqstate_status {
    boundary(|| {
        let out = out_arg(out, std::ptr::null_mut(), "out")?;
        let settings = guard::enter(settings, "settings")?;
        let mut settings = settings.lock().unwrap_or_else(|e| e.into_inner()).clone();
        if let Some(limit) = timeout::request(timeout_ms)? {
            // The core's own connect timeout, so that running out is `connect_timeout`.
            settings.set("connect_timeout", &format!("{}ms", limit.as_millis()))?;
        }
        let store = run(std::ptr::null(), || ClientHandle::connect(settings))?;
        let id = store.client_id().to_owned();
        *out = guard::new(guard::Named::new(store, &id)?);
        Ok(())
    })
}

/// Closes the connection and frees the client (NULL is ignored). Calls in flight on other
/// threads end with `MQSTATE_STATUS_CLOSED` and this waits for them to return; locks,
/// elections and subscriptions made from the client stay valid handles (their calls then
/// fail with `MQSTATE_STATUS_CLOSED`) until freed. Never call it from a mqstate callback.
///
/// # Safety
/// `client` must be NULL or a live client, closed once; no call may start on it afterwards.
#[unsafe(no_mangle)]
pub extern "C" fn mqstate_client_close(client: *mut mqstate_client) {
    guard::close(client, |store| {
        let _ = store.close().wait(None);
    })
}

/// The client's MQTT client id (the `client_id` setting, or the one generated at connect),
/// valid while the client lives; NULL for a NULL client.
///
/// # Safety
/// `client` must be NULL or a live client.
#[unsafe(no_mangle)]
pub extern "C" fn mqstate_client_id(client: *const mqstate_client) -> *const c_char {
    guard::id_of(client)
}

/// Whether the client's connection is up now (false while it reconnects, once closed, and
/// for NULL).
///
/// # Safety
/// `client` must be NULL or a live client.
#[unsafe(no_mangle)]
pub extern "C" fn mqstate_client_connected(client: *const mqstate_client) -> bool {
    enter_client(client).is_ok_and(|store| store.link_info().connected)
}

/// SET `key` (`key_len` bytes) to `value` (`value_len` bytes). `*applied` (may be NULL)
/// is false when the NX/NEX condition failed; `*version` (may be NULL) receives the new
/// version (free with `mqstate_string_free`; NULL when not applied). `options` may be NULL.
///
/// # Safety
/// Pointers must be NULL or valid for their lengths; `client` a live client.
#[unsafe(no_mangle)]
pub extern "C" fn mqstate_client_set(
    client: *const mqstate_client,
    key: *const u8,
    key_len: usize,
    value: *const u8,
    value_len: usize,
    options: *const mqstate_set_options,
    applied: *mut bool,
    version: *mut *mut c_char,
) -> mqstate_status {
    boundary(|| {
        reset_string(version);
        put(applied, false);
        let store = guard::enter(client, "client")?;
        let (key, value) = (
            bytes_arg(key, key_len, "key")?,
            bytes_arg(value, value_len, "value")?,
        );
        let (set, cancel, trace) = mqstate_set_options::read(options)?;
        let store = traced(&store, trace);
        let (key, value) = (Bytes::copy_from_slice(key), Bytes::copy_from_slice(value));
        let outcome = run(cancel, || store.set(key, value, set))?;
        put(applied, outcome.applied);
        put_string(version, outcome.version.map(|v| v.to_text()).as_deref())
    })
}

/// GET `key`: `*out` is the value (free with `mqstate_value_free`), or NULL when the key
/// does not exist (that is `MQSTATE_STATUS_OK`). `options` may be NULL. With the client-side
/// cache on (the `cache` setting), a key it holds fresh is answered from memory, without a
/// request; `options->bypass_cache` reads from the store anyway.
///
/// # Safety
/// Pointers must be NULL or valid; `client` a live client; `out` writable.
#[unsafe(no_mangle)]
pub extern "C" fn mqstate_client_get(
    client: *const mqstate_client,
    key: *const u8,
    key_len: usize,
    options: *const mqstate_call_options,
    out: *mut *mut mqstate_value,
) -> mqstate_status {
    boundary(|| {
        let out = out_arg(out, std::ptr::null_mut(), "out")?;
        let store = guard::enter(client, "client")?;
        let key = bytes_arg(key, key_len, "key")?;
        let o = CallOptions::read(options, CallKind::Get)?;
        let store = traced(&store, o.trace.clone());
        let get = GetOptions {
            timeout: o.timeout,
            bypass_cache: o.bypass_cache,
        };
        if let Some(v) = run(o.cancel, || store.get(Bytes::copy_from_slice(key), get))? {
            *out = new_value(v);
        }
        Ok(())
    })
}

/// The client-side cache's counters now. `*enabled` says whether the client has a cache (the
/// `cache` setting turns it on, and so does any other `cache_…` setting): when it is false,
/// the cache is off and `*stats` is all zeros — not a failure, `MQSTATE_STATUS_OK`. Both
/// out-parameters are required (NULL is `MQSTATE_STATUS_INVALID_ARGUMENT`). Never blocks:
/// nothing is sent.
///
/// # Safety
/// `client` must be NULL or a live client; `enabled` and `stats` writable.
#[unsafe(no_mangle)]
pub extern "C" fn mqstate_client_cache_stats(
    client: *const mqstate_client,
    enabled: *mut bool,
    stats: *mut mqstate_cache_stats,
) -> mqstate_status {
    boundary(|| {
        // Both reset before either can fail.
        put(enabled, false);
        put(stats, mqstate_cache_stats::default());
        let enabled = out_arg(enabled, false, "enabled")?;
        let stats = out_arg(stats, mqstate_cache_stats::default(), "stats")?;
        let store = guard::enter(client, "client")?;
        if let Some(now) = store.cache_stats() {
            *stats = mqstate_cache_stats::from(now);
            *enabled = true;
        }
        Ok(())
    })
}

/// DELETE `key`: `*deleted` (may be NULL) is the number of keys deleted (0 or 1).
///
/// # Safety
/// Pointers must be NULL or valid; `client` a live client.
#[unsafe(no_mangle)]
pub extern "C" fn mqstate_client_delete(
    client: *const mqstate_client,
    key: *const u8,
    key_len: usize,
    options: *const mqstate_call_options,
    deleted: *mut u64,
) -> mqstate_status {
    boundary(|| {
        put(deleted, 0);
        let store = guard::enter(client, "client")?;
        let key = bytes_arg(key, key_len, "key")?;
        let o = CallOptions::read(options, CallKind::Write("DELETE"))?;
        let store = traced(&store, o.trace.clone());
        let n = run(o.cancel, || store.del(Bytes::copy_from_slice(key), o.del()))?;
        put(deleted, n);
        Ok(())
    })
}

/// VDEL: delete `key` only if it holds `value`; `*outcome` (may be NULL) says what happened
/// (`MQSTATE_VDEL_OUTCOME_NONE` on failure).
///
/// # Safety
/// Pointers must be NULL or valid; `client` a live client.
#[unsafe(no_mangle)]
pub extern "C" fn mqstate_client_vdel(
    client: *const mqstate_client,
    key: *const u8,
    key_len: usize,
    value: *const u8,
    value_len: usize,
    options: *const mqstate_call_options,
    outcome: *mut mqstate_vdel_outcome,
) -> mqstate_status {
    boundary(|| {
        put(outcome, mqstate_vdel_outcome::None);
        let store = guard::enter(client, "client")?;
        let (key, value) = (
            bytes_arg(key, key_len, "key")?,
            bytes_arg(value, value_len, "value")?,
        );
        let o = CallOptions::read(options, CallKind::Write("VDEL"))?;
        let store = traced(&store, o.trace.clone());
        let (key, value) = (Bytes::copy_from_slice(key), Bytes::copy_from_slice(value));
        let got = run(o.cancel, || store.vdel(key, value, o.del()))?;
        put(outcome, mqstate_vdel_outcome::of(got));
        Ok(())
    })
}

/// Observes `key`: `*out` is a subscription of its changes, registered (SUBACK, KEYNOTIFY,
/// GET) when this returns. Free it with `mqstate_subscription_free` (which sends STOP).
///
/// # Safety
/// Pointers must be NULL or valid; `client` a live client; `out` writable.
#[unsafe(no_mangle)]
pub extern "C" fn mqstate_client_observe(
    client: *const mqstate_client,
    key: *const u8,
    key_len: usize,
    options: *const mqstate_call_options,
    out: *mut *mut mqstate_subscription,
) -> mqstate_status {
    boundary(|| {
        let out = out_arg(out, std::ptr::null_mut(), "out")?;
        let store = guard::enter(client, "client")?;
        let key = bytes_arg(key, key_len, "key")?;
        let o = CallOptions::read(options, CallKind::Observe)?;
        let store = traced(&store, o.trace.clone());
        let observe = ObserveOptions { timeout: o.timeout };
        let sub = run(o.cancel, || {
            store.observe(Bytes::copy_from_slice(key), observe)
        })?;
        *out = new_subscription(sub);
        Ok(())
    })
}

/// The handle a call is made with: `store` itself, or, when the call's options carry a
/// trace context, a clone whose requests carry it (the core's `ClientHandle::traced`).
fn traced(store: &ClientHandle, trace: Option<TraceContext>) -> std::borrow::Cow<'_, ClientHandle> {
    match trace {
        None => std::borrow::Cow::Borrowed(store),
        Some(context) => std::borrow::Cow::Owned(store.traced(CallTrace::new(Some(context)))),
    }
}

/// Used by lock and election functions: enters a client handle.
///
/// # Safety
/// `client` must be NULL or a live client.
pub(crate) fn enter_client<'a>(
    client: *const mqstate_client,
) -> Result<guard::Entered<'a, guard::Named<ClientHandle>>, Failure> {
    guard::enter(client, "client")
}
