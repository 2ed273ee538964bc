//! `mqstate.testing.LocalStore`'s native half: [`mqstate_server::testing::LocalStore`] run
//! on the library's own runtime (the one the clients use), each waiting operation a
//! [`PendingCall`] (so a blocking wait releases the GIL and Ctrl-C cancels it, and asyncio
//! can await it). The Python class (`python/mqstate/testing.py`) wraps this one.
//!
//! Operations go through a read-write lock: `stop` and `restart` take it for writing (they
//! replace the running server), the others for reading, so a fault and a look inside never
//! see a store half restarted. Several stores share nothing but the runtime.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use mqstate::bridge::Call;
use mqstate::{Error, ErrorKind};
use mqstate_server::testing::LocalStore;
use pyo3::IntoPyObjectExt;
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use tokio::sync::RwLock;

use crate::args::{ByteArg, Seconds, duration as to_duration};
use crate::client::{PendingCall, pending};
use crate::errors::RaisedByCallback;
use crate::hlc::PyHlc;

/// Adds the local store's class and constructor to the native module.
pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<NativeLocalStore>()?;
    m.add_function(wrap_pyfunction!(start_local_store, m)?)?;
    Ok(())
}

/// An I/O error of the store (its port could not be bound) as the matching `OSError`.
fn os_error(what: &str, e: std::io::Error) -> Error {
    let message = format!("{what}: {e}");
    Error::callback(message, Arc::new(RaisedByCallback(PyErr::from(e))))
}

/// What a store's Python object and its calls in flight share.
struct Shared {
    store: RwLock<LocalStore>,
    /// Fixed for the store's life (a restart binds the same port).
    port: u16,
    /// Mirrors `LocalStore::is_running`, readable without waiting for the lock.
    running: AtomicBool,
}

/// `start_local_store()`: a pending call that gives a running `LocalStore`.
#[pyfunction]
pub(crate) fn start_local_store() -> PendingCall {
    let call = Call::spawn(&mqstate::bridge::runtime::shared_handle(), async {
        LocalStore::start()
            .await
            .map_err(|e| os_error("the local store could not start", e))
    });
    pending(call, |py, store| {
        let port = store.port();
        NativeLocalStore {
            shared: Arc::new(Shared {
                store: RwLock::new(store),
                port,
                running: AtomicBool::new(true),
            }),
        }
        .into_py_any(py)
    })
}

/// A local store (see `mqstate.testing.LocalStore`).
#[pyclass(frozen, module = "mqstate._mqstate", name = "LocalStore")]
pub(crate) struct NativeLocalStore {
    shared: Arc<Shared>,
}

impl NativeLocalStore {
    /// Runs `work` on the store (the lock taken for reading) as a pending call.
    fn read<T, F>(&self, work: F, convert: impl ConvertFn<T>) -> PendingCall
    where
        T: Send + 'static,
        F: FnOnce(&LocalStore) -> Result<T, Error> + Send + 'static,
    {
        let shared = Arc::clone(&self.shared);
        let call = Call::spawn(&mqstate::bridge::runtime::shared_handle(), async move {
            work(&*shared.store.read().await)
        });
        pending(call, convert)
    }
}

