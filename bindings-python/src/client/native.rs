//! `NativeClient` (the core's `ClientHandle`) and `NativePager` as the Python package's
//! clients use them: each method converts its
//! arguments, makes one call into the core's binding layer, and returns a [`PendingCall`]
//! (or a plain value). Every policy — condition spellings, VDEL outcome names, settings by
//! name, default durations — is the core's.

use std::sync::Arc;

use bytes::Bytes;
use mqstate::bridge::{ClientHandle, Pager, Settings};
use mqstate::codec::SetCondition;
use mqstate::lock::LockOptions;
use mqstate::telemetry::{CallTrace, TraceContext};
use mqstate::{
    DelOptions, ElectionOptions, Error, GetOptions, Hlc, ObserveOptions, ScanOptions, SetOptions,
};
use pyo3::IntoPyObjectExt;
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use super::convert;
use super::locks::{NativeElection, NativeLock};
use super::pending::{PendingCall, failed, pending};
use super::subscription::NativeSubscription;
use crate::args::{ByteArg, Seconds, duration};
use crate::errors::to_py;

fn bytes(arg: &ByteArg) -> Bytes {
    Bytes::copy_from_slice(arg.as_ref())
}

fn token(text: Option<&str>) -> Result<Option<Hlc>, Error> {
    text.map(Hlc::parse).transpose()
}

/// Validates settings without connecting (so constructors fail early).
#[pyfunction]
#[pyo3(signature = (url, from_env, pairs))]
pub(crate) fn check_settings(
    url: Option<&str>,
    from_env: bool,
    pairs: Vec<(String, String)>,
) -> PyResult<()> {
    Settings::from_pairs(url, from_env, pairs)
        .map(|_| ())
        .map_err(to_py)
}

/// Every setting name, for keyword-argument checks and docs: `[(name, description)]`.
#[pyfunction]
pub(crate) fn setting_names() -> Vec<(&'static str, &'static str)> {
    mqstate::SETTINGS
        .iter()
        .map(|s| (s.name, s.description))
        .collect()
}

/// Connects on the library's runtime; the pending call gives a `ClientHandle`.
#[pyfunction]
#[pyo3(signature = (url, from_env, pairs))]
pub(crate) fn connect(
    url: Option<&str>,
    from_env: bool,
    pairs: Vec<(String, String)>,
) -> PendingCall {
    match Settings::from_pairs(url, from_env, pairs) {
        Ok(s) => pending(ClientHandle::connect(s), |py, store| {
            NativeClient { store }.into_py_any(py)
        }),
        Err(e) => failed(e),
    }
}

/// `(name, unix_nanos, [(attribute, int)])`: one event of a traced call.
type TraceEvent = (&'static str, u64, Vec<(&'static str, i64)>);

/// What one traced call met on its way ([`CallTrace`]).
#[pyclass(frozen, module = "mqstate._mqstate", name = "NativeTrace")]
pub(crate) struct NativeTrace {
    trace: Arc<CallTrace>,
}

impl NativeTrace {
    /// A trace carrying `traceparent` (and `tracestate`), checked (`InvalidArgumentError`
    /// for a value that is not W3C's): the native half of `traced()` on a client, a pager,
    /// a lock or an election.
    pub(crate) fn checked(
        traceparent: Option<&str>,
        tracestate: Option<&str>,
    ) -> PyResult<NativeTrace> {
        let context = traceparent
            .map(|tp| TraceContext::new(tp, tracestate))
            .transpose()
            .map_err(to_py)?;
        Ok(NativeTrace {
            trace: CallTrace::new(context),
        })
    }

    /// The core's trace.
    pub(crate) fn trace(&self) -> Arc<CallTrace> {
        Arc::clone(&self.trace)
    }
}

#[pymethods]
impl NativeTrace {
    /// The events so far, taken: `[(name, unix_nanos, [(attribute, int)])]`.
    fn take_events(&self) -> Vec<TraceEvent> {
        self.trace
            .take_events()
            .into_iter()
            .map(|e| {
                let nanos =
                    e.at.duration_since(std::time::UNIX_EPOCH)
                        .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX));
                (e.name, nanos, e.attributes)
            })
            .collect()
    }
}

/// A key as the text of `mqstate.key` (the core's rule: its UTF-8, each byte of an invalid
/// sequence written `\xNN`).
#[pyfunction]
pub(crate) fn telemetry_key_text(key: ByteArg) -> String {
    mqstate::telemetry::key_text(key.as_ref())
}

/// The core's telemetry vocabulary, for `mqstate.telemetry`: `(names, metrics, buckets)`,
/// names as `{constant: value}`, metrics as `[(name, unit, kind, source, description)]`.
#[pyfunction]
#[allow(clippy::type_complexity)]
pub(crate) fn telemetry_vocabulary() -> (
    Vec<(&'static str, &'static str)>,
    Vec<(
        &'static str,
        &'static str,
        &'static str,
        &'static str,
        &'static str,
    )>,
    Vec<f64>,
) {
    use mqstate::telemetry::{CALL_DURATION_BUCKETS, METRICS, names as n};
    let names = n::ALL.to_vec();
    let metrics = METRICS
        .iter()
        .map(|m| (m.name, m.unit, m.kind.as_str(), m.source, m.description))
        .collect();
    (names, metrics, CALL_DURATION_BUCKETS.to_vec())
}

