//! Which request each QoS 1 PUBLISH carries, by packet id, so that the broker's PUBACK for
//! it reaches the request: above all reason 0x10, "no matching subscribers", which says that
//! no state store is subscribed and nobody will ever answer.
//!
//! rumqttc gives no packet id when a PUBLISH is queued; it reports `Outgoing::Publish(pkid)`
//! when it writes one (and `Outgoing::AwaitAck(pkid)` when the packet id collides with one in
//! flight: that PUBLISH is written once the older one is acknowledged). Requests are the only
//! PUBLISHes the client makes, and each is queued under this module's lock, so the queue here
//! is in rumqttc's channel order and each first write takes the oldest queued request.
//!
//! Reconnections are where the orders could part, so they are reconciled from rumqttc's own
//! list of what it will send first ([`Routes::connected`]): PUBLISHes written before and
//! resent now keep their packet id (their writes are not first writes), and when the broker
//! kept no session, rumqttc drops what it had taken from its channel and not yet written,
//! which is dropped here too ([`Routes::disconnected`] notes those).
//!
//! Pure bookkeeping, no I/O: the event loop feeds it events, [`PendingMap`](super::PendingMap)
//! holds it.

use std::collections::{HashMap, HashSet, VecDeque};

use tracing::warn;

use super::CorrelationId;

/// The bookkeeping of request PUBLISHes between being queued and their PUBACK.
#[derive(Default, Debug)]
pub(crate) struct Routes {
    /// Requests queued to rumqttc and not written yet, in queue order.
    queued: VecDeque<CorrelationId>,
    /// Requests written, by packet id, until their PUBACK.
    sent: HashMap<u16, CorrelationId>,
    /// Packet ids rumqttc resends after a reconnection (already in `sent`).
    resent: HashSet<u16>,
    /// A request whose packet id collided, written when the older one is acknowledged.
    collided: Option<(u16, CorrelationId)>,
    /// Requests rumqttc had taken from its channel, unwritten, when the connection broke.
    drained: HashSet<CorrelationId>,
}

impl Routes {
    /// A request was queued to rumqttc (the caller holds the lock around the queueing).
    pub(crate) fn queued(&mut self, id: CorrelationId) {
        self.queued.push_back(id);
    }

    /// rumqttc wrote a PUBLISH with packet id `pkid`.
    pub(crate) fn written(&mut self, pkid: u16) {
        if self.resent.remove(&pkid) {
            return;
        }
        if let Some((p, id)) = self.collided
            && p == pkid
        {
            self.collided = None;
            self.sent.insert(pkid, id);
            return;
        }
        match self.queued.pop_front() {
            Some(id) => {
                self.sent.insert(pkid, id);
            }
            None => warn!(pkid, "a PUBLISH was written that mqstate did not queue"),
        }
    }

    /// rumqttc holds back the next queued PUBLISH (`id`, when rumqttc shows it) until the
    /// PUBLISH in flight with the same packet id is acknowledged.
    pub(crate) fn collided(&mut self, pkid: u16, id: Option<CorrelationId>) {
        let id = match id {
            Some(id) => {
                self.queued.retain(|q| *q != id);
                Some(id)
            }
            None => self.queued.pop_front(),
        };
        self.collided = id.map(|id| (pkid, id));
    }

    /// The broker acknowledged `pkid`: the request it carried.
    pub(crate) fn acked(&mut self, pkid: u16) -> Option<CorrelationId> {
        self.sent.remove(&pkid)
    }

    /// The connection broke; `unwritten` are the requests rumqttc took from its channel
    /// without writing them (its pending PUBLISHes without a packet id).
    pub(crate) fn disconnected(&mut self, unwritten: impl IntoIterator<Item = CorrelationId>) {
        self.drained = unwritten.into_iter().collect();
    }

    /// A CONNACK: `first` is what rumqttc sends before anything else from its channel, in
    /// order (packet id, request), a packet id of 0 for a PUBLISH never written.
    pub(crate) fn connected(&mut self, first: impl IntoIterator<Item = (u16, CorrelationId)>) {
        let mut kept = HashSet::new();
        self.resent.clear();
        for (pkid, id) in first {
            kept.insert(id);
            if pkid != 0 {
                self.resent.insert(pkid);
            }
        }
        // What was written and is not resent is gone with the session.
        self.sent.retain(|pkid, _| self.resent.contains(pkid));
        let lost: HashSet<CorrelationId> = self
            .drained
            .drain()
            .filter(|id| !kept.contains(id))
            .collect();
        if !lost.is_empty() {
            self.queued.retain(|id| !lost.contains(id));
        }
    }

    /// rumqttc's client and event loop were replaced: nothing queued will be written.
    pub(crate) fn reset(&mut self) {
        *self = Routes::default();
    }

    /// Requests written and not acknowledged, and queued (for tests and logs).
    #[cfg(test)]
    pub(crate) fn counts(&self) -> (usize, usize) {
        (self.sent.len(), self.queued.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(n: u8) -> CorrelationId {
        [n; 16]
    }

    #[test]
    fn first_writes_take_queued_requests_in_order() {
        let mut r = Routes::default();
        r.queued(id(1));
        r.queued(id(2));
        r.written(7);
        r.written(8);
        assert_eq!(r.acked(8), Some(id(2)));
        assert_eq!(r.acked(7), Some(id(1)));
        assert_eq!(r.acked(7), None, "a second PUBACK is unknown");
        assert_eq!(r.counts(), (0, 0));
    }

    #[test]
    fn a_collided_publish_is_written_when_its_packet_id_frees() {
        let mut r = Routes::default();
        r.queued(id(1));
        r.written(1);
        r.queued(id(2));
        r.queued(id(3));
        r.collided(1, Some(id(2)));
        assert_eq!(r.acked(1), Some(id(1)));
        r.written(1); // the collided one
        r.written(2);
        assert_eq!(r.acked(1), Some(id(2)));
        assert_eq!(r.acked(2), Some(id(3)));
    }

    #[test]
    fn a_kept_session_resends_without_taking_queued_requests() {
        let mut r = Routes::default();
        r.queued(id(1));
        r.written(1);
        r.queued(id(2)); // taken from the channel, unwritten, at the break
        r.queued(id(3)); // still in the channel
        r.disconnected([id(2)]);
        r.connected([(1, id(1)), (0, id(2))]);
        r.written(1); // resent
        r.written(2); // id 2, first written
        r.written(3); // id 3
        assert_eq!(r.acked(1), Some(id(1)));
        assert_eq!(r.acked(2), Some(id(2)));
        assert_eq!(r.acked(3), Some(id(3)));
    }

    #[test]
    fn a_lost_session_drops_what_rumqttc_dropped() {
        let mut r = Routes::default();
        r.queued(id(1));
        r.written(1);
        r.queued(id(2));
        r.queued(id(3));
        r.disconnected([id(2)]);
        r.connected([]);
        assert_eq!(r.counts(), (0, 1), "1 was in flight, 2 was dropped");
        r.written(1);
        assert_eq!(r.acked(1), Some(id(3)));
    }

    #[test]
    fn a_write_that_nobody_queued_is_ignored() {
        let mut r = Routes::default();
        r.written(4);
        assert_eq!(r.acked(4), None);
        r.queued(id(9));
        r.reset();
        assert_eq!(r.counts(), (0, 0));
    }
}
