//! [`Subscription`]: the one stream type of the binding layer, for key changes, lock-holder
//! and leadership changes, and lock/leader status.
//!
//! It is cloneable (clones share one queue; each event goes to one reader) and read one of
//! three ways: [`Subscription::next`] (async, any executor), [`Subscription::next_blocking`]
//! (a plain thread, with a timeout), [`Subscription::try_next`] (no wait) — or handed to an
//! [`EventSink`], which receives every event in order on one dedicated thread.
//!
//! Buffering follows the core's one overflow policy (bounded, the oldest dropped and counted
//! in [`KeyNotification::dropped_before`](crate::KeyNotification::dropped_before)).
//!
//! [`Subscription::close`] (or dropping the last clone) ends it at once: the source stops
//! (for key changes the client sends `KEYNOTIFY … STOP` right away), readers drain what is
//! buffered and then see the end.

use std::sync::{Arc, Mutex};
use std::task::Poll;
use std::time::Duration;

use tokio::task::AbortHandle;

use super::runtime::{InFlight, on_runtime_thread};
use crate::error::{Error, ErrorKind};
use crate::lock::{HolderChange, LockStatus};
use crate::observe::{EventQueue, Next};
use crate::{KeyNotification, ObserverEvent};

/// One event of a [`Subscription`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Event {
    /// An observed key changed.
    Change(KeyNotification),
    /// A lock's holder (an election's leader) changed; the first event is the current one.
    Holder(HolderChange),
    /// This lock's (this candidate's) own status changed; the first event is the current one.
    Status(LockStatus),
    /// After a reconnection the subscription could not be restored: changes are missed
    /// until [`Event::Restored`].
    Degraded {
        /// Why.
        reason: String,
    },
    /// Restored after [`Event::Degraded`].
    Restored,
}

impl From<ObserverEvent> for Event {
    fn from(e: ObserverEvent) -> Event {
        match e {
            ObserverEvent::Change(n) => Event::Change(n),
            ObserverEvent::Degraded { reason } => Event::Degraded { reason },
            ObserverEvent::Restored => Event::Restored,
        }
    }
}

/// Receives a subscription's events on its delivery thread.
///
/// Guarantees: `deliver` is called for every event, in order, on one thread
/// (`mqstate-sink`) that belongs to this subscription, never concurrently. The sink is
/// dropped — its release hook, for bindings that hold a context pointer or a JS/Python
/// reference — exactly once, on that same thread, after the last `deliver`, when the
/// subscription has ended (closed, last handle dropped, or the client closed).
pub trait EventSink: Send + 'static {
    /// One event.
    fn deliver(&mut self, event: Event);
}

impl<F: FnMut(Event) + Send + 'static> EventSink for F {
    fn deliver(&mut self, event: Event) {
        self(event)
    }
}

struct Inner {
    queue: Arc<EventQueue<Event>>,
    source: Mutex<Option<AbortHandle>>,
    sink: Mutex<bool>,
}

impl Inner {
    fn close(&self) {
        if let Some(task) = self.source.lock().unwrap_or_else(|e| e.into_inner()).take() {
            task.abort();
        }
        self.queue.close();
    }
}

impl Drop for Inner {
    fn drop(&mut self) {
        self.close();
    }
}

/// A stream of [`Event`]s (see the module documentation).
#[derive(Clone)]
pub struct Subscription {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Subscription {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Subscription")
            .field("closed", &self.inner.queue.is_closed())
            .finish()
    }
}

/// Adds the queue's own discarded count to a change's.
fn counted((mut event, dropped): (Event, u64)) -> Event {
    if let Event::Change(n) = &mut event {
        n.dropped_before += dropped;
    }
    event
}

impl Subscription {
    /// A subscription fed by `feed`, a task on `runtime` that pushes into the queue and
    /// whose end (or abort) ends the subscription.
    pub(crate) fn start<F, Fut>(runtime: &tokio::runtime::Handle, capacity: usize, feed: F) -> Self
    where
        F: FnOnce(Arc<EventQueue<Event>>) -> Fut,
        Fut: std::future::Future<Output = ()> + Send + 'static,
    {
        let queue = Arc::new(EventQueue::new(capacity));
        let work = feed(Arc::clone(&queue));
        let closer = Arc::clone(&queue);
        let task = runtime.spawn(async move {
            work.await;
            closer.close();
        });
        Subscription {
            inner: Arc::new(Inner {
                queue,
                source: Mutex::new(Some(task.abort_handle())),
                sink: Mutex::new(false),
            }),
        }
    }

