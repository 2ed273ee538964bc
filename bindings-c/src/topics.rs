//! Topic names for C (spec §2 and §7): the request topic, response topics and their check,
//! notification filters and topics in both directions, and the hex encoding they use.
//!
//! Text results go into the caller's buffer (with the needed length reported, as everywhere
//! in this API); byte results come back as a library-owned `mqstate_bytes`.

use std::ffi::{CStr, c_char};

use mqstate::topics;

use crate::ffi::{bytes_arg, mqstate_bytes, out_arg, str_arg, text_out};
use crate::status::{boundary, mqstate_status};

/// The request topic, NUL-terminated. The header's `MQSTATE_REQUEST_TOPIC` macro (written in
/// `cbindgen.toml`, since cbindgen cannot export string constants) holds the same text; the
/// tests compare both with the core and the shared vectors.
const REQUEST_TOPIC: &CStr = c"statestore/v1/FA9AE35F-2F64-47CD-9BFF-08E2B32A0FE8/command/invoke";

/// The topic every request is published to, as a static NUL-terminated string (the same
/// text as the `MQSTATE_REQUEST_TOPIC` macro). Never NULL; not to be freed.
#[unsafe(no_mangle)]
pub extern "C" fn mqstate_request_topic() -> *const c_char {
    REQUEST_TOPIC.as_ptr()
}

/// Writes the default response topic of `client_id` (NUL-terminated UTF-8),
/// `clients/{clientId}/services/statestore/v1/…/command/invoke/response`, and a NUL into
/// `buf` of `len` bytes; `*out_len` (if not NULL) receives the text length even when the
/// buffer is too small (`MQSTATE_STATUS_BUFFER_TOO_SMALL`). `buf` may be NULL with `len` 0.
/// On any failure `buf` holds the empty string (when `len` is not 0), and `*out_len` is 0
/// unless the buffer was too small.
///
/// # Safety
/// `client_id` must be a NUL-terminated string; `buf` must point to `len` writable bytes;
/// `out_len` must be NULL or writable.
#[unsafe(no_mangle)]
pub extern "C" fn mqstate_response_topic(
    client_id: *const c_char,
    buf: *mut c_char,
    len: usize,
    out_len: *mut usize,
) -> mqstate_status {
    boundary(|| {
        text_out(buf, len, out_len, || {
            Ok(topics::response_topic(str_arg(client_id, "client_id")?))
        })
    })
}

/// Writes the notification subscription filter of `client_id` into `buf` (buffer rules as
/// for `mqstate_response_topic`).
///
/// # Safety
/// As for `mqstate_response_topic`.
#[unsafe(no_mangle)]
pub extern "C" fn mqstate_notification_filter(
    client_id: *const c_char,
    buf: *mut c_char,
    len: usize,
    out_len: *mut usize,
) -> mqstate_status {
    boundary(|| {
        text_out(buf, len, out_len, || {
            Ok(topics::notification_filter(str_arg(
                client_id,
                "client_id",
            )?))
        })
    })
}

/// Writes the topic on which the service notifies `client_id` about `key` (`key_len` bytes)
/// into `buf` (buffer rules as for `mqstate_response_topic`).
///
/// # Safety
/// As for `mqstate_response_topic`; `key` must point to `key_len` readable bytes.
#[unsafe(no_mangle)]
pub extern "C" fn mqstate_notification_topic(
    client_id: *const c_char,
    key: *const u8,
    key_len: usize,
    buf: *mut c_char,
    len: usize,
    out_len: *mut usize,
) -> mqstate_status {
    boundary(|| {
        text_out(buf, len, out_len, || {
            let client_id = str_arg(client_id, "client_id")?;
            Ok(topics::notification_topic(
                client_id,
                bytes_arg(key, key_len, "key")?,
            ))
        })
    })
}

