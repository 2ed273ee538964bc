//! Argument conversion shared by every exported function.
//!
//! Keys, values and payloads are bytes on the wire; Python callers hold them as `bytes`,
//! `bytearray`, `memoryview` or `str` (taken as UTF-8). [`ByteArg`] accepts all four, without
//! a copy for `bytes` and `str`, and refuses anything else with a `TypeError` that names the
//! accepted types (PyO3 prefixes the argument's name).
//!
//! Durations are seconds (`int` or `float`) or a `datetime.timedelta` ([`Seconds`]); the
//! core's `secs_to_duration` turns them into a `Duration` ([`duration`]), with the one set of
//! messages every language shares (negative, NaN or infinite values are refused there).

use std::time::Duration;

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::pybacked::{PyBackedBytes, PyBackedStr};
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBool, PyByteArray, PyBytes, PyFloat, PyInt, PyMemoryView, PyString, PyType};

use crate::errors::to_py;

/// A bytes-like argument: `bytes`, `bytearray`, `memoryview` or `str` (UTF-8).
pub(crate) enum ByteArg {
    /// A `bytes` object, borrowed (kept alive, not copied).
    Bytes(PyBackedBytes),
    /// A `str`, as its UTF-8 encoding.
    Str(PyBackedStr),
    /// A copy of a mutable buffer (`bytearray`, `memoryview`): it cannot be borrowed safely.
    Owned(Vec<u8>),
}

impl AsRef<[u8]> for ByteArg {
    fn as_ref(&self) -> &[u8] {
        match self {
            ByteArg::Bytes(b) => b.as_ref(),
            ByteArg::Str(s) => s.as_bytes(),
            ByteArg::Owned(v) => v,
        }
    }
}

impl<'a, 'py> FromPyObject<'a, 'py> for ByteArg {
    type Error = PyErr;

    fn extract(obj: Borrowed<'a, 'py, PyAny>) -> PyResult<Self> {
        if let Ok(bytes) = obj.cast::<PyBytes>() {
            return Ok(ByteArg::Bytes(PyBackedBytes::from(bytes.to_owned())));
        }
        if let Ok(text) = obj.cast::<PyString>() {
            return Ok(ByteArg::Str(PyBackedStr::try_from(text.to_owned())?));
        }
        if let Ok(array) = obj.cast::<PyByteArray>() {
            return Ok(ByteArg::Owned(array.to_vec()));
        }
        if let Ok(view) = obj.cast::<PyMemoryView>() {
            // `tobytes()` copies in C order whatever the view's shape; the limited API has
            // no buffer protocol before Python 3.11.
            let copy = view.call_method0("tobytes")?;
            let copy = copy.cast::<PyBytes>()?;
            return Ok(ByteArg::Owned(copy.as_bytes().to_vec()));
        }
        Err(wrong_type(obj, "bytes, bytearray, memoryview or str"))
    }
}

/// The `TypeError` for an argument of none of the `expected` types.
fn wrong_type(obj: Borrowed<'_, '_, PyAny>, expected: &str) -> PyErr {
    let type_name = obj
        .get_type()
        .name()
        .map_or_else(|_| "?".to_owned(), |n| n.to_string());
    PyTypeError::new_err(format!("expected {expected}, not {type_name}"))
}

/// A duration argument as seconds: an `int`, a `float` or a `datetime.timedelta` (its
/// `total_seconds()`). `bool` is refused: `True` is not a duration.
pub(crate) struct Seconds(f64);

/// `datetime.timedelta`, looked up once.
static TIMEDELTA: PyOnceLock<Py<PyType>> = PyOnceLock::new();

impl<'a, 'py> FromPyObject<'a, 'py> for Seconds {
    type Error = PyErr;

    fn extract(obj: Borrowed<'a, 'py, PyAny>) -> PyResult<Self> {
        let py = obj.py();
        if obj.cast::<PyFloat>().is_ok()
            || (obj.cast::<PyInt>().is_ok() && obj.cast::<PyBool>().is_err())
        {
            return Ok(Seconds(obj.extract::<f64>()?));
        }
        let timedelta = TIMEDELTA.import(py, "datetime", "timedelta")?;
        if obj.is_instance(timedelta)? {
            return Ok(Seconds(
                obj.call_method0("total_seconds")?.extract::<f64>()?,
            ));
        }
        Err(wrong_type(
            obj,
            "seconds (int or float) or datetime.timedelta",
        ))
    }
}

/// The duration option `name`, converted by the core (`None` stays `None`: the core's
/// default applies).
pub(crate) fn duration(name: &str, value: Option<Seconds>) -> PyResult<Option<Duration>> {
    value
        .map(|s| mqstate::bridge::secs_to_duration(name, s.0).map_err(to_py))
        .transpose()
}

/// `bytes` holding a copy of `data`.
pub(crate) fn to_bytes<'py>(py: Python<'py>, data: &[u8]) -> Bound<'py, PyBytes> {
    PyBytes::new(py, data)
}

/// Python's `repr()` of a bytes object holding `data` (for `__repr__` methods).
pub(crate) fn bytes_repr(data: &[u8]) -> String {
    let mut out = String::with_capacity(data.len() + 3);
    out.push_str("b'");
    for &b in data {
        match b {
            b'\'' => out.push_str("\\'"),
            b'\\' => out.push_str("\\\\"),
            b'\t' => out.push_str("\\t"),
            b'\n' => out.push_str("\\n"),
            b'\r' => out.push_str("\\r"),
            0x20..=0x7e => out.push(char::from(b)),
            _ => out.push_str(&format!("\\x{b:02x}")),
        }
    }
    out.push('\'');
    out
}

/// Python's `repr()` of an optional bytes object.
pub(crate) fn opt_bytes_repr(data: Option<&[u8]>) -> String {
    data.map_or_else(|| "None".to_owned(), bytes_repr)
}
