//! From the core's one error model to Python exceptions.
//!
//! The exception classes are defined in Python (`mqstate/errors.py`), where multiple
//! inheritance from builtins such as `TimeoutError` and `ValueError` is natural. This module
//! hands each core [`Error`] to the factory `mqstate.errors._from_core` together with its
//! stable code ([`ErrorKind::code`]), the store error kind or RPC status where there is one,
//! and the message; the factory picks the class by code, never by message text.

use mqstate::codec::StoreError;
use mqstate::{Error, ErrorKind};
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::PyList;

/// `mqstate.errors._from_core`, imported on the first error.
static FACTORY: PyOnceLock<Py<PyAny>> = PyOnceLock::new();

/// An exception raised by a user's Python callback, carried through the core unchanged.
pub(crate) struct RaisedByCallback(pub(crate) PyErr);

/// The Python exception for a core error: for an error a user's callback raised, that very
/// exception object.
pub(crate) fn to_py(err: Error) -> PyErr {
    Python::attach(|py| {
        if let Some(raised) = err
            .callback_payload()
            .and_then(|p| p.downcast_ref::<RaisedByCallback>())
        {
            return raised.0.clone_ref(py);
        }
        build(py, &err).unwrap_or_else(|e| fallback(py, &err, e))
    })
}

/// The Python exception for a store error (as the service decoder reports it).
pub(crate) fn store_to_py(err: StoreError) -> PyErr {
    to_py(Error::from(err))
}

fn build(py: Python<'_>, err: &Error) -> PyResult<PyErr> {
    let factory = FACTORY.get_or_try_init(py, || {
        Ok::<_, PyErr>(py.import("mqstate.errors")?.getattr("_from_core")?.unbind())
    })?;
    let kind = err.kind();
    let (store_kind, status) = match kind {
        ErrorKind::Store(store) => (Some(store.as_str()), None),
        ErrorKind::Rpc(status) => (None, Some(status)),
        _ => (None, None),
    };
    let details = match err.rpc_details() {
        Some(d) => {
            let dict = pyo3::types::PyDict::new(py);
            dict.set_item("status_message", d.status_message.as_deref())?;
            dict.set_item("property_name", d.property_name.as_deref())?;
            dict.set_item("property_value", d.property_value.as_deref())?;
            dict.set_item("application_error", d.application_error)?;
            dict.set_item(
                "supported_major_versions",
                d.supported_major_versions.as_deref(),
            )?;
            dict.set_item(
                "request_protocol_version",
                d.request_protocol_version.as_deref(),
            )?;
            Some(dict)
        }
        None => None,
    };
    let exception = factory.bind(py).call1((
        kind.code(),
        err.message(),
        store_kind,
        status,
        details,
        err.may_have_applied(),
    ))?;
    Ok(PyErr::from_value(exception))
}

/// Used only if `mqstate.errors` cannot be imported (the native module loaded on its own).
fn fallback(py: Python<'_>, err: &Error, cause: PyErr) -> PyErr {
    let e = PyRuntimeError::new_err(format!(
        "mqstate error {}: {} (mqstate.errors is unavailable)",
        err.kind().code(),
        err.message()
    ));
    e.set_cause(py, Some(cause));
    e
}

/// `error_codes() -> list[str]`: every stable error code of the core, `rpc_error` included.
/// The Python test suite checks that each has its own exception class.
#[pyfunction]
fn error_codes(py: Python<'_>) -> PyResult<Bound<'_, PyList>> {
    let codes: Vec<&'static str> = ErrorKind::all().map(ErrorKind::code).collect();
    PyList::new(py, codes)
}

/// `store_error_kinds() -> list[tuple[str, str | None]]`: every store error kind's vector
/// name with the service's exact text (`None` for `unknown`).
#[pyfunction]
fn store_error_kinds() -> Vec<(&'static str, Option<&'static str>)> {
    mqstate::codec::StoreErrorKind::ALL
        .into_iter()
        .map(|k| (k.as_str(), k.text()))
        .collect()
}

/// Adds this module's functions to `_mqstate`.
pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(error_codes, m)?)?;
    m.add_function(wrap_pyfunction!(store_error_kinds, m)?)?;
    Ok(())
}
