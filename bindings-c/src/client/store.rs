//! `mqstate_client`: connect, set, get, delete, vdel, observe, close. Every call blocks the
//! calling thread (never a library thread: calling from inside a callback is refused with
//! `MQSTATE_STATUS_UNSUPPORTED`) with a timeout in milliseconds, on the runtime the library
//! owns, and can be cancelled from another thread through a `mqstate_cancel` token.

use std::ffi::c_char;

use bytes::Bytes;
use mqstate::bridge::Store;
use mqstate::{DelOptions, GetOptions, Hlc, ObserveOptions, SetOptions, VdelOutcome};

use super::cancel::{mqstate_cancel, run};
use super::guard;
use super::settings::mqstate_settings;
use super::subscription::{mqstate_subscription, new_subscription};
use super::text::{mqstate_value, new_value, put, put_string, reset_string};
use crate::ffi::{bytes_arg, out_arg};
use crate::request::condition_arg;
use crate::status::{Failure, boundary, mqstate_status};

/// A connection to the state store (opaque; thread-safe: any number of threads may call
/// it at once). Close it with `mqstate_client_close`.
pub struct mqstate_client {
    guarded: guard::Guarded<Store>,
}

crate::handle!(mqstate_client, Store);

/// Options of `mqstate_client_set` (zero-initialise, then set what you need).
#[repr(C)]
pub struct mqstate_set_options {
    /// A `mqstate_set_condition`: `MQSTATE_SET_CONDITION_ALWAYS` (0), `_NX`, `_NEX`.
    pub condition: u32,
    /// Expire the key this many milliseconds after the SET (0: never).
    pub expiry_ms: u64,
    /// Write fenced with this token (HLC text), or NULL.
    pub fencing_token: *const c_char,
    /// Ask the service to persist the value.
    pub persist: bool,
    /// The request's timeout in milliseconds (0: the client's `request_timeout`).
    pub timeout_ms: u32,
    /// Cancels the call when triggered from another thread, or NULL.
    pub cancel: *const mqstate_cancel,
}

/// Options of GET, DELETE, VDEL and observe (zero-initialise, then set what you need).
#[repr(C)]
pub struct mqstate_call_options {
    /// DELETE / VDEL fenced with this token (HLC text), or NULL.
    pub fencing_token: *const c_char,
    /// The request's timeout in milliseconds (0: the client's `request_timeout`).
    pub timeout_ms: u32,
    /// Cancels the call when triggered from another thread, or NULL.
    pub cancel: *const mqstate_cancel,
}

/// The outcome of `mqstate_client_vdel`.
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum mqstate_vdel_outcome {
    /// The key held the value and was deleted.
    Deleted = 0,
    /// There was no such key.
    NotFound = 1,
    /// The key holds another value; nothing was deleted.
    ValueMismatch = 2,
}

pub(crate) fn ms(ms: u64) -> Option<std::time::Duration> {
    (ms > 0).then(|| std::time::Duration::from_millis(ms))
}

/// The fencing token of an options struct.
///
/// # Safety
/// `token` must be NULL or a NUL-terminated string.
pub(crate) unsafe fn token_arg(token: *const c_char) -> Result<Option<Hlc>, Failure> {
    if token.is_null() {
        return Ok(None);
    }
    // SAFETY: per the caller.
    let text = unsafe { crate::ffi::str_arg(token, "fencing_token") }?;
    Ok(Some(Hlc::parse(text)?))
}

/// Reads a call-options pointer (NULL: defaults).
///
/// # Safety
/// `options` must be NULL or valid.
unsafe fn call_options<'a>(
    options: *const mqstate_call_options,
) -> Option<&'a mqstate_call_options> {
    // SAFETY: per the caller.
    unsafe { options.as_ref() }
}

/// Connects with `settings` (which stay the caller's), waiting up to `timeout_ms` (0: the
/// settings' `connect_timeout`). On success `*out` is the client.
///
/// Errors: `MQSTATE_STATUS_CONNECT_REFUSED` / `_CONNECT_TIMEOUT` (retry later),
/// `_CONNECT_UNAUTHORIZED` / `_TLS` (fix the settings), `_CONNECT_FAILED`, `_INVALID_ARGUMENT`.
///
/// # Safety
/// `settings` must be a live handle; `out` NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn mqstate_client_connect(
    settings: *const mqstate_settings,
    timeout_ms: u32,
    out: *mut *mut mqstate_client,
) -> mqstate_status {
    boundary(|| {
        // SAFETY: per the caller.
        let out = unsafe { out_arg(out, std::ptr::null_mut(), "out") }?;
        // SAFETY: per the caller.
        let settings = unsafe { guard::enter(settings, "settings") }?;
        let settings = settings.lock().unwrap_or_else(|e| e.into_inner()).clone();
        // SAFETY: no token.
        let store = unsafe { run(Store::connect(settings), timeout_ms, std::ptr::null()) }?;
        *out = guard::new(store);
        Ok(())
    })
}