    /// The next event; `None` once the subscription has ended and is drained.
    pub async fn next(&self) -> Option<Event> {
        std::future::poll_fn(|cx| match self.inner.queue.poll_next(cx) {
            Poll::Ready(next) => Poll::Ready(next.map(counted)),
            Poll::Pending => Poll::Pending,
        })
        .await
    }

    /// The next event as a cancellable call (`None` once ended); cancelling it loses no
    /// event (an event is taken from the queue only by a call that completes).
    pub fn next_call(&self) -> super::Call<Option<Event>> {
        let sub = self.clone();
        super::Call::spawn(&super::runtime::shared_handle(), async move {
            Ok(sub.next().await)
        })
    }

    /// The next event as a cancellable call that fails with [`ErrorKind::Timeout`] ("no
    /// event within …") when nothing came within `timeout` (`None`: without limit); `None`
    /// once ended. Neither the timeout nor a cancellation loses an event.
    pub fn next_within(&self, timeout: Option<Duration>) -> super::Call<Option<Event>> {
        let Some(limit) = timeout else {
            return self.next_call();
        };
        let sub = self.clone();
        super::Call::spawn(&super::runtime::shared_handle(), async move {
            tokio::time::timeout(limit, sub.next())
                .await
                .map_err(|_| Error::new(ErrorKind::Timeout, format!("no event within {limit:?}")))
        })
    }

    /// Blocks up to `timeout` (`None`: without limit) for the next event: `Ok(None)` once
    /// ended, [`ErrorKind::Timeout`] when nothing came, [`ErrorKind::Unsupported`] on a
    /// runtime thread.
    pub fn next_blocking(&self, timeout: Option<Duration>) -> Result<Option<Event>, Error> {
        if on_runtime_thread() {
            return Err(Error::new(
                ErrorKind::Unsupported,
                "a blocking wait on a runtime thread could deadlock: await next() instead",
            ));
        }
        match self.inner.queue.next_blocking(timeout) {
            Next::Event(event, dropped) => Ok(Some(counted((event, dropped)))),
            Next::Closed => Ok(None),
            Next::TimedOut => Err(Error::new(
                ErrorKind::Timeout,
                format!("no event within {:?}", timeout.unwrap_or_default()),
            )),
        }
    }

    /// The next event if one is buffered.
    pub fn try_next(&self) -> Option<Event> {
        self.inner.queue.try_next().map(counted)
    }

    /// Whether the subscription has ended (events may still be buffered).
    pub fn is_closed(&self) -> bool {
        self.inner.queue.is_closed()
    }

    /// Ends the subscription now (for key changes, STOP is sent at once).
    pub fn close(&self) {
        self.inner.close();
    }

    /// Hands every event to `sink` on a dedicated thread (see [`EventSink`] for the
    /// guarantees). Once a sink is set, the pull methods see nothing. A second sink is
    /// refused.
    pub fn set_sink(&self, sink: impl EventSink) -> Result<(), Error> {
        {
            let mut has = self.inner.sink.lock().unwrap_or_else(|e| e.into_inner());
            if *has {
                return Err(Error::invalid_argument(
                    "the subscription already has a sink",
                ));
            }
            *has = true;
        }
        let queue = Arc::clone(&self.inner.queue);
        let mut sink = sink;
        std::thread::Builder::new()
            .name("mqstate-sink".into())
            .spawn(move || {
                while let Next::Event(event, dropped) = queue.next_blocking(None) {
                    let _in_flight = InFlight::start();
                    sink.deliver(counted((event, dropped)));
                }
                let _in_flight = InFlight::start();
                drop(sink);
            })
            .map_err(|e| Error::new(ErrorKind::Unsupported, format!("no sink thread: {e}")))?;
        Ok(())
    }
}
