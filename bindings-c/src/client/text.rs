//! Owned results handed to C: strings (versions, holder ids) and values (GET results).

use std::ffi::{CString, c_char};

use mqstate::Versioned;

use super::guard;
use crate::ffi::{maybe, put};
use crate::status::Failure;

/// A NUL-terminated copy of `text` for C (free with `mqstate_string_free`).
pub(crate) fn c_string(text: &str) -> Result<*mut c_char, Failure> {
    CString::new(text)
        .map(CString::into_raw)
        .map_err(|_| Failure::invalid("the text holds a NUL byte"))
}

/// Writes an optional owned string to an optional out-pointer.
///
/// # Safety
/// `out` must be NULL or writable.
pub(crate) fn put_string(out: *mut *mut c_char, text: Option<&str>) -> Result<(), Failure> {
    if out.is_null() {
        return Ok(());
    }
    let ptr = match text {
        Some(t) => c_string(t)?,
        None => std::ptr::null_mut(),
    };
    // SAFETY: non-null and writable per the caller.
    unsafe { out.write(ptr) };
    Ok(())
}

/// Resets an optional string out-pointer to NULL (so it is NULL on error).
///
/// # Safety
/// `out` must be NULL or writable.
pub(crate) fn reset_string(out: *mut *mut c_char) {
    if !out.is_null() {
        // SAFETY: non-null and writable per the caller.
        unsafe { out.write(std::ptr::null_mut()) };
    }
}

/// Frees a string returned by mqstate (a version, a holder id …); NULL is ignored.
///
/// # Safety
/// `text` must be NULL or a string from mqstate not yet freed.
#[unsafe(no_mangle)]
#[expect(
    clippy::not_unsafe_ptr_arg_deref,
    reason = "a C function: its pointers are as its # Safety section says (lib.rs)"
)]
pub extern "C" fn mqstate_string_free(text: *mut c_char) {
    if !text.is_null() {
        // SAFETY: made by `CString::into_raw`, freed once per the caller.
        drop(unsafe { CString::from_raw(text) });
    }
}

/// A value read by GET: its bytes and its version.
pub(crate) struct ValueData {
    pub(crate) value: Vec<u8>,
    pub(crate) version: Option<CString>,
}

/// A value read by `mqstate_client_get` (opaque): bytes, length and version text. Free it
/// with `mqstate_value_free`.
pub struct mqstate_value {
    guarded: guard::Guarded<ValueData>,
}

crate::handle!(mqstate_value, ValueData);

/// A new value handle.
pub(crate) fn new_value(v: Versioned) -> *mut mqstate_value {
    guard::new(ValueData {
        value: v.value.to_vec(),
        version: v.version.and_then(|h| CString::new(h.to_text()).ok()),
    })
}

/// The value's bytes (`*len` bytes; valid until the value is freed; not NUL-terminated).
///
/// # Safety
/// `value` must be a live value; `len` NULL or writable.
#[unsafe(no_mangle)]
pub extern "C" fn mqstate_value_data(value: *const mqstate_value, len: *mut usize) -> *const u8 {
    let Some(v) = maybe(value) else {
        put(len, 0);
        return std::ptr::null();
    };
    let data = &guard::Handle::guarded(v).inner.value;
    put(len, data.len());
    data.as_ptr()
}

/// The value's version as HLC text (valid until the value is freed), or NULL if none.
///
/// # Safety
/// `value` must be a live value.
#[unsafe(no_mangle)]
pub extern "C" fn mqstate_value_version(value: *const mqstate_value) -> *const c_char {
    let Some(v) = maybe(value) else {
        return std::ptr::null();
    };
    let version = &guard::Handle::guarded(v).inner.version;
    version.as_ref().map_or(std::ptr::null(), |c| c.as_ptr())
}

/// Frees a value (NULL is ignored).
///
/// # Safety
/// `value` must be NULL or a live value, freed once.
#[unsafe(no_mangle)]
pub extern "C" fn mqstate_value_free(value: *mut mqstate_value) {
    guard::close(value, |_| {})
}
