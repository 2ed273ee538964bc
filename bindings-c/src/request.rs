//! Requests for C (spec §3). Encoding (client side): one function per verb, each producing
//! the exact payload bytes in a library-owned [`mqstate_bytes`]. Decoding (service side):
//! `mqstate_decode_request`, with the service's exact store errors.
//!
//! Each function converts its arguments, builds a core `Request` over borrowed slices,
//! validates it with the core (an empty key is refused) and encodes it: no copy of the key or
//! value is made before the payload itself.

use std::num::NonZeroU64;
use std::ptr;

use bytes::Bytes;
use mqstate::codec::Request;

use crate::condition::{condition_arg, mqstate_set_condition};
use crate::ffi::{
    bytes_arg, bytes_ptr, free_handle, handle_arg, maybe, mqstate_bytes, new_handle, out_arg,
    out_ptr,
};
use crate::response::mqstate_verb;
use crate::status::{Failure, FfiResult, boundary, mqstate_status};

/// Resets `*out`, then builds `request` from the arguments, validates and encodes it into
/// `*out`: a failure of any argument leaves `*out` as `{NULL, 0}`.
///
/// # Safety
/// `out` must be NULL or writable.
fn encode<'a>(
    out: *mut mqstate_bytes,
    request: impl FnOnce() -> Result<Request<&'a [u8]>, Failure>,
) -> FfiResult {
    let out = out_arg(out, mqstate_bytes::EMPTY, "out")?;
    let request = request()?;
    request.validate()?;
    let mut payload = Vec::with_capacity(request.encoded_len() + 1);
    request.encode_to(&mut payload);
    *out = mqstate_bytes::from_vec(payload);
    Ok(())
}

/// Encodes `SET key value [NX|NEX] [PX px_ms]` into `*out`.
///
/// `condition` is a `mqstate_set_condition`; `px_ms` is the expiry in milliseconds, 0 for
/// none. The key must not be empty; the value may be. `key`/`value` may be NULL when their
/// length is 0. On success `*out` owns the payload: free it with `mqstate_bytes_free`. On
/// error `*out` is `{NULL, 0}`.
///
/// # Safety
/// `key` and `value` must point to `key_len` and `value_len` readable bytes (or be NULL with
/// length 0); `out` must point to a writable `mqstate_bytes`.
#[unsafe(no_mangle)]
pub extern "C" fn mqstate_encode_set(
    key: *const u8,
    key_len: usize,
    value: *const u8,
    value_len: usize,
    condition: u32,
    px_ms: u64,
    out: *mut mqstate_bytes,
) -> mqstate_status {
    boundary(|| {
        encode(out, || {
            Ok(Request::Set {
                key: bytes_arg(key, key_len, "key")?,
                value: bytes_arg(value, value_len, "value")?,
                condition: condition_arg(condition)?,
                expiry_ms: NonZeroU64::new(px_ms),
            })
        })
    })
}

/// Encodes `GET key` into `*out` (free with `mqstate_bytes_free`; `{NULL, 0}` on error).
///
/// # Safety
/// `key` must point to `key_len` readable bytes; `out` to a writable `mqstate_bytes`.
#[unsafe(no_mangle)]
pub extern "C" fn mqstate_encode_get(
    key: *const u8,
    key_len: usize,
    out: *mut mqstate_bytes,
) -> mqstate_status {
    boundary(|| {
        encode(out, || {
            Ok(Request::Get {
                key: bytes_arg(key, key_len, "key")?,
            })
        })
    })
}

/// Encodes `DEL key` into `*out` (free with `mqstate_bytes_free`; `{NULL, 0}` on error).
///
/// # Safety
/// `key` must point to `key_len` readable bytes; `out` to a writable `mqstate_bytes`.
#[unsafe(no_mangle)]
pub extern "C" fn mqstate_encode_del(
    key: *const u8,
    key_len: usize,
    out: *mut mqstate_bytes,
) -> mqstate_status {
    boundary(|| {
        encode(out, || {
            Ok(Request::Del {
                key: bytes_arg(key, key_len, "key")?,
            })
        })
    })
}

