//! The client half of the native module: `connect` → `Store`, and the objects it hands out
//! (`PendingCall`, `Subscription`, `Pager`, `Lock`, `Election`), each method a thin conversion over
//! the core's binding layer (`mqstate::bridge`). The Python classes users see
//! (`mqstate.AsyncClient`, `mqstate.Client` …, in `python/mqstate/client.py`) wrap these.

mod convert;
mod gate;
mod locks;
pub(crate) mod native;
mod pending;
mod subscription;

use pyo3::prelude::*;

pub(crate) use pending::{PendingCall, pending};

/// Adds the client classes and functions to the native module.
pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<pending::PendingCall>()?;
    m.add_class::<pending::Completions>()?;
    m.add_class::<native::NativeClient>()?;
    m.add_class::<native::NativeTrace>()?;
    m.add_class::<subscription::NativeSubscription>()?;
    m.add_class::<native::NativePager>()?;
    m.add_class::<locks::NativeLock>()?;
    m.add_class::<locks::NativeElection>()?;
    m.add_function(wrap_pyfunction!(native::connect, m)?)?;
    m.add_function(wrap_pyfunction!(native::check_settings, m)?)?;
    m.add_function(wrap_pyfunction!(native::setting_names, m)?)?;
    m.add_function(wrap_pyfunction!(native::telemetry_vocabulary, m)?)?;
    m.add_function(wrap_pyfunction!(native::telemetry_key_text, m)?)?;
    m.add_function(wrap_pyfunction!(gate::_shutdown, m)?)?;
    m.add_function(wrap_pyfunction!(gate::_after_fork, m)?)?;
    Ok(())
}
