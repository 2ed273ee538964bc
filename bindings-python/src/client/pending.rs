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
                "this call is awaited elsewhere (on_done_batched was called)",
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

    /// Wakes asyncio once the result is there: on completion the call's `token` joins
    /// `waker`'s ready list, and `waker`'s wake function is called (from a library thread)
    /// only when that list was empty — so at high concurrency one wake-up of the event loop
    /// settles many calls.
    fn on_done_batched(&self, waker: Py<Waker>, token: u64) -> PyResult<()> {
        let Some(call) = self.take_call() else {
            return Err(PyRuntimeError::new_err(
                "on_done_batched was already called",
            ));
        };
        let outcome = std::sync::Arc::clone(&self.outcome);
        call.on_complete(move |result| {
            Self::store(&outcome, result);
            let wake = {
                let mut state = waker.get().state.lock().unwrap_or_else(|e| e.into_inner());
                state.ready.push(token);
                !std::mem::replace(&mut state.scheduled, true)
            };
            if wake {
                with_python(|py| {
                    // The event loop is gone (closed): nobody waits any more.
                    let _ = waker.get().wake.call0(py);
                });
            }
        });
        Ok(())
    }

    /// Cancels the call (it ends with CallCancelledError unless it already completed).
    fn cancel(&self) {
        self.canceller.cancel();
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

#[derive(Default)]
struct WakerState {
    ready: Vec<u64>,
    scheduled: bool,
}

/// The completions of one asyncio event loop: tokens of calls that completed, and one
/// wake-up scheduled at a time (see `PendingCall.on_done_batched`).
#[pyclass(frozen, module = "mqstate._mqstate", name = "Waker")]
pub(crate) struct Waker {
    state: Mutex<WakerState>,
    wake: Py<PyAny>,
}

#[pymethods]
impl Waker {
    /// `wake()` is called from a library thread when completions become ready; it must
    /// only schedule `take()` on the event loop (`loop.call_soon_threadsafe`).
    #[new]
    fn new(wake: Py<PyAny>) -> Waker {
        Waker {
            state: Mutex::new(WakerState::default()),
            wake,
        }
    }

    /// The tokens of the calls completed since the last take; the next completion wakes
    /// the loop again.
    fn take(&self) -> Vec<u64> {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        state.scheduled = false;
        std::mem::take(&mut state.ready)
    }
}
