//! Who drives the library's runtime (see the [parent module](super)): a blocking waiter
//! that is alone ([`Waiting`], [`drive`]), else the background thread, which hands the
//! runtime over to such a waiter and takes it back a linger after the last one
//! ([`LINGER`], longer while waiters keep coming: [`linger_for`]); and the
//! short wait for the next call before the driving thread sleeps ([`SPIN`]). With
//! `MQSTATE_RUNTIME=threaded` ([`RUNTIME_VARIABLE`]) none of this runs: a plain multi-thread
//! runtime drives itself.

use std::future::Future;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU64, Ordering};
use std::thread::Thread;
use std::time::{Duration, Instant};

use tokio::runtime::{Builder, Handle, Runtime};
use tokio::sync::Notify;

use super::IN_FLIGHT;
use super::handoff::{Handoff, Host};

/// How long the background thread first leaves the runtime to blocking waiters after the
/// last one. It takes the runtime back after a whole linger without a new waiter; while
/// waiters keep coming, each linger is twice the last, up to [`LINGER_MAX`] (`linger_for`).
pub const LINGER: Duration = Duration::from_millis(1);
/// The longest linger. Two of them bound how long a notification, a keep-alive or a call
/// nobody waits for can wait while blocking callers are between calls: the last waiter can
/// leave just after a linger began, which then ends having seen it.
pub const LINGER_MAX: Duration = Duration::from_millis(4);

/// The linger of `round`: [`LINGER`] in round 0, twice the last in each round after one
/// that saw a blocking waiter, up to [`LINGER_MAX`]. Each linger's end wakes the background
/// thread, which costs CPU (docs/benchmarks.md measures the blocking path): blocking callers
/// that keep coming drive the runtime themselves and need it once per [`LINGER_MAX`], not
/// once per [`LINGER`].
pub(crate) fn linger_for(round: u32) -> Duration {
    LINGER
        .checked_mul(1u32.checked_shl(round).unwrap_or(u32::MAX))
        .map_or(LINGER_MAX, |linger| linger.min(LINGER_MAX))
}

/// How long the thread driving the runtime, out of work with no call in flight, waits for
/// the next call before it sleeps.
pub const SPIN: Duration = Duration::from_micros(100);

/// The library's runtime and who drives it.
pub(super) struct Library {
    pub(super) runtime: Runtime,
    /// `MQSTATE_RUNTIME=threaded`: a plain multi-thread runtime that drives itself; no
    /// hand-offs, no background thread, and blocking waiters only sleep.
    threaded: bool,
    /// Who drives: the protocol's counters and decisions.
    handoff: Handoff,
    /// Asks the background thread to hand the runtime over to a blocking waiter.
    hand_over: Notify,
    /// The background thread (to wake it from its lingering).
    thread: Mutex<Option<Thread>>,
}

/// The library of this process once made.
static CURRENT: AtomicPtr<Library> = AtomicPtr::new(std::ptr::null_mut());
/// A thread is making it (the others wait). Not a lock: a fork while it is set leaves the
/// child nothing to wait for ([`forget`] clears it).
static MAKING: AtomicBool = AtomicBool::new(false);
/// Calls handed to the runtime so far (see [`spin_before_park`]).
static STARTED: AtomicU64 = AtomicU64::new(0);

/// The library of this process, if made.
fn current() -> Option<&'static Library> {
    // SAFETY: only ever a leaked `Library` (never freed) or null.
    unsafe { CURRENT.load(Ordering::Acquire).as_ref() }
}

/// In a child after `fork()`: the parent's library (its thread is not here) is forgotten,
/// never freed; the next use makes another.
pub(super) fn forget() {
    CURRENT.store(std::ptr::null_mut(), Ordering::Release);
    MAKING.store(false, Ordering::Release);
}

/// The library of this process, made on first use.
pub(super) fn library() -> &'static Library {
    loop {
        if let Some(library) = current() {
            return library;
        }
        if MAKING
            .compare_exchange(false, true, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
        {
            break;
        }
        std::thread::yield_now();
    }
    /// Lets another thread try again if making it fails (panics).
    struct Making;
    impl Drop for Making {
        fn drop(&mut self) {
            if current().is_none() {
                MAKING.store(false, Ordering::Release);
            }
        }
    }
    let _making = Making;
    let threaded = threaded_by_environment();
    let runtime = if threaded {
        Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("mqstate-worker")
            .enable_all()
            .build()
    } else {
        Builder::new_current_thread()
            .thread_name("mqstate-blocking")
            .on_thread_park(spin_before_park)
            .enable_all()
            .build()
    }
    .expect("the mqstate runtime could not be started");
    // Lives for the rest of the process (or until a fork leaves it behind).
    let library: &'static Library = Box::leak(Box::new(Library {
        runtime,
        threaded,
        handoff: Handoff::new(),
        hand_over: Notify::new(),
        thread: Mutex::new(None),
    }));
    if threaded {
        CURRENT.store(std::ptr::from_ref(library).cast_mut(), Ordering::Release);
        return library;
    }
    let thread = std::thread::Builder::new()
        .name("mqstate-worker".into())
        .spawn(move || library.handoff.run_background(library))
        .expect("the mqstate runtime's thread could not be started");
    *library.thread.lock().unwrap_or_else(|e| e.into_inner()) = Some(thread.thread().clone());
    CURRENT.store(std::ptr::from_ref(library).cast_mut(), Ordering::Release);
    library
}

