//! Core calls as JS Promises, and their cancellation.
//!
//! [`promise`] settles a Promise from [`Call::on_complete`]. The completion, on whatever
//! thread completed the call, is queued for the JS thread of its environment; the first
//! completion of a batch wakes that thread through one thread-safe function the
//! environment keeps for the client's whole life ([`Settler`]), and the JS thread then
//! settles every queued Promise at once: it converts each success and turns each error into
//! the JS error object of [`crate::error::to_js`]. The queue and its one wake-up per batch
//! are the bridge's [`CompletionQueue`], shared with the Python binding. (One napi deferred
//! per call would create and tear down a thread-safe function, with its libuv handle, per
//! call.) The function holds the event loop only while some Promise is pending, so a closed
//! client leaves nothing that keeps the process alive.
//!
//! [`CancelHandle`] is what the JS layer passes (last argument) when the caller gave an
//! `AbortSignal`: the call's canceller is attached to it, and `cancel()` — from the
//! signal's `abort` event — cancels the core call, which then rejects with `cancelled`.

use std::cell::RefCell;
use std::ffi::c_void;
use std::ptr;
use std::sync::atomic::{AtomicBool, AtomicPtr, Ordering};
use std::sync::{Arc, Mutex};

use mqstate::bridge::{Call, Canceller, CompletionQueue};
use napi::bindgen_prelude::{ClassInstance, Env, Object, ToNapiValue};
use napi::{JsError, check_status, sys};
use napi_derive::napi;

use crate::error::to_js;

/// The cancellation handle of one call (see the module documentation). Cancelling before
/// the call is attached cancels it as soon as it is.
#[napi]
pub struct CancelHandle {
    canceller: Mutex<Option<Canceller>>,
    cancelled: AtomicBool,
}

impl Default for CancelHandle {
    fn default() -> Self {
        Self::new()
    }
}

#[napi]
impl CancelHandle {
    /// A handle not yet attached to a call.
    #[napi(constructor)]
    pub fn new() -> CancelHandle {
        CancelHandle {
            canceller: Mutex::new(None),
            cancelled: AtomicBool::new(false),
        }
    }

    /// Cancels the attached call (no effect once it completed).
    #[napi]
    pub fn cancel(&self) {
        self.cancelled.store(true, Ordering::SeqCst);
        let canceller = self
            .canceller
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        if let Some(c) = canceller {
            c.cancel();
        }
    }
}

impl CancelHandle {
    fn attach(&self, canceller: Canceller) {
        if self.cancelled.load(Ordering::SeqCst) {
            canceller.cancel();
            return;
        }
        *self.canceller.lock().unwrap_or_else(|e| e.into_inner()) = Some(canceller);
    }
}

/// A Promise of `call`'s result, `convert`ed on the JS thread; `cancel` gets the call's
/// canceller.
pub fn promise<'env, T, V>(
    env: &'env Env,
    call: Call<T>,
    cancel: Option<ClassInstance<CancelHandle>>,
    convert: impl FnOnce(T) -> V + Send + 'static,
) -> napi::Result<Object<'env>>
where
    T: Send + 'static,
    V: ToNapiValue + 'static,
{
    if let Some(handle) = cancel {
        handle.attach(call.canceller());
    }
    let settler = Settler::of(env)?;
    let mut deferred = ptr::null_mut();
    let mut promise = ptr::null_mut();
    // SAFETY: on the JS thread of `env`.
    check_status!(unsafe { sys::napi_create_promise(env.raw(), &mut deferred, &mut promise) })?;
    settler.hold(env);
    let deferred = Deferred(deferred);
    let queue = Arc::clone(&settler);
    call.on_complete(move |result| {
        queue.push(Box::new(move |raw_env| {
            let deferred = deferred;
            // SAFETY: on the JS thread of the environment the deferred belongs to.
            unsafe {
                let settled = match result {
                    Ok(value) => V::to_napi_value(raw_env, convert(value))
                        .map(|v| sys::napi_resolve_deferred(raw_env, deferred.0, v)),
                    Err(e) => {
                        let error = JsError::from(to_js(&Env::from_raw(raw_env), &e));
                        Ok(sys::napi_reject_deferred(
                            raw_env,
                            deferred.0,
                            error.into_value(raw_env),
                        ))
                    }
                };
                if let Err(e) = settled {
                    let error = JsError::from(e).into_value(raw_env);
                    sys::napi_reject_deferred(raw_env, deferred.0, error);
                }
            }
        }));
    });
    Ok(Object::from_raw(env.raw(), promise))
}

/// A napi deferred, settled on its JS thread only.
struct Deferred(sys::napi_deferred);

// SAFETY: the pointer is only used on the JS thread (in `Settler::settle_batch`).
unsafe impl Send for Deferred {}

/// Settles one Promise, on the JS thread.
type Settle = Box<dyn FnOnce(sys::napi_env) + Send>;

/// The completions of one JS environment, and the thread-safe function that wakes its
/// thread (see the module documentation).
pub(crate) struct Settler {
    /// Set once, right after the function is made.
    tsfn: AtomicPtr<sys::napi_threadsafe_function__>,
    /// Closed when the environment is torn down: nothing is settled any more.
    queue: CompletionQueue<Settle>,
}