/// Closes the connection and frees the client (NULL is ignored). Calls in flight on other
/// threads end with `MQSTATE_STATUS_CLOSED` and this waits for them to return; locks,
/// elections and subscriptions made from the client stay valid handles (their calls then
/// fail with `MQSTATE_STATUS_CLOSED`) until freed. Never call it from a mqstate callback.
///
/// # Safety
/// `client` must be NULL or a live client, closed once; no call may start on it afterwards.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn mqstate_client_close(client: *mut mqstate_client) {
    // SAFETY: per the caller.
    unsafe {
        guard::close(client, |store| {
            let _ = store.close().wait(None);
        })
    }
}

/// SET `key` (`key_len` bytes) to `value` (`value_len` bytes). `*applied` (may be NULL)
/// is false when the NX/NEX condition failed; `*version` (may be NULL) receives the new
/// version (free with `mqstate_string_free`; NULL when not applied). `options` may be NULL.
///
/// # Safety
/// Pointers must be NULL or valid for their lengths; `client` a live client.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn mqstate_client_set(
    client: *const mqstate_client,
    key: *const u8,
    key_len: usize,
    value: *const u8,
    value_len: usize,
    options: *const mqstate_set_options,
    applied: *mut bool,
    version: *mut *mut c_char,
) -> mqstate_status {
    boundary(|| {
        // SAFETY: per the caller.
        unsafe {
            reset_string(version);
            put(applied, false);
        }
        // SAFETY: per the caller.
        let store = unsafe { guard::enter(client, "client") }?;
        // SAFETY: per the caller.
        let (key, value) = unsafe {
            (
                bytes_arg(key, key_len, "key")?,
                bytes_arg(value, value_len, "value")?,
            )
        };
        // SAFETY: per the caller.
        let o = unsafe { options.as_ref() };
        let set = SetOptions {
            condition: condition_arg(o.map_or(0, |o| o.condition))?,
            expiry: ms(o.map_or(0, |o| o.expiry_ms)),
            // SAFETY: per the caller.
            fencing_token: unsafe { token_arg(o.map_or(std::ptr::null(), |o| o.fencing_token)) }?,
            persist: o.is_some_and(|o| o.persist),
            timeout: ms(u64::from(o.map_or(0, |o| o.timeout_ms))),
        };
        let call = store.set(
            Bytes::copy_from_slice(key),
            Bytes::copy_from_slice(value),
            set,
        );
        // SAFETY: per the caller.
        let outcome = unsafe { run(call, 0, o.map_or(std::ptr::null(), |o| o.cancel)) }?;
        // SAFETY: per the caller.
        unsafe {
            put(applied, outcome.applied);
            put_string(version, outcome.version.map(|v| v.to_text()).as_deref())?;
        }
        Ok(())
    })
}

/// GET `key`: `*out` is the value (free with `mqstate_value_free`), or NULL when the key
/// does not exist (that is `MQSTATE_STATUS_OK`). `options` may be NULL.
///
/// # Safety
/// Pointers must be NULL or valid; `client` a live client; `out` writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn mqstate_client_get(
    client: *const mqstate_client,
    key: *const u8,
    key_len: usize,
    options: *const mqstate_call_options,
    out: *mut *mut mqstate_value,
) -> mqstate_status {
    boundary(|| {
        // SAFETY: per the caller.
        let out = unsafe { out_arg(out, std::ptr::null_mut(), "out") }?;
        // SAFETY: per the caller.
        let store = unsafe { guard::enter(client, "client") }?;
        // SAFETY: per the caller.
        let key = unsafe { bytes_arg(key, key_len, "key") }?;
        // SAFETY: per the caller.
        let o = unsafe { call_options(options) };
        let get = GetOptions {
            timeout: ms(u64::from(o.map_or(0, |o| o.timeout_ms))),
        };
        let call = store.get(Bytes::copy_from_slice(key), get);
        // SAFETY: per the caller.
        if let Some(v) = unsafe { run(call, 0, o.map_or(std::ptr::null(), |o| o.cancel)) }? {
            *out = new_value(v);
        }
        Ok(())
    })
}

