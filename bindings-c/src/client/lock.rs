//! `mqstate_lock` and `mqstate_election`: leased locks (try-acquire, acquire, renew,
//! auto-renew, release, holder, fencing token, a fenced edit with a C callback that may
//! fail) and leader elections (campaign, try, resign, leader, is-leader). Waits take a
//! timeout in milliseconds (0: no limit of their own) and a cancellation token.

use std::ffi::{CString, c_char, c_void};
use std::sync::Arc;

use bytes::Bytes;
use mqstate::bridge::{Decide, ElectionHandle, LockHandle};
use mqstate::lock::{Edit, LockOptions};
use mqstate::{Error, ErrorKind, Versioned};

use super::cancel::{mqstate_cancel, run};
use super::guard;
use super::store::{enter_client, mqstate_client, ms};
use super::subscription::{mqstate_subscription, new_subscription};
use super::text::{put, put_string, reset_string};
use crate::ffi::{bytes_arg, out_arg, str_arg};
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

impl LockData {
    fn holder_id_c(&self) -> *const c_char {
        self.holder_id.as_ptr()
    }
}

/// A candidate in a leader election (opaque; thread-safe). Free it with
/// `mqstate_election_free`.
pub struct mqstate_election {
    guarded: guard::Guarded<ElectionHandle>,
}

crate::handle!(mqstate_election, ElectionHandle);

/// Options of `mqstate_lock_new` (zero-initialise; NULL pointers mean the defaults).
#[repr(C)]
pub struct mqstate_lock_options {
    /// The holder id written as the lock's value; NULL: the client id.
    pub holder: *const c_char,
    /// A session id: the holder id becomes `holder:session`; NULL: none.
    pub session_id: *const c_char,
    /// Renew automatically this often (ms) after each successful acquire; 0: never.
    pub auto_renew_ms: u64,
}

fn duration(ms_value: u64, what: &str) -> Result<std::time::Duration, Failure> {
    ms(ms_value).ok_or_else(|| Failure::invalid(format!("{what} must be positive")))
}

/// Optional text argument.
///
/// # Safety
/// `ptr` must be NULL or a NUL-terminated string.
unsafe fn opt_str(ptr: *const c_char, what: &str) -> Result<Option<String>, Failure> {
    if ptr.is_null() {
        return Ok(None);
    }
    // SAFETY: per the caller.
    Ok(Some(unsafe { str_arg(ptr, what) }?.to_owned()))
}

/// One blocking call on a handle whose result is a flag, written to an optional out-flag
/// (false first, so it is false on error).
///
/// # Safety
/// `handle` must be NULL or live; `out` NULL or writable.
unsafe fn flag_call<H: guard::Handle>(
    handle: *const H,
    what: &str,
    timeout_ms: u32,
    out: *mut bool,
    call: impl FnOnce(&H::Inner) -> Result<mqstate::bridge::Call<bool>, Failure>,
) -> mqstate_status {
    boundary(|| {
        // SAFETY: per the caller.
        unsafe { put(out, false) };
        // SAFETY: per the caller.
        let inner = unsafe { guard::enter(handle, what) }?;
        // SAFETY: no token.
        let got = unsafe { run(call(&inner)?, timeout_ms, std::ptr::null()) }?;
        // SAFETY: per the caller.
        unsafe { put(out, got) };
        Ok(())
    })
}

/// One blocking call on a handle whose result is optional text, written to `*out`
/// (NULL first; free with `mqstate_string_free`).
///
/// # Safety
/// `handle` must be NULL or live; `out` writable.
unsafe fn text_call<H: guard::Handle>(
    handle: *const H,
    what: &str,
    timeout_ms: u32,
    out: *mut *mut c_char,
    call: impl FnOnce(&H::Inner) -> mqstate::bridge::Call<Option<String>>,
) -> mqstate_status {
    boundary(|| {
        // SAFETY: per the caller.
        let out = unsafe { out_arg(out, std::ptr::null_mut(), "out") }?;
        // SAFETY: per the caller.
        let inner = unsafe { guard::enter(handle, what) }?;
        // SAFETY: no token.
        let got = unsafe { run(call(&inner), timeout_ms, std::ptr::null()) }?;
        // SAFETY: `out` is writable.
        unsafe { put_string(out, got.as_deref()) }
    })
}

