//! Request payloads (spec §3): the client's encoders and the service's decoder.
//!
//! The encoders validate what the service would refuse (an empty key, a zero or absent
//! expiry) before anything is sent, and raise `InvalidArgumentError` for it.

use std::num::NonZeroU64;

use bytes::Bytes;
use mqstate::Error;
use mqstate::codec::{Request, SetCondition};
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use crate::args::{ByteArg, bytes_repr, opt_bytes_repr, to_bytes};
use crate::errors::{store_to_py, to_py};

/// Validates and encodes a request.
fn encode<'py>(py: Python<'py>, request: Request<&[u8]>) -> PyResult<Bound<'py, PyBytes>> {
    request.validate().map_err(to_py)?;
    Ok(to_bytes(py, &request.encode()))
}

fn parse_expiry(px_ms: Option<u64>) -> Result<Option<NonZeroU64>, Error> {
    match px_ms {
        None => Ok(None),
        Some(ms) => NonZeroU64::new(ms)
            .map(Some)
            .ok_or_else(|| Error::invalid_argument("px_ms must be at least 1 millisecond")),
    }
}

/// `SET key value [NX|NEX] [PX ms]` as a request payload; `condition` is spelled as in
/// every mqstate language (`"nx"` or `"nex"`, any case).
#[pyfunction]
#[pyo3(signature = (key, value, *, condition = None, px_ms = None))]
fn encode_set<'py>(
    py: Python<'py>,
    key: ByteArg,
    value: ByteArg,
    condition: Option<&str>,
    px_ms: Option<u64>,
) -> PyResult<Bound<'py, PyBytes>> {
    let request = Request::Set {
        key: key.as_ref(),
        value: value.as_ref(),
        condition: SetCondition::parse(condition).map_err(to_py)?,
        expiry_ms: parse_expiry(px_ms).map_err(to_py)?,
    };
    encode(py, request)
}

/// `GET key` as a request payload.
#[pyfunction]
fn encode_get<'py>(py: Python<'py>, key: ByteArg) -> PyResult<Bound<'py, PyBytes>> {
    encode(py, Request::Get { key: key.as_ref() })
}

/// `DEL key` as a request payload.
#[pyfunction]
fn encode_del<'py>(py: Python<'py>, key: ByteArg) -> PyResult<Bound<'py, PyBytes>> {
    encode(py, Request::Del { key: key.as_ref() })
}

/// `VDEL key value` as a request payload.
#[pyfunction]
fn encode_vdel<'py>(
    py: Python<'py>,
    key: ByteArg,
    value: ByteArg,
) -> PyResult<Bound<'py, PyBytes>> {
    let request = Request::VDel {
        key: key.as_ref(),
        value: value.as_ref(),
    };
    encode(py, request)
}

/// `KEYNOTIFY key [STOP]` as a request payload.
#[pyfunction]
#[pyo3(signature = (key, *, stop = false))]
fn encode_keynotify<'py>(
    py: Python<'py>,
    key: ByteArg,
    stop: bool,
) -> PyResult<Bound<'py, PyBytes>> {
    let request = Request::KeyNotify {
        key: key.as_ref(),
        stop,
    };
    encode(py, request)
}

/// `SCAN pattern [token]` (spec §3.1) as a request payload: the first page without `token`,
/// each next page with the previous page's token. An empty pattern is refused.
#[pyfunction]
#[pyo3(signature = (pattern, *, token = None))]
fn encode_scan<'py>(
    py: Python<'py>,
    pattern: ByteArg,
    token: Option<ByteArg>,
) -> PyResult<Bound<'py, PyBytes>> {
    let request = Request::Scan {
        pattern: pattern.as_ref(),
        token: token.as_ref().map(|t| t.as_ref()),
    };
    encode(py, request)
}

/// A request as the service decodes it (immutable).
#[pyclass(frozen, eq, hash, module = "mqstate._mqstate", name = "Request")]
#[derive(PartialEq, Eq, Hash)]
pub(crate) struct PyRequest {
    inner: Request<Bytes>,
}

