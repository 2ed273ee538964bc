//! Conversions between the binding layer's values and the plain Python values the package's
//! Python classes are built from (tuples, bytes, `Hlc`, floats of seconds).

use bytes::Bytes;
use mqstate::bridge::Event;
use mqstate::codec::KeyEvent;
use mqstate::lock::LockStatus;
use mqstate::lock::{Edit, EditOutcome, HolderChange};
use mqstate::{Error, Hlc, KeyNotification, Versioned};
use pyo3::IntoPyObjectExt;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyTuple};

use crate::errors::to_py;
use crate::hlc::PyHlc;

/// A version as `Hlc` or `None`.
pub(crate) fn version(py: Python<'_>, v: Option<Hlc>) -> PyResult<Py<PyAny>> {
    match v {
        Some(v) => PyHlc::from(v).into_py_any(py),
        None => Ok(py.None()),
    }
}

/// `(value: bytes, version: Hlc | None)` or `None`.
pub(crate) fn versioned(py: Python<'_>, v: Option<Versioned>) -> PyResult<Py<PyAny>> {
    match v {
        Some(v) => (PyBytes::new(py, &v.value), version(py, v.version)?).into_py_any(py),
        None => Ok(py.None()),
    }
}

fn change(py: Python<'_>, n: KeyNotification) -> PyResult<Py<PyAny>> {
    let (kind, value) = match n.event {
        KeyEvent::Set(v) => ("set", Some(PyBytes::new(py, &v))),
        KeyEvent::Delete => ("delete", None),
    };
    (
        "change",
        PyBytes::new(py, &n.key),
        kind,
        value,
        version(py, n.version)?,
        n.resync,
        n.dropped_before,
    )
        .into_py_any(py)
}

fn holder(py: Python<'_>, h: HolderChange) -> PyResult<Py<PyAny>> {
    ("holder", h.holder, version(py, h.version)?, h.resync).into_py_any(py)
}

fn status(py: Python<'_>, s: LockStatus) -> PyResult<Py<PyAny>> {
    let name = s.as_str();
    match s {
        LockStatus::NotHeld => ("status", name, py.None(), py.None(), py.None()).into_py_any(py),
        LockStatus::Held { token, lease, .. } => (
            "status",
            name,
            version(py, Some(token))?,
            lease.as_secs_f64(),
            py.None(),
        )
            .into_py_any(py),
        LockStatus::Lost(reason) => {
            ("status", name, py.None(), py.None(), reason.as_str()).into_py_any(py)
        }
    }
}

/// An event as a tuple whose first item names its kind (see `mqstate/_events.py`).
pub(crate) fn event(py: Python<'_>, e: Event) -> PyResult<Py<PyAny>> {
    match e {
        Event::Change(n) => change(py, n),
        Event::Holder(h) => holder(py, h),
        Event::Status(s) => status(py, s),
        Event::Degraded { reason } => ("degraded", reason).into_py_any(py),
        Event::Restored => PyTuple::new(py, ["restored"])?.into_py_any(py),
    }
}

/// A decision returned by the package's wrapper of a user's edit function:
/// `("set", bytes)`, `("delete",)` or `("keep",)`.
pub(crate) fn edit(decision: &Bound<'_, PyAny>) -> PyResult<Edit> {
    let kind: String = decision.get_item(0)?.extract()?;
    match kind.as_str() {
        "set" => {
            let value: Vec<u8> = decision.get_item(1)?.extract()?;
            Ok(Edit::Set(Bytes::from(value)))
        }
        "delete" => Ok(Edit::Delete),
        "keep" => Ok(Edit::Keep),
        other => Err(to_py(Error::invalid_argument(format!(
            "unknown edit decision {other:?}"
        )))),
    }
}

/// `(previous, edit kind, new version, token, attempts)`.
pub(crate) fn edit_outcome(py: Python<'_>, o: EditOutcome) -> PyResult<Py<PyAny>> {
    let kind = match o.edit {
        Edit::Set(_) => "set",
        Edit::Delete => "delete",
        Edit::Keep => "keep",
    };
    (
        versioned(py, o.previous)?,
        kind,
        version(py, o.version)?,
        version(py, Some(o.token))?,
        o.attempts,
    )
        .into_py_any(py)
}
