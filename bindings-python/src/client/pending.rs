//! `PendingCall`: one core [`Call`] as Python sees it. The blocking client waits on it in
//! short slices with the GIL released (so Ctrl-C is noticed between slices); the asyncio
//! client registers a completion callback that wakes its event loop. Either way the result
//! is converted to Python objects on the caller's thread, with the GIL, by `result()`.

use std::sync::Mutex;
use std::time::Duration;

use mqstate::Error;
use mqstate::bridge::{Call, Canceller};
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;

use super::gate::with_python;
use crate::errors::to_py;

/// A call's success, converted to Python when the caller takes it.
pub(crate) type Converted = Box<dyn FnOnce(Python<'_>) -> PyResult<Py<PyAny>> + Send>;

/// Makes a pending call of `call`, whose success `convert` turns into a Python object.
pub(crate) fn pending<T: Send + 'static>(
    call: Call<T>,
    convert: impl FnOnce(Python<'_>, T) -> PyResult<Py<PyAny>> + Send + 'static,
) -> PendingCall {
    let call = call.map(move |value| -> Converted { Box::new(move |py| convert(py, value)) });
    PendingCall {
        canceller: call.canceller(),
        call: Mutex::new(Some(call)),
        outcome: std::sync::Arc::new(Mutex::new(None)),
    }
}

/// A pending call that failed before it started.
pub(crate) fn failed(error: Error) -> PendingCall {
    pending(Call::<()>::ready(Err(error)), |py, ()| Ok(py.None()))
}

type Outcome = std::sync::Arc<Mutex<Option<Result<Converted, Error>>>>;

/// A call in flight in the core.
#[pyclass(frozen, module = "mqstate._mqstate", name = "PendingCall")]
pub(crate) struct PendingCall {
    call: Mutex<Option<Call<Converted>>>,
    canceller: Canceller,
    outcome: Outcome,
}

impl PendingCall {
    fn take_call(&self) -> Option<Call<Converted>> {
        self.call.lock().unwrap_or_else(|e| e.into_inner()).take()
    }

    fn put_call(&self, call: Call<Converted>) {
        *self.call.lock().unwrap_or_else(|e| e.into_inner()) = Some(call);
    }

    fn store(outcome: &Outcome, result: Result<Converted, Error>) {
        *outcome.lock().unwrap_or_else(|e| e.into_inner()) = Some(result);
    }
}

#[pymethods]
impl PendingCall {
    /// Waits up to `seconds` (GIL released); True once the result is there.
    fn wait_slice(&self, py: Python<'_>, seconds: f64) -> PyResult<bool> {
        if self
            .outcome
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .is_some()
        {
            return Ok(true);
        }
        let Some(call) = self.take_call() else {
            return Err(PyRuntimeError::new_err(
                "this call is awaited elsewhere (on_done was called)",
            ));
        };
        let slice = Duration::try_from_secs_f64(seconds.max(0.0)).unwrap_or(Duration::ZERO);
        let (call, got) = py.detach(move || {
            let got = call.wait_slice(slice);
            (call, got)
        });
        match got {
            Some(result) => {
                Self::store(&self.outcome, result);
                Ok(true)
            }
            None => {
                self.put_call(call);
                Ok(false)
            }
        }
    }

    /// Calls `callback()` (no arguments) from a library thread once the result is there;
    /// the callback must only schedule work (e.g. `loop.call_soon_threadsafe`).
    fn on_done(&self, callback: Py<PyAny>) -> PyResult<()> {
        let Some(call) = self.take_call() else {
            return Err(PyRuntimeError::new_err("on_done was already called"));
        };
        let outcome = std::sync::Arc::clone(&self.outcome);
        call.on_complete(move |result| {
            Self::store(&outcome, result);
            with_python(|py| {
                if let Err(e) = callback.call0(py) {
                    // The event loop is gone (closed): nobody waits any more.
                    drop(e);
                }
            });
        });
        Ok(())
    }

    /// Cancels the call (it ends with CallCancelledError unless it already completed).
    fn cancel(&self) {
        self.canceller.cancel();
    }

    /// Whether the result is there.
    fn done(&self) -> bool {
        self.outcome
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .is_some()
    }

    /// The result, converted (raises the call's error); once.
    fn result(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        let outcome = self
            .outcome
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        match outcome {
            Some(Ok(convert)) => convert(py),
            Some(Err(e)) => Err(to_py(e)),
            None => Err(PyRuntimeError::new_err(
                "the call has not completed, or its result was already taken",
            )),
        }
    }
}
