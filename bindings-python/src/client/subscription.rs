//! `Subscription`: the core's one stream type (key changes, lock holders, lock status) as the
//! package's `Subscription` / `AsyncSubscription` read it. The next event is a
//! [`PendingCall`] of the core's `next_within`, so the blocking client waits on it in slices
//! (Ctrl-C cancels it) and asyncio awaits it (cancelling the task cancels it); the core's
//! timeout and cancellation lose no event.

use mqstate::bridge::Subscription;
use pyo3::prelude::*;

use super::convert;
use super::pending::{PendingCall, pending};
use crate::args::{Seconds, duration};

/// A subscription: events as tuples (see `mqstate/_events.py`).
#[pyclass(frozen, module = "mqstate._mqstate", name = "Subscription")]
pub(crate) struct NativeSubscription {
    sub: Subscription,
}

impl NativeSubscription {
    pub(crate) fn new(sub: Subscription) -> NativeSubscription {
        NativeSubscription { sub }
    }
}

#[pymethods]
impl NativeSubscription {
    /// The next event as a pending call: an event tuple, `None` once the subscription has
    /// ended, or a `timeout` error when none came within `timeout` seconds (`None`: no limit).
    #[pyo3(signature = (timeout))]
    fn next(&self, timeout: Option<Seconds>) -> PyResult<PendingCall> {
        let call = self.sub.next_within(duration("timeout", timeout)?);
        Ok(pending(call, |py, e| match e {
            Some(e) => convert::event(py, e),
            None => Ok(py.None()),
        }))
    }

    /// The next event if one is buffered, else `None`.
    fn try_next(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        match self.sub.try_next() {
            Some(e) => convert::event(py, e),
            None => Ok(py.None()),
        }
    }

    /// Ends the subscription now (STOP for a key).
    fn close(&self) {
        self.sub.close();
    }

    /// Whether it has ended.
    #[getter]
    fn closed(&self) -> bool {
        self.sub.is_closed()
    }
}