/// How a call's result becomes a Python object.
trait ConvertFn<T>: FnOnce(Python<'_>, T) -> PyResult<Py<PyAny>> + Send + 'static {}
impl<T, F: FnOnce(Python<'_>, T) -> PyResult<Py<PyAny>> + Send + 'static> ConvertFn<T> for F {}

fn none(py: Python<'_>, (): ()) -> PyResult<Py<PyAny>> {
    Ok(py.None())
}

fn int(py: Python<'_>, n: usize) -> PyResult<Py<PyAny>> {
    n.into_py_any(py)
}

#[pymethods]
impl NativeLocalStore {
    /// `mqtt://127.0.0.1:PORT`.
    #[getter]
    fn url(&self) -> String {
        format!("mqtt://127.0.0.1:{}", self.shared.port)
    }

    /// The TCP port.
    #[getter]
    fn port(&self) -> u16 {
        self.shared.port
    }

    /// Whether the store runs.
    #[getter]
    fn is_running(&self) -> bool {
        self.shared.running.load(Ordering::SeqCst)
    }

    /// Stops the store (waits until its connections and tasks are gone); idempotent.
    fn stop(&self) -> PendingCall {
        let shared = Arc::clone(&self.shared);
        let call = Call::spawn(&mqstate::bridge::runtime::shared_handle(), async move {
            let mut store = shared.store.write().await;
            store.stop().await;
            shared.running.store(false, Ordering::SeqCst);
            Ok(())
        });
        pending(call, none)
    }

    /// Resets every client connection; gives how many it closed.
    fn cut_connections(&self) -> PendingCall {
        let shared = Arc::clone(&self.shared);
        let call = Call::spawn(&mqstate::bridge::runtime::shared_handle(), async move {
            shared.store.read().await.cut_connections().await
        });
        pending(call, int)
    }

    /// Stops answering requests for `duration` seconds (at least 1 ms).
    fn pause(&self, duration: Seconds) -> PyResult<PendingCall> {
        let duration = to_duration("duration", Some(duration))?.unwrap_or_default();
        Ok(self.read(move |store| store.pause(duration), none))
    }

    /// Kills and restarts the store on its port; with `keep_data`, persisted keys survive.
    fn restart(&self, keep_data: bool) -> PendingCall {
        let shared = Arc::clone(&self.shared);
        let call = Call::spawn(&mqstate::bridge::runtime::shared_handle(), async move {
            let mut store = shared.store.write().await;
            if !store.is_running() {
                return Err(Error::new(ErrorKind::Closed, "the local store is stopped"));
            }
            let outcome = store.restart(keep_data).await;
            shared.running.store(store.is_running(), Ordering::SeqCst);
            outcome.map_err(|e| os_error("the local store could not restart", e))
        });
        pending(call, none)
    }

    /// Answers the next `n` requests (of `command` only, if given) with the store error
    /// whose code is `error`.
    #[pyo3(signature = (n, error, command))]
    fn fail_next(&self, n: usize, error: String, command: Option<String>) -> PendingCall {
        self.read(
            move |store| store.fail_next(n, &error, command.as_deref()),
            none,
        )
    }

    /// The keys matching the glob `pattern`, in byte order (a list of `bytes`).
    fn keys(&self, pattern: ByteArg) -> PendingCall {
        let pattern = pattern.as_ref().to_vec();
        self.read(
            move |store| store.keys(pattern),
            |py, keys| {
                keys.iter()
                    .map(|k| PyBytes::new(py, k))
                    .collect::<Vec<_>>()
                    .into_py_any(py)
            },
        )
    }

    /// `(value: bytes, version: Hlc)` of `key`, or None.
    fn get(&self, key: ByteArg) -> PendingCall {
        let key = key.as_ref().to_vec();
        self.read(
            move |store| store.get(key),
            |py, entry| match entry {
                Some(e) => (PyBytes::new(py, &e.value), PyHlc::from(e.version)).into_py_any(py),
                None => Ok(py.None()),
            },
        )
    }

    /// Deletes every key; gives how many.
    fn clear(&self) -> PendingCall {
        self.read(LocalStore::clear, int)
    }

    /// How many requests a pause holds now.
    fn held_requests(&self) -> PendingCall {
        self.read(LocalStore::held_requests, int)
    }

    /// Drops every notification the store sends for `duration` seconds (at least 1 ms).
    fn drop_notifications(&self, duration: Seconds) -> PyResult<PendingCall> {
        let duration = to_duration("duration", Some(duration))?.unwrap_or_default();
        Ok(self.read(move |store| store.drop_notifications(duration), none))
    }

    /// How many notifications `drop_notifications` has dropped so far.
    fn dropped_notifications(&self) -> PendingCall {
        self.read(LocalStore::dropped_notifications, int)
    }

    /// Forgets every KEYNOTIFY registration, connections up; gives how many there were.
    fn forget_registrations(&self) -> PendingCall {
        self.read(LocalStore::forget_registrations, int)
    }

    fn __repr__(&self) -> String {
        format!(
            "<mqstate._mqstate.LocalStore url={:?} running={}>",
            self.url(),
            self.is_running()
        )
    }
}
