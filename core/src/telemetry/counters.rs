//! [`ClientCounters`]: what one client counts beyond its link and its cache — notifications,
//! locks, elections — for the metrics of [`METRICS`](super::METRICS) whose source is
//! `client`, read by [`metric_values`](super::metric_values).

use std::sync::atomic::{AtomicU64, Ordering};

/// One client's counters (every handle and lock of the connection counts into the same).
#[derive(Debug, Default)]
pub struct ClientCounters {
    notifications_received: AtomicU64,
    notifications_dropped: AtomicU64,
    locks_acquired: AtomicU64,
    locks_held: AtomicU64,
    locks_lost: AtomicU64,
    lock_renewals: AtomicU64,
    leader_changes: AtomicU64,
}

/// What a lock's status did, for [`ClientCounters::lock_changed`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum LockChange {
    /// Not held, now held.
    Acquired,
    /// Held, held again (a new lease).
    Renewed,
    /// Held, now lost (expired, taken over, a failed renewal).
    Lost,
    /// Held, now released (or dropped).
    Released,
}

impl ClientCounters {
    /// A notification delivered to an observed key's observers.
    pub(crate) fn notification(&self, dropped: u64) {
        self.notifications_received.fetch_add(1, Ordering::Relaxed);
        if dropped > 0 {
            self.notifications_dropped
                .fetch_add(dropped, Ordering::Relaxed);
        }
    }

    /// A lock (or an election's candidate, `election`) changed status.
    pub(crate) fn lock_changed(&self, change: LockChange, election: bool) {
        let count = |c: &AtomicU64| c.fetch_add(1, Ordering::Relaxed);
        match change {
            LockChange::Acquired => {
                count(&self.locks_acquired);
                count(&self.locks_held);
            }
            LockChange::Renewed => {
                count(&self.lock_renewals);
            }
            LockChange::Lost | LockChange::Released => {
                let _ = self
                    .locks_held
                    .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| {
                        Some(n.saturating_sub(1))
                    });
                if change == LockChange::Lost {
                    count(&self.locks_lost);
                }
            }
        }
        if election && change != LockChange::Renewed {
            count(&self.leader_changes);
        }
    }

    /// The counters by their metric's name (each a row of [`METRICS`](super::METRICS) with
    /// source `client`).
    pub fn values(&self) -> [(&'static str, u64); 7] {
        let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
        [
            (
                "mqstate.notifications.received",
                get(&self.notifications_received),
            ),
            (
                "mqstate.notifications.dropped",
                get(&self.notifications_dropped),
            ),
            ("mqstate.locks.acquired", get(&self.locks_acquired)),
            ("mqstate.locks.held", get(&self.locks_held)),
            ("mqstate.locks.lost", get(&self.locks_lost)),
            ("mqstate.locks.renewals", get(&self.lock_renewals)),
            ("mqstate.election.leader_changes", get(&self.leader_changes)),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locks_held_follow_their_changes_and_elections_count_leader_changes() {
        let c = ClientCounters::default();
        c.lock_changed(LockChange::Acquired, false);
        c.lock_changed(LockChange::Renewed, false);
        c.lock_changed(LockChange::Acquired, true);
        c.lock_changed(LockChange::Lost, true);
        c.lock_changed(LockChange::Released, false);
        c.lock_changed(LockChange::Released, false); // never below zero
        c.notification(0);
        c.notification(3);
        let v: std::collections::HashMap<_, _> = c.values().into_iter().collect();
        assert_eq!(v["mqstate.locks.acquired"], 2);
        assert_eq!(v["mqstate.locks.held"], 0);
        assert_eq!(v["mqstate.locks.lost"], 1);
        assert_eq!(v["mqstate.locks.renewals"], 1);
        assert_eq!(v["mqstate.election.leader_changes"], 2);
        assert_eq!(v["mqstate.notifications.received"], 2);
        assert_eq!(v["mqstate.notifications.dropped"], 3);
    }
}
