//! The hybrid logical clock (spec §5): the immutable value [`PyHlc`] with the send and
//! receive rules taking the time as an argument, and the shared [`PyClock`] reading the
//! system time.

use std::cmp::Ordering;

use mqstate::hlc::{Clock, DEFAULT_MAX_DRIFT_MS, Hlc, SystemTimeSource};
use pyo3::prelude::*;

use crate::errors::to_py;

// The text signatures below spell the default drift out for `inspect` and the stub.
const _: () = assert!(DEFAULT_MAX_DRIFT_MS == 60_000);

/// One hybrid logical clock value `{wall_ms}:{counter}:{node_id}` (immutable, ordered by
/// wall clock, counter, then node id).
#[pyclass(frozen, eq, ord, hash, module = "mqstate._mqstate", name = "Hlc")]
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) struct PyHlc {
    inner: Hlc,
}

impl From<Hlc> for PyHlc {
    fn from(inner: Hlc) -> PyHlc {
        PyHlc { inner }
    }
}

#[pymethods]
impl PyHlc {
    /// A clock value; raises InvalidArgumentError for an empty node id or one with ':'.
    #[new]
    fn new(wall_ms: u64, counter: u64, node_id: &str) -> PyResult<PyHlc> {
        Hlc::new(wall_ms, counter, node_id)
            .map(PyHlc::from)
            .map_err(to_py)
    }

    /// Parses `{wall}:{counter}:{node}` (padded or not); raises MalformedError.
    #[staticmethod]
    fn parse(text: &str) -> PyResult<PyHlc> {
        Hlc::parse(text).map(PyHlc::from).map_err(to_py)
    }

    /// Milliseconds since the Unix epoch.
    #[getter]
    fn wall_ms(&self) -> u64 {
        self.inner.wall_ms()
    }

    /// The logical counter.
    #[getter]
    fn counter(&self) -> u64 {
        self.inner.counter()
    }

    /// The node id.
    #[getter]
    fn node_id(&self) -> &str {
        self.inner.node_id()
    }

    /// Compares (wall_ms, counter) only, as fencing tokens do: -1, 0 or 1.
    fn cmp_time(&self, other: PyRef<'_, PyHlc>) -> i8 {
        match self.inner.cmp_time(&other.inner) {
            Ordering::Less => -1,
            Ordering::Equal => 0,
            Ordering::Greater => 1,
        }
    }

    /// The send step at `now_ms`: a new value; raises ClockDriftError or ClockOverflowError.
    #[pyo3(
        signature = (now_ms, max_drift_ms = DEFAULT_MAX_DRIFT_MS),
        text_signature = "($self, now_ms, max_drift_ms=60000)"
    )]
    fn tick(&self, now_ms: u64, max_drift_ms: u64) -> PyResult<PyHlc> {
        self.inner
            .tick(now_ms, max_drift_ms)
            .map(PyHlc::from)
            .map_err(to_py)
    }

    /// The receive step: `other` merged into this value at `now_ms`, as a new value.
    #[pyo3(
        signature = (other, now_ms, max_drift_ms = DEFAULT_MAX_DRIFT_MS),
        text_signature = "($self, other, now_ms, max_drift_ms=60000)"
    )]
    fn receive(&self, other: PyRef<'_, PyHlc>, now_ms: u64, max_drift_ms: u64) -> PyResult<PyHlc> {
        self.inner
            .receive(&other.inner, now_ms, max_drift_ms)
            .map(PyHlc::from)
            .map_err(to_py)
    }

    /// The canonical form: wall clock padded to 15 digits, counter to 5.
    fn __str__(&self) -> String {
        self.inner.to_string()
    }

    fn __repr__(&self) -> String {
        format!("Hlc.parse('{}')", self.inner)
    }
}

/// A process's hybrid logical clock: one node id, the system time, thread-safe.
#[pyclass(frozen, module = "mqstate._mqstate", name = "Clock")]
pub(crate) struct PyClock {
    inner: Clock,
}

#[pymethods]
impl PyClock {
    /// A clock starting at the current system time; raises InvalidArgumentError for a bad
    /// node id.
    #[new]
    #[pyo3(
        signature = (node_id, *, max_drift_ms = DEFAULT_MAX_DRIFT_MS),
        text_signature = "(node_id, *, max_drift_ms=60000)"
    )]
    fn new(node_id: &str, max_drift_ms: u64) -> PyResult<PyClock> {
        Clock::with_time_source(node_id, SystemTimeSource, max_drift_ms)
            .map(|inner| PyClock { inner })
            .map_err(to_py)
    }

    /// The current value, without ticking.
    #[getter]
    fn current(&self) -> PyHlc {
        self.inner.current().into()
    }

    /// The node id.
    #[getter]
    fn node_id(&self) -> String {
        self.inner.current().node_id().to_owned()
    }

    /// The maximum drift ahead of the system time this clock accepts.
    #[getter]
    fn max_drift_ms(&self) -> u64 {
        self.inner.max_drift_ms()
    }

    /// The system time in milliseconds since the Unix epoch, as this clock reads it.
    fn now_ms(&self) -> u64 {
        self.inner.now_ms()
    }

    /// Ticks for a send (a request's `__ts`) and returns the new value.
    fn tick(&self) -> PyResult<PyHlc> {
        self.inner.tick().map(PyHlc::from).map_err(to_py)
    }

    /// Merges a received `__ts`; on error the clock is unchanged.
    fn receive(&self, other: PyRef<'_, PyHlc>) -> PyResult<PyHlc> {
        self.inner
            .receive(&other.inner)
            .map(PyHlc::from)
            .map_err(to_py)
    }

    fn __repr__(&self) -> String {
        format!(
            "<Clock current='{}' max_drift_ms={}>",
            self.inner.current(),
            self.inner.max_drift_ms()
        )
    }
}

/// Adds this module's constants and classes to `_mqstate`.
pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("DEFAULT_MAX_DRIFT_MS", DEFAULT_MAX_DRIFT_MS)?;
    m.add_class::<PyHlc>()?;
    m.add_class::<PyClock>()?;
    Ok(())
}
