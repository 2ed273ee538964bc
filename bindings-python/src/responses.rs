//! Response payloads (spec §4): the client's decoder and the service's encoder.
//!
//! A store error (`-ERR …`) is a decoded *value* (`kind == "error"`), not an exception: the
//! payload was well formed. Only a payload that follows no response form raises
//! `MalformedError`. `Response.raise_for_error()` turns an error value into the
//! `StoreError` subclass of its kind when the caller wants an exception.

use bytes::Bytes;
use mqstate::Error;
use mqstate::codec::{Response, StoreError, Verb};
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use crate::args::{ByteArg, bytes_repr, to_bytes};
use crate::errors::{store_to_py, to_py};

/// A decoded response (immutable).
#[pyclass(frozen, eq, hash, module = "mqstate._mqstate", name = "Response")]
#[derive(PartialEq, Eq, Hash)]
pub(crate) struct PyResponse {
    inner: Response,
}

#[pymethods]
impl PyResponse {
    /// "ok", "not_applied", "not_found", "value", "count" or "error".
    #[getter]
    fn kind(&self) -> &'static str {
        self.inner.kind_name()
    }

    /// GET's value (kind "value"); None otherwise.
    #[getter]
    fn value<'py>(&self, py: Python<'py>) -> Option<Bound<'py, PyBytes>> {
        match &self.inner {
            Response::Value(v) => Some(to_bytes(py, v)),
            _ => None,
        }
    }

    /// DEL/VDEL's count of deleted keys, or KEYNOTIFY STOP's (kind "count"); None otherwise.
    #[getter]
    fn count(&self) -> Option<u64> {
        match &self.inner {
            Response::Count(n) => Some(*n),
            _ => None,
        }
    }

    /// The store error's kind (kind "error"): a vector name such as "syntax_error", or
    /// "unknown_store_error" for a text this version does not know; None otherwise.
    #[getter]
    fn error_kind(&self) -> Option<&'static str> {
        match &self.inner {
            Response::Error(e) => Some(e.kind().as_str()),
            _ => None,
        }
    }

    /// The service's exact error text (kind "error"); None otherwise.
    #[getter]
    fn error_text(&self) -> Option<&str> {
        match &self.inner {
            Response::Error(e) => Some(e.text()),
            _ => None,
        }
    }

    /// Raises the `StoreError` subclass of an error response; returns None otherwise.
    fn raise_for_error(&self) -> PyResult<()> {
        match &self.inner {
            Response::Error(e) => Err(store_to_py(e.clone())),
            _ => Ok(()),
        }
    }

    /// The payload in the service's form.
    fn encode<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        to_bytes(py, &self.inner.encode())
    }

    fn __repr__(&self) -> String {
        match &self.inner {
            Response::Value(v) => format!("Response(kind='value', value={})", bytes_repr(v)),
            Response::Count(n) => format!("Response(kind='count', count={n})"),
            Response::Error(e) => format!(
                "Response(kind='error', error_kind='{}', error_text={:?})",
                e.kind().as_str(),
                e.text()
            ),
            other => format!("Response(kind='{}')", other.kind_name()),
        }
    }
}

fn parse_verb(name: &str) -> Result<Verb, Error> {
    Verb::from_wire(name.as_bytes()).ok_or_else(|| {
        Error::invalid_argument(format!(
            "verb must be one of SET, GET, DEL, VDEL, KEYNOTIFY, not {name:?}"
        ))
    })
}

/// Decodes a response payload; with `verb`, a form that verb cannot receive is malformed.
#[pyfunction]
#[pyo3(signature = (payload, verb = None))]
fn decode_response(payload: ByteArg, verb: Option<&str>) -> PyResult<PyResponse> {
    let verb = verb.map(parse_verb).transpose().map_err(to_py)?;
    let payload = Bytes::copy_from_slice(payload.as_ref());
    let inner = match verb {
        Some(verb) => Response::decode_for(verb, &payload),
        None => Response::decode(&payload),
    }
    .map_err(to_py)?;
    Ok(PyResponse { inner })
}

/// Builds the response of `kind` from the one field that kind takes.
fn build_response(
    kind: &str,
    value: Option<ByteArg>,
    count: Option<u64>,
    error_text: Option<&str>,
) -> Result<Response, Error> {
    let response = match (kind, value, count, error_text) {
        ("ok", None, None, None) => Response::Ok,
        ("not_applied", None, None, None) => Response::NotApplied,
        ("not_found", None, None, None) => Response::NotFound,
        ("value", Some(v), None, None) => Response::Value(Bytes::copy_from_slice(v.as_ref())),
        ("count", None, Some(n), None) => Response::Count(n),
        ("error", None, None, Some(text)) if !text.is_empty() => {
            Response::Error(StoreError::other(text))
        }
        ("ok" | "not_applied" | "not_found" | "value" | "count" | "error", ..) => {
            return Err(Error::invalid_argument(format!(
                "a response of kind {kind:?} takes {}",
                match kind {
                    "value" => "value and nothing else",
                    "count" => "count and nothing else",
                    "error" => "a non-empty error_text and nothing else",
                    _ => "no value, count or error_text",
                }
            )));
        }
        _ => {
            return Err(Error::invalid_argument(format!(
                "kind must be one of ok, not_applied, not_found, value, count, error, not {kind:?}"
            )));
        }
    };
    Ok(response)
}

/// Encodes a response payload (the service's side): `kind` with its one field.
#[pyfunction]
#[pyo3(signature = (kind, *, value = None, count = None, error_text = None))]
fn encode_response<'py>(
    py: Python<'py>,
    kind: &str,
    value: Option<ByteArg>,
    count: Option<u64>,
    error_text: Option<&str>,
) -> PyResult<Bound<'py, PyBytes>> {
    let response = build_response(kind, value, count, error_text).map_err(to_py)?;
    Ok(to_bytes(py, &response.encode()))
}

/// Adds this module's functions and classes to `_mqstate`.
pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyResponse>()?;
    m.add_function(wrap_pyfunction!(decode_response, m)?)?;
    m.add_function(wrap_pyfunction!(encode_response, m)?)?;
    Ok(())
}
