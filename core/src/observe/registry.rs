//! The registry of one client's observed keys: which keys are observed by whom, whether
//! each is registered (KEYNOTIFY) on the current connection, the last delivered version
//! (the ordering baseline), and the routing of notifications and connection events into
//! each observer's queue. Pure bookkeeping under a mutex; the wire work (KEYNOTIFY, STOP,
//! resynchronisation) is done by its callers in [`observe`](super).

use std::borrow::Borrow;
use std::collections::HashSet;
use std::hash::{BuildHasher, Hash, Hasher, RandomState};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use rumqttc::v5::mqttbytes::v5::Publish;
use tracing::warn;

use super::KeyNotification;
use super::entry::{KeyEntry, LastState, ObserverId};
use crate::codec::{KeyEvent, Notification};
use crate::hlc::{Clock, Hlc};

/// An entry in the index, found by its key's bytes.
struct Indexed(Arc<KeyEntry>);

impl Borrow<[u8]> for Indexed {
    fn borrow(&self) -> &[u8] {
        self.0.key()
    }
}

impl Hash for Indexed {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.0.key().hash(state);
    }
}

impl PartialEq for Indexed {
    fn eq(&self, other: &Indexed) -> bool {
        self.0.key() == other.0.key()
    }
}

impl Eq for Indexed {}

/// Every observed key of one client: an index of one [`KeyEntry`] per key.
pub(crate) struct Registry {
    capacity: usize,
    keys: Mutex<HashSet<Indexed>>,
    /// Set by [`Registry::close_all`]: entries made later are closed from the start.
    closed: AtomicBool,
    /// Hashes the last value of each key (kept instead of the value, to compare after a
    /// reconnection when the service gives no version); keyed per process.
    values: RandomState,
    clock: Mutex<Option<Clock>>,
    /// Serialise KEYNOTIFY / STOP / resync so that they never interleave for a key; striped
    /// by key so that different keys register concurrently.
    op_locks: Vec<tokio::sync::Mutex<()>>,
    /// The client's counters (notifications here; locks count into them too).
    pub(crate) counters: Arc<crate::telemetry::ClientCounters>,
}

/// Stripes of the per-key operation lock.
const OP_LOCK_STRIPES: usize = 64;

impl Registry {
    pub(crate) fn new(capacity: usize) -> Registry {
        Registry {
            capacity: capacity.max(1),
            keys: Mutex::new(HashSet::new()),
            closed: AtomicBool::new(false),
            values: RandomState::new(),
            clock: Mutex::new(None),
            op_locks: (0..OP_LOCK_STRIPES)
                .map(|_| tokio::sync::Mutex::new(()))
                .collect(),
            counters: Arc::default(),
        }
    }

    /// The number of events buffered per observer.
    pub(crate) fn capacity(&self) -> usize {
        self.capacity
    }

    /// The lock that serialises registration work on `key`.
    pub(crate) fn op_lock(&self, key: &[u8]) -> &tokio::sync::Mutex<()> {
        use std::hash::{BuildHasherDefault, DefaultHasher};
        let hash = BuildHasherDefault::<DefaultHasher>::default().hash_one(key);
        &self.op_locks[(hash % OP_LOCK_STRIPES as u64) as usize]
    }

    fn keys(&self) -> std::sync::MutexGuard<'_, HashSet<Indexed>> {
        self.keys.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn entry(&self, key: &[u8]) -> Option<Arc<KeyEntry>> {
        self.keys().get(key).map(|e| Arc::clone(&e.0))
    }

    /// The clock notification versions are merged into.
    pub(crate) fn set_clock(&self, clock: Clock) {
        *self.clock.lock().unwrap_or_else(|e| e.into_inner()) = Some(clock);
    }

    fn last_state(&self, event: &KeyEvent) -> LastState {
        match event {
            KeyEvent::Set(value) => LastState::Set(self.values.hash_one(&value[..])),
            KeyEvent::Delete => LastState::Deleted,
        }
    }

