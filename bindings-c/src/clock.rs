//! The process clock for C (spec §5.3): `mqstate_clock`, thread-safe, with one node id and a
//! time source (the system time, or a caller's callback for deterministic tests), handing
//! out `mqstate_hlc` values for each send and receive.

use std::ffi::{c_char, c_void};
use std::ptr;

use mqstate::hlc::{Clock, TimeSource};

use crate::ffi::{free_handle, handle_arg, new_handle, out_arg, str_arg};
use crate::hlc::{give, mqstate_hlc};
use crate::status::{Failure, boundary, mqstate_status};

/// A process's shared clock (opaque, thread-safe): one node id, a time source, and a maximum
/// drift. Free with `mqstate_clock_free`.
pub struct mqstate_clock(Clock);

/// A caller-supplied time source: returns milliseconds since the Unix epoch. It is called on
/// the thread that calls `mqstate_clock_tick`/`_receive`, possibly from several threads at
/// once if the clock is shared, and must not unwind or call back into the clock.
pub type mqstate_now_fn = Option<unsafe extern "C" fn(context: *mut c_void) -> u64>;

struct CallbackTime {
    now: unsafe extern "C" fn(*mut c_void) -> u64,
    context: *mut c_void,
}

// SAFETY: the documented contract of `mqstate_clock_new_with_time_source` makes the caller
// responsible for the callback and its context being usable from any thread.
unsafe impl Send for CallbackTime {}
// SAFETY: as above.
unsafe impl Sync for CallbackTime {}

impl TimeSource for CallbackTime {
    fn now_ms(&self) -> u64 {
        // SAFETY: the caller of mqstate_clock_new_with_time_source promised a valid callback
        // and a context that outlives the clock.
        unsafe { (self.now)(self.context) }
    }
}

/// A clock for `node_id` (NUL-terminated UTF-8, non-empty, no `:`) reading the system time,
/// with the default one-minute maximum drift. On success `*out` is a new handle (free with
/// `mqstate_clock_free`); on error NULL.
///
/// # Safety
/// `node_id` must be a NUL-terminated string; `out` must point to a writable
/// `mqstate_clock *`.
#[unsafe(no_mangle)]
pub extern "C" fn mqstate_clock_new(
    node_id: *const c_char,
    out: *mut *mut mqstate_clock,
) -> mqstate_status {
    boundary(|| {
        let (out, node_id) = (
            out_arg(out, ptr::null_mut(), "out")?,
            str_arg(node_id, "node_id")?,
        );
        *out = new_handle(mqstate_clock(Clock::new(node_id)?));
        Ok(())
    })
}

/// A clock for `node_id` reading the time from `now(context)`, refusing to move more than
/// `max_drift_ms` ahead of it (`MQSTATE_DEFAULT_MAX_DRIFT_MS` is the usual value). `now` is
/// called once here for the start value and once per tick/receive. `*out` as for
/// `mqstate_clock_new`.
///
/// # Safety
/// `now` must be a valid function (NULL is refused) and `context` must stay valid, and both
/// usable from any thread calling the clock, until the clock is freed.
#[unsafe(no_mangle)]
pub extern "C" fn mqstate_clock_new_with_time_source(
    node_id: *const c_char,
    now: mqstate_now_fn,
    context: *mut c_void,
    max_drift_ms: u64,
    out: *mut *mut mqstate_clock,
) -> mqstate_status {
    boundary(|| {
        let (out, node_id) = (
            out_arg(out, ptr::null_mut(), "out")?,
            str_arg(node_id, "node_id")?,
        );
        let now = now.ok_or_else(|| Failure::invalid("now is NULL"))?;
        let clock = Clock::with_time_source(node_id, CallbackTime { now, context }, max_drift_ms)?;
        *out = new_handle(mqstate_clock(clock));
        Ok(())
    })
}

/// Ticks `clock` for a send and gives the new value (for a request's `__ts`) as a new
/// handle in `*out` (free with `mqstate_hlc_free`; NULL on error, the clock unchanged).
///
/// # Safety
/// `clock` must be a live handle; `out` must point to a writable `mqstate_hlc *`.
#[unsafe(no_mangle)]
pub extern "C" fn mqstate_clock_tick(
    clock: *const mqstate_clock,
    out: *mut *mut mqstate_hlc,
) -> mqstate_status {
    boundary(|| give(out, || Ok(handle_arg(clock, "clock")?.0.tick()?)))
}

/// Merges a received `other` into `clock` and gives the new value in `*out`, as for
/// `mqstate_clock_tick`. `MQSTATE_STATUS_CLOCK_DRIFT` leaves the clock unchanged.
///
/// # Safety
/// `clock` and `other` must be live handles; `out` must point to a writable `mqstate_hlc *`.
#[unsafe(no_mangle)]
pub extern "C" fn mqstate_clock_receive(
    clock: *const mqstate_clock,
    other: *const mqstate_hlc,
    out: *mut *mut mqstate_hlc,
) -> mqstate_status {
    boundary(|| {
        give(out, || {
            let other = &handle_arg(other, "other")?.0;
            Ok(handle_arg(clock, "clock")?.0.receive(other)?)
        })
    })
}

/// The clock's current value, without ticking, as a new handle in `*out`.
///
/// # Safety
/// `clock` must be a live handle; `out` must point to a writable `mqstate_hlc *`.
#[unsafe(no_mangle)]
pub extern "C" fn mqstate_clock_current(
    clock: *const mqstate_clock,
    out: *mut *mut mqstate_hlc,
) -> mqstate_status {
    boundary(|| give(out, || Ok(handle_arg(clock, "clock")?.0.current())))
}

/// Frees a clock. NULL is ignored.
///
/// # Safety
/// `clock` must be NULL or a live handle, not used again (and not in use on another thread).
#[unsafe(no_mangle)]
pub extern "C" fn mqstate_clock_free(clock: *mut mqstate_clock) {
    free_handle(clock)
}
