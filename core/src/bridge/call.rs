//! [`Call`]: the one pending-call type every binding-facing method returns.
//!
//! A call runs on the runtime of the store it belongs to, whether or not anyone waits for
//! it: at once, or — made on the library's own runtime by a thread that is not one of its
//! own — as soon as it is first waited for, awaited, given a callback or dropped, so that a
//! thread that then waits for it alone runs it itself, with no task.
//! Its result can be taken exactly one way:
//!
//! - **awaited**: `Call<T>` is a `Future`, usable from any executor (napi's, asyncio's bridge,
//!   Kotlin's coroutines through uniffi);
//! - **waited for** from a plain thread: [`Call::wait`] / [`Call::wait_slice`] (refused
//!   with [`ErrorKind::Unsupported`] on a runtime thread, where it could deadlock). On the
//!   library's own runtime the waiting thread drives the runtime while it waits
//!   ([`runtime`]): its request and response cost no thread hand-off, and
//!   if it is the only one waiting it runs the call's work itself;
//! - **delivered** to a callback: [`Call::on_complete`] (run on the runtime thread that
//!   completes the call, or at once on the caller's thread if it is already complete).
//!
//! Any thread can cancel it ([`Call::cancel`], or a [`Canceller`] kept apart): the call then
//! ends with [`ErrorKind::Cancelled`] at once, and whoever runs it drops the core future
//! (which withdraws the request from the correlation engine); one not started never starts.
//! Dropping a `Call` does not cancel it: the work finishes and its result is discarded.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use tokio::runtime::Handle;
use tokio::sync::Notify;

mod slice;

use super::runtime::{self, InFlight, on_runtime_thread};
use crate::error::{Error, ErrorKind};

type Callback<T> = Box<dyn FnOnce(Result<T, Error>) + Send>;

enum State<T> {
    Pending {
        waker: Option<Waker>,
        callback: Option<Callback<T>>,
    },
    Done(Result<T, Error>),
    Taken,
}

struct Slot<T> {
    state: Mutex<State<T>>,
    done: Condvar,
    /// Threads asleep on `done` (a notification is a system call: made only for them).
    sleepers: AtomicUsize,
    cancel: Notify,
}

impl<T> Slot<T> {
    fn lock(&self) -> MutexGuard<'_, State<T>> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Completes the call once; later completions are ignored.
    fn complete(&self, result: Result<T, Error>) {
        let mut state = self.lock();
        let State::Pending { waker, callback } = &mut *state else {
            return;
        };
        if let Some(callback) = callback.take() {
            *state = State::Taken;
            drop(state);
            callback(result);
            return;
        }
        let waker = waker.take();
        *state = State::Done(result);
        drop(state);
        // A sleeper counted itself under the lock before it slept, so it is seen here.
        if self.sleepers.load(Ordering::SeqCst) > 0 {
            self.done.notify_all();
        }
        if let Some(w) = waker {
            w.wake();
        }
    }

    /// Sleeps on `done` (up to `limit`), counted as a sleeper.
    fn sleep<'a>(
        &self,
        state: MutexGuard<'a, State<T>>,
        limit: Option<Duration>,
    ) -> MutexGuard<'a, State<T>> {
        self.sleepers.fetch_add(1, Ordering::SeqCst);
        let state = match limit {
            None => self.done.wait(state).unwrap_or_else(|e| e.into_inner()),
            Some(limit) => {
                self.done
                    .wait_timeout(state, limit)
                    .unwrap_or_else(|e| e.into_inner())
                    .0
            }
        };
        self.sleepers.fetch_sub(1, Ordering::SeqCst);
        state
    }
}

/// A call's work, boxed while it waits to start.
type Work<T> = Pin<Box<dyn Future<Output = Result<T, Error>> + Send>>;

/// The work of a call on the library's runtime that has not started: the thread that waits
/// for it alone runs it itself ([`Call::wait`]), without a task, a hand-off or a wake-up;
/// anything else (awaiting it, a callback, another thread driving, dropping it) starts it as
/// a task. Dropped unstarted, it starts.
struct Deferred<T> {
    work: Option<Work<T>>,
    /// Starts `work` as a task of its runtime (made where `T` is known to be `Send`).
    launch: Option<Box<dyn FnOnce(Work<T>) + Send>>,
}

