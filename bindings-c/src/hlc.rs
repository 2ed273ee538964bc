//! Hybrid logical clock values for C (spec §5): `mqstate_hlc`, an immutable clock value,
//! with parsing, the canonical text, ordering, and the pure tick/receive rules taking the
//! time as an argument (the shared, time-reading clock is in [`crate::clock`]).

use std::cmp::Ordering;
use std::ffi::c_char;
use std::ptr;

use mqstate::hlc::Hlc;

use crate::ffi::{free_handle, handle_arg, new_handle, out_arg, str_arg, text_out};
use crate::status::{Failure, FfiResult, boundary, mqstate_status};

/// The maximum drift ahead of local time the service and the SDKs allow: one minute.
pub const MQSTATE_DEFAULT_MAX_DRIFT_MS: u64 = 60_000;

/// A hybrid logical clock value `{wall_ms}:{counter}:{node_id}` (opaque, immutable). Every
/// function that produces one gives a new handle; free each with `mqstate_hlc_free`.
pub struct mqstate_hlc(pub(crate) Hlc);

/// Stores a new handle for `hlc` in the reset out-parameter.
///
/// # Safety
/// `out` must be NULL or writable.
pub(crate) fn give(
    out: *mut *mut mqstate_hlc,
    hlc: impl FnOnce() -> Result<Hlc, Failure>,
) -> FfiResult {
    let out = out_arg(out, ptr::null_mut(), "out")?;
    *out = new_handle(mqstate_hlc(hlc()?));
    Ok(())
}

/// Parses `text` (NUL-terminated): `{wall}:{counter}:{node}`, numbers in plain decimal of any
/// width. Anything else is `MQSTATE_STATUS_MALFORMED`. On success `*out` is a new handle
/// (free with `mqstate_hlc_free`); on error NULL.
///
/// # Safety
/// `text` must be a NUL-terminated string; `out` must point to a writable `mqstate_hlc *`.
#[unsafe(no_mangle)]
pub extern "C" fn mqstate_hlc_parse(
    text: *const c_char,
    out: *mut *mut mqstate_hlc,
) -> mqstate_status {
    boundary(|| give(out, || Ok(Hlc::parse(str_arg(text, "text")?)?)))
}

/// Builds a clock value; `node_id` (NUL-terminated UTF-8) must be non-empty and free of `:`
/// (else `MQSTATE_STATUS_INVALID_ARGUMENT`). `*out` as for `mqstate_hlc_parse`.
///
/// # Safety
/// `node_id` must be a NUL-terminated string; `out` must point to a writable `mqstate_hlc *`.
#[unsafe(no_mangle)]
pub extern "C" fn mqstate_hlc_new(
    wall_ms: u64,
    counter: u64,
    node_id: *const c_char,
    out: *mut *mut mqstate_hlc,
) -> mqstate_status {
    boundary(|| {
        give(out, || {
            Ok(Hlc::new(wall_ms, counter, str_arg(node_id, "node_id")?)?)
        })
    })
}

/// Writes the canonical text of `hlc` (wall clock padded to 15 digits, counter to 5) and a
/// NUL into `buf` of `len` bytes, storing the text length in `*out_len` (when not NULL) even
/// when the buffer is too small (`MQSTATE_STATUS_BUFFER_TOO_SMALL`). `buf` may be NULL with
/// `len` 0 to ask for the length. On any failure `buf` holds the empty string (when `len`
/// is not 0), and `*out_len` is 0 unless the buffer was too small.
///
/// # Safety
/// `hlc` must be a live handle; `buf` must point to `len` writable bytes; `out_len` must be
/// NULL or writable.
#[unsafe(no_mangle)]
pub extern "C" fn mqstate_hlc_to_string(
    hlc: *const mqstate_hlc,
    buf: *mut c_char,
    len: usize,
    out_len: *mut usize,
) -> mqstate_status {
    boundary(|| {
        text_out(buf, len, out_len, || {
            Ok(handle_arg(hlc, "hlc")?.0.to_string())
        })
    })
}

/// The wall clock in milliseconds since the Unix epoch, into `*out`.
///
/// # Safety
/// `hlc` must be a live handle; `out` must point to a writable `uint64_t`.
#[unsafe(no_mangle)]
pub extern "C" fn mqstate_hlc_wall_ms(hlc: *const mqstate_hlc, out: *mut u64) -> mqstate_status {
    boundary(|| {
        let out = out_arg(out, 0, "out")?;
        *out = handle_arg(hlc, "hlc")?.0.wall_ms();
        Ok(())
    })
}

/// The counter, into `*out`.
///
/// # Safety
/// `hlc` must be a live handle; `out` must point to a writable `uint64_t`.
#[unsafe(no_mangle)]
pub extern "C" fn mqstate_hlc_counter(hlc: *const mqstate_hlc, out: *mut u64) -> mqstate_status {
    boundary(|| {
        let out = out_arg(out, 0, "out")?;
        *out = handle_arg(hlc, "hlc")?.0.counter();
        Ok(())
    })
}