/// One blocking call on a handle whose result is a subscription, written to `*out`.
///
/// # Safety
/// `handle` must be NULL or live; `out` writable.
unsafe fn subscription_call<H: guard::Handle>(
    handle: *const H,
    what: &str,
    timeout_ms: u32,
    out: *mut *mut mqstate_subscription,
    call: impl FnOnce(&H::Inner) -> mqstate::bridge::Call<mqstate::bridge::Subscription>,
) -> mqstate_status {
    boundary(|| {
        // SAFETY: per the caller.
        let out = unsafe { out_arg(out, std::ptr::null_mut(), "out") }?;
        // SAFETY: per the caller.
        let inner = unsafe { guard::enter(handle, what) }?;
        // SAFETY: no token.
        let sub = unsafe { run(call(&inner), timeout_ms, std::ptr::null()) }?;
        *out = new_subscription(sub);
        Ok(())
    })
}

/// A lock on `key` made from `client` (`options` may be NULL). The lock keeps working
/// after the client handle is closed only in the sense that its calls fail with `CLOSED`.
///
/// # Safety
/// `client` must be a live client; `key` valid for `key_len`; `out` writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn mqstate_lock_new(
    client: *const mqstate_client,
    key: *const u8,
    key_len: usize,
    options: *const mqstate_lock_options,
    out: *mut *mut mqstate_lock,
) -> mqstate_status {
    boundary(|| {
        // SAFETY: per the caller.
        let out = unsafe { out_arg(out, std::ptr::null_mut(), "out") }?;
        // SAFETY: per the caller.
        let store = unsafe { enter_client(client) }?;
        // SAFETY: per the caller.
        let key = unsafe { bytes_arg(key, key_len, "key") }?;
        // SAFETY: per the caller.
        let o = unsafe { options.as_ref() };
        let options = LockOptions {
            // SAFETY: per the caller.
            holder: unsafe { opt_str(o.map_or(std::ptr::null(), |o| o.holder), "holder") }?,
            // SAFETY: per the caller.
            session_id: unsafe {
                opt_str(o.map_or(std::ptr::null(), |o| o.session_id), "session_id")
            }?,
            auto_renew: ms(o.map_or(0, |o| o.auto_renew_ms)),
            lease: None,
        };
        let lock = store.lock(key, options)?;
        let holder_id =
            CString::new(lock.holder_id()).map_err(|_| Failure::invalid("holder has a NUL"))?;
        *out = guard::new(LockData { lock, holder_id });
        Ok(())
    })
}

/// Tries once to take the lock for `lease_ms`: `*acquired` says whether it did and `*token`
/// (may be NULL; free with `mqstate_string_free`) is the fencing token.
///
/// # Safety
/// `lock` must be a live lock; outs NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn mqstate_lock_try_acquire(
    lock: *const mqstate_lock,
    lease_ms: u64,
    timeout_ms: u32,
    acquired: *mut bool,
    token: *mut *mut c_char,
) -> mqstate_status {
    boundary(|| {
        // SAFETY: per the caller.
        unsafe {
            put(acquired, false);
            reset_string(token);
        }
        // SAFETY: per the caller.
        let lock = unsafe { guard::enter(lock, "lock") }?;
        let call = lock.try_acquire(Some(duration(lease_ms, "lease_ms")?));
        // SAFETY: no token.
        let got = unsafe { run(call, timeout_ms, std::ptr::null()) }?;
        // SAFETY: per the caller.
        unsafe {
            put(acquired, got.is_some());
            put_string(token, got.map(|t| t.to_text()).as_deref())?;
        }
        Ok(())
    })
}

