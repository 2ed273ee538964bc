//! Locks and elections for Python: every wait a [`PendingCall`], every stream a
//! `Subscription`, and the fenced edit's decision a Python callable run by the core's
//! blocking-callback adapter (`bridge::blocking_decide`) with the GIL; an exception it raises
//! comes back to the caller as the very same exception object. A lease, term or timeout
//! left out (`None`) is the core's default.

use std::sync::Arc;

use bytes::Bytes;
use mqstate::bridge::{ElectionHandle, LockHandle, blocking_decide};
use mqstate::lock::Edit;
use mqstate::{Error, ErrorKind, Versioned};
use pyo3::IntoPyObjectExt;
use pyo3::prelude::*;

use super::convert;
use super::gate::with_python;
use super::native::NativeTrace;
use super::pending::{PendingCall, pending};
use super::subscription::NativeSubscription;
use crate::args::{ByteArg, Seconds, duration};
use crate::errors::RaisedByCallback;

fn token(py: Python<'_>, t: Option<mqstate::Hlc>) -> PyResult<Py<PyAny>> {
    convert::version(py, t)
}

/// Runs the package's decision wrapper `decide(previous) -> ("set", bytes) | ("delete",) |
/// ("keep",)` with the GIL; what it raises becomes a `callback` error carrying it.
fn decide_in_python(decide: &Py<PyAny>, previous: Option<Versioned>) -> Result<Edit, Error> {
    with_python(|py| {
        let raised = |e: PyErr| {
            let message = format!("the edit function raised {e}");
            Error::callback(message, Arc::new(RaisedByCallback(e)))
        };
        let arg = convert::versioned(py, previous).map_err(raised)?;
        let decision = decide.call1(py, (arg,)).map_err(raised)?;
        convert::edit(decision.bind(py)).map_err(raised)
    })
    .unwrap_or_else(|| Err(Error::new(ErrorKind::Closed, "the interpreter is exiting")))
}

/// A leased lock.
#[pyclass(frozen, module = "mqstate._mqstate", name = "Lock")]
pub(crate) struct NativeLock {
    lock: LockHandle,
}

impl NativeLock {
    pub(crate) fn new(lock: LockHandle) -> NativeLock {
        NativeLock { lock }
    }
}

#[pymethods]
impl NativeLock {
    /// The same lock with its calls traced: `(lock, trace)`, as `NativeClient.traced`.
    #[pyo3(signature = (traceparent, tracestate))]
    fn traced(
        &self,
        traceparent: Option<&str>,
        tracestate: Option<&str>,
    ) -> PyResult<(NativeLock, NativeTrace)> {
        let trace = NativeTrace::checked(traceparent, tracestate)?;
        Ok((NativeLock::new(self.lock.traced(trace.trace())), trace))
    }

