//! Response decoding for C (spec §4): the payload is copied once into an opaque
//! `mqstate_response`, described by a plain `mqstate_response_info` whose pointers borrow from
//! the handle. Also the `mqstate_verb` enum that says which forms a response may take.

use std::ffi::c_char;
use std::ptr;

use bytes::Bytes;
use mqstate::codec::{Response, Verb};

use crate::ffi::{
    bytes_arg, bytes_ptr, free_handle, handle_arg, maybe, new_handle, out_arg, out_ptr, with_nul,
};
use crate::status::{Failure, boundary, mqstate_status};

/// A verb of the state store. `MQSTATE_VERB_ANY` (0) is accepted only as the `verb`
/// argument of `mqstate_decode_response`, meaning "any response form".
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum mqstate_verb {
    /// No particular verb.
    Any = 0,
    /// `SET`.
    Set = 1,
    /// `GET`.
    Get = 2,
    /// `DEL`.
    Del = 3,
    /// `VDEL`.
    Vdel = 4,
    /// `KEYNOTIFY`.
    Keynotify = 5,
    /// `SCAN` (spec §3.1).
    Scan = 6,
}

impl mqstate_verb {
    pub(crate) fn of(verb: Verb) -> mqstate_verb {
        match verb {
            Verb::Set => mqstate_verb::Set,
            Verb::Get => mqstate_verb::Get,
            Verb::Del => mqstate_verb::Del,
            Verb::VDel => mqstate_verb::Vdel,
            Verb::KeyNotify => mqstate_verb::Keynotify,
            Verb::Scan => mqstate_verb::Scan,
        }
    }
}

/// The form of a decoded response (spec §4).
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum mqstate_response_kind {
    /// No response: what `mqstate_response_get` leaves in `out` when it fails.
    None = 0,
    /// `+OK`.
    Ok = 1,
    /// `:-1`: a SET condition failed or a VDEL value differed.
    NotApplied = 2,
    /// `$-1`: GET found no such key.
    NotFound = 3,
    /// A GET value (`value`, `value_len`).
    Value = 4,
    /// A count (`count`).
    Count = 5,
    /// A store error (`error`, `error_text`).
    Error = 6,
    /// One page of a SCAN (`count` keys, read with `mqstate_response_key`; the continuation
    /// token with `mqstate_response_token`).
    Keys = 7,
}

/// A decoded response (opaque). Free with `mqstate_response_free`.
pub struct mqstate_response {
    response: Response,
    error_text: Box<[u8]>,
}

/// A decoded response described for C. Every pointer borrows from the `mqstate_response`
/// it was read from and is valid until that handle is freed.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct mqstate_response_info {
    /// The form.
    pub kind: mqstate_response_kind,
    /// `MQSTATE_RESPONSE_KIND_VALUE`: the value (not NUL-terminated); NULL otherwise.
    pub value: *const u8,
    /// Length of `value`.
    pub value_len: usize,
    /// `MQSTATE_RESPONSE_KIND_COUNT`: the count; `MQSTATE_RESPONSE_KIND_KEYS`: the number of
    /// keys on the page; 0 otherwise.
    pub count: u64,
    /// `MQSTATE_RESPONSE_KIND_ERROR`: the store error's status (100–112, see
    /// `mqstate_status_name`); `MQSTATE_STATUS_OK` otherwise.
    pub error: mqstate_status,
    /// `MQSTATE_RESPONSE_KIND_ERROR`: the service's exact text, NUL-terminated; NULL
    /// otherwise.
    pub error_text: *const c_char,
    /// Length of `error_text` without the NUL.
    pub error_text_len: usize,
}

/// Decodes a response `payload` of `len` bytes to a request of `verb` (a `mqstate_verb`;
/// `MQSTATE_VERB_ANY` accepts every form, any other verb refuses forms it cannot receive as
/// `MQSTATE_STATUS_MALFORMED`). A store error (`-ERR …`) is a successful decode of kind
/// `MQSTATE_RESPONSE_KIND_ERROR`, not a failure of this call.
///
/// On success `*out` is a new handle: read it with `mqstate_response_get`, free it with
/// `mqstate_response_free`. On error `*out` is NULL.
///
/// # Safety
/// `payload` must point to `len` readable bytes (or be NULL with `len` 0); `out` must point
/// to a writable `mqstate_response *`.
#[unsafe(no_mangle)]
pub extern "C" fn mqstate_decode_response(
    payload: *const u8,
    len: usize,
    verb: u32,
    out: *mut *mut mqstate_response,
) -> mqstate_status {
    boundary(|| {
        let (out, payload) = (
            out_arg(out, ptr::null_mut(), "out")?,
            bytes_arg(payload, len, "payload")?,
        );
        let payload = Bytes::copy_from_slice(payload);
        let response = match verb {
            v if v == mqstate_verb::Any as u32 => Response::decode(&payload)?,
            v => {
                let verb = Verb::ALL
                    .into_iter()
                    .find(|verb| mqstate_verb::of(*verb) as u32 == v)
                    .ok_or_else(|| Failure::invalid(format!("{v} is not a mqstate_verb")))?;
                Response::decode_for(verb, &payload)?
            }
        };
        let error_text = match &response {
            Response::Error(e) => with_nul(e.text().as_bytes()),
            _ => Box::default(),
        };
        *out = new_handle(mqstate_response {
            response,
            error_text,
        });
        Ok(())
    })
}

