//! Observation of keys (spec §7): notification routing, ordering and de-duplication by
//! version, bounded per-observer queues, and resynchronisation after reconnects.
//!
//! Guarantees:
//! - per key, notifications reach observers in version order; one with a version not newer
//!   than the last delivered one (a duplicate or a late arrival) is dropped;
//! - after every reconnection the client re-sends KEYNOTIFY for each observed key, then GETs
//!   it, and when the value or version changed while disconnected each observer receives a
//!   notification marked [`KeyNotification::resync`], so no observer misses the final state;
//! - **overflow policy**: each observer buffers at most `capacity` notifications (set in
//!   [`ClientOptions`](crate::ClientOptions)); when a slow observer's buffer is full the
//!   *oldest* buffered notification is discarded, and the next notification it receives
//!   says how many were discarded in [`KeyNotification::dropped_before`]. The newest state
//!   is therefore always delivered, and memory stays bounded.
//! - bad topics or payloads are logged and skipped.

use std::collections::{HashMap, VecDeque};
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};

use bytes::Bytes;
use rumqttc::v5::mqttbytes::v5::Publish;
use tracing::{debug, warn};

use crate::codec::{KeyEvent, Notification};
use crate::hlc::{Clock, Hlc};

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
    /// Notifications discarded for this observer before this one because its buffer was full.
    pub dropped_before: u64,
}

#[derive(Default)]
struct QueueState {
    items: VecDeque<KeyNotification>,
    dropped: u64,
    closed: bool,
    waker: Option<Waker>,
}

/// One observer's bounded queue.
pub(crate) struct ObserverQueue {
    state: Mutex<QueueState>,
    capacity: usize,
}

impl ObserverQueue {
    fn lock(&self) -> std::sync::MutexGuard<'_, QueueState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn push(&self, mut n: KeyNotification) {
        let waker = {
            let mut q = self.lock();
            if q.closed {
                return;
            }
            if q.items.len() >= self.capacity {
                q.items.pop_front();
                q.dropped += 1;
            }
            n.dropped_before = 0;
            q.items.push_back(n);
            q.waker.take()
        };
        if let Some(w) = waker {
            w.wake();
        }
    }

    fn close(&self) {
        let waker = {
            let mut q = self.lock();
            q.closed = true;
            q.waker.take()
        };
        if let Some(w) = waker {
            w.wake();
        }
    }

    /// The next notification, `None` once closed and drained, or pending.
    pub(crate) fn poll_next(&self, cx: &mut Context<'_>) -> Poll<Option<KeyNotification>> {
        let mut q = self.lock();
        if let Some(mut n) = q.items.pop_front() {
            n.dropped_before = std::mem::take(&mut q.dropped);
            return Poll::Ready(Some(n));
        }
        if q.closed {
            return Poll::Ready(None);
        }
        q.waker = Some(cx.waker().clone());
        Poll::Pending
    }

    /// The next notification if one is buffered.
    pub(crate) fn try_next(&self) -> Option<KeyNotification> {
        let mut q = self.lock();
        let mut n = q.items.pop_front()?;
        n.dropped_before = std::mem::take(&mut q.dropped);
        Some(n)
    }
}

/// What the registry knows of one observed key.
struct KeyState {
    observers: Vec<Arc<ObserverQueue>>,
    /// KEYNOTIFY accepted for this key on the current connection.
    registered: bool,
    last_version: Option<Hlc>,
    /// The last known state: `Some(Set)` / `Some(Delete)`, `None` when unknown.
    last_event: Option<KeyEvent>,
}

/// Every observed key of one client.
pub(crate) struct Registry {
    capacity: usize,
    keys: Mutex<HashMap<Bytes, KeyState>>,
    clock: Mutex<Option<Clock>>,
    /// Serialise KEYNOTIFY / STOP / resync so that they never interleave for a key; striped
    /// by key so that different keys register concurrently.
    op_locks: Vec<tokio::sync::Mutex<()>>,
}

/// Stripes of the per-key operation lock.
const OP_LOCK_STRIPES: usize = 64;

