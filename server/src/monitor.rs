//! The store's live event stream — every request with its outcome and duration, every
//! notification, client connects and disconnects, faults — for viewers such as the console
//! of `mqstate serve --http` (docs/console.md): a MONITOR for the state store.
//!
//! Bounded, and never in the store's way: events go into one ring shared by every viewer
//! ([`tokio::sync::broadcast`], [`CAPACITY`] events); a viewer that falls behind (a slow
//! page, one that never reads) loses the oldest and is told how many
//! ([`Next::Skipped`]), and the store never waits for anyone. With no viewer, an event
//! costs the store one relaxed atomic load ([`Monitor::watched`]): nothing is built.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use mqstate::codec::Verb;
use tokio::sync::broadcast;

use crate::metrics::Outcome;

/// How many events the ring holds: how far a viewer may fall behind before it skips.
pub const CAPACITY: usize = 4096;

/// How many viewers may watch at once by default.
pub const DEFAULT_MAX_VIEWERS: usize = 128;

/// One event, numbered in the order the store saw it.
#[derive(Clone, Debug)]
pub struct Event {
    /// Increases by one per event (from 1).
    pub seq: u64,
    /// When it happened, Unix ms.
    pub at_ms: u64,
    /// What happened.
    pub what: What,
    /// The event as viewers send it, made by the first that needs it ([`Event::rendered`]).
    rendered: std::sync::OnceLock<Bytes>,
}

impl Event {
    /// An event numbered `seq`, at `at_ms`.
    pub fn new(seq: u64, at_ms: u64, what: What) -> Event {
        Event {
            seq,
            at_ms,
            what,
            rendered: std::sync::OnceLock::new(),
        }
    }

    /// The event as `render` writes it, rendered once for every viewer that shows it the
    /// same way (the first one renders it).
    pub fn rendered(&self, render: impl FnOnce(&Event) -> Bytes) -> Bytes {
        self.rendered.get_or_init(|| render(self)).clone()
    }
}

/// What an [`Event`] reports.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub enum What {
    /// The store served (or dropped) a request.
    Request {
        /// The requester's client id, if known.
        client: Option<String>,
        /// The verb; `None` for a payload that does not decode.
        verb: Option<Verb>,
        /// The key (SCAN: its pattern), when the payload decodes.
        key: Option<Bytes>,
        /// What became of it.
        outcome: Outcome,
        /// The error code when it failed: a state store error's code (`mqstate::ERROR_TABLE`),
        /// `rpc_error` for an RPC failure ([`What::Request::status`]), `dropped` when it was not
        /// answered.
        error: Option<&'static str>,
        /// The `__stat` of an RPC failure.
        status: Option<u16>,
        /// How long the store took.
        duration: Duration,
    },
    /// A notification went to an observer.
    Notification {
        /// The observer.
        client: String,
        /// The key.
        key: Bytes,
        /// `SET` or `DELETE`.
        event: &'static str,
    },
    /// A client connected to the embedded broker.
    Connected {
        /// Its client id.
        client: String,
        /// Where it connected from, when known.
        address: Option<SocketAddr>,
    },
    /// A client's connection closed.
    Disconnected {
        /// Its client id.
        client: String,
    },
    /// A fault was injected (`cut`, `pause`, `fail`, `restart`).
    Fault {
        /// Which.
        fault: &'static str,
        /// What it did, in words.
        detail: String,
    },
}

/// What [`Viewer::next`] gives.
#[derive(Debug)]
pub enum Next {
    /// The next event.
    Event(Arc<Event>),
    /// This many events were lost: the viewer fell that far behind.
    Skipped(u64),
    /// The monitor is gone.
    Closed,
}

/// The event stream of one server (cheap to clone; clones share it). It outlives a restart
/// of the server it is given to ([`crate::ServerConfig::monitor`]).
#[derive(Clone)]
pub struct Monitor(Arc<Inner>);

struct Inner {
    /// The last number given, with the ring: one lock orders both.
    sender: Mutex<(u64, broadcast::Sender<Arc<Event>>)>,
    viewers: AtomicUsize,
    max_viewers: usize,
}

impl Default for Monitor {
    fn default() -> Self {
        Monitor::new(DEFAULT_MAX_VIEWERS)
    }
}

impl std::fmt::Debug for Monitor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Monitor")
            .field("viewers", &self.viewers())
            .field("max_viewers", &self.0.max_viewers)
            .finish()
    }
}

