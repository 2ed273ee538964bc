//! `mqstate_lock`: a leased lock on one key — try-acquire, acquire (waiting), renew,
//! automatic renewal, release, holder, fencing token, holder and status subscriptions —
//! over the core's [`LockHandle`]. The fenced edit with its C callback is [`edit`].
//!
//! Durations follow [`timeout`](super::timeout): a `lease_ms` of 0 is the lock's default
//! lease (`mqstate_lock_options.lease_ms`, else the core's `DEFAULT_LEASE`), an acquire's
//! `timeout_ms` of 0 is "do not wait" (one try), `MQSTATE_WAIT_FOREVER` a wait without limit. The other calls are
//! single requests, each bounded by the client's `request_timeout`, as in every language.

pub mod edit;

use std::ffi::{CString, c_char};

use mqstate::bridge::LockHandle;
use mqstate::lock::LockOptions;
use mqstate::{Error, ErrorKind};

use super::call::{flag_call, local_subscription, opt_str, subscription_call, text_call, wait};
use super::cancel::{mqstate_cancel, run};
use super::guard;
use super::handle::{enter_client, mqstate_client};
use super::subscription::mqstate_subscription;
use super::text::{put_string, reset_string};
use super::timeout;
use crate::ffi::{bytes_arg, maybe, out_arg, put};
use crate::status::{Failure, boundary, mqstate_status};

/// A leased lock (opaque; thread-safe). Free it with `mqstate_lock_free`.
pub struct mqstate_lock {
    guarded: guard::Guarded<LockData>,
}

crate::handle!(mqstate_lock, LockData);

/// A lock and its holder id as C text.
pub(crate) struct LockData {
    lock: LockHandle,
    holder_id: CString,
}

impl std::ops::Deref for LockData {
    type Target = LockHandle;
    fn deref(&self) -> &LockHandle {
        &self.lock
    }
}

/// Options of `mqstate_lock_new` (zero-initialise; NULL and 0 mean the defaults).
#[repr(C)]
pub struct mqstate_lock_options {
    /// The holder id written as the lock's value; NULL: the client id.
    pub holder: *const c_char,
    /// A session id: the holder id becomes `holder:session`; NULL: none.
    pub session_id: *const c_char,
    /// Renew automatically this often (ms) after each successful acquire; 0: never.
    pub auto_renew_ms: u64,
    /// The lease (ms) of calls on this lock whose `lease_ms` is 0; 0: the core's default
    /// lease (10 s, `mqstate::lock::DEFAULT_LEASE`, the same in every language).
    pub lease_ms: u64,
}

/// A lock on `key` made from `client` (`options` may be NULL: the defaults); nothing is
/// sent yet. Free it with `mqstate_lock_free`. The lock outlives its client only in the
/// sense that its calls then fail with `CLOSED`. On failure `*out` is NULL.
///
/// # Safety
/// `client` must be a live client; `key` valid for `key_len`; `options` NULL or valid;
/// `out` writable.
#[unsafe(no_mangle)]
pub extern "C" fn mqstate_lock_new(
    client: *const mqstate_client,
    key: *const u8,
    key_len: usize,
    options: *const mqstate_lock_options,
    out: *mut *mut mqstate_lock,
) -> mqstate_status {
    boundary(|| {
        let out = out_arg(out, std::ptr::null_mut(), "out")?;
        let store = enter_client(client)?;
        let key = bytes_arg(key, key_len, "key")?;
        let o = maybe(options);
        let options = LockOptions {
            holder: opt_str(o.map_or(std::ptr::null(), |o| o.holder), "holder")?,
            session_id: opt_str(o.map_or(std::ptr::null(), |o| o.session_id), "session_id")?,
            auto_renew: timeout::option(o.map_or(0, |o| o.auto_renew_ms)),
            lease: timeout::option(o.map_or(0, |o| o.lease_ms)),
        };
        let lock = store.lock(key, options)?;
        let holder_id =
            CString::new(lock.holder_id()).map_err(|_| Failure::invalid("holder has a NUL"))?;
        *out = guard::new(LockData { lock, holder_id });
        Ok(())
    })
}