/// Waits up to `timeout_ms` (0: without limit) for the lock; `MQSTATE_STATUS_TIMEOUT` when
/// someone else kept it, `MQSTATE_STATUS_CANCELLED` when `cancel` (may be NULL) was
/// triggered. `*token` (may be NULL) receives the fencing token.
///
/// # Safety
/// `lock` must be a live lock; `cancel` NULL or live; `token` NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn mqstate_lock_acquire(
    lock: *const mqstate_lock,
    lease_ms: u64,
    timeout_ms: u32,
    cancel: *const mqstate_cancel,
    token: *mut *mut c_char,
) -> mqstate_status {
    boundary(|| {
        // SAFETY: per the caller.
        unsafe { reset_string(token) };
        // SAFETY: per the caller.
        let lock = unsafe { guard::enter(lock, "lock") }?;
        let wait = ms(u64::from(timeout_ms));
        let call = lock.acquire(Some(duration(lease_ms, "lease_ms")?), wait);
        // SAFETY: per the caller.
        let got = unsafe { run(call, 0, cancel) }?;
        // SAFETY: per the caller.
        unsafe { put_string(token, Some(&got.to_text())) }
    })
}

/// Renews the held lease: `*renewed` false when the lock is not held any more; `*token`
/// (may be NULL) the new fencing token.
///
/// # Safety
/// `lock` must be a live lock; outs NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn mqstate_lock_renew(
    lock: *const mqstate_lock,
    timeout_ms: u32,
    renewed: *mut bool,
    token: *mut *mut c_char,
) -> mqstate_status {
    boundary(|| {
        // SAFETY: per the caller.
        unsafe {
            put(renewed, false);
            reset_string(token);
        }
        // SAFETY: per the caller.
        let lock = unsafe { guard::enter(lock, "lock") }?;
        // SAFETY: no token.
        let got = unsafe { run(lock.renew(), timeout_ms, std::ptr::null()) }?;
        // SAFETY: per the caller.
        unsafe {
            put(renewed, got.is_some());
            put_string(token, got.map(|t| t.to_text()).as_deref())?;
        }
        Ok(())
    })
}

/// Releases the lock (stops renewal; deletes the lock key if it holds our id); `*released`
/// (may be NULL) is true when our hold was deleted.
///
/// # Safety
/// `lock` must be a live lock; `released` NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn mqstate_lock_release(
    lock: *const mqstate_lock,
    timeout_ms: u32,
    released: *mut bool,
) -> mqstate_status {
    // SAFETY: per the caller.
    unsafe { flag_call(lock, "lock", timeout_ms, released, |l| Ok(l.release())) }
}

/// The current holder id in `*holder` (free with `mqstate_string_free`), NULL when free.
///
/// # Safety
/// `lock` must be a live lock; `holder` writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn mqstate_lock_holder(
    lock: *const mqstate_lock,
    timeout_ms: u32,
    holder: *mut *mut c_char,
) -> mqstate_status {
    // SAFETY: per the caller.
    unsafe { text_call(lock, "lock", timeout_ms, holder, |l| l.holder()) }
}

/// The current fencing token in `*token` (free with `mqstate_string_free`) while the lock is
/// held; `MQSTATE_STATUS_NOT_HELD` otherwise.
///
/// # Safety
/// `lock` must be a live lock; `token` writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn mqstate_lock_fencing_token(
    lock: *const mqstate_lock,
    token: *mut *mut c_char,
) -> mqstate_status {
    boundary(|| {
        // SAFETY: per the caller.
        let token = unsafe { out_arg(token, std::ptr::null_mut(), "token") }?;
        // SAFETY: per the caller.
        let lock = unsafe { guard::enter(lock, "lock") }?;
        let held = lock
            .fencing_token()
            .ok_or_else(|| Error::new(ErrorKind::NotHeld, "the lock is not held"))?;
        // SAFETY: `token` is writable.
        unsafe { put_string(token, Some(&held.to_text())) }
    })
}

