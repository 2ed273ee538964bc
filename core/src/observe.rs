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

use bytes::Bytes;

use crate::codec::KeyEvent;
use crate::hlc::Hlc;

pub(crate) use entry::{KeyEntry, ObserverId};
pub(crate) use queue::{EventQueue, Next};

pub(crate) use registry::Registry;

/// The stream of one key's changes: it holds the client, so it lives with it.
pub use crate::client::Observer;

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
