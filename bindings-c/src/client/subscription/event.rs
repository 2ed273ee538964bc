//! One subscription event for C: its type, the opaque `mqstate_sub_event` made from the
//! core's [`Event`], and its accessors: one per field of each event in
//! `core/vocabulary.json` (`mqstate_sub_event_<field>`: kind, key, value, version, holder,
//! state, fencing_token, lease_ms, reason), plus C's resync and dropped-before. Pulled events are the caller's; a callback's belong to the library.

use std::ffi::{CString, c_char};

use mqstate::bridge::Event;
use mqstate::codec::KeyEvent;
use mqstate::lock::LockStatus;

use crate::ffi::{maybe, put};

/// What a subscription event is. `MQSTATE_SUB_EVENT_TYPE_NONE` (0) is no event: the type
/// of a NULL event.
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum mqstate_sub_event_type {
    /// No event (`mqstate_sub_event_type_of(NULL)`).
    None = 0,
    /// An observed key was set (`mqstate_sub_event_value` is the new value).
    KeySet = 1,
    /// An observed key was deleted (or expired).
    KeyDeleted = 2,
    /// A lock's holder (an election's leader) changed; `mqstate_sub_event_holder` is NULL
    /// when it became free.
    Holder = 3,
    /// The lock (candidate) is held now: `mqstate_sub_event_fencing_token` is the token,
    /// `mqstate_sub_event_lease_ms` the lease (term).
    Held = 4,
    /// The lock (candidate) is not held (never acquired, or released).
    NotHeld = 5,
    /// The lock was lost; `mqstate_sub_event_reason` says why (`expired`, `taken_over`,
    /// `renewal_failed`).
    Lost = 6,
    /// After a reconnection the subscription could not be restored yet: changes are being
    /// missed (`mqstate_sub_event_reason` says why).
    Degraded = 7,
    /// Restored after `DEGRADED`.
    Restored = 8,
}

/// One event (opaque): read it with the `mqstate_sub_event_*` accessors; free pulled events
/// with `mqstate_sub_event_free` (callback events belong to the library).
pub struct mqstate_sub_event {
    kind: mqstate_sub_event_type,
    key: Vec<u8>,
    value: Vec<u8>,
    version: Option<CString>,
    text: Option<CString>,
    fencing_token: Option<CString>,
    lease_ms: u64,
    resync: bool,
    dropped_before: u64,
}

fn cstring(s: impl Into<Vec<u8>>) -> Option<CString> {
    CString::new(s).ok()
}

impl mqstate_sub_event {
    /// The C form of a core event.
    pub(crate) fn of(event: Event) -> mqstate_sub_event {
        let mut e = mqstate_sub_event {
            kind: mqstate_sub_event_type::None,
            key: Vec::new(),
            value: Vec::new(),
            version: None,
            text: None,
            fencing_token: None,
            lease_ms: 0,
            resync: false,
            dropped_before: 0,
        };
        match event {
            Event::Change(n) => {
                e.key = n.key.to_vec();
                e.version = n.version.and_then(|v| cstring(v.to_text()));
                e.resync = n.resync;
                e.dropped_before = n.dropped_before;
                match n.event {
                    KeyEvent::Set(v) => {
                        e.kind = mqstate_sub_event_type::KeySet;
                        e.value = v.to_vec();
                    }
                    KeyEvent::Delete => e.kind = mqstate_sub_event_type::KeyDeleted,
                }
            }
            Event::Holder(h) => {
                e.kind = mqstate_sub_event_type::Holder;
                e.text = h.holder.and_then(cstring);
                e.version = h.version.and_then(|v| cstring(v.to_text()));
                e.resync = h.resync;
            }
            Event::Status(LockStatus::Held { token, lease, .. }) => {
                e.kind = mqstate_sub_event_type::Held;
                e.fencing_token = cstring(token.to_text());
                e.lease_ms = u64::try_from(lease.as_millis()).unwrap_or(u64::MAX);
            }
            Event::Status(LockStatus::NotHeld) => e.kind = mqstate_sub_event_type::NotHeld,
            Event::Status(LockStatus::Lost(reason)) => {
                e.kind = mqstate_sub_event_type::Lost;
                e.text = cstring(reason.as_str());
            }
            Event::Degraded { reason } => {
                e.kind = mqstate_sub_event_type::Degraded;
                e.text = cstring(reason);
            }
            Event::Restored => e.kind = mqstate_sub_event_type::Restored,
        }
        e
    }
}

/// The event's type (`MQSTATE_SUB_EVENT_TYPE_NONE` for NULL).
///
/// # Safety
/// `event` must be a live event.
#[unsafe(no_mangle)]
pub extern "C" fn mqstate_sub_event_type_of(
    event: *const mqstate_sub_event,
) -> mqstate_sub_event_type {
    maybe(event).map_or(mqstate_sub_event_type::None, |e| e.kind)
}

/// The kind of a key change: `MQSTATE_SUB_EVENT_TYPE_KEY_SET` or `_KEY_DELETED` (the
/// event's type); `MQSTATE_SUB_EVENT_TYPE_NONE` for any other event and for NULL.
///
/// # Safety
/// `event` must be NULL or a live event.
#[unsafe(no_mangle)]
pub extern "C" fn mqstate_sub_event_kind(
    event: *const mqstate_sub_event,
) -> mqstate_sub_event_type {
    use mqstate_sub_event_type::{KeyDeleted, KeySet, None};
    match mqstate_sub_event_type_of(event) {
        kind @ (KeySet | KeyDeleted) => kind,
        _ => None,
    }
}