impl Host for Library {
    fn drive_until(&self, handed_over: impl Fn() -> bool) {
        self.runtime.block_on(async {
            while !handed_over() {
                self.hand_over.notified().await;
            }
        });
    }

    fn linger(&self, round: u32) -> bool {
        std::thread::park_timeout(linger_for(round));
        true
    }

    fn ask_hand_over(&self) {
        self.hand_over.notify_one();
    }

    fn wake_background(&self) {
        if let Some(thread) = &*self.thread.lock().unwrap_or_else(|e| e.into_inner()) {
            thread.unpark();
        }
    }
}

/// The environment variable that chooses the runtime: `threaded` or `shared` (the default).
pub const RUNTIME_VARIABLE: &str = "MQSTATE_RUNTIME";

/// Whether [`RUNTIME_VARIABLE`] asks for the plain multi-thread runtime: a switch to run any
/// binding without the hand-offs of this module (to tell whether a hang is theirs). Another
/// value is named on stderr and the default kept.
fn threaded_by_environment() -> bool {
    match std::env::var(RUNTIME_VARIABLE).as_deref() {
        Ok("threaded") => true,
        Ok("shared") | Ok("") | Err(std::env::VarError::NotPresent) => false,
        Ok(other) => {
            eprintln!(
                "mqstate: {RUNTIME_VARIABLE}={other:?} is not a runtime (threaded or shared): \
                 using shared"
            );
            false
        }
        Err(std::env::VarError::NotUnicode(_)) => {
            eprintln!("mqstate: {RUNTIME_VARIABLE} is not UTF-8: using shared");
            false
        }
    }
}

/// Whether the library's runtime is the plain multi-thread one ([`RUNTIME_VARIABLE`]).
pub fn is_threaded() -> bool {
    library().threaded
}

/// Whether `handle` is the library's own runtime driven by its blocking waiters (never the
/// case for the threaded runtime, which drives itself).
pub(crate) fn is_shared(handle: &Handle) -> bool {
    current()
        .is_some_and(|library| !library.threaded && library.runtime.handle().id() == handle.id())
}

/// A blocking wait on a call of the library's runtime, for as long as it lives: the
/// waiting thread drives the runtime itself ([`drive`]) only when it is the only one
/// waiting. With several, the others would keep handing the runtime over to each other
/// (each hand-over a wake-up): a thread that is not alone waits to be woken, and the
/// runtime is driven by the first waiter or by the background thread.
pub(crate) struct Waiting {
    library: &'static Library,
    alone: bool,
}

impl Waiting {
    pub(crate) fn begin() -> Waiting {
        let library = library();
        let alone = library.handoff.begin_wait(library);
        Waiting { library, alone }
    }

    /// Whether this thread should drive the runtime while it waits.
    pub(crate) fn alone(&self) -> bool {
        self.alone
    }
}

impl Drop for Waiting {
    fn drop(&mut self) {
        self.library.handoff.end_wait();
    }
}

/// Blocks the calling thread (not a runtime thread) on `future`, driving the library's
/// runtime meanwhile unless another thread does (see the module documentation).
pub(crate) fn drive<F: Future>(future: F) -> F::Output {
    /// Counts a blocking waiter for as long as it lives (also when the future panics).
    struct Driver(&'static Library);
    impl Drop for Driver {
        fn drop(&mut self) {
            self.0.handoff.leave_drive(self.0);
        }
    }
    let library = library();
    library.handoff.enter_drive(library);
    let _driver = Driver(library);
    library.runtime.block_on(async {
        let out = future.await;
        // Before handing the runtime back: run what became ready meanwhile (tasks woken
        // and I/O events that arrived with the response), so that nothing waits for the
        // next driver.
        tokio::task::yield_now().await;
        out
    })
}

/// Makes sure the runtime is driven now even if no blocking waiter comes: for a call
/// awaited by an executor or delivered to a callback (the background thread otherwise
/// takes over within two lingers, [`LINGER_MAX`] each).
pub(crate) fn want_driver() {
    let Some(library) = current() else {
        return;
    };
    if !library.threaded {
        library.handoff.want_driver(library);
    }
}

/// Runs when the thread driving the runtime is out of work, before it sleeps in the
/// kernel until the next I/O event or task. When no call is in flight, so that no response
/// is expected, it waits up to [`SPIN`], yielding its core, for the next call to start
/// (see the module documentation). With calls in flight it sleeps at once (their responses
/// are I/O events).
fn spin_before_park() {
    if IN_FLIGHT.load(Ordering::Relaxed) != 0 {
        return;
    }
    let seen = STARTED.load(Ordering::Relaxed);
    let start = Instant::now();
    while start.elapsed() < SPIN {
        std::thread::yield_now();
        if STARTED.load(Ordering::Relaxed) != seen {
            return;
        }
    }
}

/// Counts a call just handed to the runtime (see [`spin_before_park`]).
pub(crate) fn note_started() {
    STARTED.fetch_add(1, Ordering::Relaxed);
}
