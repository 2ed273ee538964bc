//! `mqstate_subscription`: key changes, lock-holder changes and lock/leader status, read
//! three ways over the core's one subscription type:
//!
//! - **pull**: `mqstate_subscription_next(sub, timeout_ms, &event)` (waiting; 0: do not
//!   wait; `MQSTATE_WAIT_FOREVER`: without limit) or `mqstate_subscription_try_next(sub,
//!   &event)` (never waits);
//! - **callback**: `mqstate_subscription_set_callback(sub, on_event, release, ctx)`:
//!   `on_event(ctx, event)` is called for every event, in order, on one library thread
//!   (`mqstate-sink`) that belongs to this subscription, never concurrently; the event is
//!   valid only during the call. `release(ctx)` is called exactly once, on that same thread,
//!   after the last `on_event`, when the subscription ends (freed, or its client closed);
//! - **file descriptor**: `mqstate_subscription_fd(sub, &fd)`: `fd` becomes readable while
//!   events are queued (level-triggered), for `poll`/`epoll`/libuv/
//!   libevent loops; read the events with `mqstate_subscription_try_next(sub, &event)`.
//!
//! One mode per subscription: after a callback is set, pulls see nothing.

use std::ffi::{c_int, c_void};
use std::sync::Mutex;
use std::time::Duration;

use mqstate::bridge::{CompletionQueue, Event, Subscription};

pub mod event;
mod wakeup;

pub use event::{mqstate_sub_event, mqstate_sub_event_type};

use super::cancel::run;
use super::guard;
use super::timeout;
use crate::ffi::out_arg;
use crate::status::{Failure, boundary, mqstate_status};

/// The file-descriptor mode: events moved here by the sink thread. The wake-up channel
/// holds one byte exactly while events are queued: the bridge's [`CompletionQueue`] writes
/// it with the event that makes the queue non-empty and reads it with the one that empties
/// it, both under the queue's lock, so a reader never sees the descriptor readable with
/// nothing queued (or the reverse), and the writer never blocks (one byte at most is unread).
struct FdQueue {
    events: CompletionQueue<Event>,
    reader: wakeup::Reader,
}

pub(crate) struct SubState {
    sub: Subscription,
    fd: Mutex<Option<std::sync::Arc<FdQueue>>>,
}

/// A subscription (opaque; thread-safe). Free it with `mqstate_subscription_free`.
pub struct mqstate_subscription {
    guarded: guard::Guarded<SubState>,
}

crate::handle!(mqstate_subscription, SubState);

pub(crate) fn new_subscription(sub: Subscription) -> *mut mqstate_subscription {
    guard::new(SubState {
        sub,
        fd: Mutex::new(None),
    })
}

/// Writes a pulled event to `*out`; `closed` once the subscription ended and is drained.
fn deliver(got: Option<Event>, out: &mut *mut mqstate_sub_event) -> Result<(), Failure> {
    match got {
        Some(e) => {
            *out = Box::into_raw(Box::new(mqstate_sub_event::of(e)));
            Ok(())
        }
        None => Err(Failure::new(
            mqstate_status::Closed,
            "the subscription has ended",
        )),
    }
}

/// Waits up to `timeout_ms` (0: do not wait, only an event already queued; `MQSTATE_WAIT_FOREVER`: without limit) for the next event:
/// `MQSTATE_STATUS_OK` with `*event` set (free it with `mqstate_sub_event_free`),
/// `MQSTATE_STATUS_TIMEOUT` when none came (no event is lost by it),
/// `MQSTATE_STATUS_CLOSED` once the subscription has ended and is drained. `*event` is NULL
/// on failure.
///
/// # Safety
/// `sub` must be a live subscription; `event` writable.
#[unsafe(no_mangle)]
pub extern "C" fn mqstate_subscription_next(
    sub: *const mqstate_subscription,
    timeout_ms: u32,
    event: *mut *mut mqstate_sub_event,
) -> mqstate_status {
    boundary(|| {
        let out = out_arg(event, std::ptr::null_mut(), "event")?;
        let state = guard::enter(sub, "sub")?;
        let limit = timeout::wait(timeout_ms);
        let fd = state.fd.lock().unwrap_or_else(|e| e.into_inner()).clone();
        let got = match fd {
            Some(q) => next_from_fd(&q, limit, &state.sub)?,
            None => run(std::ptr::null(), || state.sub.next_within(limit))?,
        };
        deliver(got, out)
    })
}

