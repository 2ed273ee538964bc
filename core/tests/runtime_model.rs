//! Model tests of who drives the library's runtime: `core/src/bridge/runtime/handoff.rs`,
//! the very file the library compiles, run under loom, which tries the interleavings of the
//! threads of each scenario with up to two preemptions (`preemption_bound`: loom's bounded
//! search, not every interleaving) and fails on any that deadlocks or breaks an assertion.
//!
//! The model host stands for tokio and the threads:
//!
//! - the runtime's core is a mutex: whoever holds it drives, and runs every call that is
//!   ready (a blocking waiter runs its own call there too, as `Call::wait` does);
//! - the background thread, driving, waits on one signal for both a hand-over request and
//!   new work (tokio wakes the thread in `block_on` for either);
//! - lingering is a park **with no timeout**: in the library a lost wake-up costs at most
//!   two lingers (`LINGER_MAX`, 4 ms, each) before the background thread takes over anyway;
//!   here it is a deadlock.
//!   Every hand-over must come from a signal.
//!
//! Each scenario ends by stopping the background thread, only after every call has
//! completed: a call nobody drives leaves its thread blocked, and loom reports it.

#![allow(clippy::unwrap_used)]

use loom::sync::atomic::{AtomicBool, Ordering::SeqCst};
use loom::sync::{Arc, Condvar, Mutex};
use loom::thread;

/// The atomics `handoff.rs` is written with: loom's here.
mod sync {
    pub(crate) use loom::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering, fence};
}

#[path = "../src/bridge/runtime/handoff.rs"]
mod handoff;

use handoff::{Handoff, Host};

/// A wake-up kept until taken, for one thread that waits (tokio's `Notify::notify_one`, a
/// thread's unpark token).
#[derive(Default)]
struct Signal {
    raised: Mutex<bool>,
    changed: Condvar,
}

impl Signal {
    fn notify(&self) {
        *self.raised.lock().unwrap() = true;
        self.changed.notify_one();
    }

    fn wait(&self) {
        let mut raised = self.raised.lock().unwrap();
        while !*raised {
            raised = self.changed.wait(raised).unwrap();
        }
        *raised = false;
    }
}

/// Calls at most per scenario.
const CALLS: usize = 2;

/// The runtime and the threads, as loom models them.
struct Model {
    handoff: Handoff,
    /// The runtime's core: whoever holds it drives.
    core: Mutex<()>,
    /// Calls handed to the runtime (awaited, or waited for by a waiter that does not drive).
    ready: [AtomicBool; CALLS],
    /// Calls the driver ran, each with the signal its waiter sleeps on.
    done: [AtomicBool; CALLS],
    finished: [Signal; CALLS],
    /// Wakes the background thread in `drive_until`: a hand-over request or new work.
    runtime_wake: Signal,
    /// Wakes the background thread from its lingering (a thread's unpark token: loom's own
    /// `unpark` also wakes a thread blocked on a mutex, so a signal stands for it).
    unpark: Signal,
    /// Ends the background thread (once every call has completed).
    stop: AtomicBool,
}

impl Model {
    fn new() -> Arc<Model> {
        Arc::new(Model {
            handoff: Handoff::new(),
            core: Mutex::new(()),
            ready: [AtomicBool::new(false), AtomicBool::new(false)],
            done: [AtomicBool::new(false), AtomicBool::new(false)],
            finished: Default::default(),
            runtime_wake: Signal::default(),
            unpark: Signal::default(),
            stop: AtomicBool::new(false),
        })
    }

    /// Starts the background thread (it drives first, as in the library).
    fn start_background(model: &Arc<Model>) -> thread::JoinHandle<()> {
        let model = Arc::clone(model);
        thread::spawn(move || model.handoff.run_background(&*model))
    }

    /// Runs every ready call: what the thread holding the core does.
    fn run_ready(&self) {
        for call in 0..CALLS {
            if self.ready[call].load(SeqCst) && !self.done[call].swap(true, SeqCst) {
                self.finished[call].notify();
            }
        }
    }

    /// Hands `call` to the runtime, as `Call::spawn` does: the thread driving is woken.
    fn spawn(&self, call: usize) {
        self.ready[call].store(true, SeqCst);
        self.runtime_wake.notify();
    }

