//! The explicit error object, for callers that keep an error beyond the next call, and the
//! process-level functions: waiting for idle at exit, and fork.

use std::ffi::{CString, c_char};

use mqstate::Error;

use crate::ffi::maybe;
use crate::status::{mqstate_status, with_last_error};

/// A captured error (opaque): status, message, and details. Free with `mqstate_error_free`.
pub struct mqstate_error {
    status: u32,
    message: CString,
    error: Option<Box<Error>>,
}

/// Captures the calling thread's last error (the one `mqstate_last_error_message` copies
/// out) as an object; NULL when the last call succeeded.
#[unsafe(no_mangle)]
pub extern "C" fn mqstate_error_last() -> *mut mqstate_error {
    let captured = std::panic::catch_unwind(|| {
        with_last_error(|last| {
            (last.status != mqstate_status::Ok as u32).then(|| mqstate_error {
                status: last.status,
                message: CString::new(last.message.replace('\0', " ")).unwrap_or_default(),
                error: last.error.clone(),
            })
        })
    });
    match captured {
        Ok(Some(e)) => Box::into_raw(Box::new(e)),
        _ => std::ptr::null_mut(),
    }
}

/// The error's status (a `mqstate_status` value).
///
/// # Safety
/// `error` must be NULL or a live error.
#[unsafe(no_mangle)]
pub extern "C" fn mqstate_error_status(error: *const mqstate_error) -> u32 {
    maybe(error).map_or(mqstate_status::Ok as u32, |e| e.status)
}

/// The error's message (valid while the error lives); a store error's is the service's
/// exact text.
///
/// # Safety
/// `error` must be NULL or a live error.
#[unsafe(no_mangle)]
pub extern "C" fn mqstate_error_message(error: *const mqstate_error) -> *const c_char {
    maybe(error).map_or(c"".as_ptr(), |e| e.message.as_ptr())
}

/// Whether the request had been sent before the error (a timeout waiting for the answer, a
/// connection lost in flight): the service may have applied it.
///
/// # Safety
/// `error` must be NULL or a live error.
#[unsafe(no_mangle)]
pub extern "C" fn mqstate_error_may_have_applied(error: *const mqstate_error) -> bool {
    maybe(error)
        .and_then(|e| e.error.as_ref())
        .is_some_and(|e| e.may_have_applied())
}

/// The RPC status (`__stat`) of an `MQSTATE_STATUS_RPC_ERROR`, else 0.
///
/// # Safety
/// `error` must be NULL or a live error.
#[unsafe(no_mangle)]
pub extern "C" fn mqstate_error_rpc_status(error: *const mqstate_error) -> u16 {
    maybe(error)
        .and_then(|e| e.error.as_ref())
        .and_then(|e| e.rpc_details())
        .map_or(0, |d| d.status)
}

/// The status an edit callback returned, for an `MQSTATE_STATUS_CALLBACK` error; else 0.
///
/// # Safety
/// `error` must be NULL or a live error.
#[unsafe(no_mangle)]
pub extern "C" fn mqstate_error_callback_status(error: *const mqstate_error) -> u32 {
    maybe(error)
        .and_then(|e| e.error.as_ref())
        .and_then(|e| e.callback_payload())
        .and_then(|p| p.downcast_ref::<mqstate_status>())
        .map_or(0, |s| *s as u32)
}

/// Frees an error (NULL is ignored).
///
/// # Safety
/// `error` must be NULL or a live error, freed once.
#[unsafe(no_mangle)]
pub extern "C" fn mqstate_error_free(error: *mut mqstate_error) {
    crate::ffi::free_handle(error);
}