impl Registry {
    pub(crate) fn new(capacity: usize) -> Registry {
        Registry {
            capacity: capacity.max(1),
            keys: Mutex::new(HashMap::new()),
            clock: Mutex::new(None),
            op_locks: (0..OP_LOCK_STRIPES)
                .map(|_| tokio::sync::Mutex::new(()))
                .collect(),
        }
    }

    /// The lock that serialises registration work on `key`.
    pub(crate) fn op_lock(&self, key: &[u8]) -> &tokio::sync::Mutex<()> {
        use std::hash::{BuildHasher, BuildHasherDefault, DefaultHasher};
        let hash = BuildHasherDefault::<DefaultHasher>::default().hash_one(key);
        &self.op_locks[(hash % OP_LOCK_STRIPES as u64) as usize]
    }

    fn keys(&self) -> std::sync::MutexGuard<'_, HashMap<Bytes, KeyState>> {
        self.keys.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The clock notification versions are merged into.
    pub(crate) fn set_clock(&self, clock: Clock) {
        *self.clock.lock().unwrap_or_else(|e| e.into_inner()) = Some(clock);
    }

    /// Adds an observer of `key`; `true` in the second place when the key still needs its
    /// KEYNOTIFY.
    pub(crate) fn add(&self, key: &Bytes) -> (Arc<ObserverQueue>, bool) {
        let queue = Arc::new(ObserverQueue {
            state: Mutex::new(QueueState::default()),
            capacity: self.capacity,
        });
        let mut keys = self.keys();
        let state = keys.entry(key.clone()).or_insert_with(|| KeyState {
            observers: Vec::new(),
            registered: false,
            last_version: None,
            last_event: None,
        });
        state.observers.push(Arc::clone(&queue));
        (queue, !state.registered)
    }

    /// Records that KEYNOTIFY was accepted, with the key's state read right after it.
    pub(crate) fn registered(&self, key: &Bytes, current: Option<(Bytes, Option<Hlc>)>) {
        if let Some(state) = self.keys().get_mut(key) {
            state.registered = true;
            if state.last_event.is_none() {
                match current {
                    Some((value, version)) => {
                        state.last_event = Some(KeyEvent::Set(value));
                        state.last_version = version;
                    }
                    None => state.last_event = Some(KeyEvent::Delete),
                }
            }
        }
    }

    /// Removes one observer; `true` when it was the key's last.
    pub(crate) fn remove(&self, key: &Bytes, queue: &Arc<ObserverQueue>) -> bool {
        let mut keys = self.keys();
        let Some(state) = keys.get_mut(key) else {
            return false;
        };
        state.observers.retain(|q| !Arc::ptr_eq(q, queue));
        state.observers.is_empty()
    }

    /// Forgets a key with no observers left; `true` if it was registered with the service
    /// (so a STOP is owed).
    pub(crate) fn forget_if_unobserved(&self, key: &Bytes) -> bool {
        let mut keys = self.keys();
        match keys.get(key) {
            Some(state) if state.observers.is_empty() => {
                keys.remove(key).is_some_and(|s| s.registered)
            }
            _ => false,
        }
    }

    /// Observed keys (for resynchronisation), marked as needing KEYNOTIFY again.
    pub(crate) fn unregister_all(&self) -> Vec<Bytes> {
        let mut keys = self.keys();
        keys.iter_mut()
            .filter(|(_, s)| !s.observers.is_empty())
            .map(|(k, s)| {
                s.registered = false;
                k.clone()
            })
            .collect()
    }

    /// Whether any key is observed.
    pub(crate) fn is_empty(&self) -> bool {
        self.keys().is_empty()
    }

    /// Ends every observer's stream (the client closed).
    pub(crate) fn close_all(&self) {
        for state in self.keys().values() {
            for q in &state.observers {
                q.close();
            }
        }
    }