impl Monitor {
    /// A monitor that serves at most `max_viewers` viewers at once.
    pub fn new(max_viewers: usize) -> Monitor {
        let (sender, _) = broadcast::channel(CAPACITY);
        Monitor(Arc::new(Inner {
            sender: Mutex::new((0, sender)),
            viewers: AtomicUsize::new(0),
            max_viewers,
        }))
    }

    /// Whether anyone watches (events are built only then).
    #[inline]
    pub fn watched(&self) -> bool {
        self.0.viewers.load(Ordering::Relaxed) > 0
    }

    /// How many viewers watch now.
    pub fn viewers(&self) -> usize {
        self.0.viewers.load(Ordering::Relaxed)
    }

    /// The most viewers served at once.
    pub fn max_viewers(&self) -> usize {
        self.0.max_viewers
    }

    /// A new viewer, which sees the events from now on; `None` when
    /// [`max_viewers`](Monitor::max_viewers) already watch.
    pub fn subscribe(&self) -> Option<Viewer> {
        let taken = self
            .0
            .viewers
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| {
                (n < self.0.max_viewers).then_some(n + 1)
            });
        if taken.is_err() {
            return None;
        }
        let receiver = lock(&self.0.sender).1.subscribe();
        Some(Viewer {
            receiver,
            monitor: self.clone(),
        })
    }

    /// Reports `what` to every viewer (nothing when nobody watches).
    pub fn publish(&self, what: What) {
        if !self.watched() {
            return;
        }
        let at_ms = crate::wall_clock::now_ms();
        let mut sender = lock(&self.0.sender);
        sender.0 += 1;
        let event = Arc::new(Event::new(sender.0, at_ms, what));
        // An error means nobody listens any more: nothing to do.
        let _ = sender.1.send(event);
    }
}

/// One viewer of a [`Monitor`]; dropping it frees its place.
pub struct Viewer {
    receiver: broadcast::Receiver<Arc<Event>>,
    monitor: Monitor,
}

impl Viewer {
    /// Waits for the next event.
    pub async fn next(&mut self) -> Next {
        match self.receiver.recv().await {
            Ok(event) => Next::Event(event),
            Err(broadcast::error::RecvError::Lagged(n)) => Next::Skipped(n),
            Err(broadcast::error::RecvError::Closed) => Next::Closed,
        }
    }

    /// The next event if one is waiting, without waiting (`None`: none is).
    pub fn try_next(&mut self) -> Option<Next> {
        match self.receiver.try_recv() {
            Ok(event) => Some(Next::Event(event)),
            Err(broadcast::error::TryRecvError::Lagged(n)) => Some(Next::Skipped(n)),
            Err(broadcast::error::TryRecvError::Closed) => Some(Next::Closed),
            Err(broadcast::error::TryRecvError::Empty) => None,
        }
    }
}

impl Drop for Viewer {
    fn drop(&mut self) {
        self.monitor.0.viewers.fetch_sub(1, Ordering::SeqCst);
    }
}

impl std::fmt::Debug for Viewer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Viewer").finish_non_exhaustive()
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|poison| poison.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fault(n: usize) -> What {
        What::Fault {
            fault: "pause",
            detail: n.to_string(),
        }
    }

    #[tokio::test]
    async fn viewers_see_events_in_order_and_a_slow_one_skips() {
        let monitor = Monitor::new(2);
        monitor.publish(fault(0));
        let mut a = monitor.subscribe().unwrap();
        let mut b = monitor.subscribe().unwrap();
        assert!(monitor.subscribe().is_none(), "two at most");
        monitor.publish(fault(1));
        let Next::Event(first) = a.next().await else {
            panic!("an event")
        };
        assert_eq!(
            first.seq, 1,
            "the event before anyone watched was not built"
        );
        for n in 0..CAPACITY + 10 {
            monitor.publish(fault(n));
        }
        match b.next().await {
            Next::Skipped(n) => assert_eq!(n, 11),
            other => panic!("{other:?}"),
        }
        let Next::Event(next) = b.next().await else {
            panic!("an event")
        };
        assert_eq!(next.seq, 12);
        drop(a);
        assert_eq!(monitor.viewers(), 1);
        assert!(monitor.subscribe().is_some(), "a place is free again");
    }
}
