//! # mqstate-python
//!
//! The native module `mqstate._mqstate` behind the Python package `mqstate`: the low-level
//! protocol layer (codec, hybrid logical clock, topics) an application needs when it owns its
//! own MQTT connection (paho-mqtt, gmqtt …) and only wants mqstate to speak the state store's
//! protocol.
//!
//! Every exported function is thin: it converts its arguments (`args`), calls the Rust core
//! (`mqstate`), and maps a core error to the Python exception class for its kind
//! (`errors`). The Python-facing modules `mqstate.codec`, `mqstate.hlc`, `mqstate.topics`
//! and `mqstate.errors` (in `python/mqstate/`) re-export these objects with documentation and
//! types; `python/mqstate/_mqstate.pyi` describes this module and the test suite checks it
//! against the built module.
//!
//! No entry point unwraps on input: a panic inside the core would be turned into
//! `pyo3_runtime.PanicException` by PyO3, never an abort, but none is expected.

use pyo3::prelude::*;

mod args;
mod client;
mod errors;
mod hlc;
mod notifications;
mod requests;
mod responses;
mod testing;
mod topics;

/// The native module. Its Python-facing documentation lives in the `mqstate.*` modules.
#[pymodule]
fn _mqstate(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    errors::register(m)?;
    requests::register(m)?;
    responses::register(m)?;
    notifications::register(m)?;
    hlc::register(m)?;
    topics::register(m)?;
    client::register(m)?;
    testing::register(m)?;
    Ok(())
}
