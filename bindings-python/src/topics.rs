//! Topic names (spec §2, §7), the hex encoding used in notification topics, and the check
//! that refuses response topics the service would disconnect a client for.

use mqstate::topics;
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use crate::args::{ByteArg, to_bytes};
use crate::errors::to_py;

/// The default response topic of `client_id`.
#[pyfunction]
fn response_topic(client_id: &str) -> String {
    topics::response_topic(client_id)
}

/// The filter to subscribe to before a client's first KEYNOTIFY.
#[pyfunction]
fn notification_filter(client_id: &str) -> String {
    topics::notification_filter(client_id)
}

/// The topic on which the service notifies `client_id` of changes to `key`.
#[pyfunction]
fn notification_topic(client_id: &str, key: ByteArg) -> String {
    topics::notification_topic(client_id, key.as_ref())
}

/// Splits a notification topic into (client_id, key); raises MalformedError.
#[pyfunction]
fn parse_notification_topic<'py>(
    py: Python<'py>,
    topic: &str,
) -> PyResult<(String, Bound<'py, PyBytes>)> {
    let (client_id, key) = topics::parse_notification_topic(topic).map_err(to_py)?;
    Ok((client_id, to_bytes(py, &key)))
}

/// Raises InvalidArgumentError if a client must not use `topic` as its response topic.
#[pyfunction]
fn check_response_topic(topic: &str) -> PyResult<()> {
    topics::check_response_topic(topic).map_err(to_py)
}

/// Whether a client may use `topic` as its response topic.
#[pyfunction]
fn is_response_topic_allowed(topic: &str) -> bool {
    topics::check_response_topic(topic).is_ok()
}

/// Upper-case hex of `data`, two digits per byte.
#[pyfunction]
fn hex_encode(data: ByteArg) -> String {
    topics::hex_encode(data.as_ref())
}

/// Decodes hex in either case; raises MalformedError.
#[pyfunction]
fn hex_decode<'py>(py: Python<'py>, text: &str) -> PyResult<Bound<'py, PyBytes>> {
    let data = topics::hex_decode(text).map_err(to_py)?;
    Ok(to_bytes(py, &data))
}

/// Adds this module's constants and functions to `_mqstate`.
pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("SERVICE_ID", topics::SERVICE_ID)?;
    m.add("REQUEST_TOPIC", topics::REQUEST_TOPIC)?;
    m.add("NOTIFICATION_PREFIX", topics::NOTIFICATION_PREFIX)?;
    m.add_function(wrap_pyfunction!(response_topic, m)?)?;
    m.add_function(wrap_pyfunction!(notification_filter, m)?)?;
    m.add_function(wrap_pyfunction!(notification_topic, m)?)?;
    m.add_function(wrap_pyfunction!(parse_notification_topic, m)?)?;
    m.add_function(wrap_pyfunction!(check_response_topic, m)?)?;
    m.add_function(wrap_pyfunction!(is_response_topic_allowed, m)?)?;
    m.add_function(wrap_pyfunction!(hex_encode, m)?)?;
    m.add_function(wrap_pyfunction!(hex_decode, m)?)?;
    Ok(())
}
