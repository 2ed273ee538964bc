//! Core calls as JS Promises, and their cancellation.
//!
//! [`promise`] settles a Promise from [`Call::on_complete`]: the completion (on a core
//! runtime thread) goes to the JS thread through a napi deferred, where the success is
//! converted and an error becomes the JS error object of [`crate::error::to_js`]. Nothing
//! waits on a second runtime, and the deferred holds the event loop only while the call is
//! pending, so a closed client leaves nothing that keeps the process alive.
//!
//! [`CancelHandle`] is what the JS layer passes (last argument) when the caller gave an
//! `AbortSignal`: the call's canceller is attached to it, and `cancel()` — from the
//! signal's `abort` event — cancels the core call, which then rejects with `cancelled`.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use mqstate::bridge::{Call, Canceller};
use napi::bindgen_prelude::{ClassInstance, Env, Object, ToNapiValue};
use napi_derive::napi;

use crate::error::to_js;

/// What a deferred runs on the JS thread.
type Resolver<V> = Box<dyn FnOnce(Env) -> napi::Result<V> + Send>;

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
    let (deferred, promise) = env.create_deferred::<V, Resolver<V>>()?;
    call.on_complete(move |result| {
        deferred.resolve(Box::new(move |env| match result {
            Ok(value) => Ok(convert(value)),
            Err(e) => Err(to_js(&env, &e)),
        }))
    });
    Ok(promise)
}