// SAFETY: the thread-safe function may be called from any thread until it is finalized,
// which closing the queue (under the queue's lock) records; everything else is behind
// that lock.
unsafe impl Send for Settler {}
// SAFETY: as for `Send`: shared use is the thread-safe function's calls and the lock.
unsafe impl Sync for Settler {}

thread_local! {
    /// This JS thread's settler, with its environment and the Promises pending on it
    /// (touched only on this thread).
    static SETTLER: RefCell<Option<(sys::napi_env, Arc<Settler>, usize)>> = const { RefCell::new(None) };
}

impl Settler {
    /// The settler of `env` (made on first use, on the JS thread).
    fn of(env: &Env) -> napi::Result<Arc<Settler>> {
        SETTLER.with(|slot| {
            let mut slot = slot.borrow_mut();
            if let Some((raw, settler, _)) = &*slot
                && *raw == env.raw()
            {
                return Ok(Arc::clone(settler));
            }
            let settler = Settler::new(env)?;
            *slot = Some((env.raw(), Arc::clone(&settler), 0));
            Ok(settler)
        })
    }

    fn new(env: &Env) -> napi::Result<Arc<Settler>> {
        let raw = env.raw();
        let mut name = ptr::null_mut();
        let text = "mqstate completions";
        // SAFETY: on the JS thread; the string outlives the call.
        check_status!(unsafe {
            sys::napi_create_string_utf8(raw, text.as_ptr().cast(), text.len() as isize, &mut name)
        })?;
        // The context is a strong reference, given back in `finalize`.
        let settler = Arc::new(Settler {
            tsfn: AtomicPtr::new(ptr::null_mut()),
            queue: CompletionQueue::new(),
        });
        let context = Arc::into_raw(Arc::clone(&settler)) as *mut c_void;
        let mut tsfn = ptr::null_mut();
        // SAFETY: on the JS thread; `settle_batch` and `finalize` match the context.
        let status = unsafe {
            sys::napi_create_threadsafe_function(
                raw,
                ptr::null_mut(),
                ptr::null_mut(),
                name,
                0,
                1,
                ptr::null_mut(),
                Some(finalize),
                context,
                Some(settle_batch),
                &mut tsfn,
            )
        };
        if status != sys::Status::napi_ok {
            // SAFETY: the reference given to the function that was not made.
            drop(unsafe { Arc::from_raw(context as *const Settler) });
            check_status!(status)?;
        }
        settler.tsfn.store(tsfn, Ordering::SeqCst);
        // It holds the event loop only while Promises are pending (`hold`).
        // SAFETY: on the JS thread.
        check_status!(unsafe { sys::napi_unref_threadsafe_function(raw, tsfn) })?;
        Ok(settler)
    }

    fn tsfn(&self) -> sys::napi_threadsafe_function {
        self.tsfn.load(Ordering::SeqCst)
    }

    /// One more pending Promise (on the JS thread): the first holds the event loop.
    fn hold(&self, env: &Env) {
        SETTLER.with(|slot| {
            if let Some((_, _, pending)) = &mut *slot.borrow_mut() {
                *pending += 1;
                if *pending == 1 {
                    // SAFETY: on the JS thread.
                    unsafe { sys::napi_ref_threadsafe_function(env.raw(), self.tsfn()) };
                }
            }
        });
    }

    /// On the completing thread: queues a settlement; the first of a batch wakes the JS
    /// thread.
    fn push(&self, settle: Settle) {
        // Under the queue's lock, so that `finalize` cannot free the function meanwhile.
        self.queue.push_and_wake(settle, || {
            // SAFETY: not finalized (the queue is not closed).
            unsafe {
                sys::napi_call_threadsafe_function(
                    self.tsfn(),
                    ptr::null_mut(),
                    sys::ThreadsafeFunctionCallMode::nonblocking,
                )
            };
        });
    }
}

/// On the JS thread: settles every queued Promise; the last pending one releases the event
/// loop.
unsafe extern "C" fn settle_batch(
    env: sys::napi_env,
    _js_callback: sys::napi_value,
    context: *mut c_void,
    _data: *mut c_void,
) {
    if env.is_null() {
        return; // the environment is being torn down
    }
    // SAFETY: the context is the settler the function holds a reference to.
    let settler = unsafe { &*(context as *const Settler) };
    let done = settler.queue.take();
    let settled = done.len();
    for settle in done {
        settle(env);
    }
    SETTLER.with(|slot| {
        if let Some((raw, _, pending)) = &mut *slot.borrow_mut()
            && *raw == env
        {
            *pending = pending.saturating_sub(settled);
            if *pending == 0 {
                // SAFETY: on the JS thread.
                unsafe { sys::napi_unref_threadsafe_function(env, settler.tsfn()) };
            }
        }
    });
}

/// When the environment is torn down: nothing more is settled, and the function's
/// reference to the settler is dropped.
unsafe extern "C" fn finalize(_env: sys::napi_env, _data: *mut c_void, context: *mut c_void) {
    // SAFETY: the reference given at creation, given back once.
    let settler = unsafe { Arc::from_raw(context as *const Settler) };
    settler.queue.close();
}