/// Tries once to take the lock for `lease_ms` (0: the lock's default lease): `*acquired`
/// says whether it did and `*token` (may be NULL; free with `mqstate_string_free`) is the
/// fencing token. On failure `*acquired` is false and `*token` NULL.
///
/// # Safety
/// `lock` must be a live lock; outs NULL or writable.
#[unsafe(no_mangle)]
pub extern "C" fn mqstate_lock_try_acquire(
    lock: *const mqstate_lock,
    lease_ms: u64,
    acquired: *mut bool,
    token: *mut *mut c_char,
) -> mqstate_status {
    boundary(|| {
        put(acquired, false);
        reset_string(token);
        let lock = guard::enter(lock, "lock")?;
        let got = wait(lock.try_acquire(timeout::option(lease_ms)))?;
        put(acquired, got.is_some());
        put_string(token, got.map(|t| t.to_text()).as_deref())?;
        Ok(())
    })
}

/// Takes the lock for `lease_ms` (0: the lock's default lease), waiting up to `timeout_ms`
/// for it (0: do not wait, one try only; `MQSTATE_WAIT_FOREVER`: without limit); `MQSTATE_STATUS_TIMEOUT` when someone
/// else kept it, `MQSTATE_STATUS_CANCELLED` when `cancel` (may be NULL) was triggered.
/// `*token` (may be NULL) receives the fencing token; NULL on failure.
///
/// # Safety
/// `lock` must be a live lock; `cancel` NULL or live; `token` NULL or writable.
#[unsafe(no_mangle)]
pub extern "C" fn mqstate_lock_acquire(
    lock: *const mqstate_lock,
    lease_ms: u64,
    timeout_ms: u32,
    cancel: *const mqstate_cancel,
    token: *mut *mut c_char,
) -> mqstate_status {
    boundary(|| {
        reset_string(token);
        let lock = guard::enter(lock, "lock")?;
        let acquire = || lock.acquire(timeout::option(lease_ms), timeout::wait(timeout_ms));
        let got = run(cancel, acquire)?;
        put_string(token, Some(&got.to_text()))
    })
}

/// Renews the held lease: `*renewed` false when the lock is not held any more; `*token`
/// (may be NULL) the new fencing token. On failure `*renewed` is false and `*token` NULL.
///
/// # Safety
/// `lock` must be a live lock; outs NULL or writable.
#[unsafe(no_mangle)]
pub extern "C" fn mqstate_lock_renew(
    lock: *const mqstate_lock,
    renewed: *mut bool,
    token: *mut *mut c_char,
) -> mqstate_status {
    boundary(|| {
        put(renewed, false);
        reset_string(token);
        let lock = guard::enter(lock, "lock")?;
        let got = wait(lock.renew())?;
        put(renewed, got.is_some());
        put_string(token, got.map(|t| t.to_text()).as_deref())?;
        Ok(())
    })
}

/// Releases the lock (stops renewal; deletes the lock key if it holds our id); `*released`
/// (may be NULL) is true when our hold was deleted, false on failure.
///
/// # Safety
/// `lock` must be a live lock; `released` NULL or writable.
#[unsafe(no_mangle)]
pub extern "C" fn mqstate_lock_release(
    lock: *const mqstate_lock,
    released: *mut bool,
) -> mqstate_status {
    flag_call(lock, "lock", released, |l| l.release())
}

/// The current holder id in `*holder` (free with `mqstate_string_free`), NULL when free or
/// on failure.
///
/// # Safety
/// `lock` must be a live lock; `holder` writable.
#[unsafe(no_mangle)]
pub extern "C" fn mqstate_lock_holder(
    lock: *const mqstate_lock,
    holder: *mut *mut c_char,
) -> mqstate_status {
    text_call(lock, "lock", holder, |l| l.holder())
}