/// Encodes `VDEL key value` into `*out` (free with `mqstate_bytes_free`; `{NULL, 0}` on
/// error).
///
/// # Safety
/// `key`/`value` must point to `key_len`/`value_len` readable bytes; `out` to a writable
/// `mqstate_bytes`.
#[unsafe(no_mangle)]
pub extern "C" fn mqstate_encode_vdel(
    key: *const u8,
    key_len: usize,
    value: *const u8,
    value_len: usize,
    out: *mut mqstate_bytes,
) -> mqstate_status {
    boundary(|| {
        encode(out, || {
            Ok(Request::VDel {
                key: bytes_arg(key, key_len, "key")?,
                value: bytes_arg(value, value_len, "value")?,
            })
        })
    })
}

/// Encodes `KEYNOTIFY key`, or `KEYNOTIFY key STOP` when `stop` is true, into `*out` (free
/// with `mqstate_bytes_free`; `{NULL, 0}` on error).
///
/// # Safety
/// `key` must point to `key_len` readable bytes; `out` to a writable `mqstate_bytes`.
#[unsafe(no_mangle)]
pub extern "C" fn mqstate_encode_keynotify(
    key: *const u8,
    key_len: usize,
    stop: bool,
    out: *mut mqstate_bytes,
) -> mqstate_status {
    boundary(|| {
        encode(out, || {
            Ok(Request::KeyNotify {
                key: bytes_arg(key, key_len, "key")?,
                stop,
            })
        })
    })
}

/// Encodes `SCAN pattern [token]` (spec §3.1) into `*out` (free with `mqstate_bytes_free`;
/// `{NULL, 0}` on error).
///
/// `token` NULL asks for the first page; otherwise `token` holds the `token_len` bytes
/// (possibly 0) of the previous page's continuation token, sent back byte for byte (see
/// `mqstate_response_token`). An empty pattern is `MQSTATE_STATUS_INVALID_ARGUMENT`.
///
/// # Safety
/// `pattern` must point to `pattern_len` readable bytes; `token` must be NULL or point to
/// `token_len` readable bytes; `out` to a writable `mqstate_bytes`.
#[unsafe(no_mangle)]
pub extern "C" fn mqstate_encode_scan(
    pattern: *const u8,
    pattern_len: usize,
    token: *const u8,
    token_len: usize,
    out: *mut mqstate_bytes,
) -> mqstate_status {
    boundary(|| {
        encode(out, || {
            let pattern = bytes_arg(pattern, pattern_len, "pattern")?;
            let token = match token.is_null() {
                true => None,
                false => Some(bytes_arg(token, token_len, "token")?),
            };
            Ok(Request::Scan { pattern, token })
        })
    })
}

/// A decoded request (opaque, service side). Free with `mqstate_request_free`.
pub struct mqstate_request {
    request: Request<Bytes>,
}

/// A decoded request described for C; pointers borrow from the handle.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct mqstate_request_info {
    /// The verb (`MQSTATE_VERB_ANY` only after a failed `mqstate_request_get`).
    pub verb: mqstate_verb,
    /// The key (never empty); for `MQSTATE_VERB_SCAN`, the pattern (the service accepts an
    /// empty one; its token is read with `mqstate_request_token`).
    pub key: *const u8,
    /// Length of `key`.
    pub key_len: usize,
    /// SET and VDEL: the value; NULL otherwise.
    pub value: *const u8,
    /// Length of `value`.
    pub value_len: usize,
    /// SET: the condition; `MQSTATE_SET_CONDITION_ALWAYS` otherwise.
    pub condition: mqstate_set_condition,
    /// SET: the `PX` expiry in milliseconds, 0 for none.
    pub px_ms: u64,
    /// KEYNOTIFY: whether `STOP` was given.
    pub stop: bool,
}

/// Decodes a request `payload` of `len` bytes as the service does. A payload the service
/// would refuse fails with the store error's status (`MQSTATE_STATUS_SYNTAX_ERROR`,
/// `…_UNKNOWN_COMMAND`, `…_WRONG_NUMBER_OF_ARGUMENTS`, `…_KEY_LENGTH_ZERO`) and the exact
/// service text as the last error message. On success `*out` is a new handle (read it with
/// `mqstate_request_get`, free it with `mqstate_request_free`); on error NULL.
///
/// # Safety
/// `payload` must point to `len` readable bytes; `out` to a writable `mqstate_request *`.
#[unsafe(no_mangle)]
pub extern "C" fn mqstate_decode_request(
    payload: *const u8,
    len: usize,
    out: *mut *mut mqstate_request,
) -> mqstate_status {
    boundary(|| {
        let (out, payload) = (
            out_arg(out, ptr::null_mut(), "out")?,
            bytes_arg(payload, len, "payload")?,
        );
        let request = Request::decode(&Bytes::copy_from_slice(payload))?;
        *out = new_handle(mqstate_request { request });
        Ok(())
    })
}

