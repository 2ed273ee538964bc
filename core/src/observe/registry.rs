//! The registry of one client's observed keys: which keys are observed by whom, whether
//! each is registered (KEYNOTIFY) on the current connection, the last delivered version
//! (the ordering baseline), and the routing of notifications and connection events into
//! each observer's queue. Pure bookkeeping under a mutex; the wire work (KEYNOTIFY, STOP,
//! resynchronisation) is done by its callers in [`observe`](super).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use rumqttc::v5::mqttbytes::v5::Publish;
use tracing::{debug, warn};

use super::{KeyNotification, ObserverEvent, ObserverQueue};
use crate::codec::{KeyEvent, Notification};
use crate::hlc::{Clock, Hlc};

/// The observers of one key: nearly always one, kept inline (no allocation of its own).
enum Observers {
    One(Arc<ObserverQueue>),
    /// None (empty, unallocated) or several.
    Many(Vec<Arc<ObserverQueue>>),
}

impl Observers {
    fn as_slice(&self) -> &[Arc<ObserverQueue>] {
        match self {
            Observers::One(q) => std::slice::from_ref(q),
            Observers::Many(v) => v,
        }
    }

    fn is_empty(&self) -> bool {
        self.as_slice().is_empty()
    }

    fn push(&mut self, queue: Arc<ObserverQueue>) {
        *self = match std::mem::replace(self, Observers::Many(Vec::new())) {
            Observers::Many(v) if v.is_empty() => Observers::One(queue),
            Observers::One(first) => Observers::Many(vec![first, queue]),
            Observers::Many(mut v) => {
                v.push(queue);
                Observers::Many(v)
            }
        };
    }

    fn remove(&mut self, queue: &Arc<ObserverQueue>) {
        match self {
            Observers::One(q) if Arc::ptr_eq(q, queue) => *self = Observers::Many(Vec::new()),
            Observers::One(_) => {}
            Observers::Many(v) => {
                v.retain(|q| !Arc::ptr_eq(q, queue));
                if v.len() == 1 {
                    *self = Observers::One(v.remove(0));
                }
            }
        }
    }
}

/// What the registry knows of one observed key.
struct KeyState {
    observers: Observers,
    /// KEYNOTIFY accepted for this key on the current connection.
    registered: bool,
    /// A KEYNOTIFY was sent (it may have been applied even if its answer never came), so
    /// a STOP is owed when the last observer goes.
    stop_owed: bool,
    /// The last resynchronisation of this key failed; observers were told.
    degraded: bool,
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

    /// The number of events buffered per observer.
    pub(crate) fn capacity(&self) -> usize {
        self.capacity
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
        let queue = Arc::new(ObserverQueue::new(self.capacity));
        let mut keys = self.keys();
        let state = keys.entry(key.clone()).or_insert_with(|| KeyState {
            observers: Observers::Many(Vec::new()),
            registered: false,
            stop_owed: false,
            degraded: false,
            last_version: None,
            last_event: None,
        });
        state.observers.push(Arc::clone(&queue));
        (queue, !state.registered)
    }

    /// Records that a KEYNOTIFY for `key` is about to be sent: from now on a STOP is owed.
    pub(crate) fn stop_owed(&self, key: &Bytes) {
        if let Some(state) = self.keys().get_mut(key) {
            state.stop_owed = true;
        }
    }