/// The next event if one is queued, without waiting: `MQSTATE_STATUS_OK` with `*event` set
/// (free it with `mqstate_sub_event_free`) or NULL when none is queued yet,
/// `MQSTATE_STATUS_CLOSED` once the subscription has ended and is drained. The way to read
/// events when `mqstate_subscription_fd` is readable.
///
/// # Safety
/// `sub` must be a live subscription; `event` writable.
#[unsafe(no_mangle)]
pub extern "C" fn mqstate_subscription_try_next(
    sub: *const mqstate_subscription,
    event: *mut *mut mqstate_sub_event,
) -> mqstate_status {
    boundary(|| {
        let out = out_arg(event, std::ptr::null_mut(), "event")?;
        let state = guard::enter(sub, "sub")?;
        let fd = state.fd.lock().unwrap_or_else(|e| e.into_inner()).clone();
        let queued = match &fd {
            Some(q) => q.pop(),
            None => state.sub.try_next(),
        };
        match queued {
            Some(e) => deliver(Some(e), out),
            None if drained(fd.as_deref(), &state.sub) => deliver(None, out),
            None => Ok(()),
        }
    })
}

impl FdQueue {
    /// Queues `event` (on the sink thread); the first of a non-empty queue writes the byte.
    fn push(&self, writer: &mut wakeup::Writer, event: Event) {
        self.events.push_and_wake(event, || writer.signal());
    }

    /// The oldest queued event; the last one takes the descriptor's byte with it.
    fn pop(&self) -> Option<Event> {
        self.events.pop_with(|| self.reader.consume())
    }
}

/// Whether the subscription has ended and nothing is left to read.
fn drained(fd: Option<&FdQueue>, sub: &Subscription) -> bool {
    sub.is_closed() && fd.is_none_or(|q| q.events.is_empty())
}

/// The next event of the descriptor's queue, waiting up to `limit` (`None`: without limit)
/// on the descriptor itself: each event writes a byte to it, and the end of the subscription
/// closes its other end (the sink thread drops the writer after the last event).
fn next_from_fd(
    q: &FdQueue,
    limit: Option<Duration>,
    sub: &Subscription,
) -> Result<Option<Event>, Failure> {
    let deadline = limit.map(|l| std::time::Instant::now() + l);
    loop {
        if let Some(e) = q.pop() {
            return Ok(Some(e));
        }
        if drained(Some(q), sub) {
            return Ok(None);
        }
        let wait = match deadline {
            None => None,
            Some(d) => match d.checked_duration_since(std::time::Instant::now()) {
                Some(left) if !left.is_zero() => Some(left),
                _ => return Err(Failure::new(mqstate_status::Timeout, "no event is queued")),
            },
        };
        q.reader.wait(wait);
    }
}

/// A C callback receiving events.
pub type mqstate_event_fn =
    Option<unsafe extern "C" fn(ctx: *mut c_void, event: *const mqstate_sub_event)>;
/// A C callback releasing a context.
pub type mqstate_release_fn = Option<unsafe extern "C" fn(ctx: *mut c_void)>;

struct CallbackSink {
    on_event: unsafe extern "C" fn(*mut c_void, *const mqstate_sub_event),
    release: mqstate_release_fn,
    ctx: *mut c_void,
}

// SAFETY: the C caller promises that its callbacks and `ctx` may be used from the sink
// thread (documented on `mqstate_subscription_set_callback`).
unsafe impl Send for CallbackSink {}

impl mqstate::bridge::EventSink for CallbackSink {
    fn deliver(&mut self, event: Event) {
        let e = mqstate_sub_event::of(event);
        let (f, ctx) = (self.on_event, self.ctx);
        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            // SAFETY: the caller's callback with its context, per its contract.
            unsafe { f(ctx, &e) }
        }));
    }
}

impl Drop for CallbackSink {
    fn drop(&mut self) {
        if let Some(release) = self.release {
            // SAFETY: the caller's release hook with its context, called once.
            unsafe { release(self.ctx) }
        }
    }
}