/// Describes `request` in `*out` (pointers borrow from `request`); on failure `*out` is all
/// zero (`MQSTATE_VERB_ANY`, NULL pointers).
///
/// # Safety
/// `request` must be a live handle; `out` must point to a writable `mqstate_request_info`.
#[unsafe(no_mangle)]
pub extern "C" fn mqstate_request_get(
    request: *const mqstate_request,
    out: *mut mqstate_request_info,
) -> mqstate_status {
    boundary(|| {
        let out = out_ptr(out)?;
        let mut info = mqstate_request_info {
            verb: mqstate_verb::Any,
            key: ptr::null(),
            key_len: 0,
            value: ptr::null(),
            value_len: 0,
            condition: mqstate_set_condition::Always,
            px_ms: 0,
            stop: false,
        };
        // SAFETY: `out` is non-null and writable per the caller: reset before any failure.
        unsafe { out.write(info) };
        let handle = handle_arg(request, "request")?;
        let r = &handle.request;
        (info.verb, info.key, info.key_len) = (
            mqstate_verb::of(r.verb()),
            bytes_ptr(r.key()),
            r.key().len(),
        );
        match r {
            Request::Set {
                value,
                condition,
                expiry_ms,
                ..
            } => {
                (info.value, info.value_len) = (bytes_ptr(value), value.len());
                info.condition = mqstate_set_condition::of(*condition);
                info.px_ms = expiry_ms.map_or(0, |ms| ms.get());
            }
            Request::VDel { value, .. } => {
                (info.value, info.value_len) = (bytes_ptr(value), value.len())
            }
            Request::KeyNotify { stop, .. } => info.stop = *stop,
            Request::Get { .. } | Request::Del { .. } | Request::Scan { .. } => {}
        }
        // SAFETY: `out` is non-null and writable per the caller; the info has no drop glue.
        unsafe { out.write(info) };
        Ok(())
    })
}

/// The continuation token of a decoded `SCAN` request: `*len` bytes borrowed from `request`,
/// valid until it is freed. NULL (and `*len` 0) when the request asks for the first page, is
/// not a SCAN, or `request` is NULL; an empty token is a non-NULL pointer with length 0.
///
/// # Safety
/// `request` must be NULL or a live handle; `len` NULL or writable.
#[unsafe(no_mangle)]
pub extern "C" fn mqstate_request_token(
    request: *const mqstate_request,
    len: *mut usize,
) -> *const u8 {
    let token = match maybe(request).map(|r| &r.request) {
        Some(Request::Scan { token, .. }) => token.as_ref(),
        _ => None,
    };
    crate::ffi::put(len, token.map_or(0, |t| t.len()));
    token.map_or(ptr::null(), |t| bytes_ptr(t))
}

/// Frees a request handle. NULL is ignored.
///
/// # Safety
/// `request` must be NULL or a live handle, not used again.
#[unsafe(no_mangle)]
pub extern "C" fn mqstate_request_free(request: *mut mqstate_request) {
    free_handle(request)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn set_with_options_and_refusals() {
        let mut out = mqstate_bytes::EMPTY;
        let status = mqstate_encode_set(b"k".as_ptr(), 1, std::ptr::null(), 0, 1, 10, &mut out);
        assert_eq!(status, mqstate_status::Ok);
        // SAFETY: out was filled in by the library.
        let got = unsafe { std::slice::from_raw_parts(out.ptr, out.len) };
        assert_eq!(
            got,
            b"*6\r\n$3\r\nSET\r\n$1\r\nk\r\n$0\r\n\r\n$2\r\nNX\r\n$2\r\nPX\r\n$2\r\n10\r\n"
        );
        crate::ffi::mqstate_bytes_free(&mut out);
        assert_eq!(
            mqstate_encode_get(b"".as_ptr(), 0, &mut out),
            mqstate_status::InvalidArgument
        );
        assert!(out.ptr.is_null());
        assert_eq!(
            mqstate_encode_set(b"k".as_ptr(), 1, b"v".as_ptr(), 1, 3, 0, &mut out),
            mqstate_status::InvalidArgument
        );
        assert_eq!(
            mqstate_encode_del(std::ptr::null(), 1, &mut out),
            mqstate_status::InvalidArgument
        );
    }
}