    /// Records that KEYNOTIFY was accepted, with the key's state read right after it.
    /// Observers that were told the key was degraded are told it is restored.
    pub(crate) fn registered(&self, key: &Bytes, current: Option<(Bytes, Option<Hlc>)>) {
        if let Some(state) = self.keys().get_mut(key) {
            state.registered = true;
            if std::mem::take(&mut state.degraded) {
                for q in state.observers.as_slice() {
                    q.push(ObserverEvent::Restored);
                }
            }
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
        state.observers.remove(queue);
        state.observers.is_empty()
    }

    /// Forgets a key with no observers left; `true` if it was registered with the service
    /// (so a STOP is owed).
    pub(crate) fn forget_if_unobserved(&self, key: &Bytes) -> bool {
        let mut keys = self.keys();
        match keys.get(key) {
            Some(state) if state.observers.is_empty() => keys
                .remove(key)
                .is_some_and(|s| s.registered || s.stop_owed),
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

    /// Tells the observers of `key` that it could not be re-registered after a reconnection
    /// (once, until it is restored): changes are not seen meanwhile.
    pub(crate) fn degraded(&self, key: &Bytes, reason: &str) {
        if let Some(state) = self.keys().get_mut(key)
            && !std::mem::replace(&mut state.degraded, true)
        {
            for q in state.observers.as_slice() {
                q.push(ObserverEvent::Degraded {
                    reason: reason.to_owned(),
                });
            }
        }
    }

    /// Observed keys not registered on the current connection (to retry).
    pub(crate) fn unregistered(&self) -> Vec<Bytes> {
        self.keys()
            .iter()
            .filter(|(_, s)| !s.observers.is_empty() && !s.registered)
            .map(|(k, _)| k.clone())
            .collect()
    }

    /// Whether any key is observed.
    pub(crate) fn is_empty(&self) -> bool {
        self.keys().is_empty()
    }

    /// Ends every observer's stream (the client closed).
    pub(crate) fn close_all(&self) {
        for state in self.keys().values() {
            for q in state.observers.as_slice() {
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
        for q in state.observers.as_slice() {
            q.push(ObserverEvent::Change(n.clone()));
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
            return warn!(%topic, error = %e, "skipped a notification whose __ts the clock refuses");
        }
        self.deliver(&n.key, n.event, version, false);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
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

    fn changes(q: &ObserverQueue) -> Vec<(String, u64)> {
        std::iter::from_fn(|| q.try_next())
            .filter_map(|(e, dropped)| match e {
                ObserverEvent::Change(n) => match n.event {
                    KeyEvent::Set(v) => Some((String::from_utf8(v.to_vec()).unwrap(), dropped)),
                    KeyEvent::Delete => Some(("<deleted>".into(), dropped)),
                },
                _ => None,
            })
            .collect()
    }

    fn registry(capacity: usize) -> (Registry, Bytes, Arc<ObserverQueue>) {
        let r = Registry::new(capacity);
        r.set_clock(Clock::new("test").unwrap());
        let key = Bytes::from_static(b"k");
        let (q, needs) = r.add(&key);
        assert!(needs, "the first observer registers");
        r.registered(&key, None);
        (r, key, q)
    }

    #[test]
    fn delivers_in_version_order_and_drops_duplicates_and_late_ones() {
        let (r, key, q) = registry(16);
        let t = now_ms();
        r.dispatch("me", notification(&key, "a", &hlc(t, 1)));
        r.dispatch("me", notification(&key, "a", &hlc(t, 1)));
        r.dispatch("me", notification(&key, "old", &hlc(t - 5, 0)));
        r.dispatch("me", notification(&key, "b", &hlc(t, 2)));
        r.dispatch("other", notification(&key, "not mine", &hlc(t, 3)));
        assert_eq!(changes(&q), [("a".into(), 0), ("b".into(), 0)]);
        let (_, again) = r.add(&key);
        assert!(!again, "a second observer does not register again");
    }

    #[test]
    fn a_version_the_clock_refuses_is_dropped_and_is_no_baseline() {
        let (r, key, q) = registry(16);
        r.dispatch(
            "me",
            notification(&key, "forged", &hlc(now_ms() + 86_400_000, 0)),
        );
        r.dispatch("me", notification(&key, "genuine", &hlc(now_ms(), 0)));
        assert_eq!(changes(&q), [("genuine".into(), 0)]);
    }

    #[test]
    fn overflow_drops_the_oldest_and_counts() {
        let (r, key, q) = registry(2);
        let t = now_ms();
        for i in 1..=5 {
            r.dispatch("me", notification(&key, &format!("v{i}"), &hlc(t, i)));
        }
        assert_eq!(changes(&q), [("v4".into(), 3), ("v5".into(), 0)]);
    }

    #[test]
    fn resync_delivers_only_a_changed_state() {
        let (r, key, q) = registry(16);
        let t = now_ms();
        r.dispatch("me", notification(&key, "a", &hlc(t, 1)));
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
        let events: Vec<ObserverEvent> =
            std::iter::from_fn(|| q.try_next().map(|(e, _)| e)).collect();
        assert_eq!(
            events,
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
        let (q, _) = r.add(&key);
        r.stop_owed(&key);
        assert!(r.remove(&key, &q), "the last observer");
        assert!(
            r.forget_if_unobserved(&key),
            "STOP owed although never registered"
        );
        let (q, _) = r.add(&key);
        assert!(r.remove(&key, &q));
        assert!(!r.forget_if_unobserved(&key), "nothing was sent: no STOP");
    }
}
