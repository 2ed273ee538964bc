//! Cancellation from another thread, and the one blocking wait every call uses.
//!
//! A `mqstate_cancel` token is given to calls (in their options or arguments); triggering it
//! from any thread ends every call waiting with it (and every later call given it) with
//! `MQSTATE_STATUS_CANCELLED`, and the core withdraws their work.

use std::sync::Mutex;

use mqstate::bridge::{Call, Canceller};

use super::guard;
use crate::ffi::maybe;
use crate::status::{Failure, boundary, mqstate_status};

/// The state of a cancellation token.
#[derive(Default)]
pub(crate) struct CancelState {
    triggered: bool,
    next: u64,
    calls: Vec<(u64, Canceller)>,
}

/// A cancellation token (opaque; thread-safe).
pub struct mqstate_cancel {
    guarded: guard::Guarded<Mutex<CancelState>>,
}

crate::handle!(mqstate_cancel, Mutex<CancelState>);

/// Creates a cancellation token in `*out` (free it with `mqstate_cancel_free`).
///
/// # Safety
/// `out` must be NULL or writable.
#[unsafe(no_mangle)]
pub extern "C" fn mqstate_cancel_new(out: *mut *mut mqstate_cancel) -> mqstate_status {
    boundary(|| {
        let out = crate::ffi::out_arg(out, std::ptr::null_mut(), "out")?;
        *out = guard::new(Mutex::new(CancelState::default()));
        Ok(())
    })
}

/// Cancels every call waiting with this token, and every later one given it. Any thread;
/// idempotent.
///
/// # Safety
/// `token` must be a live token.
#[unsafe(no_mangle)]
pub extern "C" fn mqstate_cancel_trigger(token: *const mqstate_cancel) -> mqstate_status {
    boundary(|| {
        let token = guard::enter(token, "token")?;
        let calls = {
            let mut state = token.lock().unwrap_or_else(|e| e.into_inner());
            state.triggered = true;
            std::mem::take(&mut state.calls)
        };
        for (_, call) in calls {
            call.cancel();
        }
        Ok(())
    })
}

/// Frees a token (NULL is ignored); calls still waiting with it are not cancelled.
///
/// # Safety
/// `token` must be NULL or a live token, freed once.
#[unsafe(no_mangle)]
pub extern "C" fn mqstate_cancel_free(token: *mut mqstate_cancel) {
    guard::close(token, |_| {})
}

/// Starts the call `start` makes and waits for it, cancellable through `cancel` (may be
/// NULL): with a token that was triggered already the call is never started (`cancelled`,
/// nothing sent); one triggered meanwhile cancels it. The core's own limits (a request's
/// timeout, a wait's deadline) bound the wait.
///
/// # Safety
/// `cancel` must be NULL or a live token.
pub(crate) fn run<T: Send + 'static>(
    cancel: *const mqstate_cancel,
    start: impl FnOnce() -> Call<T>,
) -> Result<T, Failure> {
    let Some(token) = maybe(cancel) else {
        return Ok(start().wait(None)?);
    };
    let entered = guard::Handle::guarded(token).enter()?;
    let (call, id) = {
        let mut state = entered.lock().unwrap_or_else(|e| e.into_inner());
        if state.triggered {
            return Err(Failure::from(mqstate::Error::cancelled()));
        }
        // Started under the token's lock: a trigger either came before (refused above) or
        // finds the call registered.
        let call = start();
        state.next += 1;
        let id = state.next;
        state.calls.push((id, call.canceller()));
        (call, id)
    };
    let result = call.wait(None);
    let mut state = entered.lock().unwrap_or_else(|e| e.into_inner());
    state.calls.retain(|(other, _)| *other != id);
    Ok(result?)
}