/// Copies the node id and a NUL into `buf` (same buffer rules as `mqstate_hlc_to_string`).
///
/// # Safety
/// As for `mqstate_hlc_to_string`.
#[unsafe(no_mangle)]
pub extern "C" fn mqstate_hlc_node_id(
    hlc: *const mqstate_hlc,
    buf: *mut c_char,
    len: usize,
    out_len: *mut usize,
) -> mqstate_status {
    boundary(|| {
        text_out(buf, len, out_len, || {
            Ok(handle_arg(hlc, "hlc")?.0.node_id())
        })
    })
}

fn sign(ordering: Ordering) -> i32 {
    ordering as i32
}

/// Compares `a` with `b` by wall clock, then counter, then node id byte-wise (spec §5.2):
/// `*out` is -1, 0 or 1.
///
/// # Safety
/// `a` and `b` must be live handles; `out` must point to a writable `int32_t`.
#[unsafe(no_mangle)]
pub extern "C" fn mqstate_hlc_compare(
    a: *const mqstate_hlc,
    b: *const mqstate_hlc,
    out: *mut i32,
) -> mqstate_status {
    boundary(|| {
        let out = out_arg(out, 0, "out")?;
        let (a, b) = (handle_arg(a, "a")?, handle_arg(b, "b")?);
        *out = sign(a.0.cmp(&b.0));
        Ok(())
    })
}

/// Compares (wall clock, counter) only, ignoring the node id: the order of fencing tokens.
/// `*out` is -1, 0 or 1.
///
/// # Safety
/// As for `mqstate_hlc_compare`.
#[unsafe(no_mangle)]
pub extern "C" fn mqstate_hlc_compare_time(
    a: *const mqstate_hlc,
    b: *const mqstate_hlc,
    out: *mut i32,
) -> mqstate_status {
    boundary(|| {
        let out = out_arg(out, 0, "out")?;
        let (a, b) = (handle_arg(a, "a")?, handle_arg(b, "b")?);
        *out = sign(a.0.cmp_time(&b.0));
        Ok(())
    })
}

/// The send step at `now_ms` (spec §5.3): a new handle in `*out` holding `(now_ms, 0)` if
/// `now_ms` is past the wall clock, else the counter plus one. `MQSTATE_STATUS_CLOCK_DRIFT`
/// if `hlc` is more than `max_drift_ms` ahead of `now_ms`, `MQSTATE_STATUS_CLOCK_OVERFLOW` if
/// the counter is at its maximum. `hlc` itself is unchanged. Free `*out` with
/// `mqstate_hlc_free`; NULL on error.
///
/// # Safety
/// `hlc` must be a live handle; `out` must point to a writable `mqstate_hlc *`.
#[unsafe(no_mangle)]
pub extern "C" fn mqstate_hlc_tick(
    hlc: *const mqstate_hlc,
    now_ms: u64,
    max_drift_ms: u64,
    out: *mut *mut mqstate_hlc,
) -> mqstate_status {
    boundary(|| {
        give(out, || {
            Ok(handle_arg(hlc, "hlc")?.0.tick(now_ms, max_drift_ms)?)
        })
    })
}

/// The receive step at `now_ms` (spec §5.3): merges `other` (a received `__ts`) into `hlc`,
/// giving a new handle in `*out`; errors and ownership as for `mqstate_hlc_tick`.
///
/// # Safety
/// `hlc` and `other` must be live handles; `out` must point to a writable `mqstate_hlc *`.
#[unsafe(no_mangle)]
pub extern "C" fn mqstate_hlc_receive(
    hlc: *const mqstate_hlc,
    other: *const mqstate_hlc,
    now_ms: u64,
    max_drift_ms: u64,
    out: *mut *mut mqstate_hlc,
) -> mqstate_status {
    boundary(|| {
        give(out, || {
            let other = &handle_arg(other, "other")?.0;
            Ok(handle_arg(hlc, "hlc")?
                .0
                .receive(other, now_ms, max_drift_ms)?)
        })
    })
}

/// A copy of `hlc` in `*out` (free both with `mqstate_hlc_free`).
///
/// # Safety
/// `hlc` must be a live handle; `out` must point to a writable `mqstate_hlc *`.
#[unsafe(no_mangle)]
pub extern "C" fn mqstate_hlc_clone(
    hlc: *const mqstate_hlc,
    out: *mut *mut mqstate_hlc,
) -> mqstate_status {
    boundary(|| give(out, || Ok(handle_arg(hlc, "hlc")?.0.clone())))
}

/// Frees a clock value. NULL is ignored.
///
/// # Safety
/// `hlc` must be NULL or a live handle, not used again.
#[unsafe(no_mangle)]
pub extern "C" fn mqstate_hlc_free(hlc: *mut mqstate_hlc) {
    free_handle(hlc)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_drift_matches_the_core() {
        use mqstate::hlc::DEFAULT_MAX_DRIFT_MS;
        assert_eq!(MQSTATE_DEFAULT_MAX_DRIFT_MS, DEFAULT_MAX_DRIFT_MS);
    }

    #[test]
    fn ordering_signs() {
        assert_eq!(sign(Ordering::Less), -1);
        assert_eq!(sign(Ordering::Equal), 0);
        assert_eq!(sign(Ordering::Greater), 1);
    }
}