/// The state of a lock's (candidate's) status event: `MQSTATE_SUB_EVENT_TYPE_HELD`,
/// `_NOT_HELD` or `_LOST` (the event's type); `MQSTATE_SUB_EVENT_TYPE_NONE` for any other
/// event and for NULL.
///
/// # Safety
/// `event` must be NULL or a live event.
#[unsafe(no_mangle)]
pub extern "C" fn mqstate_sub_event_state(
    event: *const mqstate_sub_event,
) -> mqstate_sub_event_type {
    use mqstate_sub_event_type::{Held, Lost, None, NotHeld};
    match mqstate_sub_event_type_of(event) {
        state @ (Held | NotHeld | Lost) => state,
        _ => None,
    }
}

/// The fencing token (HLC text) of a `HELD` event; NULL otherwise. Valid while the event
/// lives.
///
/// # Safety
/// `event` must be NULL or a live event.
#[unsafe(no_mangle)]
pub extern "C" fn mqstate_sub_event_fencing_token(
    event: *const mqstate_sub_event,
) -> *const c_char {
    let e = maybe(event);
    e.and_then(|e| e.fencing_token.as_ref())
        .map_or(std::ptr::null(), |c| c.as_ptr())
}

/// The lease (an election's term) of a `HELD` event in milliseconds; 0 otherwise.
///
/// # Safety
/// `event` must be NULL or a live event.
#[unsafe(no_mangle)]
pub extern "C" fn mqstate_sub_event_lease_ms(event: *const mqstate_sub_event) -> u64 {
    maybe(event).map_or(0, |e| e.lease_ms)
}

/// The key of a `KEY_SET`/`KEY_DELETED` event (`*len` bytes; valid while the event lives).
///
/// # Safety
/// `event` must be a live event; `len` NULL or writable.
#[unsafe(no_mangle)]
pub extern "C" fn mqstate_sub_event_key(
    event: *const mqstate_sub_event,
    len: *mut usize,
) -> *const u8 {
    let e = maybe(event);
    put(len, e.map_or(0, |e| e.key.len()));
    e.map_or(std::ptr::null(), |e| e.key.as_ptr())
}

/// The new value of a `KEY_SET` event (`*len` bytes; valid while the event lives).
///
/// # Safety
/// `event` must be a live event; `len` NULL or writable.
#[unsafe(no_mangle)]
pub extern "C" fn mqstate_sub_event_value(
    event: *const mqstate_sub_event,
    len: *mut usize,
) -> *const u8 {
    let e = maybe(event);
    put(len, e.map_or(0, |e| e.value.len()));
    e.map_or(std::ptr::null(), |e| e.value.as_ptr())
}

/// The version (HLC text) of a key change or holder change; NULL when there is none (a
/// `HELD` event's token is `mqstate_sub_event_fencing_token`). Valid while the event lives.
///
/// # Safety
/// `event` must be a live event.
#[unsafe(no_mangle)]
pub extern "C" fn mqstate_sub_event_version(event: *const mqstate_sub_event) -> *const c_char {
    let e = maybe(event);
    e.and_then(|e| e.version.as_ref())
        .map_or(std::ptr::null(), |c| c.as_ptr())
}

/// The holder of a `HOLDER` event (NULL: free). Valid while the event lives.
///
/// # Safety
/// `event` must be a live event.
#[unsafe(no_mangle)]
pub extern "C" fn mqstate_sub_event_holder(event: *const mqstate_sub_event) -> *const c_char {
    let e = maybe(event).filter(|e| e.kind == mqstate_sub_event_type::Holder);
    e.and_then(|e| e.text.as_ref())
        .map_or(std::ptr::null(), |c| c.as_ptr())
}

/// The reason of a `LOST` or `DEGRADED` event (NULL otherwise). Valid while the event lives.
///
/// # Safety
/// `event` must be a live event.
#[unsafe(no_mangle)]
pub extern "C" fn mqstate_sub_event_reason(event: *const mqstate_sub_event) -> *const c_char {
    let e = maybe(event).filter(|e| e.kind != mqstate_sub_event_type::Holder);
    e.and_then(|e| e.text.as_ref())
        .map_or(std::ptr::null(), |c| c.as_ptr())
}

/// Whether a change was found by a resynchronisation after a reconnection.
///
/// # Safety
/// `event` must be a live event.
#[unsafe(no_mangle)]
pub extern "C" fn mqstate_sub_event_resync(event: *const mqstate_sub_event) -> bool {
    maybe(event).is_some_and(|e| e.resync)
}

/// Events discarded before this one because the reader was too slow (the oldest go first).
///
/// # Safety
/// `event` must be a live event.
#[unsafe(no_mangle)]
pub extern "C" fn mqstate_sub_event_dropped_before(event: *const mqstate_sub_event) -> u64 {
    maybe(event).map_or(0, |e| e.dropped_before)
}

/// Frees an event from `mqstate_subscription_next` (NULL is ignored).
///
/// # Safety
/// `event` must be NULL or an event from `mqstate_subscription_next`, freed once.
#[unsafe(no_mangle)]
pub extern "C" fn mqstate_sub_event_free(event: *mut mqstate_sub_event) {
    crate::ffi::free_handle(event);
}