/// The holder id this lock writes (the client id, or `client_id:session_id`), valid while
/// the lock lives; NULL for a NULL lock.
///
/// # Safety
/// `lock` must be NULL or a live lock.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn mqstate_lock_holder_id(lock: *const mqstate_lock) -> *const c_char {
    // SAFETY: per the caller.
    match unsafe { lock.as_ref() } {
        Some(l) => guard::Handle::guarded(l).inner.holder_id_c(),
        None => std::ptr::null(),
    }
}

/// Whether the lock is held now (acquired, not lost or released, lease not run out).
///
/// # Safety
/// `lock` must be NULL or a live lock.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn mqstate_lock_is_held(lock: *const mqstate_lock) -> bool {
    // SAFETY: per the caller.
    unsafe { guard::enter(lock, "lock") }.is_ok_and(|l| l.is_held())
}

/// Holder changes of this lock's key: the current holder first, then each change.
///
/// # Safety
/// `lock` must be a live lock; `out` writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn mqstate_lock_watch_holder(
    lock: *const mqstate_lock,
    timeout_ms: u32,
    out: *mut *mut mqstate_subscription,
) -> mqstate_status {
    // SAFETY: per the caller.
    unsafe { subscription_call(lock, "lock", timeout_ms, out, |l| l.watch_holder()) }
}

/// This lock's own status: the current one first, then each change (`HELD`, `NOT_HELD`,
/// `LOST` events).
///
/// # Safety
/// `lock` must be a live lock; `out` writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn mqstate_lock_watch_status(
    lock: *const mqstate_lock,
    out: *mut *mut mqstate_subscription,
) -> mqstate_status {
    boundary(|| {
        // SAFETY: per the caller.
        let out = unsafe { out_arg(out, std::ptr::null_mut(), "out") }?;
        // SAFETY: per the caller.
        let lock = unsafe { guard::enter(lock, "lock") }?;
        *out = new_subscription(lock.watch_status());
        Ok(())
    })
}

/// What an edit callback decides: see `mqstate_edit_set`, `mqstate_edit_delete`; left
/// untouched, nothing is written.
pub struct mqstate_edit {
    decision: Edit,
}

/// The edit callback: `current` is the protected key's value (`current_len` bytes) or NULL
/// when it does not exist; fill `decision` and return `MQSTATE_STATUS_OK`, or return any
/// other status to fail the edit (it then ends with `MQSTATE_STATUS_CALLBACK`, nothing
/// written, the lock released). Runs on a library thread; must not call blocking mqstate
/// functions.
pub type mqstate_edit_fn = Option<
    unsafe extern "C" fn(
        ctx: *mut c_void,
        current: *const u8,
        current_len: usize,
        decision: *mut mqstate_edit,
    ) -> mqstate_status,
>;

/// In an edit callback: write `value` (`len` bytes).
///
/// # Safety
/// `decision` must be the callback's; `value` valid for `len`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn mqstate_edit_set(
    decision: *mut mqstate_edit,
    value: *const u8,
    len: usize,
) -> mqstate_status {
    boundary(|| {
        // SAFETY: per the caller.
        let d = unsafe { decision.as_mut() }.ok_or_else(|| Failure::invalid("decision is NULL"))?;
        // SAFETY: per the caller.
        let value = unsafe { bytes_arg(value, len, "value") }?;
        d.decision = Edit::Set(Bytes::copy_from_slice(value));
        Ok(())
    })
}

/// In an edit callback: delete the key.
///
/// # Safety
/// `decision` must be the callback's.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn mqstate_edit_delete(decision: *mut mqstate_edit) -> mqstate_status {
    boundary(|| {
        // SAFETY: per the caller.
        let d = unsafe { decision.as_mut() }.ok_or_else(|| Failure::invalid("decision is NULL"))?;
        d.decision = Edit::Delete;
        Ok(())
    })
}

struct EditCallback {
    f: unsafe extern "C" fn(*mut c_void, *const u8, usize, *mut mqstate_edit) -> mqstate_status,
    ctx: *mut c_void,
}