/// Splits a notification `topic` (NUL-terminated) into the client id (UTF-8) and the key it
/// names, each in a new `mqstate_bytes` (NUL-terminated; free both with
/// `mqstate_bytes_free`). A topic of another shape, bad hex, an empty key or a client id that
/// is not UTF-8 is `MQSTATE_STATUS_MALFORMED`; on error both outputs are `{NULL, 0}`.
///
/// # Safety
/// `topic` must be a NUL-terminated string; `out_client_id` and `out_key` must point to
/// writable `mqstate_bytes`.
#[unsafe(no_mangle)]
pub extern "C" fn mqstate_parse_notification_topic(
    topic: *const c_char,
    out_client_id: *mut mqstate_bytes,
    out_key: *mut mqstate_bytes,
) -> mqstate_status {
    boundary(|| {
        let (client_out, key_out) = (
            out_arg(out_client_id, mqstate_bytes::EMPTY, "out_client_id"),
            out_arg(out_key, mqstate_bytes::EMPTY, "out_key"),
        );
        let (client_out, key_out) = (client_out?, key_out?);
        let topic = str_arg(topic, "topic")?;
        let (client_id, key) = topics::parse_notification_topic(topic)?;
        *client_out = mqstate_bytes::from_vec(client_id.into_bytes());
        *key_out = mqstate_bytes::from_vec(key);
        Ok(())
    })
}

/// Checks a response topic (NUL-terminated) a client wants to use: `MQSTATE_STATUS_OK`, or
/// `MQSTATE_STATUS_INVALID_ARGUMENT` for the empty topic, the request topic, anything under
/// the notification prefix, and wildcards.
///
/// # Safety
/// `topic` must be a NUL-terminated string.
#[unsafe(no_mangle)]
pub extern "C" fn mqstate_check_response_topic(topic: *const c_char) -> mqstate_status {
    boundary(|| {
        let topic = str_arg(topic, "topic")?;
        Ok(topics::check_response_topic(topic)?)
    })
}

/// Writes `bytes` (`bytes_len` of them) as upper-case hex and a NUL into `buf` (buffer rules
/// as for `mqstate_response_topic`; the text length is `2 * bytes_len`).
///
/// # Safety
/// `bytes` must point to `bytes_len` readable bytes; `buf` to `len` writable bytes; `out_len`
/// must be NULL or writable.
#[unsafe(no_mangle)]
pub extern "C" fn mqstate_hex_encode(
    bytes: *const u8,
    bytes_len: usize,
    buf: *mut c_char,
    len: usize,
    out_len: *mut usize,
) -> mqstate_status {
    boundary(|| {
        text_out(buf, len, out_len, || {
            Ok(topics::hex_encode(bytes_arg(bytes, bytes_len, "bytes")?))
        })
    })
}

/// Decodes hex `text` (NUL-terminated, either case) into a new `mqstate_bytes` (free with
/// `mqstate_bytes_free`). An odd number of digits or a non-hex character is
/// `MQSTATE_STATUS_MALFORMED`; `*out` is `{NULL, 0}` on error.
///
/// # Safety
/// `text` must be a NUL-terminated string; `out` must point to a writable `mqstate_bytes`.
#[unsafe(no_mangle)]
pub extern "C" fn mqstate_hex_decode(
    text: *const c_char,
    out: *mut mqstate_bytes,
) -> mqstate_status {
    boundary(|| {
        let (out, text) = (
            out_arg(out, mqstate_bytes::EMPTY, "out")?,
            str_arg(text, "text")?,
        );
        *out = mqstate_bytes::from_vec(topics::hex_decode(text)?);
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_topic_matches_the_core() {
        assert_eq!(REQUEST_TOPIC.to_str().unwrap(), topics::REQUEST_TOPIC);
        let config = include_str!("../cbindgen.toml");
        let define = format!(
            "#define MQSTATE_REQUEST_TOPIC \"{}\"",
            topics::REQUEST_TOPIC
        );
        assert!(config.contains(&define), "cbindgen.toml lacks {define}");
        // SAFETY: a static NUL-terminated string.
        let c = unsafe { CStr::from_ptr(mqstate_request_topic()) };
        assert_eq!(c.to_str().unwrap(), topics::REQUEST_TOPIC);
    }
}
