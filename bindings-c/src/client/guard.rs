//! Handles that may be closed while other threads still use them.
//!
//! Every client-side handle is a [`Guarded`] value: each call enters it (a counter), and
//! the handle's `_close`/`_free` first marks it closing (new calls fail with
//! `MQSTATE_STATUS_CLOSED`), runs its shutdown (which makes the calls in flight end
//! promptly: their requests fail with `closed`), waits until the calls in flight have left,
//! and only then frees the memory. Starting a call on a handle *after* its close has begun
//! is the caller's error, as with any freed pointer.
//!
//! The count lives in a [`Gate`] shared (`Arc`) by the handle and every call inside it: the
//! last call to leave a closing handle wakes the close through the gate, which its own
//! reference keeps alive even once the close has freed the handle.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};

use crate::ffi::{handle_arg, maybe};
use crate::status::{Failure, mqstate_status};

/// A handle's value with its in-flight call count.
pub(crate) struct Guarded<T> {
    pub(crate) inner: T,
    gate: Arc<Gate>,
}

/// The calls inside a handle and its close: a count, the closing flag, and where the close
/// waits for the count to reach zero.
#[derive(Default)]
struct Gate {
    active: AtomicUsize,
    closing: AtomicBool,
    left: Mutex<()>,
    empty: Condvar,
}

/// A call inside a handle; leaving it (drop) lets a close proceed.
pub(crate) struct Entered<'a, T> {
    guarded: &'a Guarded<T>,
    gate: Arc<Gate>,
}

impl<T> std::ops::Deref for Entered<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.guarded.inner
    }
}

impl<T> Drop for Entered<'_, T> {
    fn drop(&mut self) {
        // After the decrement the handle may be freed: only this call's own gate is used.
        let gate = &self.gate;
        if gate.active.fetch_sub(1, Ordering::SeqCst) == 1 && gate.closing.load(Ordering::SeqCst) {
            // Under the lock: the close cannot be between its check of the count and its
            // wait, so the wake-up is not lost.
            let _left = gate.left.lock().unwrap_or_else(|e| e.into_inner());
            gate.empty.notify_all();
        }
    }
}

impl<T> Guarded<T> {
    pub(crate) fn new(inner: T) -> Guarded<T> {
        Guarded {
            inner,
            gate: Arc::default(),
        }
    }

    /// Enters the handle for one call; `closed` once its close has begun.
    pub(crate) fn enter(&self) -> Result<Entered<'_, T>, Failure> {
        self.gate.active.fetch_add(1, Ordering::SeqCst);
        let entered = Entered {
            guarded: self,
            gate: Arc::clone(&self.gate),
        };
        if self.gate.closing.load(Ordering::SeqCst) {
            return Err(Failure::new(mqstate_status::Closed, "the handle is closed"));
        }
        Ok(entered)
    }
}

/// A handle's value with its id (the client id, a candidate id) kept as C text, so that an
/// accessor can hand out a `const char *` valid while the handle lives.
pub(crate) struct Named<T> {
    pub(crate) value: T,
    pub(crate) id: std::ffi::CString,
}

impl<T> Named<T> {
    /// `value` with `id` as C text (an id with a NUL is `invalid_argument`).
    pub(crate) fn new(value: T, id: &str) -> Result<Named<T>, Failure> {
        let id = std::ffi::CString::new(id).map_err(|_| Failure::invalid("the id has a NUL"))?;
        Ok(Named { value, id })
    }
}

impl<T> std::ops::Deref for Named<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.value
    }
}

/// The id of the handle behind `ptr` as C text, valid while the handle lives; NULL for NULL.
///
/// # Safety
/// `ptr` must be NULL or a live handle made by [`new`].
pub(crate) fn id_of<T, H: Handle<Inner = Named<T>>>(ptr: *const H) -> *const std::ffi::c_char {
    maybe(ptr).map_or(std::ptr::null(), |h| h.guarded().inner.id.as_ptr())
}

/// A C handle type wrapping a [`Guarded`] value (see [`handle!`](crate::handle)).
pub(crate) trait Handle: Sized {
    /// What the handle holds.
    type Inner;
    /// The guarded value.
    fn guarded(&self) -> &Guarded<Self::Inner>;
    /// Wraps a guarded value.
    fn wrap(inner: Guarded<Self::Inner>) -> Self;
}

/// Implements [`Handle`] for an opaque C handle type `struct $name { guarded:
/// Guarded<$inner> }` (the struct itself is written out so that cbindgen declares it).
#[macro_export]
macro_rules! handle {
    ($name:ident, $inner:ty) => {
        impl $crate::client::guard::Handle for $name {
            type Inner = $inner;
            fn guarded(&self) -> &$crate::client::guard::Guarded<$inner> {
                &self.guarded
            }
            fn wrap(guarded: $crate::client::guard::Guarded<$inner>) -> Self {
                $name { guarded }
            }
        }
    };
}

/// Enters the handle behind `ptr` (NULL is `invalid_argument`).
///
/// # Safety
/// `ptr` must be NULL or a live handle made by [`new`].
pub(crate) fn enter<'a, H: Handle + 'a>(
    ptr: *const H,
    what: &str,
) -> Result<Entered<'a, H::Inner>, Failure> {
    handle_arg(ptr, what)?.guarded().enter()
}

/// A new handle for C.
pub(crate) fn new<H: Handle>(inner: H::Inner) -> *mut H {
    Box::into_raw(Box::new(H::wrap(Guarded::new(inner))))
}

/// Closes and frees the handle behind `ptr` (NULL is ignored): marks it closing, runs
/// `shutdown`, waits for the calls in flight to leave, frees it.
///
/// # Safety
/// `ptr` must be NULL or a live handle made by [`new`], closed once.
pub(crate) fn close<H: Handle>(ptr: *mut H, shutdown: impl FnOnce(&H::Inner)) {
    if ptr.is_null() {
        return;
    }
    // SAFETY: per the caller, a live handle; nobody frees it but this function.
    let handle = unsafe { &*ptr }.guarded();
    let gate = Arc::clone(&handle.gate);
    if gate.closing.swap(true, Ordering::SeqCst) {
        return; // a close is already under way on another thread
    }
    shutdown(&handle.inner);
    // Woken by the last call to leave (no polling); the count is checked under the lock.
    let mut left = gate.left.lock().unwrap_or_else(|e| e.into_inner());
    while gate.active.load(Ordering::SeqCst) > 0 {
        left = gate.empty.wait(left).unwrap_or_else(|e| e.into_inner());
    }
    drop(left);
    // SAFETY: made by `Box::into_raw` in `new`, no call is inside, freed once.
    drop(unsafe { Box::from_raw(ptr) });
}
