//! `PendingCall`: one core [`Call`] as Python sees it, and `Completions`, the way asyncio
//! learns that calls completed.
//!
//! - The blocking client calls `PendingCall.wait`: one native call that waits with the GIL
//!   released, then converts the result. On the main thread it waits in slices and runs
//!   Python's signal handlers between them (so Ctrl-C raises `KeyboardInterrupt` promptly
//!   and cancels the call); other threads, where Python runs no handler, wait in one go
//!   (a slice is a timer, and each timer of a request costs the runtime a wake-up).
//! - The asyncio client hands the call and an `asyncio.Future` to its event loop's
//!   `Completions` (`PendingCall.watch`). The library thread that completes the call never
//!   takes the GIL: it queues the outcome and, only when no wake-up is pending already,
//!   writes one byte to a pipe the event loop watches (`loop.add_reader`). On the loop's
//!   thread, `Completions.settle` converts every queued outcome and settles its future, so
//!   at high concurrency one wake-up settles many calls. An event loop without
//!   `add_reader` (Windows' proactor) gives a `wake` function instead, called with the GIL
//!   through the exit gate. The queue and its one-wake-up-per-batch rule are the bridge's
//!   [`CompletionQueue`], shared with the Node binding.
//!
//! Either way the result is converted to Python objects on the caller's thread, with the GIL.

use std::collections::HashMap;
use std::io::{Read, Write};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use mqstate::Error;
use mqstate::bridge::{Call, Canceller, CompletionQueue};
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
    PendingCall {
        canceller: call.canceller(),
        call: Mutex::new(Some(Box::new(Typed {
            call,
            convert: Some(convert),
        }))),
    }
}