    /// Sleeps until `call` has run.
    fn wait_done(&self, call: usize) {
        while !self.done[call].load(SeqCst) {
            self.finished[call].wait();
        }
    }

    /// A blocking wait on `call`, as `Call::wait` does it: alone, the waiter drives and
    /// runs its call itself; else it hands the call to the runtime and sleeps.
    fn blocking_wait(&self, call: usize) {
        if self.handoff.begin_wait(self) {
            self.handoff.enter_drive(self);
            {
                // Blocks until the background thread has handed the core over.
                let _core = self.core.lock().unwrap();
                self.ready[call].store(true, SeqCst);
                self.run_ready();
            }
            self.handoff.leave_drive(self);
        } else {
            self.spawn(call);
        }
        self.wait_done(call);
        self.handoff.end_wait();
    }

    /// An awaited call (asyncio, Node, a callback): handed to the runtime, a driver asked for.
    fn awaited(&self, call: usize) {
        self.spawn(call);
        self.handoff.want_driver(self);
        self.wait_done(call);
    }

    /// Ends the background thread, every call done.
    fn stop(&self, background: thread::JoinHandle<()>) {
        self.stop.store(true, SeqCst);
        self.runtime_wake.notify();
        self.wake_background();
        background.join().unwrap();
    }
}

impl Host for Model {
    fn drive_until(&self, handed_over: impl Fn() -> bool) {
        let _core = self.core.lock().unwrap();
        loop {
            self.run_ready();
            if handed_over() || self.stop.load(SeqCst) {
                return;
            }
            self.runtime_wake.wait();
        }
    }

    fn linger(&self, _round: u32) -> bool {
        if self.stop.load(SeqCst) {
            return false;
        }
        self.unpark.wait();
        !self.stop.load(SeqCst)
    }

    fn ask_hand_over(&self) {
        self.runtime_wake.notify();
    }

    fn wake_background(&self) {
        self.unpark.notify();
    }
}

/// One caller of the model: what a thread does with the library.
#[derive(Clone, Copy)]
enum Caller {
    /// `Call::wait` on this call.
    Blocking(usize),
    /// An awaited call (asyncio, Node, a callback).
    Awaited(usize),
}

/// Every interleaving of the background thread and `callers` (the first on the model's
/// main thread, each other on a thread of its own), up to loom's bound of 2 forced switches
/// in each (3 takes minutes; 2 finds every planted bug of `handoff.rs` tried). Ends by
/// stopping the background thread once every caller is done.
fn check(callers: &'static [Caller]) {
    let mut builder = loom::model::Builder::new();
    builder.preemption_bound = Some(2);
    builder.check(move || {
        let model = Model::new();
        let background = Model::start_background(&model);
        let call = |model: &Model, caller: Caller| match caller {
            Caller::Blocking(call) => model.blocking_wait(call),
            Caller::Awaited(call) => model.awaited(call),
        };
        let others: Vec<_> = callers[1..]
            .iter()
            .map(|&caller| {
                let model = Arc::clone(&model);
                thread::spawn(move || call(&model, caller))
            })
            .collect();
        call(&model, callers[0]);
        for other in others {
            other.join().unwrap();
        }
        model.stop(background);
    });
}

/// A lone blocking waiter gets the runtime from the background thread, wherever the
/// background thread is in its loop when it comes (driving, leaving, lingering).
#[test]
fn a_lone_blocking_waiter_is_handed_the_runtime() {
    check(&[Caller::Blocking(0)]);
}

/// An awaited call is driven while a blocking waiter drives, or after it leaves: the last
/// waiter out wakes the background thread (a driver was asked for).
#[test]
fn an_awaited_call_is_driven_around_a_blocking_waiter() {
    check(&[Caller::Awaited(1), Caller::Blocking(0)]);
}

/// Two blocking waiters: one drives, the other sleeps until its call is run, by the first
/// or by the background thread once the first leaves.
#[test]
fn two_blocking_waiters_both_complete() {
    check(&[Caller::Blocking(0), Caller::Blocking(1)]);
}