    /// Adds an observer of `key`: its entry, its id there, and `true` when the key still
    /// needs its KEYNOTIFY.
    pub(crate) fn add(&self, key: &[u8]) -> (Arc<KeyEntry>, ObserverId, bool) {
        let entry = {
            let mut keys = self.keys();
            match keys.get(key) {
                Some(e) => Arc::clone(&e.0),
                None => {
                    let closed = self.closed.load(Ordering::Acquire);
                    let e = Arc::new(KeyEntry::new(key, closed));
                    keys.insert(Indexed(Arc::clone(&e)));
                    e
                }
            }
        };
        let (id, needs_keynotify) = entry.add_observer();
        (entry, id, needs_keynotify)
    }

    /// Records that the client's cache holds `key` (so the registration outlives its
    /// observers), making its entry if needed.
    pub(crate) fn add_cached(&self, key: &[u8]) {
        let mut keys = self.keys();
        match keys.get(key) {
            Some(e) => e.0.set_cached(true),
            None => {
                let e = Arc::new(KeyEntry::new(key, self.closed.load(Ordering::Acquire)));
                e.set_cached(true);
                keys.insert(Indexed(e));
            }
        }
    }

    /// Records that the client's cache no longer holds `key`.
    pub(crate) fn drop_cached(&self, key: &[u8]) {
        if let Some(entry) = self.entry(key) {
            entry.set_cached(false);
        }
    }

    /// Records that a KEYNOTIFY for `key` is about to be sent: from now on a STOP is owed.
    pub(crate) fn stop_owed(&self, key: &[u8]) {
        if let Some(entry) = self.entry(key) {
            entry.stop_owed();
        }
    }

    /// Records that KEYNOTIFY was accepted, with the key's state read right after it.
    /// Observers that were told the key was degraded are told it is restored.
    pub(crate) fn registered(&self, key: &[u8], current: Option<(Bytes, Option<Hlc>)>) {
        if let Some(entry) = self.entry(key) {
            let (last, version) = match current {
                Some((value, version)) => (self.last_state(&KeyEvent::Set(value)), version),
                None => (LastState::Deleted, None),
            };
            entry.registered(self.capacity, last, version);
        }
    }

    /// Forgets a key with no observers left and not cached; `true` if it was registered
    /// with the service (so a STOP is owed).
    pub(crate) fn forget_if_unobserved(&self, key: &[u8]) -> bool {
        let mut keys = self.keys();
        match keys.get(key) {
            Some(e) if !e.0.wanted() => keys.take(key).is_some_and(|e| e.0.owes_stop()),
            _ => false,
        }
    }

    /// Observed keys (for resynchronisation), marked as needing KEYNOTIFY again.
    pub(crate) fn unregister_all(&self) -> Vec<Bytes> {
        self.keys()
            .iter()
            .filter(|e| e.0.unregister())
            .map(|e| Bytes::copy_from_slice(e.0.key()))
            .collect()
    }

    /// Tells the observers of `key` that it could not be re-registered after a reconnection
    /// (once, until it is restored): changes are not seen meanwhile.
    pub(crate) fn degraded(&self, key: &[u8], reason: &str) {
        if let Some(entry) = self.entry(key) {
            entry.degraded(self.capacity, reason);
        }
    }

    /// Observed keys not registered on the current connection (to retry).
    pub(crate) fn unregistered(&self) -> Vec<Bytes> {
        self.keys()
            .iter()
            .filter(|e| e.0.needs_registration())
            .map(|e| Bytes::copy_from_slice(e.0.key()))
            .collect()
    }

    /// Whether any key is observed.
    pub(crate) fn is_empty(&self) -> bool {
        self.keys().is_empty()
    }

    /// Ends every observer's stream (the client closed).
    pub(crate) fn close_all(&self) {
        self.closed.store(true, Ordering::Release);
        for e in self.keys().iter() {
            e.0.close();
        }
    }

    /// Delivers a change to the key's observers unless it is not newer than the last one.
    fn deliver(&self, key: Bytes, event: KeyEvent, version: Option<Hlc>, resync: bool) {
        let Some(entry) = self.entry(&key) else {
            return;
        };
        let last = self.last_state(&event);
        let n = KeyNotification {
            key,
            event,
            version,
            resync,
            dropped_before: 0,
        };
        if let Some(dropped) = entry.deliver(self.capacity, n, last) {
            self.counters.notification(dropped);
        }
    }

