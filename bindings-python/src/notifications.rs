//! Notification payloads and topics (spec §7): what the service publishes to a client that
//! observes a key, decoded for the client and encoded for the service.

use bytes::Bytes;
use mqstate::Error;
use mqstate::codec::{KeyEvent, Notification};
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use crate::args::{ByteArg, bytes_repr, to_bytes};
use crate::errors::to_py;

/// A decoded notification (immutable): which client it is for, which key changed, and how.
#[pyclass(frozen, eq, hash, module = "mqstate._mqstate", name = "Notification")]
#[derive(PartialEq, Eq, Hash)]
pub(crate) struct PyNotification {
    inner: Notification,
}

#[pymethods]
impl PyNotification {
    /// The MQTT client id the notification is addressed to (from the topic).
    #[getter]
    fn client_id(&self) -> &str {
        &self.inner.client_id
    }

    /// The key that changed (from the topic).
    #[getter]
    fn key<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        to_bytes(py, &self.inner.key)
    }

    /// "set" or "delete".
    #[getter]
    fn kind(&self) -> &'static str {
        match self.inner.event {
            KeyEvent::Set(_) => "set",
            KeyEvent::Delete => "delete",
        }
    }

    /// The new value (kind "set"); None for "delete".
    #[getter]
    fn value<'py>(&self, py: Python<'py>) -> Option<Bound<'py, PyBytes>> {
        match &self.inner.event {
            KeyEvent::Set(v) => Some(to_bytes(py, v)),
            KeyEvent::Delete => None,
        }
    }

    /// The topic this notification is published on.
    #[getter]
    fn topic(&self) -> String {
        self.inner.topic()
    }

    /// The payload in the service's form (`NOTIFY SET VALUE v` or `NOTIFY DELETE`).
    fn encode<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        to_bytes(py, &self.inner.event.encode())
    }

    fn __repr__(&self) -> String {
        let value = match &self.inner.event {
            KeyEvent::Set(v) => bytes_repr(v),
            KeyEvent::Delete => "None".to_owned(),
        };
        format!(
            "Notification(client_id={:?}, key={}, kind='{}', value={value})",
            self.inner.client_id,
            bytes_repr(&self.inner.key),
            self.kind()
        )
    }
}

/// Decodes a notification from its topic and payload.
#[pyfunction]
fn decode_notification(topic: &str, payload: ByteArg) -> PyResult<PyNotification> {
    let payload = Bytes::copy_from_slice(payload.as_ref());
    let inner = Notification::decode(topic, &payload).map_err(to_py)?;
    Ok(PyNotification { inner })
}

/// Encodes a notification payload (the service's side): "set" with a value, or "delete".
#[pyfunction]
#[pyo3(signature = (kind, value = None))]
fn encode_notification<'py>(
    py: Python<'py>,
    kind: &str,
    value: Option<ByteArg>,
) -> PyResult<Bound<'py, PyBytes>> {
    let event = match (kind, value) {
        ("set", Some(v)) => KeyEvent::Set(Bytes::copy_from_slice(v.as_ref())),
        ("delete", None) => KeyEvent::Delete,
        ("set", None) => return Err(to_py(Error::invalid_argument("kind \"set\" needs a value"))),
        ("delete", Some(_)) => {
            return Err(to_py(Error::invalid_argument(
                "kind \"delete\" takes no value",
            )));
        }
        (other, _) => {
            return Err(to_py(Error::invalid_argument(format!(
                "kind must be \"set\" or \"delete\", not {other:?}"
            ))));
        }
    };
    Ok(to_bytes(py, &event.encode()))
}

/// Adds this module's functions and classes to `_mqstate`.
pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyNotification>()?;
    m.add_function(wrap_pyfunction!(decode_notification, m)?)?;
    m.add_function(wrap_pyfunction!(encode_notification, m)?)?;
    Ok(())
}