/// A connection to the state store.
#[pyclass(frozen, module = "mqstate._mqstate", name = "NativeClient")]
pub(crate) struct NativeClient {
    store: ClientHandle,
}

#[pymethods]
impl NativeClient {
    /// The MQTT client id.
    #[getter]
    fn client_id(&self) -> &str {
        self.store.client_id()
    }

    /// A hit of the client's cache, as a 1-tuple holding what `get` would answer; `None`
    /// when the read must go to `get` (a miss, or no cache). The timeout is `get`'s, checked
    /// the same way, so a hit refuses what a miss would.
    #[pyo3(signature = (key, timeout))]
    fn get_cached(
        &self,
        py: Python<'_>,
        key: ByteArg,
        timeout: Option<Seconds>,
    ) -> PyResult<Option<Py<PyAny>>> {
        let options = GetOptions {
            timeout: duration("timeout", timeout)?,
            bypass_cache: false,
        };
        match self.store.get_cached(key.as_ref(), &options) {
            Some(hit) => Ok(Some((convert::versioned(py, hit)?,).into_py_any(py)?)),
            None => Ok(None),
        }
    }

    /// The cache's counters as `(name, value)` pairs in the vocabulary's order, or `None`
    /// when the cache is off.
    fn cache_stats(&self) -> Option<Vec<(&'static str, u64)>> {
        self.store.cache_stats().map(|s| s.pairs().to_vec())
    }

    /// The values of the core's metrics of sources `link`, `client` and `cache` now:
    /// `[(name, value)]` (the cache's only with a cache).
    fn metric_values(&self) -> Vec<(&'static str, u64)> {
        self.store.client().metric_values()
    }

    /// Requests sent and not yet answered.
    #[getter]
    fn pending_requests(&self) -> usize {
        self.store.client().pending_requests()
    }

    /// The broker's `(host, port)` (the calls' `server.address` and `server.port`).
    #[getter]
    fn server(&self) -> (String, u16) {
        let (host, port) = self.store.client().server();
        (host.to_owned(), port)
    }

    /// The same store with its calls traced: `(client, trace)`. Its requests carry
    /// `traceparent` (and `tracestate`, if any) as MQTT5 user properties, checked here
    /// (`InvalidArgumentError` for a value that is not W3C's), and the trace collects what
    /// they met on the way (`trace.take_events()`).
    #[pyo3(signature = (traceparent, tracestate))]
    fn traced(
        &self,
        traceparent: Option<&str>,
        tracestate: Option<&str>,
    ) -> PyResult<(NativeClient, NativeTrace)> {
        let trace = NativeTrace::checked(traceparent, tracestate)?;
        Ok((
            NativeClient {
                store: self.store.traced(trace.trace()),
            },
            trace,
        ))
    }

    /// `(connected, connections, sessions, broker_max_packet_size)`.
    fn link_info(&self) -> (bool, u64, u64, u32) {
        let l = self.store.link_info();
        (
            l.connected,
            l.connections,
            l.sessions,
            l.broker_max_packet_size,
        )
    }

    #[pyo3(signature = (key, value, condition, expiry, fencing_token, persist, timeout))]
    #[allow(clippy::too_many_arguments)]
    fn set(
        &self,
        key: ByteArg,
        value: ByteArg,
        condition: Option<&str>,
        expiry: Option<Seconds>,
        fencing_token: Option<&str>,
        persist: bool,
        timeout: Option<Seconds>,
    ) -> PyResult<PendingCall> {
        let options = SetOptions {
            condition: SetCondition::parse(condition).map_err(to_py)?,
            expiry: duration("expiry", expiry)?,
            fencing_token: token(fencing_token).map_err(to_py)?,
            persist,
            timeout: duration("timeout", timeout)?,
        };
        Ok(pending(
            self.store.set(bytes(&key), bytes(&value), options),
            |py, o| (o.applied, convert::version(py, o.version)?).into_py_any(py),
        ))
    }

    #[pyo3(signature = (key, timeout, bypass_cache))]
    fn get(
        &self,
        key: ByteArg,
        timeout: Option<Seconds>,
        bypass_cache: bool,
    ) -> PyResult<PendingCall> {
        let options = GetOptions {
            timeout: duration("timeout", timeout)?,
            bypass_cache,
        };
        // The Python layer asked `get_cached` first (or bypasses the cache).
        Ok(pending(
            self.store.get_after_miss(bytes(&key), options),
            convert::versioned,
        ))
    }