/// Describes `response` in `*out` (pointers borrow from `response`); on failure `*out` is
/// all zero (`MQSTATE_RESPONSE_KIND_NONE`, NULL pointers).
///
/// # Safety
/// `response` must be a live handle from `mqstate_decode_response`; `out` must point to a
/// writable `mqstate_response_info`.
#[unsafe(no_mangle)]
pub extern "C" fn mqstate_response_get(
    response: *const mqstate_response,
    out: *mut mqstate_response_info,
) -> mqstate_status {
    boundary(|| {
        let out = out_ptr(out)?;
        let mut info = mqstate_response_info {
            kind: mqstate_response_kind::None,
            value: ptr::null(),
            value_len: 0,
            count: 0,
            error: mqstate_status::Ok,
            error_text: ptr::null(),
            error_text_len: 0,
        };
        // SAFETY: `out` is non-null and writable per the caller: reset before any failure.
        unsafe { out.write(info) };
        let handle = handle_arg(response, "response")?;
        match &handle.response {
            Response::Ok => info.kind = mqstate_response_kind::Ok,
            Response::NotApplied => info.kind = mqstate_response_kind::NotApplied,
            Response::NotFound => info.kind = mqstate_response_kind::NotFound,
            Response::Value(v) => {
                info.kind = mqstate_response_kind::Value;
                (info.value, info.value_len) = (bytes_ptr(v), v.len());
            }
            Response::Count(n) => (info.kind, info.count) = (mqstate_response_kind::Count, *n),
            Response::Page(page) => {
                info.kind = mqstate_response_kind::Keys;
                info.count = page.keys.len() as u64;
            }
            Response::Error(e) => {
                info.kind = mqstate_response_kind::Error;
                info.error = mqstate_status::of_store(e.kind());
                info.error_text = handle.error_text.as_ptr().cast();
                info.error_text_len = handle.error_text.len() - 1;
            }
        }
        // SAFETY: `out` is non-null and writable per the caller; the info has no drop glue.
        unsafe { out.write(info) };
        Ok(())
    })
}

/// The key at `index` of a SCAN page (`MQSTATE_RESPONSE_KIND_KEYS`): `*len` bytes (not
/// NUL-terminated) borrowed from `response`, valid until it is freed. NULL (and `*len` 0)
/// when `response` is NULL, is not a page, or has no key at `index` (the page holds
/// `mqstate_response_info.count` keys); an empty key is a non-NULL pointer with length 0.
///
/// # Safety
/// `response` must be NULL or a live handle from `mqstate_decode_response`; `len` NULL or
/// writable.
#[unsafe(no_mangle)]
pub extern "C" fn mqstate_response_key(
    response: *const mqstate_response,
    index: usize,
    len: *mut usize,
) -> *const u8 {
    let key = match maybe(response).map(|r| &r.response) {
        Some(Response::Page(page)) => page.keys.get(index),
        _ => None,
    };
    crate::ffi::put(len, key.map_or(0, |k| k.len()));
    key.map_or(ptr::null(), |k| bytes_ptr(k))
}

/// The continuation token of a SCAN page: `*len` bytes borrowed from `response`, valid until
/// it is freed. NULL (and `*len` 0) on the final page, or when `response` is NULL or not a
/// page; an empty token is a non-NULL pointer with length 0. Send it back byte for byte with
/// `mqstate_encode_scan` to ask for the next page.
///
/// # Safety
/// `response` must be NULL or a live handle from `mqstate_decode_response`; `len` NULL or
/// writable.
#[unsafe(no_mangle)]
pub extern "C" fn mqstate_response_token(
    response: *const mqstate_response,
    len: *mut usize,
) -> *const u8 {
    let token = match maybe(response).map(|r| &r.response) {
        Some(Response::Page(page)) => page.token.as_ref(),
        _ => None,
    };
    crate::ffi::put(len, token.map_or(0, |t| t.len()));
    token.map_or(ptr::null(), |t| bytes_ptr(t))
}

/// Frees a response handle. NULL is ignored.
///
/// # Safety
/// `response` must be NULL or a live handle from `mqstate_decode_response`, not used again.
#[unsafe(no_mangle)]
pub extern "C" fn mqstate_response_free(response: *mut mqstate_response) {
    free_handle(response)
}
