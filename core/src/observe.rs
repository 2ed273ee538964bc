//! Observation of keys (spec §7): notification routing, ordering and de-duplication by
//! version, bounded per-observer queues, and resynchronisation after reconnects.
//!
//! Guarantees:
//! - per key, notifications reach observers in version order; one with a version not newer
//!   than the last delivered one (a duplicate or a late arrival) is dropped, and one whose
//!   `__ts` the process clock refuses (far in the future: forged or broken) is dropped and
//!   never becomes the ordering baseline;
//! - after every reconnection the client re-sends KEYNOTIFY for each observed key, then GETs
//!   it, and when the value or version changed while disconnected each observer receives a
//!   notification marked [`KeyNotification::resync`], so no observer misses the final state;
//! - when that re-registration fails, observers receive [`ObserverEvent::Degraded`] (they
//!   will not see changes meanwhile), the client retries with backoff, and observers receive
//!   [`ObserverEvent::Restored`] (after any resync notification) once it succeeds;
//! - **overflow policy**: each observer buffers at most `capacity` events (set in
//!   [`ClientOptions`](crate::ClientOptions)); when a slow observer's buffer is full the
//!   *oldest* buffered event is discarded, and the next notification it receives says how
//!   many were discarded in [`KeyNotification::dropped_before`]. The newest state is
//!   therefore always delivered, and memory stays bounded;
//! - bad topics or payloads are logged and skipped.

mod entry;
pub(crate) mod queue;
mod registry;

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::Bytes;

use crate::Client;
use crate::client::Core;
use crate::codec::KeyEvent;
use crate::hlc::Hlc;

pub(crate) use entry::{KeyEntry, ObserverId};
pub(crate) use queue::{EventQueue, Next};

pub(crate) use registry::Registry;

/// One change of an observed key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeyNotification {
    /// The key.
    pub key: Bytes,
    /// What happened: set to a value, or deleted.
    pub event: KeyEvent,
    /// The key's new version (`None` for a resync that found the key deleted: a GET miss
    /// carries no version).
    pub version: Option<Hlc>,
    /// This notification was synthesised after a reconnection, from a GET, because the key
    /// changed while the client was disconnected (intermediate changes are not replayed).
    pub resync: bool,
    /// Events discarded for this observer before this one because its buffer was full.
    pub dropped_before: u64,
}

/// What an observer's queue carries: changes, and the two connection events.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ObserverEvent {
    /// The key changed.
    Change(KeyNotification),
    /// After a reconnection the key could not be registered again: changes are not
    /// delivered until [`ObserverEvent::Restored`].
    Degraded {
        /// Why (the error of the failed re-registration).
        reason: String,
    },
    /// The key is registered again after a [`ObserverEvent::Degraded`].
    Restored,
}

/// A stream of the changes of one key. Created by [`Client::observe`](crate::Client::observe);
/// dropping it — on any thread, inside a runtime or not — ends the observation (the client
/// sends `KEYNOTIFY … STOP` on its own runtime once the key's last observer is gone).
///
/// Three words: the key's entry in the client's registry (which holds this observer's
/// buffer), the connection, and the observer's id in the entry.
pub struct Observer {
    entry: Arc<KeyEntry>,
    core: Arc<Core>,
    id: ObserverId,
}

impl Observer {
    pub(crate) fn new(entry: Arc<KeyEntry>, id: ObserverId, client: &Client) -> Observer {
        Observer {
            entry,
            core: Arc::clone(&client.core),
            id,
        }
    }

    /// The observed key.
    pub fn key(&self) -> &[u8] {
        self.entry.key()
    }

    /// The client this observer belongs to (a handle with the client's default timeout).
    pub fn client(&self) -> Client {
        Client::from_core(&self.core)
    }

    /// Polls for the next event, connection events included.
    pub fn poll_event(&mut self, cx: &mut Context<'_>) -> Poll<Option<ObserverEvent>> {
        self.entry.poll_next(self.id, cx)
    }

    /// The next event (a change, or a connection event); `None` once the client is closed.
    pub async fn recv_event(&mut self) -> Option<ObserverEvent> {
        std::future::poll_fn(|cx| self.poll_event(cx)).await
    }

    /// The next change; `None` once the client is closed. Connection events are skipped
    /// (use [`Observer::recv_event`] to see them).
    pub async fn recv(&mut self) -> Option<KeyNotification> {
        std::future::poll_fn(|cx| self.poll_change(cx)).await
    }

    fn poll_change(&mut self, cx: &mut Context<'_>) -> Poll<Option<KeyNotification>> {
        loop {
            match self.poll_event(cx) {
                Poll::Ready(Some(ObserverEvent::Change(n))) => return Poll::Ready(Some(n)),
                Poll::Ready(Some(_)) => continue,
                Poll::Ready(None) => return Poll::Ready(None),
                Poll::Pending => return Poll::Pending,
            }
        }
    }

    /// The next change if one is already buffered (connection events are skipped).
    pub fn try_recv(&mut self) -> Option<KeyNotification> {
        while let Some(next) = self.entry.try_next(self.id) {
            if let ObserverEvent::Change(n) = next {
                return Some(n);
            }
        }
        None
    }
}

impl futures_core::Stream for Observer {
    type Item = KeyNotification;
    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<KeyNotification>> {
        self.get_mut().poll_change(cx)
    }
}

impl Drop for Observer {
    fn drop(&mut self) {
        if self.entry.remove_observer(self.id) {
            Client::from_core(&self.core).stop_observing_later(Bytes::copy_from_slice(self.key()));
        }
    }
}

impl std::fmt::Debug for Observer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Observer")
            .field("key", &Bytes::copy_from_slice(self.key()))
            .finish()
    }
}
