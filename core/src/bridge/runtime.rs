//! The runtime the library owns, for callers that have none (C, blocking Python, Kotlin),
//! and the count of calls in flight, so that an interpreter or a process can wait for them
//! to finish before it exits.
//!
//! The runtime is created lazily, on the first call that needs it (nothing runs before a
//! first `connect`, which keeps `fork()` after loading the library safe), with **one**
//! worker thread named `mqstate-worker`. It lives for the rest of the process.
//!
//! One worker, because the callers are threads of their own (a C thread, Python's event
//! loop, Node's): every call is started from outside the runtime, and with two workers each
//! of those starts woke both (the first to take the task, the second because the first
//! stopped searching — tokio's wake-up chain), and every response took two more wake-ups —
//! about seven context switches per request at one request in flight where one thread needs
//! three, and on a busy machine each is a wait for a core. A connection's event loop is one
//! task anyway; what a second worker could run in parallel (decoding, converting) runs on
//! the callers' threads instead. Blocking work (credentials, edit callbacks) goes to tokio's
//! blocking pool, never to the worker.
//!
//! **fork()**: a child process inherits no threads, so the parent's runtime is dead there.
//! A binding calls [`after_fork_in_child`] from its at-fork hook (Python's
//! `os.register_at_fork`, C's `pthread_atfork`): the child then gets a runtime of its own on
//! first use, and stores connected before the fork refuse every call with `unsupported`
//! instead of hanging ([`generation`]).

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

use tokio::runtime::{Builder, Handle, Runtime};

static RUNTIME: Mutex<Option<&'static Runtime>> = Mutex::new(None);
static GENERATION: AtomicU64 = AtomicU64::new(0);
static IN_FLIGHT: AtomicUsize = AtomicUsize::new(0);
/// Calls handed to the runtime so far (see [`spin_before_park`]).
static STARTED: AtomicU64 = AtomicU64::new(0);
/// How long the worker, out of work with no call in flight, waits for the next call before
/// it parks (see [`spin_before_park`]).
const SPIN: Duration = Duration::from_micros(50);
static IDLE: (Mutex<()>, Condvar) = (Mutex::new(()), Condvar::new());

/// The library's own runtime, created on first use (in this process).
///
/// # Panics
/// If the operating system refuses to start its threads (then nothing could run anyway).
pub fn shared_runtime() -> &'static Runtime {
    let mut slot = RUNTIME.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(runtime) = *slot {
        return runtime;
    }
    let runtime = Builder::new_multi_thread()
        .worker_threads(1)
        .thread_name("mqstate-worker")
        .on_thread_park(spin_before_park)
        .enable_all()
        .build()
        .expect("the mqstate runtime's threads could not be started");
    // Lives for the rest of the process (or until a fork leaves it behind).
    let runtime: &'static Runtime = Box::leak(Box::new(runtime));
    *slot = Some(runtime);
    runtime
}

/// Runs when the worker is out of work, before it parks (sleeps in the kernel until the
/// next I/O event or task). When no call is in flight, so that no response is expected, it
/// waits up to [`SPIN`] for the next call to start: a caller making one call after
/// another (the common pattern: `await` after `await`, or a C loop) starts its next call a
/// few microseconds after the last completed, and a worker still awake takes it without
/// being woken — a wake-up is a system call for the caller and, on a busy machine, a wait
/// for a core. With calls in flight it parks at once (their responses are I/O events).
fn spin_before_park() {
    if IN_FLIGHT.load(Ordering::Relaxed) != 0 {
        return;
    }
    let seen = STARTED.load(Ordering::Relaxed);
    let start = Instant::now();
    loop {
        std::thread::yield_now();
        if STARTED.load(Ordering::Relaxed) != seen {
            return;
        }
        if start.elapsed() >= SPIN {
            return;
        }
    }
}

/// Counts a call just handed to the runtime (see [`spin_before_park`]).
pub(crate) fn note_started() {
    STARTED.fetch_add(1, Ordering::Relaxed);
}

/// The process generation: it changes in a child after [`after_fork_in_child`].
pub fn generation() -> u64 {
    GENERATION.load(Ordering::SeqCst)
}

/// To be called in a child process right after `fork()`: forgets the parent's runtime (its
/// threads do not exist here; it is leaked, never shut down) and starts a new generation.
pub fn after_fork_in_child() {
    GENERATION.fetch_add(1, Ordering::SeqCst);
    IN_FLIGHT.store(0, Ordering::SeqCst);
    // A parent thread may have held the lock at the fork (it would never be released
    // here): `try_lock` does not wait for it, and the slot is then left as it is.
    if let Ok(mut slot) = RUNTIME.try_lock() {
        *slot = None;
    }
}

/// A handle of the library's own runtime.
pub fn shared_handle() -> Handle {
    shared_runtime().handle().clone()
}

/// Whether the calling thread is inside a tokio runtime (where blocking on a call could
/// deadlock the very thread that must complete it).
pub fn on_runtime_thread() -> bool {
    Handle::try_current().is_ok()
}

/// Calls (and subscription deliveries) in flight now.
pub fn in_flight() -> usize {
    IN_FLIGHT.load(Ordering::SeqCst)
}

/// Blocks until no call is in flight or `timeout` passes; `true` when idle. Meant for exit
/// hooks (Python's `atexit`, a C `atexit`) so that no library thread calls into a host that
/// is finalizing.
pub fn wait_idle(timeout: Duration) -> bool {
    let deadline = Instant::now() + timeout;
    let mut guard = IDLE.0.lock().unwrap_or_else(|e| e.into_inner());
    while in_flight() > 0 {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return false;
        }
        guard = IDLE
            .1
            .wait_timeout(guard, left.min(Duration::from_millis(50)))
            .unwrap_or_else(|e| e.into_inner())
            .0;
    }
    true
}

/// Counts one unit of in-flight work for as long as it lives.
pub(crate) struct InFlight(());

impl InFlight {
    pub(crate) fn start() -> InFlight {
        IN_FLIGHT.fetch_add(1, Ordering::SeqCst);
        InFlight(())
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        if IN_FLIGHT.fetch_sub(1, Ordering::SeqCst) == 1 {
            let _guard = IDLE.0.lock().unwrap_or_else(|e| e.into_inner());
            IDLE.1.notify_all();
        }
    }
}
