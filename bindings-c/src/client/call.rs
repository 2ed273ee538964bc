//! The shapes of a blocking call on a lock or an election handle, written once: enter the
//! handle, start the core's call, wait for it (with the caller's limit), write the result
//! to the out-parameter that was reset first — so that after a failure there is nothing to
//! free and no stale value to read.

use std::ffi::c_char;
use std::time::Duration;

use mqstate::bridge::{Call, Subscription};
use mqstate::{Error, ErrorKind};

use super::cancel::run;
use super::guard;
use super::subscription::{mqstate_subscription, new_subscription};
use super::text::{put, put_string};
use super::timeout;
use crate::ffi::{out_arg, str_arg};
use crate::status::{Failure, boundary, mqstate_status};

/// Optional text argument (NULL: `None`).
///
/// # Safety
/// `ptr` must be NULL or a NUL-terminated string.
pub(crate) unsafe fn opt_str(ptr: *const c_char, what: &str) -> Result<Option<String>, Failure> {
    if ptr.is_null() {
        return Ok(None);
    }
    // SAFETY: per the caller.
    Ok(Some(unsafe { str_arg(ptr, what) }?.to_owned()))
}

/// Waits for a call that only reads, up to `timeout_ms` (0: the client's `request_timeout`
/// bounds it). Running out of the caller's limit is a plain `timeout`: a read cannot have
/// changed anything, so it never claims that it may have been applied.
fn run_read<T: Send + 'static>(call: Call<T>, timeout_ms: u32) -> Result<T, Failure> {
    let limit = timeout::request(timeout_ms)?;
    // SAFETY: no token.
    unsafe { run(call, limit, std::ptr::null()) }.map_err(|f| match &f.error {
        Some(e) if e.kind() == ErrorKind::Timeout && e.may_have_applied() => {
            Failure::from(Error::new(ErrorKind::Timeout, e.message().to_owned()))
        }
        _ => f,
    })
}

/// Waits for a call that writes, up to `timeout_ms` (0: the client's `request_timeout`
/// bounds it).
pub(crate) fn run_write<T: Send + 'static>(call: Call<T>, timeout_ms: u32) -> Result<T, Failure> {
    let limit: Option<Duration> = timeout::request(timeout_ms)?;
    // SAFETY: no token.
    unsafe { run(call, limit, std::ptr::null()) }
}

/// One blocking call whose result is a flag, written to an optional out-flag (false first,
/// so it is false on error).
///
/// # Safety
/// `handle` must be NULL or live; `out` NULL or writable.
pub(crate) unsafe fn flag_call<H: guard::Handle>(
    handle: *const H,
    what: &str,
    timeout_ms: u32,
    out: *mut bool,
    call: impl FnOnce(&H::Inner) -> Result<Call<bool>, Failure>,
) -> mqstate_status {
    boundary(|| {
        // SAFETY: per the caller.
        unsafe { put(out, false) };
        // SAFETY: per the caller.
        let inner = unsafe { guard::enter(handle, what) }?;
        let got = run_write(call(&inner)?, timeout_ms)?;
        // SAFETY: per the caller.
        unsafe { put(out, got) };
        Ok(())
    })
}

/// One blocking read whose result is optional text, written to `*out` (NULL first; free
/// with `mqstate_string_free`).
///
/// # Safety
/// `handle` must be NULL or live; `out` writable.
pub(crate) unsafe fn text_call<H: guard::Handle>(
    handle: *const H,
    what: &str,
    timeout_ms: u32,
    out: *mut *mut c_char,
    call: impl FnOnce(&H::Inner) -> Call<Option<String>>,
) -> mqstate_status {
    boundary(|| {
        // SAFETY: per the caller.
        let out = unsafe { out_arg(out, std::ptr::null_mut(), "out") }?;
        // SAFETY: per the caller.
        let inner = unsafe { guard::enter(handle, what) }?;
        let got = run_read(call(&inner), timeout_ms)?;
        // SAFETY: `out` is writable.
        unsafe { put_string(out, got.as_deref()) }
    })
}

/// One blocking call whose result is a subscription, written to `*out` (NULL first).
///
/// # Safety
/// `handle` must be NULL or live; `out` writable.
pub(crate) unsafe fn subscription_call<H: guard::Handle>(
    handle: *const H,
    what: &str,
    timeout_ms: u32,
    out: *mut *mut mqstate_subscription,
    call: impl FnOnce(&H::Inner) -> Call<Subscription>,
) -> mqstate_status {
    boundary(|| {
        // SAFETY: per the caller.
        let out = unsafe { out_arg(out, std::ptr::null_mut(), "out") }?;
        // SAFETY: per the caller.
        let inner = unsafe { guard::enter(handle, what) }?;
        let sub = run_read(call(&inner), timeout_ms)?;
        *out = new_subscription(sub);
        Ok(())
    })
}