    /// Delivers a change to the key's observers unless it is not newer than the last one.
    fn deliver(&self, key: &Bytes, event: KeyEvent, version: Option<Hlc>, resync: bool) {
        let mut keys = self.keys();
        let Some(state) = keys.get_mut(key) else {
            return;
        };
        if let (Some(v), Some(last)) = (&version, &state.last_version)
            && v.cmp_time(last).is_le()
        {
            debug!(version = %v, last = %last, "dropped a duplicate or late notification");
            return;
        }
        if version.is_some() {
            state.last_version.clone_from(&version);
        }
        state.last_event = Some(event.clone());
        let n = KeyNotification {
            key: key.clone(),
            event,
            version,
            resync,
            dropped_before: 0,
        };
        for q in &state.observers {
            q.push(n.clone());
        }
    }

    /// After a reconnection: compares the key's current state (from a GET) with the last
    /// known one, and delivers a resync notification when they differ.
    pub(crate) fn resync(&self, key: &Bytes, current: Option<(Bytes, Option<Hlc>)>) {
        let changed = {
            let keys = self.keys();
            let Some(state) = keys.get(key) else {
                return;
            };
            match (&current, &state.last_event) {
                (Some((value, version)), Some(KeyEvent::Set(last))) => {
                    value != last || (version.is_some() && *version != state.last_version)
                }
                (Some(_), _) => true,
                (None, Some(KeyEvent::Delete)) => false,
                (None, _) => true,
            }
        };
        if changed {
            match current {
                Some((value, version)) => self.deliver(key, KeyEvent::Set(value), version, true),
                None => self.deliver(key, KeyEvent::Delete, None, true),
            }
        }
    }

    /// Routes one received notification (called by the event loop).
    pub(crate) fn dispatch(&self, client_id: &str, publish: Publish) {
        let topic = match std::str::from_utf8(&publish.topic) {
            Ok(t) => t,
            Err(_) => return warn!("skipped a notification whose topic is not UTF-8"),
        };
        let n = match Notification::decode(topic, &publish.payload) {
            Ok(n) => n,
            Err(e) => return warn!(%topic, error = %e, "skipped a malformed notification"),
        };
        if n.client_id != client_id {
            return warn!(%topic, "skipped a notification addressed to another client");
        }
        let version = publish
            .properties
            .as_ref()
            .and_then(|p| p.user_properties.iter().find(|(k, _)| k == crate::envelope::property::TIMESTAMP))
            .map(|(_, v)| Hlc::parse(v));
        let version = match version {
            Some(Ok(v)) => Some(v),
            Some(Err(e)) => {
                return warn!(%topic, error = %e, "skipped a notification with a malformed __ts");
            }
            None => None,
        };
        if let Some(v) = &version
            && let Some(clock) = self
                .clock
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .as_ref()
            && let Err(e) = clock.receive(v)
        {
            warn!(error = %e, "a notification's __ts was not merged into the clock");
        }
        self.deliver(&n.key, n.event, version, false);
    }
}

/// A stream of the changes of one key. Created by [`Client::observe`](crate::Client::observe);
/// dropping it ends the observation (the client sends `KEYNOTIFY … STOP` once the key's
/// last observer is gone).
pub struct Observer {
    pub(crate) key: Bytes,
    pub(crate) queue: Arc<ObserverQueue>,
    pub(crate) client: crate::Client,
}

impl Observer {
    /// The observed key.
    pub fn key(&self) -> &Bytes {
        &self.key
    }

    /// The next change; `None` once the client is closed.
    pub async fn recv(&mut self) -> Option<KeyNotification> {
        std::future::poll_fn(|cx| self.queue.poll_next(cx)).await
    }

    /// The next change if one is already buffered.
    pub fn try_recv(&mut self) -> Option<KeyNotification> {
        self.queue.try_next()
    }
}

impl futures_core::Stream for Observer {
    type Item = KeyNotification;
    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<KeyNotification>> {
        self.queue.poll_next(cx)
    }
}

impl Drop for Observer {
    fn drop(&mut self) {
        let shared = &self.client.shared;
        if shared.observers.remove(&self.key, &self.queue) {
            self.client.stop_observing_later(self.key.clone());
        }
    }
}

impl std::fmt::Debug for Observer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Observer").field("key", &self.key).finish()
    }
}
