//! Response payloads (spec §4): the client's decoder and the service's encoder.
//!
//! A store error (`-ERR …`) is a decoded *value* (`kind == "error"`), not an exception: the
//! payload was well formed. Only a payload that follows no response form raises
//! `MalformedError`. `Response.raise_for_error()` turns an error value into the
//! `StoreError` subclass of its kind when the caller wants an exception.

use bytes::Bytes;
use mqstate::Error;
use mqstate::codec::{Response, ScanPage, StoreError, Verb};
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use crate::args::{ByteArg, bytes_repr, opt_bytes_repr, to_bytes};
use crate::errors::{store_to_py, to_py};

/// A decoded response (immutable).
#[pyclass(frozen, eq, hash, module = "mqstate._mqstate", name = "Response")]
#[derive(PartialEq, Eq, Hash)]
pub(crate) struct PyResponse {
    inner: Response,
}

#[pymethods]
impl PyResponse {
    /// "ok", "not_applied", "not_found", "value", "count", "keys" or "error".
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

    /// One SCAN page's keys, possibly none (kind "keys"); None otherwise.
    #[getter]
    fn keys<'py>(&self, py: Python<'py>) -> Option<Vec<Bound<'py, PyBytes>>> {
        match &self.inner {
            Response::Page(page) => Some(page.keys.iter().map(|k| to_bytes(py, k)).collect()),
            _ => None,
        }
    }

    /// The continuation token of a SCAN page with more to come (kind "keys"); None on the
    /// final page and for the other kinds.
    #[getter]
    fn token<'py>(&self, py: Python<'py>) -> Option<Bound<'py, PyBytes>> {
        match &self.inner {
            Response::Page(ScanPage {
                token: Some(token), ..
            }) => Some(to_bytes(py, token)),
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
            Response::Page(page) => format!(
                "Response(kind='keys', keys=[{}], token={})",
                page.keys
                    .iter()
                    .map(|k| bytes_repr(k))
                    .collect::<Vec<_>>()
                    .join(", "),
                opt_bytes_repr(page.token.as_deref())
            ),
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
            "verb must be one of SET, GET, DEL, VDEL, KEYNOTIFY, SCAN, not {name:?}"
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

/// The fields a response of some kind is built from (`encode_response`'s keywords).
struct Fields<'a> {
    value: Option<ByteArg>,
    count: Option<u64>,
    error_text: Option<&'a str>,
    keys: Option<Vec<ByteArg>>,
    token: Option<ByteArg>,
}

/// Builds a SCAN page (kind "keys") from `keys` and an optional `token`.
fn build_page(fields: Fields<'_>) -> Result<Response, Error> {
    match fields {
        Fields {
            value: None,
            count: None,
            error_text: None,
            keys: Some(keys),
            token,
        } => Ok(Response::Page(ScanPage {
            keys: keys
                .iter()
                .map(|k| Bytes::copy_from_slice(k.as_ref()))
                .collect(),
            token: token.map(|t| Bytes::copy_from_slice(t.as_ref())),
        })),
        _ => Err(Error::invalid_argument(
            "a response of kind \"keys\" takes keys, optionally token, and nothing else",
        )),
    }
}

/// Builds the response of `kind` from the field(s) that kind takes.
fn build_response(kind: &str, fields: Fields<'_>) -> Result<Response, Error> {
    if kind == "keys" {
        return build_page(fields);
    }
    if fields.keys.is_some() || fields.token.is_some() {
        return Err(Error::invalid_argument(format!(
            "a response of kind {kind:?} takes no keys or token"
        )));
    }
    let Fields {
        value,
        count,
        error_text,
        ..
    } = fields;
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
                "kind must be one of ok, not_applied, not_found, value, count, keys, error, not {kind:?}"
            )));
        }
    };
    Ok(response)
}

/// Encodes a response payload (the service's side): `kind` with its field (`keys` and an
/// optional `token` for a SCAN page).
#[pyfunction]
#[pyo3(signature = (kind, *, value = None, count = None, error_text = None, keys = None, token = None))]
fn encode_response<'py>(
    py: Python<'py>,
    kind: &str,
    value: Option<ByteArg>,
    count: Option<u64>,
    error_text: Option<&str>,
    keys: Option<Vec<ByteArg>>,
    token: Option<ByteArg>,
) -> PyResult<Bound<'py, PyBytes>> {
    let fields = Fields {
        value,
        count,
        error_text,
        keys,
        token,
    };
    let response = build_response(kind, fields).map_err(to_py)?;
    Ok(to_bytes(py, &response.encode()))
}

/// Adds this module's functions and classes to `_mqstate`.
pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyResponse>()?;
    m.add_function(wrap_pyfunction!(decode_response, m)?)?;
    m.add_function(wrap_pyfunction!(encode_response, m)?)?;
    Ok(())
}
