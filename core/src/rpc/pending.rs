//! The requests waiting for their response, by correlation id: completed by the event
//! loop, told when the broker routed them to nobody, failed together when their MQTT
//! session is lost, removed by their caller when it stops waiting. The map also holds the
//! packet-id bookkeeping of their PUBLISHes ([`Routes`]).

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard};

use rumqttc::v5::mqttbytes::v5::Publish;
use tokio::sync::oneshot;

use super::CorrelationId;
use super::routes::Routes;
use crate::error::Error;

/// What a waiting request receives.
#[derive(Debug)]
pub(crate) enum Outcome {
    /// Its response.
    Answered(Publish),
    /// The broker routed this sending of it to nobody (PUBACK 0x10): it was not delivered.
    Unrouted,
    /// It failed (its session was lost, the client closed …).
    Failed(Error),
}

struct Slot {
    /// `None` while its request, routed to nobody, waits to be sent again (it is still
    /// pending: [`PendingMap::insert`] arms it again).
    tx: Option<oneshot::Sender<Outcome>>,
    session: u64,
    /// The broker acknowledged this sending as routed to a subscriber.
    delivered: bool,
}

/// Hashes a correlation id by its first eight bytes: they are random already, so no
/// mixing is needed (and SipHash's cost is spared on every request and response).
#[derive(Default)]
pub(crate) struct IdHasher(u64);

impl std::hash::Hasher for IdHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8).take(1) {
            let mut word = [0u8; 8];
            word[..chunk.len()].copy_from_slice(chunk);
            self.0 ^= u64::from_le_bytes(word);
        }
    }

    fn write_usize(&mut self, _len: usize) {
        // The array's length prefix carries no information.
    }
}

type IdMap<V> = HashMap<CorrelationId, V, std::hash::BuildHasherDefault<IdHasher>>;

/// Requests waiting for their response, by correlation id.
#[derive(Default)]
pub(crate) struct PendingMap {
    slots: Mutex<IdMap<Slot>>,
    routes: Mutex<Routes>,
}

impl PendingMap {
    fn lock(&self) -> std::sync::MutexGuard<'_, IdMap<Slot>> {
        self.slots.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The packet-id bookkeeping of request PUBLISHes; hold it while queueing one, so that
    /// its order is rumqttc's channel order.
    pub(crate) fn routes(&self) -> MutexGuard<'_, Routes> {
        self.routes.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Registers a request sent in MQTT session `session`.
    pub(crate) fn insert(&self, id: CorrelationId, session: u64) -> oneshot::Receiver<Outcome> {
        let (tx, rx) = oneshot::channel();
        self.lock().insert(
            id,
            Slot {
                tx: Some(tx),
                session,
                delivered: false,
            },
        );
        rx
    }

    /// The broker acknowledged the PUBLISH of request `id`: routed to a subscriber, or (PUBACK
    /// 0x10) to nobody, which the request hears at once (it was not delivered; it stays in
    /// the map, disarmed, until it is sent again or given up).
    pub(crate) fn routed(&self, id: &CorrelationId, to_someone: bool) {
        let tx = {
            let mut slots = self.lock();
            let Some(slot) = slots.get_mut(id) else {
                return;
            };
            if to_someone {
                slot.delivered = true;
                return;
            }
            slot.tx.take()
        };
        if let Some(tx) = tx {
            let _ = tx.send(Outcome::Unrouted);
        }
    }

    /// Whether the broker acknowledged request `id`'s PUBLISH as routed to a subscriber
    /// (`false` also when it is not waiting).
    pub(crate) fn delivered(&self, id: &CorrelationId) -> bool {
        self.lock().get(id).is_some_and(|s| s.delivered)
    }

    /// Hands a response to its request. `false` when nobody waits for it (unknown, late or
    /// duplicate correlation data): the caller drops it.
    pub(crate) fn complete(&self, correlation: &[u8], publish: Publish) -> bool {
        let Ok(id) = CorrelationId::try_from(correlation) else {
            return false;
        };
        let slot = self.lock().remove(&id);
        match slot {
            Some(Slot { tx: Some(tx), .. }) => tx.send(Outcome::Answered(publish)).is_ok(),
            Some(_) => false,
            None => false,
        }
    }

    /// Forgets a request (timed out or cancelled).
    pub(crate) fn remove(&self, id: &CorrelationId) {
        self.lock().remove(id);
    }

    /// Fails every request sent in a session older than `session` (that session is gone, and
    /// with it the requests and responses it held).
    pub(crate) fn fail_sessions_before(&self, session: u64, error: &Error) -> usize {
        let failed: Vec<Slot> = self
            .lock()
            .extract_if(|_, slot| slot.session < session)
            .map(|(_, slot)| slot)
            .collect();
        let n = failed.len();
        for tx in failed.into_iter().filter_map(|slot| slot.tx) {
            let _ = tx.send(Outcome::Failed(error.clone()));
        }
        n
    }

    /// Fails every request.
    pub(crate) fn fail_all(&self, error: &Error) -> usize {
        self.fail_sessions_before(u64::MAX, error)
    }

    /// Requests waiting.
    pub(crate) fn len(&self) -> usize {
        self.lock().len()
    }
}

/// Removes a request from the map if its caller stops waiting (timeout or drop of the
/// future), so abandoned requests leave nothing behind.
pub(crate) struct PendingGuard<'a> {
    pub(crate) map: &'a PendingMap,
    pub(crate) id: CorrelationId,
}

impl Drop for PendingGuard<'_> {
    fn drop(&mut self) {
        self.map.remove(&self.id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorKind;
    use crate::rpc::wire::tests::response;

    #[test]
    fn pending_map_fails_old_sessions_only() {
        let map = PendingMap::default();
        let mut old = map.insert([1; 16], 1);
        let mut new = map.insert([2; 16], 2);
        let err = Error::new(ErrorKind::ConnectionLost, "gone");
        assert_eq!(map.fail_sessions_before(2, &err), 1);
        assert!(matches!(
            old.try_recv().unwrap(),
            Outcome::Failed(e) if e.kind() == ErrorKind::ConnectionLost
        ));
        assert!(new.try_recv().is_err());
        assert!(
            !map.complete(&[1; 16], response(&[], b"")),
            "late response is dropped"
        );
        assert!(map.complete(&[2; 16], response(&[], b"")));
        assert!(
            !map.complete(&[2; 16], response(&[], b"")),
            "duplicate is dropped"
        );
        assert_eq!(map.len(), 0);
    }

    #[test]
    fn an_unrouted_request_hears_it_and_a_routed_one_is_marked_delivered() {
        let map = PendingMap::default();
        let mut a = map.insert([1; 16], 1);
        let _b = map.insert([2; 16], 1);
        map.routed(&[2; 16], true);
        assert!(map.delivered(&[2; 16]));
        assert!(!map.delivered(&[1; 16]));
        map.routed(&[1; 16], false);
        assert!(matches!(a.try_recv().unwrap(), Outcome::Unrouted));
        assert_eq!(map.len(), 2, "the unrouted request is still pending");
        map.routed(&[1; 16], false); // a second PUBACK changes nothing
        assert!(
            !map.complete(&[1; 16], response(&[], b"")),
            "nobody waits until armed again"
        );
        let mut again = map.insert([1; 16], 1);
        assert!(map.complete(&[1; 16], response(&[], b"")));
        assert!(matches!(again.try_recv().unwrap(), Outcome::Answered(_)));
    }
}
