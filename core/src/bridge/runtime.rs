//! The runtime the library owns, for callers that have none (C, Python, Node, Kotlin), and
//! the count of calls in flight, so that an interpreter or a process can wait for them to
//! finish before it exits.
//!
//! The runtime is created lazily, on the first call that needs it (nothing runs before a
//! first `connect`, which keeps `fork()` after loading the library safe). It lives for the
//! rest of the process.
//!
//! # Who runs it: the waiting thread first
//!
//! It is a single-threaded (current-thread) tokio runtime that any thread may drive. A
//! thread that blocks on a call ([`Call::wait`](super::Call::wait): C, blocking Python)
//! drives it itself while it waits: it sends its own request, sleeps in the kernel on the
//! connection's socket and wakes up with the response — one sleep per request, as a Rust
//! task on a tokio worker has, instead of three when a library thread does the I/O (the
//! caller waking it to send, it sleeping on the socket, it waking the caller), each a system
//! call and, on a busy or virtual machine, a wait for a core. With several threads waiting,
//! the first drives and the others are woken when their call completes (handing the runtime
//! from one to the next would cost a wake-up each time). docs/benchmarks.md ("Language
//! bindings") has the measurements.
//!
//! When no thread waits that way, one background thread (`mqstate-worker`) drives it:
//! always for asyncio, Node and callers that await or take a callback, and after a whole
//! linger without any blocking wait — so keep-alives, notifications, lock renewals and
//! calls nobody waits for progress within two lingers even while blocking callers are
//! between calls. A linger is [`LINGER`] (1 ms) at first and doubles, up to [`LINGER_MAX`]
//! (4 ms), while blocking waiters keep coming: they drive the runtime themselves, and the
//! end of each linger wakes the background thread. A blocking wait that finds the
//! background thread driving asks it to hand over.
//!
//! The background thread, out of work with no call in flight, waits up to [`SPIN`]
//! (yielding its core) for the next call before it sleeps: callers making one call after
//! another (`await` after `await`) start the next a few microseconds after the last
//! completed, and a thread still awake takes it without being woken.
//!
//! Blocking work (credentials, edit callbacks) goes to tokio's blocking pool, never to the
//! thread driving the runtime.
//!
//! # States
//!
//! Who drives the runtime, and what moves it on (`drivers`, `wanted`, `background`,
//! `entries` are the counters of `handoff::Handoff`, which holds every decision below;
//! `hand_over` is the driver's signal):
//!
//! | state | driven by | moves on when | to |
//! |---|---|---|---|
//! | background | `mqstate-worker`, in `block_on` | a blocking waiter that is alone enters `drive`: `drivers` 0 → 1, then `hand_over` is notified if `background` | handing over |
//! | handing over | the worker until it sees `drivers > 0` (checked before it first waits) and leaves `block_on` (`background` false) | the waiter's `block_on` gets the runtime | waiters |
//! | waiters | the lone blocking waiter; other waiters sleep on their call's slot and `want_driver` sets `wanted` | the last waiter leaves `drive`: `drivers` 1 → 0, and unparks the worker if `wanted` | lingering |
//! | lingering | nobody: the worker sleeps in `park_timeout` for a linger (`LINGER`, doubling up to `LINGER_MAX` after each that saw a waiter) | a waiter enters (`entries` moved): stays; `wanted` (checked before each sleep), or a whole linger without a new waiter | background |
//!
//! A call awaited by an executor or given a callback asks for a driver (`want_driver`):
//! `wanted` is set; in *background* nothing else happens (a worker that is handing over
//! finds `wanted` before it sleeps), otherwise the worker is unparked at once when no
//! waiter drives, or by the last waiter to leave. The driving thread, out of work with no
//! call in flight, spins up to [`SPIN`] before it sleeps in the kernel.
//!
//! `core/tests/runtime_model.rs` runs `handoff.rs` under loom (the interleavings of a lone
//! waiter, two waiters, an awaited call beside a waiter, up to two preemptions each) with no timeout on the lingering:
//! each hand-over must come from a signal, never from a linger running out. It found the
//! two cases above that the table now spells out (a waiter entering as the worker starts
//! driving; a call asking while the worker hands over); each cost up to a linger.
//!
//! # A plain runtime, to tell a hang of the hand-offs from one elsewhere
//!
//! `MQSTATE_RUNTIME=threaded` in a process's environment ([`RUNTIME_VARIABLE`], read when
//! the runtime is made) replaces all of the above with a plain tokio multi-thread runtime of
//! two workers: calls start as tasks at once, blocking waiters only sleep, nothing spins.
//! Any binding runs on it unchanged (`MQSTATE_RUNTIME=threaded pytest …`,
//! `MQSTATE_RUNTIME=threaded node --test …`, a C program): if a hang goes away, look here;
//! if not, elsewhere. It costs a thread hop per call (docs/benchmarks.md, "Language
//! bindings"). `scripts/test` runs the runtime's tests and the bridge suite on it.
//!
//! **fork()**: a child process inherits no threads, so the parent's runtime is dead there.
//! A binding calls [`after_fork_in_child`] from its at-fork hook (Python's
//! `os.register_at_fork`, C's `pthread_atfork`): the child then gets a runtime of its own on
//! first use, and stores connected before the fork refuse every call with `unsupported`
//! instead of hanging ([`generation`]).

mod driver;
mod handoff;
#[cfg(test)]
mod tests;

/// The atomics [`handoff`] is written with: std's here, loom's in its model tests
/// (`core/tests/runtime_model.rs`).
mod sync {
    pub(super) use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering, fence};
}

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

use tokio::runtime::{Handle, Runtime};

pub use driver::{LINGER, LINGER_MAX, RUNTIME_VARIABLE, SPIN, is_threaded};
pub(crate) use driver::{Waiting, drive, is_shared, note_started, want_driver};

static GENERATION: AtomicU64 = AtomicU64::new(0);
static IN_FLIGHT: AtomicUsize = AtomicUsize::new(0);
/// Threads in [`wait_idle`] (the last call to end notifies only when there are any).
static IDLE_WAITERS: AtomicUsize = AtomicUsize::new(0);
static IDLE: (Mutex<()>, Condvar) = (Mutex::new(()), Condvar::new());

/// The library's own runtime, created on first use (in this process).
///
/// # Panics
/// If the operating system refuses to start its thread (then nothing could run anyway).
pub fn shared_runtime() -> &'static Runtime {
    &driver::library().runtime
}

/// A handle of the library's own runtime.
pub fn shared_handle() -> Handle {
    shared_runtime().handle().clone()
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
    super::call::forget_slice();
    driver::forget();
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
    /// Counts this thread among the waiters for as long as it lives.
    struct Waiter;
    impl Drop for Waiter {
        fn drop(&mut self) {
            IDLE_WAITERS.fetch_sub(1, Ordering::SeqCst);
        }
    }
    IDLE_WAITERS.fetch_add(1, Ordering::SeqCst);
    let _waiter = Waiter;
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
        // A waiter counts itself before it reads the count in flight, so one that could
        // miss this end is seen here.
        if IN_FLIGHT.fetch_sub(1, Ordering::SeqCst) == 1 && IDLE_WAITERS.load(Ordering::SeqCst) > 0
        {
            let _guard = IDLE.0.lock().unwrap_or_else(|e| e.into_inner());
            IDLE.1.notify_all();
        }
    }
}