/// A pending call that failed before it started.
pub(crate) fn failed(error: Error) -> PendingCall {
    pending(Call::<()>::ready(Err(error)), |py, ()| Ok(py.None()))
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

fn convert(py: Python<'_>, outcome: Result<Converted, Error>) -> PyResult<Py<PyAny>> {
    match outcome {
        Ok(convert) => convert(py),
        Err(e) => Err(to_py(e)),
    }
}

/// A core call with its conversion, its result type erased (one Python class for all).
trait Erased: Send {
    /// Waits up to `slice` (the GIL released); the converted result once there.
    fn wait_slice(&mut self, py: Python<'_>, slice: Duration) -> Option<PyResult<Py<PyAny>>>;
    /// Waits until the call completes (the GIL released); the converted result.
    fn wait_done(self: Box<Self>, py: Python<'_>) -> PyResult<Py<PyAny>>;
    /// Hands the outcome, with its conversion, to `shared` as `token` on completion.
    fn watch(self: Box<Self>, shared: Arc<Shared>, token: u64);
}

struct Typed<T, F> {
    call: Call<T>,
    /// Taken with the result.
    convert: Option<F>,
}

/// A waited call's outcome as Python gets it: converted by `convert`, or raised.
fn converted<T>(
    py: Python<'_>,
    outcome: Result<T, Error>,
    convert: Option<impl FnOnce(Python<'_>, T) -> PyResult<Py<PyAny>>>,
) -> PyResult<Py<PyAny>> {
    match (outcome, convert) {
        (Ok(value), Some(convert)) => convert(py, value),
        (Ok(_), None) => Err(PyRuntimeError::new_err(
            "this call's result was already taken",
        )),
        (Err(e), _) => Err(to_py(e)),
    }
}

impl<T, F> Erased for Typed<T, F>
where
    T: Send + 'static,
    F: FnOnce(Python<'_>, T) -> PyResult<Py<PyAny>> + Send + 'static,
{
    fn wait_slice(&mut self, py: Python<'_>, slice: Duration) -> Option<PyResult<Py<PyAny>>> {
        let call = &self.call;
        let outcome = py.detach(|| call.wait_slice(slice))?;
        Some(converted(py, outcome, self.convert.take()))
    }

    fn wait_done(self: Box<Self>, py: Python<'_>) -> PyResult<Py<PyAny>> {
        let Typed { call, convert } = *self;
        let outcome = py.detach(|| call.wait(None));
        converted(py, outcome, convert)
    }

    fn watch(self: Box<Self>, shared: Arc<Shared>, token: u64) {
        let Typed { call, convert } = *self;
        call.on_complete(move |outcome| {
            let outcome = match (outcome, convert) {
                (Ok(value), Some(convert)) => {
                    Ok(Box::new(move |py: Python<'_>| convert(py, value)) as Converted)
                }
                (Ok(_), None) => Err(Error::new(
                    mqstate::ErrorKind::Unsupported,
                    "the call's result was already taken",
                )),
                (Err(e), _) => Err(e),
            };
            shared.push(token, outcome);
        });
    }
}

/// A call in flight in the core; its result is taken once, by `wait` or through `watch`.
#[pyclass(frozen, module = "mqstate._mqstate", name = "PendingCall")]
pub(crate) struct PendingCall {
    call: Mutex<Option<Box<dyn Erased>>>,
    canceller: Canceller,
}

impl PendingCall {
    fn take_call(&self) -> PyResult<Box<dyn Erased>> {
        lock(&self.call)
            .take()
            .ok_or_else(|| PyRuntimeError::new_err("this call's result was already taken"))
    }
}

#[pymethods]
impl PendingCall {
    /// Blocks until the call completes and returns its result (or raises its error), with
    /// the GIL released. With a `slice` (seconds) it waits in slices; between slices
    /// Python's signal handlers run, and if one raises (Ctrl-C) the call is cancelled and
    /// that is raised. Without one it waits in one go: for threads other than the main
    /// thread, where Python runs no signal handler (each slice's timer would cost a wake-up
    /// of the library's runtime per call).
    #[pyo3(signature = (slice))]
    fn wait(&self, py: Python<'_>, slice: Option<f64>) -> PyResult<Py<PyAny>> {
        let mut call = self.take_call()?;
        let Some(slice) = slice else {
            return call.wait_done(py);
        };
        let slice = Duration::try_from_secs_f64(slice.max(0.001)).unwrap_or(Duration::ZERO);
        loop {
            if let Some(result) = call.wait_slice(py, slice) {
                return result;
            }
            if let Err(interrupted) = py.check_signals() {
                self.canceller.cancel();
                return Err(interrupted);
            }
        }
    }

    /// Settles `future` (an `asyncio.Future` of the loop `completions` belongs to) with the
    /// call's result when it completes (see the module documentation).
    fn watch(&self, completions: &Completions, future: Py<PyAny>) -> PyResult<()> {
        let call = self.take_call()?;
        let token = {
            let mut waiting = lock(&completions.waiting);
            let token = waiting.next;
            waiting.next += 1;
            waiting.futures.insert(token, future);
            token
        };
        call.watch(Arc::clone(&completions.shared), token);
        Ok(())
    }

    /// Cancels the call (it ends with CallCancelledError unless it already completed).
    fn cancel(&self) {
        self.canceller.cancel();
    }
}

/// How a library thread wakes the event loop.
enum Wake {
    /// Writes a byte to the pipe the loop reads (`add_reader`); no GIL needed.
    Pipe(std::io::PipeWriter),
    /// Calls this function with the GIL (it schedules `settle` with `call_soon_threadsafe`).
    Call(Py<PyAny>),
}

/// What library threads share with the loop: completed calls, one wake-up per batch.
struct Shared {
    queue: CompletionQueue<(u64, Result<Converted, Error>)>,
    wake: Wake,
}

impl Shared {
    /// On the completing thread: queues the outcome; the first of a batch wakes the loop.
    fn push(&self, token: u64, outcome: Result<Converted, Error>) {
        match &self.wake {
            // Written under the queue's lock, so that `settle` (which reads it under the
            // same lock) never waits for it. One byte at most is ever unread: the pipe
            // cannot fill.
            Wake::Pipe(writer) => self.queue.push_and_wake((token, outcome), || {
                let _ = (&*writer).write_all(&[1]);
            }),
            // Outside the lock: the call takes the GIL, which `settle` holds while it takes.
            // The event loop is gone (closed) if the call fails: nobody waits any more.
            Wake::Call(wake) => {
                if self.queue.push((token, outcome)) {
                    with_python(|py| wake.call0(py).map(drop).ok());
                }
            }
        }
    }
}

/// The futures waiting on one loop, by token (touched only with the GIL).
#[derive(Default)]
struct Waiting {
    next: u64,
    futures: HashMap<u64, Py<PyAny>>,
}

/// The completions of one asyncio event loop (see the module documentation).
#[pyclass(frozen, module = "mqstate._mqstate", name = "Completions")]
pub(crate) struct Completions {
    shared: Arc<Shared>,
    waiting: Mutex<Waiting>,
    reader: Option<Mutex<std::io::PipeReader>>,
}

#[pymethods]
impl Completions {
    /// With `wake=None`: completions are announced on a pipe, whose reading end is
    /// `fileno()` (for `loop.add_reader(fileno, settle)`). Otherwise `wake()` is called from
    /// a library thread when completions become ready; it must only schedule `settle()` on
    /// the event loop (`loop.call_soon_threadsafe`).
    #[new]
    #[pyo3(signature = (wake=None))]
    fn new(wake: Option<Py<PyAny>>) -> PyResult<Completions> {
        let (reader, wake) = match wake {
            Some(wake) => (None, Wake::Call(wake)),
            None => {
                let (reader, writer) = std::io::pipe()
                    .map_err(|e| PyRuntimeError::new_err(format!("no pipe: {e}")))?;
                (Some(Mutex::new(reader)), Wake::Pipe(writer))
            }
        };
        Ok(Completions {
            shared: Arc::new(Shared {
                queue: CompletionQueue::new(),
                wake,
            }),
            waiting: Mutex::new(Waiting::default()),
            reader,
        })
    }

    /// The pipe's reading end to watch, or None in `wake` mode (or where a pipe is no file
    /// descriptor).
    fn fileno(&self) -> Option<i64> {
        #[cfg(unix)]
        {
            use std::os::fd::AsRawFd;
            self.reader.as_ref().map(|r| i64::from(lock(r).as_raw_fd()))
        }
        #[cfg(not(unix))]
        {
            None
        }
    }

    /// On the loop's thread: settles the future of every call completed since the last
    /// `settle` (cancelled futures are skipped); the next completion wakes the loop again.
    fn settle(&self, py: Python<'_>) -> PyResult<()> {
        let done = self.shared.queue.take_with(|| {
            if let Some(reader) = &self.reader {
                let mut byte = [0u8; 1];
                let _ = lock(reader).read(&mut byte);
            }
        });
        for (token, outcome) in done {
            let Some(future) = lock(&self.waiting).futures.remove(&token) else {
                continue;
            };
            let future = future.bind(py);
            if future
                .call_method0(pyo3::intern!(py, "done"))?
                .is_truthy()?
            {
                continue; // cancelled by its awaiter
            }
            match convert(py, outcome) {
                Ok(value) => future.call_method1(pyo3::intern!(py, "set_result"), (value,))?,
                Err(e) => {
                    future.call_method1(pyo3::intern!(py, "set_exception"), (e.into_value(py),))?
                }
            };
        }
        Ok(())
    }
}
