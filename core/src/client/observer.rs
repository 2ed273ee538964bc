//! [`Observer`]: the stream of one observed key's changes, as a client hands it out. It
//! holds the client's core (the connection stays open while it lives) and the key's entry
//! in the client's registry ([`crate::observe`]), where its buffer is.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::Bytes;

use super::{Client, Core};
use crate::observe::{KeyEntry, KeyNotification, ObserverEvent, ObserverId};

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
