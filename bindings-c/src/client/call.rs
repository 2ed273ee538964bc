//! The shapes of a blocking call on a lock or an election handle, written once: enter the
//! handle, start the core's call, wait for it (each request bounded by the client's
//! `request_timeout`), write the result to the out-parameter that was reset first — so that
//! after a failure there is nothing to free and no stale value to read.

use std::ffi::c_char;

use mqstate::bridge::{Call, Subscription};

use super::cancel::run;
use super::guard;
use super::subscription::{mqstate_subscription, new_subscription};
use super::text::put_string;
use crate::ffi::{out_arg, put, str_arg};
use crate::status::{Failure, boundary, mqstate_status};

/// Optional text argument (NULL: `None`).
///
/// # Safety
/// `ptr` must be NULL or a NUL-terminated string.
pub(crate) fn opt_str(ptr: *const c_char, what: &str) -> Result<Option<String>, Failure> {
    if ptr.is_null() {
        return Ok(None);
    }
    Ok(Some(str_arg(ptr, what)?.to_owned()))
}

/// Waits for `call`, which the core bounds itself.
pub(crate) fn wait<T: Send + 'static>(call: Call<T>) -> Result<T, Failure> {
    run(std::ptr::null(), || call)
}

/// One blocking call whose result is a flag, written to an optional out-flag (false first,
/// so it is false on error).
///
/// # Safety
/// `handle` must be NULL or live; `out` NULL or writable.
pub(crate) fn flag_call<H: guard::Handle>(
    handle: *const H,
    what: &str,
    out: *mut bool,
    call: impl FnOnce(&H::Inner) -> Call<bool>,
) -> mqstate_status {
    boundary(|| {
        put(out, false);
        let inner = guard::enter(handle, what)?;
        let got = wait(call(&inner))?;
        put(out, got);
        Ok(())
    })
}

/// One blocking call whose result is optional text, written to `*out` (NULL first; free
/// with `mqstate_string_free`).
///
/// # Safety
/// `handle` must be NULL or live; `out` writable.
pub(crate) fn text_call<H: guard::Handle>(
    handle: *const H,
    what: &str,
    out: *mut *mut c_char,
    call: impl FnOnce(&H::Inner) -> Call<Option<String>>,
) -> mqstate_status {
    boundary(|| {
        let out = out_arg(out, std::ptr::null_mut(), "out")?;
        let inner = guard::enter(handle, what)?;
        let got = wait(call(&inner))?;
        put_string(out, got.as_deref())
    })
}

/// One blocking call whose result is a subscription, written to `*out` (NULL first).
///
/// # Safety
/// `handle` must be NULL or live; `out` writable.
pub(crate) fn subscription_call<H: guard::Handle>(
    handle: *const H,
    what: &str,
    out: *mut *mut mqstate_subscription,
    call: impl FnOnce(&H::Inner) -> Call<Subscription>,
) -> mqstate_status {
    boundary(|| {
        let out = out_arg(out, std::ptr::null_mut(), "out")?;
        let inner = guard::enter(handle, what)?;
        *out = new_subscription(wait(call(&inner))?);
        Ok(())
    })
}

/// A subscription made at once (no request), written to `*out` (NULL first).
///
/// # Safety
/// `handle` must be NULL or live; `out` writable.
pub(crate) fn local_subscription<H: guard::Handle>(
    handle: *const H,
    what: &str,
    out: *mut *mut mqstate_subscription,
    make: impl FnOnce(&H::Inner) -> Subscription,
) -> mqstate_status {
    boundary(|| {
        let out = out_arg(out, std::ptr::null_mut(), "out")?;
        let inner = guard::enter(handle, what)?;
        *out = new_subscription(make(&inner));
        Ok(())
    })
}