impl<T> Drop for Deferred<T> {
    fn drop(&mut self) {
        if let (Some(work), Some(launch)) = (self.work.take(), self.launch.take()) {
            launch(work);
        }
    }
}

/// In a child after `fork()`: the forking thread's slice timer is the parent runtime's
/// (see [`slice::forget`]).
pub(super) fn forget_slice() {
    slice::forget();
}

/// How long a blocking wait lasts at most.
#[derive(Clone, Copy, Debug)]
enum Limit {
    /// Exactly this long (a timeout).
    Exactly(Duration),
    /// Up to this long (a host's slice): see [`mod@slice`].
    Slice(Duration),
}

impl Limit {
    fn duration(self) -> Duration {
        match self {
            Limit::Exactly(d) | Limit::Slice(d) => d,
        }
    }
}

/// Drives the library's runtime on `future` until it completes (`Some`) or `limit` passes
/// (`None`).
fn drive_within<F: Future>(limit: Option<Limit>, future: F) -> Option<F::Output> {
    runtime::drive(async move {
        match limit {
            None => Some(future.await),
            Some(Limit::Exactly(limit)) => tokio::time::timeout(limit, future).await.ok(),
            Some(Limit::Slice(slice)) => slice::within(slice, future).await,
        }
    })
}

/// Runs `work` as a task of `runtime` that completes `slot` (or ends cancelled).
fn start_task<T, F>(runtime: &Handle, slot: Arc<Slot<T>>, work: F, in_flight: InFlight)
where
    T: Send + 'static,
    F: Future<Output = Result<T, Error>> + Send + 'static,
{
    runtime.spawn(async move {
        let _in_flight = in_flight;
        let mut guard = CompleteOnDrop(Some(Arc::clone(&slot)));
        let result = tokio::select! {
            biased;
            () = slot.cancel.notified() => Err(Error::cancelled()),
            result = work => result,
        };
        guard.0 = None;
        slot.complete(result);
    });
    super::runtime::note_started();
}

/// Cancels a call from anywhere; cheap to clone, `Send + Sync`.
#[derive(Clone)]
pub struct Canceller(Arc<dyn Fn() + Send + Sync>);

impl Canceller {
    /// Cancels the call (no effect once it has completed).
    pub fn cancel(&self) {
        (self.0)()
    }
}

impl std::fmt::Debug for Canceller {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Canceller")
    }
}

/// A call in flight (see the module documentation).
pub struct Call<T> {
    slot: Arc<Slot<T>>,
    /// For a mapped call: the canceller of the call it maps.
    forward: Arc<Mutex<Option<Canceller>>>,
    /// Whether it runs on the library's own runtime (which blocking waiters drive).
    shared: bool,
    /// Whether, awaited, it has asked for the runtime to be driven.
    asked: bool,
    /// Its work, until it starts (see [`Deferred`]).
    deferred: Mutex<Option<Deferred<T>>>,
}

impl<T> std::fmt::Debug for Call<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Call")
            .field("done", &!matches!(*self.slot.lock(), State::Pending { .. }))
            .finish()
    }
}

/// Completes the slot with an error if the task is dropped before it completed it (its
/// runtime shut down), so that nobody waits forever.
struct CompleteOnDrop<T>(Option<Arc<Slot<T>>>);

impl<T> Drop for CompleteOnDrop<T> {
    fn drop(&mut self) {
        if let Some(slot) = self.0.take() {
            slot.complete(Err(Error::new(
                ErrorKind::Closed,
                "the runtime running the call shut down",
            )));
        }
    }
}

