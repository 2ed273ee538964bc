//! The gate every library thread passes to call into Python (a call's completion, an edit's
//! decision, a subscription sink), so that interpreter exit cannot race with them.
//!
//! A Rust thread resolving a future or calling a Python function while the interpreter
//! finalizes aborts the process. So: entries into Python are counted, new ones are refused
//! once the exit hook ran, and the hook ([`shutdown`], registered with `atexit` by the
//! package) sets that flag and waits, with the GIL released, until no thread is inside —
//! and, bounded, for calls still in flight in the core.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use pyo3::prelude::*;

static CLOSING: AtomicBool = AtomicBool::new(false);
static INSIDE: AtomicUsize = AtomicUsize::new(0);

/// A permit to call into Python from a library thread; `None` once the interpreter exits.
pub(crate) struct Entry(());

impl Entry {
    pub(crate) fn enter() -> Option<Entry> {
        INSIDE.fetch_add(1, Ordering::SeqCst);
        if CLOSING.load(Ordering::SeqCst) {
            INSIDE.fetch_sub(1, Ordering::SeqCst);
            return None;
        }
        Some(Entry(()))
    }
}

impl Drop for Entry {
    fn drop(&mut self) {
        INSIDE.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Runs `f` with the GIL from a library thread, unless the interpreter is exiting.
pub(crate) fn with_python<R>(f: impl FnOnce(Python<'_>) -> R) -> Option<R> {
    let _entry = Entry::enter()?;
    Some(Python::attach(f))
}

/// `_shutdown(timeout)`: the exit hook. Refuses further entries into Python, then waits
/// (GIL released) for threads inside to leave and, up to `timeout` seconds, for calls in
/// flight to end. Returns whether everything was idle in time.
#[pyfunction]
pub(crate) fn _shutdown(py: Python<'_>, timeout: f64) -> bool {
    CLOSING.store(true, Ordering::SeqCst);
    let budget = Duration::try_from_secs_f64(timeout.max(0.0)).unwrap_or(Duration::ZERO);
    py.detach(|| {
        let deadline = Instant::now() + budget;
        // A thread waiting for the GIL inside `Python::attach` leaves once we release it.
        while INSIDE.load(Ordering::SeqCst) > 0 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(1));
        }
        let left = deadline.saturating_duration_since(Instant::now());
        mqstate::bridge::runtime::wait_idle(left) && INSIDE.load(Ordering::SeqCst) == 0
    })
}

/// `_after_fork()`: the at-fork hook of a child process (see
/// `mqstate::bridge::runtime::after_fork_in_child`).
#[pyfunction]
pub(crate) fn _after_fork() {
    mqstate::bridge::runtime::after_fork_in_child();
}