#[pymethods]
impl PyRequest {
    /// The verb, upper case: "SET", "GET", "DEL", "VDEL", "KEYNOTIFY" or "SCAN".
    #[getter]
    fn verb(&self) -> &'static str {
        self.inner.verb().as_str()
    }

    /// The key (a SCAN's pattern).
    #[getter]
    fn key<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        to_bytes(py, self.inner.key())
    }

    /// The value of a SET or VDEL; None for the other verbs.
    #[getter]
    fn value<'py>(&self, py: Python<'py>) -> Option<Bound<'py, PyBytes>> {
        match &self.inner {
            Request::Set { value, .. } | Request::VDel { value, .. } => Some(to_bytes(py, value)),
            _ => None,
        }
    }

    /// The condition of a SET: None, "NX" or "NEX".
    #[getter]
    fn condition(&self) -> Option<&'static str> {
        match &self.inner {
            Request::Set { condition, .. } => condition.as_wire(),
            _ => None,
        }
    }

    /// The expiry of a SET in milliseconds (PX), or None.
    #[getter]
    fn px_ms(&self) -> Option<u64> {
        match &self.inner {
            Request::Set { expiry_ms, .. } => expiry_ms.map(NonZeroU64::get),
            _ => None,
        }
    }

    /// Whether a KEYNOTIFY carries STOP; False for the other verbs.
    #[getter]
    fn stop(&self) -> bool {
        matches!(self.inner, Request::KeyNotify { stop: true, .. })
    }

    /// The glob pattern of a SCAN; None for the other verbs.
    #[getter]
    fn pattern<'py>(&self, py: Python<'py>) -> Option<Bound<'py, PyBytes>> {
        match &self.inner {
            Request::Scan { pattern, .. } => Some(to_bytes(py, pattern)),
            _ => None,
        }
    }

    /// The continuation token of a SCAN for a page after the first; None otherwise.
    #[getter]
    fn token<'py>(&self, py: Python<'py>) -> Option<Bound<'py, PyBytes>> {
        match &self.inner {
            Request::Scan {
                token: Some(token), ..
            } => Some(to_bytes(py, token)),
            _ => None,
        }
    }

    /// The request payload (the canonical encoding).
    fn encode<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        to_bytes(py, &self.inner.encode())
    }

    fn __repr__(&self) -> String {
        let value = match &self.inner {
            Request::Set { value, .. } | Request::VDel { value, .. } => Some(&value[..]),
            _ => None,
        };
        format!(
            "Request(verb='{}', key={}, value={}, condition={}, px_ms={}, stop={})",
            self.verb(),
            bytes_repr(self.inner.key()),
            opt_bytes_repr(value),
            self.condition()
                .map_or("None".to_owned(), |c| format!("'{c}'")),
            self.px_ms().map_or("None".to_owned(), |ms| ms.to_string()),
            if self.stop() { "True" } else { "False" },
        )
    }
}

/// Decodes a request payload as the service does; raises the store error it would answer.
#[pyfunction]
fn decode_request(payload: ByteArg) -> PyResult<PyRequest> {
    let payload = Bytes::copy_from_slice(payload.as_ref());
    let inner = Request::decode(&payload).map_err(store_to_py)?;
    Ok(PyRequest { inner })
}

/// Adds this module's functions and classes to `_mqstate`.
pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyRequest>()?;
    m.add_function(wrap_pyfunction!(encode_set, m)?)?;
    m.add_function(wrap_pyfunction!(encode_get, m)?)?;
    m.add_function(wrap_pyfunction!(encode_del, m)?)?;
    m.add_function(wrap_pyfunction!(encode_vdel, m)?)?;
    m.add_function(wrap_pyfunction!(encode_keynotify, m)?)?;
    m.add_function(wrap_pyfunction!(encode_scan, m)?)?;
    m.add_function(wrap_pyfunction!(decode_request, m)?)?;
    Ok(())
}