/// Delivers every event to `on_event(ctx, event)` on the subscription's own library thread
/// (see the module notes for order and lifetime), then calls `release(ctx)` (may be NULL)
/// once after the last event, on that thread. `on_event` must not call blocking mqstate
/// functions (they return `MQSTATE_STATUS_UNSUPPORTED` there). A second callback, or a
/// callback after `mqstate_subscription_fd`, is refused.
///
/// # Safety
/// `sub` must be a live subscription; `on_event` a valid function; `ctx` whatever the
/// callbacks accept, usable from another thread.
#[unsafe(no_mangle)]
pub extern "C" fn mqstate_subscription_set_callback(
    sub: *const mqstate_subscription,
    on_event: mqstate_event_fn,
    release: mqstate_release_fn,
    ctx: *mut c_void,
) -> mqstate_status {
    boundary(|| {
        let state = guard::enter(sub, "sub")?;
        let on_event = on_event.ok_or_else(|| Failure::invalid("on_event is NULL"))?;
        state.sub.set_sink(CallbackSink {
            on_event,
            release,
            ctx,
        })?;
        Ok(())
    })
}

/// A file descriptor that is readable while events are queued (and at the end of the
/// subscription); read the events with `mqstate_subscription_try_next(sub, &event)`. The
/// descriptor belongs to the subscription (do not close it); it stays valid until
/// `mqstate_subscription_free`. Calling it again gives the same descriptor. Unix only: on
/// Windows (no descriptor a C event loop could wait on) it returns
/// `MQSTATE_STATUS_UNSUPPORTED`; read with `mqstate_subscription_next` or a callback there.
///
/// # Safety
/// `sub` must be a live subscription; `fd` writable.
#[unsafe(no_mangle)]
pub extern "C" fn mqstate_subscription_fd(
    sub: *const mqstate_subscription,
    fd: *mut c_int,
) -> mqstate_status {
    boundary(|| {
        let fd = out_arg(fd, -1, "fd")?;
        let state = guard::enter(sub, "sub")?;
        let mut slot = state.fd.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(q) = slot.as_ref() {
            *fd = q.reader.raw();
            return Ok(());
        }
        let (reader, mut writer) = wakeup::pair()?;
        let q = std::sync::Arc::new(FdQueue {
            events: CompletionQueue::new(),
            reader,
        });
        let sink_q = std::sync::Arc::clone(&q);
        state
            .sub
            .set_sink(move |event: Event| sink_q.push(&mut writer, event))?;
        *fd = q.reader.raw();
        *slot = Some(q);
        Ok(())
    })
}

/// Ends the subscription and frees it (NULL is ignored): for a key, STOP is sent at once; a
/// callback's `release` runs on its thread after the last event. Calls waiting in
/// `mqstate_subscription_next` on other threads return `MQSTATE_STATUS_CLOSED` first.
///
/// # Safety
/// `sub` must be NULL or a live subscription, freed once.
#[unsafe(no_mangle)]
pub extern "C" fn mqstate_subscription_free(sub: *mut mqstate_subscription) {
    guard::close(sub, |state| state.sub.close())
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    /// The descriptor is readable exactly while events are queued, whatever the interleaving
    /// of the sink thread and the reader: after the reader has taken every event, nothing is
    /// left to wake an event loop for nothing (the byte used to be written after the event
    /// was queued, so a reader could take the event first and leave the byte behind).
    #[test]
    fn the_descriptor_is_readable_exactly_while_events_are_queued() {
        const EVENTS: usize = 20_000;
        let (reader, mut writer) = wakeup::pair().unwrap();
        let q = std::sync::Arc::new(FdQueue {
            events: CompletionQueue::new(),
            reader,
        });
        let sink = std::sync::Arc::clone(&q);
        let pusher = std::thread::spawn(move || {
            for _ in 0..EVENTS {
                sink.push(&mut writer, Event::Restored);
            }
            writer
        });
        let mut taken = 0;
        while taken < EVENTS {
            match q.pop() {
                Some(_) => taken += 1,
                None => std::thread::yield_now(),
            }
        }
        let _writer = pusher.join().unwrap();
        let mut pfd = libc::pollfd {
            fd: q.reader.raw(),
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one valid pollfd for a descriptor the queue owns.
        let ready = unsafe { libc::poll(&mut pfd, 1, 0) };
        assert_eq!(ready, 0, "readable with nothing queued");
    }
}