/// DELETE `key`: `*deleted` (may be NULL) is the number of keys deleted (0 or 1).
///
/// # Safety
/// Pointers must be NULL or valid; `client` a live client.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn mqstate_client_delete(
    client: *const mqstate_client,
    key: *const u8,
    key_len: usize,
    options: *const mqstate_call_options,
    deleted: *mut u64,
) -> mqstate_status {
    boundary(|| {
        // SAFETY: per the caller.
        unsafe { put(deleted, 0) };
        // SAFETY: per the caller.
        let store = unsafe { guard::enter(client, "client") }?;
        // SAFETY: per the caller.
        let key = unsafe { bytes_arg(key, key_len, "key") }?;
        // SAFETY: per the caller.
        let o = unsafe { call_options(options) };
        let del = DelOptions {
            // SAFETY: per the caller.
            fencing_token: unsafe { token_arg(o.map_or(std::ptr::null(), |o| o.fencing_token)) }?,
            timeout: ms(u64::from(o.map_or(0, |o| o.timeout_ms))),
        };
        let call = store.del(Bytes::copy_from_slice(key), del);
        // SAFETY: per the caller.
        let n = unsafe { run(call, 0, o.map_or(std::ptr::null(), |o| o.cancel)) }?;
        // SAFETY: per the caller.
        unsafe { put(deleted, n) };
        Ok(())
    })
}

/// VDEL: delete `key` only if it holds `value`; `*outcome` (may be NULL) says what happened.
///
/// # Safety
/// Pointers must be NULL or valid; `client` a live client.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn mqstate_client_vdel(
    client: *const mqstate_client,
    key: *const u8,
    key_len: usize,
    value: *const u8,
    value_len: usize,
    options: *const mqstate_call_options,
    outcome: *mut mqstate_vdel_outcome,
) -> mqstate_status {
    boundary(|| {
        // SAFETY: per the caller.
        let store = unsafe { guard::enter(client, "client") }?;
        // SAFETY: per the caller.
        let (key, value) = unsafe {
            (
                bytes_arg(key, key_len, "key")?,
                bytes_arg(value, value_len, "value")?,
            )
        };
        // SAFETY: per the caller.
        let o = unsafe { call_options(options) };
        let del = DelOptions {
            // SAFETY: per the caller.
            fencing_token: unsafe { token_arg(o.map_or(std::ptr::null(), |o| o.fencing_token)) }?,
            timeout: ms(u64::from(o.map_or(0, |o| o.timeout_ms))),
        };
        let call = store.vdel(
            Bytes::copy_from_slice(key),
            Bytes::copy_from_slice(value),
            del,
        );
        // SAFETY: per the caller.
        let got = unsafe { run(call, 0, o.map_or(std::ptr::null(), |o| o.cancel)) }?;
        let got = match got {
            VdelOutcome::Deleted => mqstate_vdel_outcome::Deleted,
            VdelOutcome::NotFound => mqstate_vdel_outcome::NotFound,
            VdelOutcome::ValueMismatch => mqstate_vdel_outcome::ValueMismatch,
        };
        // SAFETY: per the caller.
        unsafe { put(outcome, got) };
        Ok(())
    })
}

/// Observes `key`: `*out` is a subscription of its changes, registered (SUBACK, KEYNOTIFY,
/// GET) when this returns. Free it with `mqstate_subscription_free` (which sends STOP).
///
/// # Safety
/// Pointers must be NULL or valid; `client` a live client; `out` writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn mqstate_client_observe(
    client: *const mqstate_client,
    key: *const u8,
    key_len: usize,
    options: *const mqstate_call_options,
    out: *mut *mut mqstate_subscription,
) -> mqstate_status {
    boundary(|| {
        // SAFETY: per the caller.
        let out = unsafe { out_arg(out, std::ptr::null_mut(), "out") }?;
        // SAFETY: per the caller.
        let store = unsafe { guard::enter(client, "client") }?;
        // SAFETY: per the caller.
        let key = unsafe { bytes_arg(key, key_len, "key") }?;
        // SAFETY: per the caller.
        let o = unsafe { call_options(options) };
        let observe = ObserveOptions {
            timeout: ms(u64::from(o.map_or(0, |o| o.timeout_ms))),
        };
        let call = store.observe(Bytes::copy_from_slice(key), observe);
        // SAFETY: per the caller.
        let sub = unsafe { run(call, 0, o.map_or(std::ptr::null(), |o| o.cancel)) }?;
        *out = new_subscription(sub);
        Ok(())
    })
}

/// Used by lock and election functions: enters a client handle.
///
/// # Safety
/// `client` must be NULL or a live client.
pub(crate) unsafe fn enter_client<'a>(
    client: *const mqstate_client,
) -> Result<guard::Entered<'a, Store>, Failure> {
    // SAFETY: per the caller.
    unsafe { guard::enter(client, "client") }
}