// SAFETY: the caller promises that the callback and its context may be used from a library
// thread while the edit runs (documented on `mqstate_lock_edit`).
unsafe impl Send for EditCallback {}
// SAFETY: as above; the edit calls it from one thread at a time.
unsafe impl Sync for EditCallback {}

impl EditCallback {
    fn decide(&self, current: Option<Versioned>) -> Result<Edit, Error> {
        let mut decision = mqstate_edit {
            decision: Edit::Keep,
        };
        let (ptr, len) = match &current {
            Some(v) => (v.value.as_ptr(), v.value.len()),
            None => (std::ptr::null(), 0),
        };
        let status = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            // SAFETY: the caller's callback with its context; `ptr` is valid for `len`.
            unsafe { (self.f)(self.ctx, ptr, len, &mut decision) }
        }))
        .unwrap_or(mqstate_status::Panic);
        if status == mqstate_status::Ok {
            Ok(decision.decision)
        } else {
            Err(Error::callback(
                format!("the edit callback returned status {}", status as u32),
                Arc::new(status),
            ))
        }
    }
}

/// A fenced edit of `key`: acquires the lock for `lease_ms` (waiting), reads the key, calls
/// `decide(ctx, current, len, decision)`, writes the decision fenced with the lock's token,
/// releases the lock; retried if a newer holder wrote meanwhile, up to `timeout_ms`
/// (0: 10 s). `decide` runs on a library thread, once per attempt.
///
/// # Safety
/// `lock` must be a live lock; `key` valid for `key_len`; `decide` valid; `ctx` usable from
/// another thread until this returns; `cancel` NULL or live.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn mqstate_lock_edit(
    lock: *const mqstate_lock,
    key: *const u8,
    key_len: usize,
    lease_ms: u64,
    timeout_ms: u32,
    decide: mqstate_edit_fn,
    ctx: *mut c_void,
    cancel: *const mqstate_cancel,
) -> mqstate_status {
    boundary(|| {
        // SAFETY: per the caller.
        let lock = unsafe { guard::enter(lock, "lock") }?;
        // SAFETY: per the caller.
        let key = unsafe { bytes_arg(key, key_len, "key") }?;
        let f = decide.ok_or_else(|| Failure::invalid("decide is NULL"))?;
        let callback = Arc::new(EditCallback { f, ctx });
        let decide: Decide = Arc::new(move |current| {
            let callback = Arc::clone(&callback);
            Box::pin(async move {
                tokio::task::spawn_blocking(move || callback.decide(current))
                    .await
                    .unwrap_or_else(|e| Err(Error::new(ErrorKind::Closed, e.to_string())))
            })
        });
        let timeout = ms(u64::from(timeout_ms)).unwrap_or(std::time::Duration::from_secs(10));
        let call = lock.edit(
            Bytes::copy_from_slice(key),
            Some(duration(lease_ms, "lease_ms")?),
            Some(timeout),
            decide,
        );
        // SAFETY: per the caller.
        unsafe { run(call, 0, cancel) }?;
        Ok(())
    })
}

/// Frees a lock (NULL is ignored): stops its renewal; the lease runs out on its own unless
/// it was released.
///
/// # Safety
/// `lock` must be NULL or a live lock, freed once.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn mqstate_lock_free(lock: *mut mqstate_lock) {
    // SAFETY: per the caller.
    unsafe { guard::close(lock, |_| {}) }
}

/// Candidate `candidate` (NUL-terminated) in the election `name` (`name_len` bytes).
///
/// # Safety
/// `client` must be a live client; `name` valid; `candidate` NUL-terminated; `out` writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn mqstate_election_new(
    client: *const mqstate_client,
    name: *const u8,
    name_len: usize,
    candidate: *const c_char,
    out: *mut *mut mqstate_election,
) -> mqstate_status {
    boundary(|| {
        // SAFETY: per the caller.
        let out = unsafe { out_arg(out, std::ptr::null_mut(), "out") }?;
        // SAFETY: per the caller.
        let store = unsafe { enter_client(client) }?;
        // SAFETY: per the caller.
        let (name, candidate) = unsafe {
            (
                bytes_arg(name, name_len, "name")?,
                str_arg(candidate, "candidate")?,
            )
        };
        *out = guard::new(store.election(name, candidate, LockOptions::default())?);
        Ok(())
    })
}