    #[pyo3(signature = (key, fencing_token, timeout))]
    fn delete(
        &self,
        key: ByteArg,
        fencing_token: Option<&str>,
        timeout: Option<Seconds>,
    ) -> PyResult<PendingCall> {
        let options = DelOptions {
            fencing_token: token(fencing_token).map_err(to_py)?,
            timeout: duration("timeout", timeout)?,
        };
        Ok(pending(self.store.del(bytes(&key), options), |py, n| {
            n.into_py_any(py)
        }))
    }

    #[pyo3(signature = (key, value, fencing_token, timeout))]
    fn vdel(
        &self,
        key: ByteArg,
        value: ByteArg,
        fencing_token: Option<&str>,
        timeout: Option<Seconds>,
    ) -> PyResult<PendingCall> {
        let options = DelOptions {
            fencing_token: token(fencing_token).map_err(to_py)?,
            timeout: duration("timeout", timeout)?,
        };
        Ok(pending(
            self.store.vdel(bytes(&key), bytes(&value), options),
            |py, o| o.name().into_py_any(py),
        ))
    }

    #[pyo3(signature = (key, timeout))]
    fn observe(&self, key: ByteArg, timeout: Option<Seconds>) -> PyResult<PendingCall> {
        let options = ObserveOptions {
            timeout: duration("timeout", timeout)?,
        };
        Ok(pending(
            self.store.observe(bytes(&key), options),
            |py, sub| NativeSubscription::new(sub).into_py_any(py),
        ))
    }

    /// A pager over the keys matching the glob `pattern` (an empty one raises
    /// InvalidArgumentError); nothing is sent before the first page. `timeout` (seconds)
    /// bounds each page.
    #[pyo3(signature = (pattern, timeout))]
    fn scan(&self, pattern: ByteArg, timeout: Option<Seconds>) -> PyResult<NativePager> {
        let options = ScanOptions {
            timeout: duration("timeout", timeout)?,
        };
        let pager = self.store.scan(bytes(&pattern), options).map_err(to_py)?;
        Ok(NativePager { pager })
    }

    /// A lock; `lease` is the lease of its calls that name none (`None`: the core's).
    #[pyo3(signature = (key, lease, holder, session_id, auto_renew))]
    fn lock(
        &self,
        key: ByteArg,
        lease: Option<Seconds>,
        holder: Option<String>,
        session_id: Option<String>,
        auto_renew: Option<Seconds>,
    ) -> PyResult<NativeLock> {
        let options = LockOptions {
            holder,
            session_id,
            auto_renew: duration("auto_renew", auto_renew)?,
            lease: duration("lease", lease)?,
        };
        let lock = self.store.lock(key.as_ref(), options).map_err(to_py)?;
        Ok(NativeLock::new(lock))
    }

    /// A candidate; `term` is the term of its calls that name none (`None`: the core's).
    #[pyo3(signature = (name, candidate, term, session_id, renew_every))]
    fn election(
        &self,
        name: ByteArg,
        candidate: String,
        term: Option<Seconds>,
        session_id: Option<String>,
        renew_every: Option<Seconds>,
    ) -> PyResult<NativeElection> {
        let options = ElectionOptions {
            term: duration("term", term)?,
            session_id,
            renew_every: duration("renew_every", renew_every)?,
        };
        let election = self
            .store
            .election(name.as_ref(), candidate, options)
            .map_err(to_py)?;
        Ok(NativeElection::new(election))
    }

    /// Closes the connection (every clone); idempotent.
    fn close(&self) -> PendingCall {
        pending(self.store.close(), |py, ()| Ok(py.None()))
    }
}

/// A SCAN: one page per `next_page()` call, the continuation token kept in the core (a
/// failed or cancelled page leaves it unchanged, so asking again retries that page).
#[pyclass(frozen, module = "mqstate._mqstate", name = "Pager")]
pub(crate) struct NativePager {
    pager: Pager,
}

#[pymethods]
impl NativePager {
    /// The same scan with its pages traced: `(pager, trace)`, as `NativeClient.traced`; the
    /// scan's position is shared.
    #[pyo3(signature = (traceparent, tracestate))]
    fn traced(
        &self,
        traceparent: Option<&str>,
        tracestate: Option<&str>,
    ) -> PyResult<(NativePager, NativeTrace)> {
        let trace = NativeTrace::checked(traceparent, tracestate)?;
        Ok((
            NativePager {
                pager: self.pager.traced(trace.trace()),
            },
            trace,
        ))
    }

    /// The next page as a pending call: a list of keys (`bytes`, possibly empty while more
    /// pages follow), or None after the last page.
    fn next_page(&self) -> PendingCall {
        pending(self.pager.next_page(), |py, page| match page {
            Some(keys) => keys
                .iter()
                .map(|k| PyBytes::new(py, k))
                .collect::<Vec<_>>()
                .into_py_any(py),
            None => Ok(py.None()),
        })
    }

    /// Whether the last page has been returned.
    #[getter]
    fn done(&self) -> bool {
        self.pager.is_done()
    }
}
