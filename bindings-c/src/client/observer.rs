//! `mqstate_client_set_call_observer`: a callback told of every completed call, the way a C
//! library exposes telemetry without linking an SDK. The core measures each call once (its
//! `telemetry::CallRecord`: operation, duration, error, cache hit, trace context); this
//! module only converts the record to C.

use std::ffi::{CString, c_char, c_void};
use std::sync::{Arc, OnceLock};

use mqstate::ErrorKind;
use mqstate::telemetry::{CallObserver, CallRecord, TraceContext};

use super::guard;
use super::subscription::mqstate_release_fn;
use crate::status::{Failure, boundary, mqstate_status};

/// One completed call, as the call observer sees it. Every pointer is valid only during the
/// callback (copy what you keep); the strings are NUL-terminated.
#[repr(C)]
pub struct mqstate_call_record {
    /// The request's verb as the wire spells it: `"SET"`, `"GET"`, `"DEL"`, `"VDEL"` (the
    /// OpenTelemetry span name and `db.operation.name` of the other languages).
    pub operation: *const c_char,
    /// From the call's start to its end, in nanoseconds (a cache hit's included).
    pub duration_ns: u64,
    /// How it ended: `MQSTATE_STATUS_OK`, or the status the call returned.
    pub status: mqstate_status,
    /// The error's code (`"timeout"`, `"no_store"`, … the same in every language, OpenTelemetry's
    /// `error.type`), or NULL when the call succeeded.
    pub error_code: *const c_char,
    /// Whether the client-side cache answered (no request was sent).
    pub cache_hit: bool,
    /// The W3C `traceparent` the call carried (its options' `traceparent`), or NULL.
    pub traceparent: *const c_char,
    /// The `tracestate` the call carried, or NULL.
    pub tracestate: *const c_char,
}

/// A call observer: `ctx` is what was given to `mqstate_client_set_call_observer`.
pub type mqstate_call_observer_fn =
    Option<unsafe extern "C" fn(ctx: *mut c_void, record: *const mqstate_call_record)>;

/// The C callback with its context, released once when the last call that may use it ends.
struct Observer {
    on_call: mqstate_call_observer_fn,
    release: mqstate_release_fn,
    ctx: *mut c_void,
}

// SAFETY: the C caller promises that its callbacks and `ctx` may be used from any thread
// (documented on `mqstate_client_set_call_observer`).
unsafe impl Send for Observer {}
// SAFETY: as above; the callback may be called from several threads at once, as documented.
unsafe impl Sync for Observer {}

impl Drop for Observer {
    fn drop(&mut self) {
        if let Some(release) = self.release {
            // SAFETY: the caller's release hook with its context, called once.
            unsafe { release(self.ctx) }
        }
    }
}

impl Observer {
    fn tell(&self, record: &CallRecord<'_>) {
        let trace = record.trace.map(c_trace);
        let (traceparent, tracestate) = match &trace {
            Some((tp, ts)) => (
                tp.as_ptr(),
                ts.as_ref().map_or(std::ptr::null(), |s| s.as_ptr()),
            ),
            None => (std::ptr::null(), std::ptr::null()),
        };
        let r = mqstate_call_record {
            operation: operation(record.operation),
            duration_ns: u64::try_from(record.duration.as_nanos()).unwrap_or(u64::MAX),
            status: record
                .error
                .map_or(mqstate_status::Ok, |e| mqstate_status::of_kind(e.kind())),
            error_code: record
                .error
                .map_or(std::ptr::null(), |e| error_code(e.kind())),
            cache_hit: record.cache_hit,
            traceparent,
            tracestate,
        };
        if let Some(on_call) = self.on_call {
            // SAFETY: the caller's callback with its context, per its contract.
            unsafe { on_call(self.ctx, &r) }
        }
    }
}

/// A trace context's values as C text (checked ASCII: never a NUL).
fn c_trace(t: &TraceContext) -> (CString, Option<CString>) {
    (
        CString::new(t.traceparent()).unwrap_or_default(),
        t.tracestate().and_then(|s| CString::new(s).ok()),
    )
}

/// The operation's name as static C text.
fn operation(name: &'static str) -> *const c_char {
    match name {
        "SET" => c"SET".as_ptr(),
        "GET" => c"GET".as_ptr(),
        "DEL" => c"DEL".as_ptr(),
        "VDEL" => c"VDEL".as_ptr(),
        _ => c"OTHER".as_ptr(),
    }
}

/// The error code of `kind` as static C text (from the core's error table, made once).
fn error_code(kind: ErrorKind) -> *const c_char {
    static CODES: OnceLock<Vec<(ErrorKind, CString)>> = OnceLock::new();
    CODES
        .get_or_init(|| {
            mqstate::ERROR_TABLE
                .iter()
                .filter_map(|row| Some((row.kind, CString::new(row.code).ok()?)))
                .collect()
        })
        .iter()
        .find(|(k, _)| *k == kind)
        .map_or(c"internal".as_ptr(), |(_, code)| code.as_ptr())
}

/// Tells `on_call(ctx, record)` of every SET, GET, DELETE and VDEL of `client` once it has
/// ended (a cache hit included), with the operation, its duration in nanoseconds, its status
/// and error code, whether the cache answered, and the `traceparent`/`tracestate` the call
/// carried (`mqstate_call_options.traceparent`, `mqstate_set_options.traceparent`). The
/// record is told before the call returns (a cancelled call's, with `MQSTATE_STATUS_CANCELLED`,
/// as its work is withdrawn: possibly just after), on the thread that completed it: a library
/// thread (where blocking mqstate functions return `MQSTATE_STATUS_UNSUPPORTED`), or the
/// caller's for a cache hit; several at once when calls run on several threads. Keep it
/// short: a counter, a histogram, a log line.
///
/// A second call replaces the observer; `on_call` NULL removes it. `release(ctx)` (may be
/// NULL) is called once when the observer is no longer used: after the last call that began
/// with it has ended, once it is replaced or the client is closed.
///
/// # Safety
/// `client` must be a live client; `on_call` NULL or a valid function; `ctx` whatever the
/// callbacks accept, usable from any thread.
#[unsafe(no_mangle)]
pub extern "C" fn mqstate_client_set_call_observer(
    client: *const super::handle::mqstate_client,
    on_call: mqstate_call_observer_fn,
    release: mqstate_release_fn,
    ctx: *mut c_void,
) -> mqstate_status {
    boundary(|| {
        let store = guard::enter(client, "client")?;
        let o = Observer {
            on_call,
            release,
            ctx,
        };
        // No callback: nothing keeps the context, released at once (by the drop).
        let observer = o
            .on_call
            .is_some()
            .then(|| Arc::new(move |r: &CallRecord<'_>| o.tell(r)) as CallObserver);
        store.call_observers().set(observer);
        Ok(())
    })
}

/// The trace context of a call's options: `traceparent` (NULL: none) and `tracestate`
/// (NULL or empty: none), checked by the core (`MQSTATE_STATUS_INVALID_ARGUMENT` for a value
/// that is not W3C's).
///
/// # Safety
/// Both must be NULL or NUL-terminated strings.
pub(crate) fn trace_arg(
    traceparent: *const c_char,
    tracestate: *const c_char,
) -> Result<Option<TraceContext>, Failure> {
    if traceparent.is_null() {
        return Ok(None);
    }
    let tp = crate::ffi::str_arg(traceparent, "traceparent")?;
    let ts = if tracestate.is_null() {
        None
    } else {
        Some(crate::ffi::str_arg(tracestate, "tracestate")?)
    };
    Ok(Some(TraceContext::new(tp, ts)?))
}
