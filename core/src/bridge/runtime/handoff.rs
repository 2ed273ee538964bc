//! Who drives the library's runtime, as a protocol: the counters, every decision taken on
//! them, and the background thread's loop (the states are the [parent module](super)'s
//! table). What it needs from tokio and from threads comes through a [`Host`], so that
//! `core/tests/runtime_model.rs` runs this very file under loom with a model host: every
//! interleaving of a few threads (waiters arriving as the background thread parks, two
//! waiters, an awaited call between them), with no timeout to rescue a lost wake-up.
//!
//! The protocol reads one counter after writing another (a waiter writes `drivers` then
//! reads `background`; the background thread writes `background` then reads `drivers`):
//! each side must see the other's write or have its own seen. Only a total order of the two
//! gives that, so every access is `SeqCst` and a `SeqCst` fence ([`ordered`]) stands
//! between each such write and read. C11 orders `SeqCst` accesses alone; the fence says it
//! where it matters, and it is what loom models (it treats `SeqCst` accesses as `AcqRel`).

use super::sync::{AtomicBool, AtomicU64, AtomicUsize, Ordering::SeqCst, fence};

/// Orders the write before it with the read after it (see the module documentation).
fn ordered() {
    fence(SeqCst);
}

/// What the protocol needs from the runtime and the threads that drive it.
pub(crate) trait Host {
    /// On the background thread: drives the runtime until `handed_over()` holds. It checks
    /// it before it first waits, and again after each [`Host::ask_hand_over`].
    fn drive_until(&self, handed_over: impl Fn() -> bool);
    /// On the background thread, not driving: sleeps until [`Host::wake_background`] (a
    /// wake-up that came first counts) or the linger of this `round` runs out
    /// ([`linger_for`](super::driver::linger_for): the rounds before it each saw a blocking waiter).
    /// `false` ends the background thread (models only).
    fn linger(&self, round: u32) -> bool;
    /// Wakes the background thread in [`Host::drive_until`] (kept if it is not waiting yet).
    fn ask_hand_over(&self);
    /// Wakes the background thread from [`Host::linger`].
    fn wake_background(&self);
}

/// The counters that say who drives.
pub(crate) struct Handoff {
    /// Blocking waiters driving now ([`Handoff::enter_drive`]).
    drivers: AtomicUsize,
    /// Blocking waits in progress, driving or not ([`Handoff::begin_wait`]).
    waiting: AtomicUsize,
    /// Blocking drives begun so far (the lingering background thread sees whether any came).
    entries: AtomicU64,
    /// Whether the background thread is driving.
    background: AtomicBool,
    /// A driver is wanted now, not after [`LINGER`](super::LINGER) ([`Handoff::want_driver`]).
    wanted: AtomicBool,
}

impl Handoff {
    /// Nobody waiting, nobody driving.
    pub(crate) fn new() -> Handoff {
        Handoff {
            drivers: AtomicUsize::new(0),
            waiting: AtomicUsize::new(0),
            entries: AtomicU64::new(0),
            background: AtomicBool::new(false),
            wanted: AtomicBool::new(false),
        }
    }

    /// The background thread: drives whenever no blocking waiter does. It hands the runtime
    /// over as soon as one enters [`Handoff::enter_drive`], and takes it back when asked
    /// ([`Handoff::want_driver`]) with none driving, or after a whole linger without a new
    /// one. Returns only when [`Host::linger`] says so.
    pub(crate) fn run_background(&self, host: &impl Host) {
        loop {
            self.background.store(true, SeqCst);
            ordered();
            // A waiter that entered before `background` was set did not ask: checked first.
            host.drive_until(|| self.drivers.load(SeqCst) > 0);
            self.background.store(false, SeqCst);
            ordered();
            // Lingering. A call that asked for a driver while this thread was leaving saw
            // `background` still set and woke nobody: `wanted` is checked before each sleep.
            // Each round that sees a blocking waiter makes the next one longer: waiters that
            // keep coming drive the runtime themselves, and each round's end is a wake-up.
            let mut round = 0u32;
            loop {
                let seen = self.entries.load(SeqCst);
                if self.idle() && self.wanted.swap(false, SeqCst) {
                    break;
                }
                if !host.linger(round) {
                    return;
                }
                if self.idle() && self.entries.load(SeqCst) == seen {
                    break;
                }
                round = round.saturating_add(1);
            }
        }
    }

    /// No blocking waiter drives.
    fn idle(&self) -> bool {
        self.drivers.load(SeqCst) == 0
    }

    /// A blocking wait begins. `true`: it is the only one, and drives while it waits.
    /// Otherwise it sleeps until its call completes, and a driver is asked for.
    pub(crate) fn begin_wait(&self, host: &impl Host) -> bool {
        let alone = self.waiting.fetch_add(1, SeqCst) == 0;
        ordered();
        if !alone {
            self.want_driver(host);
        }
        alone
    }

    /// A blocking wait ends.
    pub(crate) fn end_wait(&self) {
        self.waiting.fetch_sub(1, SeqCst);
    }

    /// A lone blocking waiter is about to drive: the background thread is asked to hand the
    /// runtime over.
    pub(crate) fn enter_drive(&self, host: &impl Host) {
        self.entries.fetch_add(1, SeqCst);
        self.drivers.fetch_add(1, SeqCst);
        ordered();
        if self.background.load(SeqCst) {
            host.ask_hand_over();
        }
    }

    /// A blocking waiter stops driving; the last one wakes the background thread if a
    /// driver was asked for meanwhile.
    pub(crate) fn leave_drive(&self, host: &impl Host) {
        let last = self.drivers.fetch_sub(1, SeqCst) == 1;
        ordered();
        if last && self.wanted.load(SeqCst) {
            host.wake_background();
        }
    }

    /// Makes sure the runtime is driven now even if no blocking waiter comes: by the
    /// background thread if it drives (or, if it is handing over, once it lingers), else at
    /// once when no waiter drives, else when the last one leaves. `wanted` is set in every
    /// case: a background thread seen driving may be leaving.
    pub(crate) fn want_driver(&self, host: &impl Host) {
        self.wanted.store(true, SeqCst);
        ordered();
        if !self.background.load(SeqCst) && self.idle() {
            host.wake_background();
        }
    }
}
