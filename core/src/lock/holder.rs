//! Watching who holds a lock: a stream of holder changes built on the observation of the
//! lock key alone, so other keys' notifications never appear in it.
//!
//! The first item is the holder at the time the watch started (read right after the
//! KEYNOTIFY was accepted). After that, an item appears only when the holder changes: a
//! renewal by the same holder rewrites the key but is not reported.

use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use futures_core::Stream;

use crate::codec::KeyEvent;
use crate::{Client, Error, Hlc, KeyNotification, Observer};

/// One change of a lock's holder.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HolderChange {
    /// The new holder id, or `None` when the lock became free (released or expired).
    pub holder: Option<String>,
    /// The lock key's version at the change (`None` for a free lock read by GET).
    pub version: Option<Hlc>,
    /// Found by a resynchronisation after a reconnection (intermediate holders are not
    /// replayed).
    pub resync: bool,
}

/// A stream of [`HolderChange`]s of one lock key. Use [`HolderWatch::recv`] or the
/// `futures_core::Stream` implementation; it ends when the client closes.
#[derive(Debug)]
pub struct HolderWatch {
    observer: Observer,
    /// The initial item, not yet returned.
    pending: Option<HolderChange>,
    /// The holder last reported.
    last: Option<String>,
    /// The version of the initial read: older notifications are stale.
    floor: Option<Hlc>,
}

fn holder_of(value: &Bytes) -> String {
    String::from_utf8_lossy(value).into_owned()
}

impl HolderWatch {
    /// Observes `key`, then reads its current holder.
    pub(crate) async fn start(client: &Client, key: &Bytes) -> Result<HolderWatch, Error> {
        let observer = client.observe(key).await?;
        // Past the cache: the first item is the store's holder (observation orders the rest).
        let current = client
            .get_with(key, crate::GetOptions::past_cache())
            .await?;
        let (holder, version) = match current {
            Some(v) => (Some(holder_of(&v.value)), v.version),
            None => (None, None),
        };
        Ok(HolderWatch {
            observer,
            pending: Some(HolderChange {
                holder: holder.clone(),
                version: version.clone(),
                resync: false,
            }),
            last: holder,
            floor: version,
        })
    }

    /// The watched lock key.
    pub fn key(&self) -> &[u8] {
        self.observer.key()
    }

    /// The next holder change; `None` once the client is closed.
    pub async fn recv(&mut self) -> Option<HolderChange> {
        std::future::poll_fn(|cx| self.poll_change(cx)).await
    }

    /// Turns a key notification into a holder change, or `None` if nothing changed.
    fn accept(&mut self, n: KeyNotification) -> Option<HolderChange> {
        if let (Some(v), Some(floor)) = (&n.version, &self.floor)
            && v <= floor
        {
            return None;
        }
        let holder = match &n.event {
            KeyEvent::Set(value) => Some(holder_of(value)),
            KeyEvent::Delete => None,
        };
        if holder == self.last {
            return None;
        }
        self.last.clone_from(&holder);
        Some(HolderChange {
            holder,
            version: n.version,
            resync: n.resync,
        })
    }

    fn poll_change(&mut self, cx: &mut Context<'_>) -> Poll<Option<HolderChange>> {
        if let Some(first) = self.pending.take() {
            return Poll::Ready(Some(first));
        }
        loop {
            match Pin::new(&mut self.observer).poll_next(cx) {
                Poll::Ready(Some(n)) => {
                    if let Some(change) = self.accept(n) {
                        return Poll::Ready(Some(change));
                    }
                }
                Poll::Ready(None) => return Poll::Ready(None),
                Poll::Pending => return Poll::Pending,
            }
        }
    }
}

impl futures_core::Stream for HolderWatch {
    type Item = HolderChange;
    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<HolderChange>> {
        self.get_mut().poll_change(cx)
    }
}
