//! Notification decoding for C (spec §7): topic and payload in, an opaque
//! `mqstate_notification` out, described by a `mqstate_notification_info` whose pointers
//! borrow from the handle. The key comes from the topic, which names it authoritatively.

use std::ffi::c_char;
use std::ptr;

use bytes::Bytes;
use mqstate::codec::{KeyEvent, Notification};

use crate::ffi::{
    bytes_arg, bytes_ptr, free_handle, handle_arg, new_handle, out_arg, out_ptr, str_arg, with_nul,
};
use crate::status::{boundary, mqstate_status};

/// What happened to an observed key.
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum mqstate_event_kind {
    /// No event: what `mqstate_notification_get` leaves in `out` when it fails.
    None = 0,
    /// The key was set (`value`, `value_len`).
    Set = 1,
    /// The key was deleted.
    Delete = 2,
}

/// A decoded notification (opaque). Free with `mqstate_notification_free`.
pub struct mqstate_notification {
    notification: Notification,
    client_id: Box<[u8]>,
}

/// A decoded notification described for C; pointers borrow from the handle.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct mqstate_notification_info {
    /// Set or delete.
    pub kind: mqstate_event_kind,
    /// The client id the notification is addressed to, NUL-terminated UTF-8.
    pub client_id: *const c_char,
    /// Length of `client_id` without the NUL.
    pub client_id_len: usize,
    /// The key that changed (from the topic).
    pub key: *const u8,
    /// Length of `key`.
    pub key_len: usize,
    /// `MQSTATE_EVENT_KIND_SET`: the new value; NULL otherwise.
    pub value: *const u8,
    /// Length of `value`.
    pub value_len: usize,
}

/// Decodes a notification from its `topic` (NUL-terminated UTF-8) and `payload` of `len`
/// bytes. Bad hex in the topic, a topic of another shape or a bad payload is
/// `MQSTATE_STATUS_MALFORMED`. On success `*out` is a new handle (read it with
/// `mqstate_notification_get`, free it with `mqstate_notification_free`); on error NULL.
///
/// # Safety
/// `topic` must be a NUL-terminated string; `payload` must point to `len` readable bytes;
/// `out` must point to a writable `mqstate_notification *`.
#[unsafe(no_mangle)]
pub extern "C" fn mqstate_decode_notification(
    topic: *const c_char,
    payload: *const u8,
    len: usize,
    out: *mut *mut mqstate_notification,
) -> mqstate_status {
    boundary(|| {
        let (out, topic, payload) = (
            out_arg(out, ptr::null_mut(), "out")?,
            str_arg(topic, "topic")?,
            bytes_arg(payload, len, "payload")?,
        );
        let notification = Notification::decode(topic, &Bytes::copy_from_slice(payload))?;
        let client_id = with_nul(notification.client_id.as_bytes());
        *out = new_handle(mqstate_notification {
            notification,
            client_id,
        });
        Ok(())
    })
}

/// Describes `notification` in `*out` (pointers borrow from `notification`); on failure
/// `*out` is all zero (`MQSTATE_EVENT_KIND_NONE`, NULL pointers).
///
/// # Safety
/// `notification` must be a live handle; `out` must point to a writable
/// `mqstate_notification_info`.
#[unsafe(no_mangle)]
pub extern "C" fn mqstate_notification_get(
    notification: *const mqstate_notification,
    out: *mut mqstate_notification_info,
) -> mqstate_status {
    boundary(|| {
        let out = out_ptr(out)?;
        let none = mqstate_notification_info {
            kind: mqstate_event_kind::None,
            client_id: ptr::null(),
            client_id_len: 0,
            key: ptr::null(),
            key_len: 0,
            value: ptr::null(),
            value_len: 0,
        };
        // SAFETY: `out` is non-null and writable per the caller: reset before any failure.
        unsafe { out.write(none) };
        let handle = handle_arg(notification, "notification")?;
        let n = &handle.notification;
        let (kind, value, value_len) = match &n.event {
            KeyEvent::Set(v) => (mqstate_event_kind::Set, bytes_ptr(v), v.len()),
            KeyEvent::Delete => (mqstate_event_kind::Delete, ptr::null(), 0),
        };
        let info = mqstate_notification_info {
            kind,
            client_id: handle.client_id.as_ptr().cast(),
            client_id_len: handle.client_id.len() - 1,
            key: bytes_ptr(&n.key),
            key_len: n.key.len(),
            value,
            value_len,
        };
        // SAFETY: `out` is non-null and writable per the caller; the info has no drop glue.
        unsafe { out.write(info) };
        Ok(())
    })
}

/// Frees a notification handle. NULL is ignored.
///
/// # Safety
/// `notification` must be NULL or a live handle, not used again.
#[unsafe(no_mangle)]
pub extern "C" fn mqstate_notification_free(notification: *mut mqstate_notification) {
    free_handle(notification)
}