    /// After a reconnection: compares the key's current state (from a GET) with the last
    /// known one, and delivers a resync notification when they differ.
    pub(crate) fn resync(&self, key: &Bytes, current: Option<(Bytes, Option<Hlc>)>) {
        let Some(entry) = self.entry(key) else {
            return;
        };
        let (last, last_version) = entry.last();
        let changed = match (&current, last) {
            (Some((value, version)), LastState::Set(hash)) => {
                self.values.hash_one(&value[..]) != hash
                    || (version.is_some() && *version != last_version)
            }
            (Some(_), _) => true,
            (None, LastState::Deleted) => false,
            (None, _) => true,
        };
        if changed {
            match current {
                Some((value, version)) => {
                    self.deliver(key.clone(), KeyEvent::Set(value), version, true)
                }
                None => self.deliver(key.clone(), KeyEvent::Delete, None, true),
            }
        }
    }

    /// Routes one received notification (called by the event loop): to `first` (the
    /// client's cache), then to the key's observers. `first` is told too of a notification
    /// whose version the clock refuses (its last argument `false`: the cache must forget
    /// the key, since a change it cannot order was missed); observers are not.
    pub(crate) fn dispatch(
        &self,
        client_id: &str,
        publish: Publish,
        first: impl FnOnce(&[u8], &KeyEvent, Option<&Hlc>, bool),
    ) {
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
            .and_then(|p| {
                p.user_properties
                    .iter()
                    .find(|(k, _)| k == crate::envelope::property::TIMESTAMP)
            })
            .map(|(_, v)| Hlc::parse(v));
        let version = match version {
            Some(Ok(v)) => Some(v),
            Some(Err(e)) => {
                return warn!(%topic, error = %e, "skipped a notification with a malformed __ts");
            }
            None => None,
        };
        // A version the clock refuses (far in the future, an exhausted counter) is forged
        // or broken: delivering it would make it the ordering baseline and hide every
        // genuine change after it.
        if let Some(v) = &version
            && let Some(clock) = self
                .clock
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .as_ref()
            && let Err(e) = clock.receive(v)
        {
            first(&n.key, &n.event, version.as_ref(), false);
            return warn!(%topic, error = %e, "skipped a notification whose __ts the clock refuses");
        }
        first(&n.key, &n.event, version.as_ref(), true);
        self.deliver(n.key, n.event, version, false);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::observe::ObserverEvent;
    use rumqttc::v5::mqttbytes::QoS;
    use rumqttc::v5::mqttbytes::v5::PublishProperties;

    fn hlc(ms: u64, counter: u64) -> Hlc {
        Hlc::new(ms, counter, "n").unwrap()
    }

    fn now_ms() -> u64 {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_millis() as u64
    }

    fn notification(key: &[u8], value: &str, version: &Hlc) -> Publish {
        let props = PublishProperties {
            user_properties: vec![("__ts".into(), version.to_text())],
            ..PublishProperties::default()
        };
        Publish::new(
            crate::topics::notification_topic("me", key),
            QoS::AtLeastOnce,
            KeyEvent::Set(Bytes::from(value.to_owned())).encode(),
            Some(props),
        )
    }

    /// One observer: its key's entry and its id there.
    type Obs = (Arc<KeyEntry>, ObserverId);

    fn events(q: &Obs) -> Vec<ObserverEvent> {
        std::iter::from_fn(|| q.0.try_next(q.1)).collect()
    }

    fn changes(q: &Obs) -> Vec<(String, u64)> {
        events(q)
            .into_iter()
            .filter_map(|e| match e {
                ObserverEvent::Change(n) => match n.event {
                    KeyEvent::Set(v) => {
                        Some((String::from_utf8(v.to_vec()).unwrap(), n.dropped_before))
                    }
                    KeyEvent::Delete => Some(("<deleted>".into(), n.dropped_before)),
                },
                _ => None,
            })
            .collect()
    }

    fn observe(r: &Registry, key: &[u8]) -> (Obs, bool) {
        let (entry, id, needs) = r.add(key);
        ((entry, id), needs)
    }

    fn registry(capacity: usize) -> (Registry, Bytes, Obs) {
        let r = Registry::new(capacity);
        r.set_clock(Clock::new("test").unwrap());
        let key = Bytes::from_static(b"k");
        let (q, needs) = observe(&r, &key);
        assert!(needs, "the first observer registers");
        r.registered(&key, None);
        (r, key, q)
    }

    #[test]
    fn delivers_in_version_order_and_drops_duplicates_and_late_ones() {
        let (r, key, q) = registry(16);
        let t = now_ms();
        r.dispatch("me", notification(&key, "a", &hlc(t, 1)), |_, _, _, _| {});
        r.dispatch("me", notification(&key, "a", &hlc(t, 1)), |_, _, _, _| {});
        r.dispatch(
            "me",
            notification(&key, "old", &hlc(t - 5, 0)),
            |_, _, _, _| {},
        );
        r.dispatch("me", notification(&key, "b", &hlc(t, 2)), |_, _, _, _| {});
        r.dispatch(
            "other",
            notification(&key, "not mine", &hlc(t, 3)),
            |_, _, _, _| {},
        );
        assert_eq!(changes(&q), [("a".into(), 0), ("b".into(), 0)]);
        let (_, again) = observe(&r, &key);
        assert!(!again, "a second observer does not register again");
    }

    #[test]
    fn a_version_the_clock_refuses_is_dropped_and_is_no_baseline() {
        let (r, key, q) = registry(16);
        r.dispatch(
            "me",
            notification(&key, "forged", &hlc(now_ms() + 86_400_000, 0)),
            |_, _, _, _| {},
        );
        r.dispatch(
            "me",
            notification(&key, "genuine", &hlc(now_ms(), 0)),
            |_, _, _, _| {},
        );
        assert_eq!(changes(&q), [("genuine".into(), 0)]);
    }

    #[test]
    fn overflow_drops_the_oldest_and_counts() {
        let (r, key, q) = registry(2);
        let t = now_ms();
        for i in 1..=5 {
            r.dispatch(
                "me",
                notification(&key, &format!("v{i}"), &hlc(t, i)),
                |_, _, _, _| {},
            );
        }
        assert_eq!(changes(&q), [("v4".into(), 3), ("v5".into(), 0)]);
    }

    #[test]
    fn resync_delivers_only_a_changed_state() {
        let (r, key, q) = registry(16);
        let t = now_ms();
        r.dispatch("me", notification(&key, "a", &hlc(t, 1)), |_, _, _, _| {});
        let _ = changes(&q);
        // Unchanged: nothing.
        r.resync(&key, Some((Bytes::from_static(b"a"), Some(hlc(t, 1)))));
        assert!(changes(&q).is_empty());
        // Changed while away: one resync notification; then a deletion.
        r.resync(&key, Some((Bytes::from_static(b"b"), Some(hlc(t, 5)))));
        r.resync(&key, None);
        r.resync(&key, None);
        assert_eq!(
            changes(&q),
            [("b".into(), 0), ("<deleted>".into(), 0)],
            "a repeated deletion is no change"
        );
    }

    #[test]
    fn degraded_and_restored_are_told_once_each() {
        let (r, key, q) = registry(16);
        assert_eq!(r.unregister_all(), vec![key.clone()]);
        r.degraded(&key, "boom");
        r.degraded(&key, "boom again");
        assert_eq!(r.unregistered(), vec![key.clone()]);
        r.registered(&key, None);
        assert_eq!(
            events(&q),
            [
                ObserverEvent::Degraded {
                    reason: "boom".into()
                },
                ObserverEvent::Restored
            ]
        );
        assert!(r.unregistered().is_empty());
    }

    #[test]
    fn a_stop_is_owed_once_keynotify_was_sent() {
        let r = Registry::new(4);
        let key = Bytes::from_static(b"k");
        let (q, _) = observe(&r, &key);
        r.stop_owed(&key);
        assert!(q.0.remove_observer(q.1), "the last observer");
        assert!(
            r.forget_if_unobserved(&key),
            "STOP owed although never registered"
        );
        let (q, _) = observe(&r, &key);
        assert!(q.0.remove_observer(q.1));
        assert!(!r.forget_if_unobserved(&key), "nothing was sent: no STOP");
    }
}
