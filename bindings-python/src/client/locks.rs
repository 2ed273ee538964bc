//! Locks and elections for Python: every wait a [`PendingCall`], every stream a
//! `Subscription`, and the fenced edit's decision a Python callable run on a library
//! blocking thread with the GIL; an exception it raises comes back to the caller as the very
//! same exception object.

use std::sync::Arc;

use bytes::Bytes;
use mqstate::bridge::{Decide, ElectionHandle, LockHandle};
use mqstate::lock::Edit;
use mqstate::{Error, ErrorKind, Versioned};
use pyo3::IntoPyObjectExt;
use pyo3::prelude::*;

use super::convert::{self, opt_seconds, seconds};
use super::gate::with_python;
use super::pending::{PendingCall, pending};
use super::store::NativeSubscription;
use crate::args::ByteArg;
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
    #[getter]
    fn key<'py>(&self, py: Python<'py>) -> Bound<'py, pyo3::types::PyBytes> {
        pyo3::types::PyBytes::new(py, self.lock.key())
    }

    #[getter]
    fn holder_id(&self) -> &str {
        self.lock.holder_id()
    }

    fn try_acquire(&self, lease: f64) -> PyResult<PendingCall> {
        let call = self.lock.try_acquire(Some(seconds("lease", lease)?));
        Ok(pending(call, token))
    }

    #[pyo3(signature = (lease, timeout))]
    fn acquire(&self, lease: f64, timeout: Option<f64>) -> PyResult<PendingCall> {
        let call = self.lock.acquire(
            Some(seconds("lease", lease)?),
            opt_seconds("timeout", timeout)?,
        );
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
    fn set_auto_renew(&self, period: Option<f64>) -> PyResult<()> {
        self.lock
            .set_auto_renew(opt_seconds("auto_renew", period)?)
            .map_err(crate::errors::to_py)
    }

    fn watch_holder(&self) -> PendingCall {
        pending(self.lock.watch_holder(), |py, sub| {
            NativeSubscription { sub }.into_py_any(py)
        })
    }

    fn watch_status(&self) -> NativeSubscription {
        NativeSubscription {
            sub: self.lock.watch_status(),
        }
    }

    /// Fenced edit of `key`: `decide(previous)` runs on a library thread with the GIL.
    fn edit(
        &self,
        key: ByteArg,
        decide: Py<PyAny>,
        lease: f64,
        timeout: f64,
    ) -> PyResult<PendingCall> {
        let decide = Arc::new(decide);
        let decide: Decide = Arc::new(move |previous| {
            let decide = Arc::clone(&decide);
            Box::pin(async move {
                tokio::task::spawn_blocking(move || decide_in_python(&decide, previous))
                    .await
                    .unwrap_or_else(|e| Err(Error::new(ErrorKind::Closed, e.to_string())))
            })
        });
        let call = self.lock.edit(
            Bytes::copy_from_slice(key.as_ref()),
            Some(seconds("lease", lease)?),
            Some(seconds("timeout", timeout)?),
            decide,
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
    #[getter]
    fn candidate_id(&self) -> &str {
        self.election.candidate_id()
    }

    #[pyo3(signature = (term, timeout))]
    fn campaign(&self, term: f64, timeout: Option<f64>) -> PyResult<PendingCall> {
        let call = self.election.campaign(
            Some(seconds("term", term)?),
            opt_seconds("timeout", timeout)?,
        );
        Ok(pending(call, |py, t| token(py, Some(t))))
    }

    fn try_campaign(&self, term: f64) -> PyResult<PendingCall> {
        let call = self.election.try_campaign(Some(seconds("term", term)?));
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
            NativeSubscription { sub }.into_py_any(py)
        })
    }

    fn watch_status(&self) -> NativeSubscription {
        NativeSubscription {
            sub: self.election.watch_status(),
        }
    }
}