impl<T: Send + 'static> Call<T> {
    fn new() -> Call<T> {
        Call {
            slot: Arc::new(Slot {
                state: Mutex::new(State::Pending {
                    waker: None,
                    callback: None,
                }),
                done: Condvar::new(),
                sleepers: AtomicUsize::new(0),
                cancel: Notify::new(),
            }),
            forward: Arc::new(Mutex::new(None)),
            shared: false,
            asked: false,
            deferred: Mutex::new(None),
        }
    }

    /// Starts `work` on `runtime` as a call. On the library's own runtime, from a thread that
    /// is not one of its own, the work starts when first needed instead: a thread that then
    /// waits for it alone runs it itself, with no task; nothing else can tell.
    pub fn spawn<F>(runtime: &Handle, work: F) -> Call<T>
    where
        F: Future<Output = Result<T, Error>> + Send + 'static,
    {
        let mut call = Call::new();
        call.shared = runtime::is_shared(runtime);
        let slot = Arc::clone(&call.slot);
        let in_flight = InFlight::start();
        if call.shared && !on_runtime_thread() {
            let runtime = runtime.clone();
            *call.deferred.get_mut().unwrap_or_else(|e| e.into_inner()) = Some(Deferred {
                work: Some(Box::pin(work)),
                launch: Some(Box::new(move |work| {
                    start_task(&runtime, slot, work, in_flight);
                })),
            });
        } else {
            start_task(runtime, slot, work, in_flight);
        }
        call
    }

    /// Starts the work as a task if it has not started.
    fn start(&self) {
        let deferred = self
            .deferred
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        drop(deferred); // starts it
    }

    /// Runs the work on this thread, driving the runtime, if it has not started: until it
    /// completes the call or `limit` passes (then the rest goes on as a task). `false` if
    /// it had started.
    fn run_here(&self, limit: Option<Limit>) -> bool {
        let taken = self
            .deferred
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        let Some(mut deferred) = taken else {
            return false;
        };
        let Some(mut work) = deferred.work.take() else {
            return false;
        };
        let slot = &self.slot;
        let outcome = drive_within(limit, async {
            tokio::select! {
                biased;
                () = slot.cancel.notified() => Err(Error::cancelled()),
                result = &mut work => result,
            }
        });
        match outcome {
            Some(result) => slot.complete(result),
            None => deferred.work = Some(work),
        }
        drop(deferred); // starts the rest, or (done) ends its count in flight
        true
    }

    /// A call that is already complete (an argument refused before anything started).
    pub fn ready(result: Result<T, Error>) -> Call<T> {
        let call = Call::new();
        call.slot.complete(result);
        call
    }

    /// Cancels the call: it ends with [`ErrorKind::Cancelled`] at once (unless it already
    /// completed) and its work is dropped.
    pub fn cancel(&self) {
        self.canceller().cancel();
    }

    /// A handle that cancels this call from any thread.
    pub fn canceller(&self) -> Canceller {
        let slot = Arc::clone(&self.slot);
        let forward = Arc::clone(&self.forward);
        Canceller(Arc::new(move || {
            slot.complete(Err(Error::cancelled()));
            slot.cancel.notify_one();
            let inner = forward.lock().unwrap_or_else(|e| e.into_inner()).clone();
            if let Some(inner) = inner {
                inner.cancel();
            }
        }))
    }

    fn refuse_on_runtime() -> Result<(), Error> {
        if on_runtime_thread() {
            return Err(Error::new(
                ErrorKind::Unsupported,
                "a blocking wait on a runtime thread could deadlock: await the call instead",
            ));
        }
        Ok(())
    }

    fn take(state: &mut State<T>) -> Option<Result<T, Error>> {
        match std::mem::replace(state, State::Taken) {
            State::Done(result) => Some(result),
            State::Taken => Some(Err(Error::new(
                ErrorKind::Unsupported,
                "the call's result was already taken",
            ))),
            pending => {
                *state = pending;
                None
            }
        }
    }

    /// On the library's runtime: blocks, driving the runtime, until the call is no longer
    /// pending or `limit` passes.
    fn drive_until_done(&self, limit: Option<Limit>) {
        let slot = &self.slot;
        let done = std::future::poll_fn(|cx| match &mut *slot.lock() {
            State::Pending { waker, .. } => {
                *waker = Some(cx.waker().clone());
                Poll::Pending
            }
            _ => Poll::Ready(()),
        });
        drive_within(limit, done);
    }

    /// Waits up to `slice` for the result; `None` when it is not there yet (the call goes
    /// on). Lets a host check for its own interrupts (Python's Ctrl-C) between slices. A
    /// slice may end sooner: the thread driving the runtime keeps one slice timer armed
    /// from one wait to the next instead of arming one per call.
    pub fn wait_slice(&self, slice: Duration) -> Option<Result<T, Error>> {
        self.wait_within(Limit::Slice(slice))
    }

    /// Waits up to `limit` for the result; `None` when it is not there yet.
    fn wait_within(&self, limit: Limit) -> Option<Result<T, Error>> {
        if let Err(e) = Self::refuse_on_runtime() {
            return Some(Err(e));
        }
        let waiting = self.shared.then(runtime::Waiting::begin);
        if waiting.as_ref().is_some_and(runtime::Waiting::alone) {
            if !self.run_here(Some(limit)) {
                self.drive_until_done(Some(limit));
            }
            return Self::take(&mut self.slot.lock());
        }
        self.start();
        let deadline = Instant::now() + limit.duration();
        let mut state = self.slot.lock();
        loop {
            if let Some(result) = Self::take(&mut state) {
                return Some(result);
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return None;
            }
            state = self.slot.sleep(state, Some(left));
        }
    }

    /// Blocks until the result is there. With a `timeout` that passes first, the call is
    /// cancelled and the wait fails with [`ErrorKind::Timeout`].
    pub fn wait(self, timeout: Option<Duration>) -> Result<T, Error> {
        Self::refuse_on_runtime()?;
        let Some(timeout) = timeout else {
            let waiting = self.shared.then(runtime::Waiting::begin);
            if waiting.as_ref().is_some_and(runtime::Waiting::alone) {
                if !self.run_here(None) {
                    self.drive_until_done(None);
                }
            } else {
                self.start();
            }
            let mut state = self.slot.lock();
            loop {
                if let Some(result) = Self::take(&mut state) {
                    return result;
                }
                state = self.slot.sleep(state, None);
            }
        };
        match self.wait_within(Limit::Exactly(timeout)) {
            Some(result) => result,
            None => {
                self.cancel();
                Err(Error::new(
                    ErrorKind::Timeout,
                    format!("the call did not complete within {timeout:?}"),
                )
                .with_may_have_applied())
            }
        }
    }

    /// A call completing with `f` of this call's success; cancelling it cancels this one.
    /// Lets a binding erase result types (one pending-call class per language).
    pub fn map<U: Send + 'static>(self, f: impl FnOnce(T) -> U + Send + 'static) -> Call<U> {
        let mut out = Call::new();
        out.shared = self.shared;
        let slot = Arc::clone(&out.slot);
        let inner = self.canceller();
        // Cancelling the outer call cancels the inner one; its completion then completes
        // the outer call (with `cancelled`, unless it had already finished).
        *out.forward.lock().unwrap_or_else(|e| e.into_inner()) = Some(inner);
        // Whoever waits for the outer call drives the runtime (or asks for a driver).
        self.deliver(move |result| slot.complete(result.map(f)));
        out
    }

    /// Delivers the result to `callback` instead: on the thread that completes the call
    /// (the one driving the runtime), or at once on this thread if it has already
    /// completed.
    pub fn on_complete(self, callback: impl FnOnce(Result<T, Error>) + Send + 'static) {
        if self.shared {
            runtime::want_driver();
        }
        self.deliver(callback);
    }

    fn deliver(self, callback: impl FnOnce(Result<T, Error>) + Send + 'static) {
        self.start();
        let mut state = self.slot.lock();
        match &mut *state {
            State::Pending { callback: slot, .. } => *slot = Some(Box::new(callback)),
            _ => {
                let result = Self::take(&mut state).expect("not pending");
                drop(state);
                callback(result);
            }
        }
    }
}

impl<T: Send + 'static> Future for Call<T> {
    type Output = Result<T, Error>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        this.start();
        {
            let mut state = this.slot.lock();
            if let Some(result) = Self::take(&mut state) {
                return Poll::Ready(result);
            }
            if let State::Pending { waker, .. } = &mut *state {
                *waker = Some(cx.waker().clone());
            }
        }
        if this.shared && !std::mem::replace(&mut this.asked, true) {
            // Awaited, not waited for: the runtime must be driven by someone else (once).
            runtime::want_driver();
        }
        Poll::Pending
    }
}