/// The current fencing token in `*token` (free with `mqstate_string_free`) while the lock is
/// held; `MQSTATE_STATUS_NOT_HELD` (and `*token` NULL) otherwise.
///
/// # Safety
/// `lock` must be a live lock; `token` writable.
#[unsafe(no_mangle)]
pub extern "C" fn mqstate_lock_fencing_token(
    lock: *const mqstate_lock,
    token: *mut *mut c_char,
) -> mqstate_status {
    boundary(|| {
        let token = out_arg(token, std::ptr::null_mut(), "token")?;
        let lock = guard::enter(lock, "lock")?;
        let held = lock
            .fencing_token()
            .ok_or_else(|| Error::new(ErrorKind::NotHeld, "the lock is not held"))?;
        put_string(token, Some(&held.to_text()))
    })
}

/// The holder id this lock writes (the client id, or `client_id:session_id`), valid while
/// the lock lives; NULL for a NULL lock.
///
/// # Safety
/// `lock` must be NULL or a live lock.
#[unsafe(no_mangle)]
pub extern "C" fn mqstate_lock_holder_id(lock: *const mqstate_lock) -> *const c_char {
    match maybe(lock) {
        Some(l) => guard::Handle::guarded(l).inner.holder_id.as_ptr(),
        None => std::ptr::null(),
    }
}

/// The lock's key (`*len` bytes, may be NULL), valid while the lock lives; NULL (and
/// `*len` 0) for a NULL lock.
///
/// # Safety
/// `lock` must be NULL or a live lock; `len` NULL or writable.
#[unsafe(no_mangle)]
pub extern "C" fn mqstate_lock_key(lock: *const mqstate_lock, len: *mut usize) -> *const u8 {
    let key = maybe(lock).map(|l| guard::Handle::guarded(l).inner.lock.key());
    put(len, key.map_or(0, |k| k.len()));
    key.map_or(std::ptr::null(), |k| k.as_ptr())
}

/// Sets the automatic renewal period (ms) from the next acquire on: the lock then renews
/// itself this often while held; 0: never (as `mqstate_lock_options.auto_renew_ms`).
///
/// # Safety
/// `lock` must be a live lock.
#[unsafe(no_mangle)]
pub extern "C" fn mqstate_lock_set_auto_renew(
    lock: *const mqstate_lock,
    period_ms: u64,
) -> mqstate_status {
    boundary(|| {
        let lock = guard::enter(lock, "lock")?;
        lock.set_auto_renew(timeout::option(period_ms))?;
        Ok(())
    })
}

/// Whether the lock is held now (acquired, not lost or released, lease not run out).
///
/// # Safety
/// `lock` must be NULL or a live lock.
#[unsafe(no_mangle)]
pub extern "C" fn mqstate_lock_is_held(lock: *const mqstate_lock) -> bool {
    guard::enter(lock, "lock").is_ok_and(|l| l.is_held())
}

/// Holder changes of this lock's key (`HOLDER` events): the current holder first, then each
/// change. `*out` is NULL on failure.
///
/// # Safety
/// `lock` must be a live lock; `out` writable.
#[unsafe(no_mangle)]
pub extern "C" fn mqstate_lock_watch_holder(
    lock: *const mqstate_lock,
    out: *mut *mut mqstate_subscription,
) -> mqstate_status {
    subscription_call(lock, "lock", out, |l| l.watch_holder())
}

/// This lock's own status: the current one first, then each change (`HELD`, `NOT_HELD`,
/// `LOST` events). `*out` is NULL on failure.
///
/// # Safety
/// `lock` must be a live lock; `out` writable.
#[unsafe(no_mangle)]
pub extern "C" fn mqstate_lock_watch_status(
    lock: *const mqstate_lock,
    out: *mut *mut mqstate_subscription,
) -> mqstate_status {
    local_subscription(lock, "lock", out, |l| l.watch_status())
}

/// Frees a lock (NULL is ignored): stops its renewal; the lease runs out on its own unless
/// it was released.
///
/// # Safety
/// `lock` must be NULL or a live lock, freed once.
#[unsafe(no_mangle)]
pub extern "C" fn mqstate_lock_free(lock: *mut mqstate_lock) {
    guard::close(lock, |_| {})
}