/// Waits up to `timeout_ms` (0: without limit) to become leader for `term_ms` (renewed
/// automatically until resign); `*token` (may be NULL) receives the leader's fencing token.
///
/// # Safety
/// `election` must be live; `cancel` NULL or live; `token` NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn mqstate_election_campaign(
    election: *const mqstate_election,
    term_ms: u64,
    timeout_ms: u32,
    cancel: *const mqstate_cancel,
    token: *mut *mut c_char,
) -> mqstate_status {
    boundary(|| {
        // SAFETY: per the caller.
        unsafe { reset_string(token) };
        // SAFETY: per the caller.
        let e = unsafe { guard::enter(election, "election") }?;
        let call = e.campaign(
            Some(duration(term_ms, "term_ms")?),
            ms(u64::from(timeout_ms)),
        );
        // SAFETY: per the caller.
        let got = unsafe { run(call, 0, cancel) }?;
        // SAFETY: per the caller.
        unsafe { put_string(token, Some(&got.to_text())) }
    })
}

/// Becomes leader for `term_ms` if nobody is; `*elected` says whether.
///
/// # Safety
/// `election` must be live; `elected` NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn mqstate_election_try_campaign(
    election: *const mqstate_election,
    term_ms: u64,
    timeout_ms: u32,
    elected: *mut bool,
) -> mqstate_status {
    // SAFETY: per the caller.
    unsafe {
        flag_call(election, "election", timeout_ms, elected, |e| {
            Ok(e.try_campaign(Some(duration(term_ms, "term_ms")?)))
        })
    }
}

/// Steps down; `*resigned` (may be NULL) is true when this candidate led.
///
/// # Safety
/// `election` must be live; `resigned` NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn mqstate_election_resign(
    election: *const mqstate_election,
    timeout_ms: u32,
    resigned: *mut bool,
) -> mqstate_status {
    // SAFETY: per the caller.
    unsafe {
        flag_call(election, "election", timeout_ms, resigned, |e| {
            Ok(e.resign())
        })
    }
}

/// The current leader in `*leader` (free with `mqstate_string_free`), NULL when none.
///
/// # Safety
/// `election` must be live; `leader` writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn mqstate_election_leader(
    election: *const mqstate_election,
    timeout_ms: u32,
    leader: *mut *mut c_char,
) -> mqstate_status {
    // SAFETY: per the caller.
    unsafe { text_call(election, "election", timeout_ms, leader, |e| e.leader()) }
}

/// Whether this candidate leads now (false at once when a renewal fails).
///
/// # Safety
/// `election` must be NULL or live.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn mqstate_election_is_leader(election: *const mqstate_election) -> bool {
    // SAFETY: per the caller.
    unsafe { guard::enter(election, "election") }.is_ok_and(|e| e.is_leader())
}

/// Leadership changes: the current leader first, then each change (`HOLDER` events).
///
/// # Safety
/// `election` must be live; `out` writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn mqstate_election_watch_leader(
    election: *const mqstate_election,
    timeout_ms: u32,
    out: *mut *mut mqstate_subscription,
) -> mqstate_status {
    // SAFETY: per the caller.
    unsafe { subscription_call(election, "election", timeout_ms, out, |e| e.watch_leader()) }
}

/// Frees a candidate (NULL is ignored): stops renewal (resign first to hand over at once).
///
/// # Safety
/// `election` must be NULL or live, freed once.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn mqstate_election_free(election: *mut mqstate_election) {
    // SAFETY: per the caller.
    unsafe { guard::close(election, |_| {}) }
}