    #[getter]
    fn key<'py>(&self, py: Python<'py>) -> Bound<'py, pyo3::types::PyBytes> {
        pyo3::types::PyBytes::new(py, self.lock.key())
    }

    #[getter]
    fn holder_id(&self) -> &str {
        self.lock.holder_id()
    }

    #[pyo3(signature = (lease))]
    fn try_acquire(&self, lease: Option<Seconds>) -> PyResult<PendingCall> {
        let call = self.lock.try_acquire(duration("lease", lease)?);
        Ok(pending(call, token))
    }

    #[pyo3(signature = (lease, timeout))]
    fn acquire(&self, lease: Option<Seconds>, timeout: Option<Seconds>) -> PyResult<PendingCall> {
        let call = self
            .lock
            .acquire(duration("lease", lease)?, duration("timeout", timeout)?);
        Ok(pending(call, |py, t| token(py, Some(t))))
    }

    fn renew(&self) -> PendingCall {
        pending(self.lock.renew(), token)
    }

    fn release(&self) -> PendingCall {
        pending(self.lock.release(), |py, b| b.into_py_any(py))
    }

    fn holder(&self) -> PendingCall {
        pending(self.lock.holder(), |py, h| h.into_py_any(py))
    }

    #[getter]
    fn fencing_token(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        token(py, self.lock.fencing_token())
    }

    #[getter]
    fn is_held(&self) -> bool {
        self.lock.is_held()
    }

    #[pyo3(signature = (period))]
    fn set_auto_renew(&self, period: Option<Seconds>) -> PyResult<()> {
        self.lock
            .set_auto_renew(duration("auto_renew", period)?)
            .map_err(crate::errors::to_py)
    }

    fn watch_holder(&self) -> PendingCall {
        pending(self.lock.watch_holder(), |py, sub| {
            NativeSubscription::new(sub).into_py_any(py)
        })
    }

    fn watch_status(&self) -> NativeSubscription {
        NativeSubscription::new(self.lock.watch_status())
    }

    /// Fenced edit of `key`: `decide(previous)` runs on a library thread with the GIL.
    #[pyo3(signature = (key, decide, lease, timeout))]
    fn edit(
        &self,
        key: ByteArg,
        decide: Py<PyAny>,
        lease: Option<Seconds>,
        timeout: Option<Seconds>,
    ) -> PyResult<PendingCall> {
        let call = self.lock.edit(
            Bytes::copy_from_slice(key.as_ref()),
            duration("lease", lease)?,
            duration("timeout", timeout)?,
            blocking_decide(move |previous| decide_in_python(&decide, previous)),
        );
        Ok(pending(call, convert::edit_outcome))
    }
}

/// A candidate in an election.
#[pyclass(frozen, module = "mqstate._mqstate", name = "Election")]
pub(crate) struct NativeElection {
    election: ElectionHandle,
}

impl NativeElection {
    pub(crate) fn new(election: ElectionHandle) -> NativeElection {
        NativeElection { election }
    }
}

#[pymethods]
impl NativeElection {
    /// The same candidate with its calls traced: `(election, trace)`, as `NativeClient.traced`.
    #[pyo3(signature = (traceparent, tracestate))]
    fn traced(
        &self,
        traceparent: Option<&str>,
        tracestate: Option<&str>,
    ) -> PyResult<(NativeElection, NativeTrace)> {
        let trace = NativeTrace::checked(traceparent, tracestate)?;
        Ok((
            NativeElection::new(self.election.traced(trace.trace())),
            trace,
        ))
    }

    #[getter]
    fn candidate_id(&self) -> &str {
        self.election.candidate_id()
    }

    #[pyo3(signature = (term, timeout))]
    fn campaign(&self, term: Option<Seconds>, timeout: Option<Seconds>) -> PyResult<PendingCall> {
        let call = self
            .election
            .campaign(duration("term", term)?, duration("timeout", timeout)?);
        Ok(pending(call, |py, t| token(py, Some(t))))
    }

    #[pyo3(signature = (term))]
    fn try_campaign(&self, term: Option<Seconds>) -> PyResult<PendingCall> {
        let call = self.election.try_campaign(duration("term", term)?);
        Ok(pending(call, |py, b| b.into_py_any(py)))
    }

    fn resign(&self) -> PendingCall {
        pending(self.election.resign(), |py, b| b.into_py_any(py))
    }

    fn leader(&self) -> PendingCall {
        pending(self.election.leader(), |py, l| l.into_py_any(py))
    }

    #[getter]
    fn is_leader(&self) -> bool {
        self.election.is_leader()
    }

    #[getter]
    fn fencing_token(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        token(py, self.election.fencing_token())
    }

    fn watch_leader(&self) -> PendingCall {
        pending(self.election.watch_leader(), |py, sub| {
            NativeSubscription::new(sub).into_py_any(py)
        })
    }

    fn watch_status(&self) -> NativeSubscription {
        NativeSubscription::new(self.election.watch_status())
    }
}
