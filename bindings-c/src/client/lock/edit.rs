//! `mqstate_lock_edit`: a fenced read-decide-write under a lock, deciding with a C callback
//! that may fail. The callback runs through the core's one adapter for blocking user
//! callbacks ([`blocking_decide`]), so its thread, its failure kind (`callback`) and the
//! edit's retries and default timeout are the same as in every other language.

use std::ffi::c_void;
use std::sync::Arc;

use bytes::Bytes;
use mqstate::bridge::blocking_decide;
use mqstate::lock::Edit;
use mqstate::{Error, Versioned};

use super::mqstate_lock;
use crate::client::cancel::{mqstate_cancel, run};
use crate::client::guard;
use crate::client::timeout;
use crate::ffi::{bytes_arg, maybe_mut};
use crate::status::{Failure, boundary, mqstate_status};

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
pub extern "C" fn mqstate_edit_set(
    decision: *mut mqstate_edit,
    value: *const u8,
    len: usize,
) -> mqstate_status {
    boundary(|| {
        let d = maybe_mut(decision).ok_or_else(|| Failure::invalid("decision is NULL"))?;
        let value = bytes_arg(value, len, "value")?;
        d.decision = Edit::Set(Bytes::copy_from_slice(value));
        Ok(())
    })
}

/// In an edit callback: delete the key.
///
/// # Safety
/// `decision` must be the callback's.
#[unsafe(no_mangle)]
pub extern "C" fn mqstate_edit_delete(decision: *mut mqstate_edit) -> mqstate_status {
    boundary(|| {
        let d = maybe_mut(decision).ok_or_else(|| Failure::invalid("decision is NULL"))?;
        d.decision = Edit::Delete;
        Ok(())
    })
}

/// The caller's callback and context.
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
    /// One attempt's decision: the callback's status other than OK (or a panic in it) is a
    /// `callback` error carrying that status (`mqstate_error_callback_status`).
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

/// A fenced edit of `key`: acquires the lock for `lease_ms` (0: the lock's default lease),
/// reads the key, calls `decide(ctx, current, len, decision)`, writes the decision fenced
/// with the lock's token, releases the lock; retried if a newer holder wrote meanwhile, up
/// to `timeout_ms` (0: the core's default edit timeout, 10 s, the same in every language;
/// `MQSTATE_WAIT_FOREVER` is refused). `decide` runs on a library thread, once per attempt.
///
/// # Safety
/// `lock` must be a live lock; `key` valid for `key_len`; `decide` valid; `ctx` usable from
/// another thread until this returns; `cancel` NULL or live.
#[unsafe(no_mangle)]
#[allow(clippy::too_many_arguments)]
pub extern "C" fn mqstate_lock_edit(
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
        let lock = guard::enter(lock, "lock")?;
        let key = bytes_arg(key, key_len, "key")?;
        let f = decide.ok_or_else(|| Failure::invalid("decide is NULL"))?;
        let callback = EditCallback { f, ctx };
        let edit_timeout = timeout::request(timeout_ms)?;
        let edit = || {
            lock.edit(
                Bytes::copy_from_slice(key),
                timeout::option(lease_ms),
                edit_timeout,
                blocking_decide(move |current| callback.decide(current)),
            )
        };
        run(cancel, edit)?;
        Ok(())
    })
}
