//! The freshness lease: the proof, renewed through the store itself, that the store's
//! notification path to this client is alive and that everything it published before the
//! proof has been applied to the cache. Pure: the caller passes the time in and does the wire
//! work (a KEYNOTIFY and a SET of the client's private canary key).
//!
//! # Why a proof bounds a cached read's lag
//!
//! A renewal writes the canary key (a SET of a fresh sequence number) at time `sent` on the
//! client's monotonic clock; the client is registered (KEYNOTIFY) for the canary on the same
//! connection as its cached keys. The store applies the SET after `sent`, and publishes the
//! canary's notification after every notification it published before — the notifications
//! of every write it had acknowledged by then. The broker delivers one publisher's messages
//! to one subscriber in order, and the client applies notifications to the cache as it reads
//! them, in that order. So when the canary's notification with that sequence number is
//! applied, every write the store acknowledged before `sent` is in the cache. A read at
//! time `t` may then lag the store by at most `t - sent`, and the lease lets entries answer
//! only while `t < sent + bound`: no cached read lags more than the bound.
//!
//! # When the chain of proofs breaks
//!
//! - A renewal that fails, or whose notification has not been applied by `sent + bound`
//!   (a silent link, a frozen process, a broker that hangs, a store that lost the canary's
//!   registration when it restarted behind its broker): [`Lease::check`] or [`Lease::proof`]
//!   declares a **failure**. The generation moves on, so that no entry made before answers
//!   again until it is read from the store anew (KEYNOTIFY and GET: the registration itself
//!   may be gone), and the canary is registered again before the next renewal.
//! - More than [`BACKLOG_LIMIT`] notifications applied between two proofs: a broker whose
//!   queue for this client filled may have dropped some unseen (mosquitto drops QoS 1
//!   messages past `max_queued_messages`, 1,000 by default; a drop needs that many queued
//!   ahead, and they all arrive within two proofs' windows). Treated as a failure. Readers
//!   of keys that change often renew sooner ([`RENEW_AFTER_NOTIFICATIONS`]) so that it does
//!   not happen while they read.
//! - No read for longer than the bound: the lease **expires** and nothing is sent (an idle
//!   client costs nothing). The next read goes to the store while a renewal proves the path
//!   again; entries keep their generation (the path was not shown to fail).

use std::time::{Duration, Instant};

/// Notifications applied between two proofs past which the broker may have dropped one
/// (see the [module](self) documentation).
pub(crate) const BACKLOG_LIMIT: u64 = 256;

/// While the cache is read, a renewal is also sent once this many notifications were applied
/// since the last one was sent, so that a busy path is proven in steps below
/// [`BACKLOG_LIMIT`].
pub(crate) const RENEW_AFTER_NOTIFICATIONS: u64 = BACKLOG_LIMIT / 4;

/// A renewal to send: register the canary first when `register`, then SET it to `seq`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Renewal {
    /// The sequence number the canary is SET to (its notification carries it back).
    pub(crate) seq: u64,
    /// The canary is not registered on this connection yet: KEYNOTIFY it first.
    pub(crate) register: bool,
    /// The connection it is sent on.
    pub(crate) connection: u64,
}

#[derive(Clone, Copy, Debug)]
struct Pending {
    seq: u64,
    sent: Instant,
    connection: u64,
}

/// What the lease did (the `lease_*` counters of [`CacheStats`](super::CacheStats)).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct LeaseCounters {
    /// Renewals sent.
    pub(crate) renewals: u64,
    /// Leases that ran out with no renewal on its way (no read for a while).
    pub(crate) expiries: u64,
    /// Renewals that failed, arrived too late, or came after too long a backlog: every entry
    /// made before was read from the store again before it answered.
    pub(crate) failures: u64,
}

/// The lease of one client's cache (see the [module](self) documentation).
#[derive(Debug)]
pub(crate) struct Lease {
    bound: Duration,
    /// Bumped at every failure: entries made in an earlier generation never answer.
    generation: u64,
    /// Entries may answer until then (the last proof's `sent` plus the bound).
    until: Option<Instant>,
    /// The same, kept after it passed (until a failure): whether entries could answer when
    /// the link was cut.
    last_until: Option<Instant>,
    pending: Option<Pending>,
    seq: u64,
    /// The connection the canary's KEYNOTIFY was accepted on.
    canary_on: Option<u64>,
    /// Notifications applied since the last proof.
    since_proof: u64,
    /// Notifications applied since the last renewal was sent.
    since_renewal: u64,
    pub(crate) counters: LeaseCounters,
}

impl Lease {
    /// A lease that lets entries answer for at most `bound` after a proof.
    pub(crate) fn new(bound: Duration) -> Lease {
        Lease {
            bound,
            generation: 0,
            until: None,
            last_until: None,
            pending: None,
            seq: 0,
            canary_on: None,
            since_proof: 0,
            since_renewal: 0,
            counters: LeaseCounters::default(),
        }
    }

    /// The generation entries are made in now.
    pub(crate) fn generation(&self) -> u64 {
        self.generation
    }

    /// Until when entries may answer (`None`: no proof holds).
    #[cfg(test)]
    pub(crate) fn until(&self) -> Option<Instant> {
        self.until
    }

    /// Until when the last proof let entries answer, even if that has passed (`None` after a
    /// failure).
    pub(crate) fn last_until(&self) -> Option<Instant> {
        self.last_until
    }

    fn fail(&mut self) {
        self.generation += 1;
        self.until = None;
        self.last_until = None;
        self.pending = None;
        self.canary_on = None;
        self.since_proof = 0;
        self.since_renewal = 0;
        self.counters.failures += 1;
    }

    /// Brings the lease up to `now` on `connection` (declaring a failure or an expiry that
    /// is due): whether entries may answer now.
    pub(crate) fn fresh(&mut self, now: Instant, connection: u64) -> bool {
        if let Some(p) = self.pending {
            if p.connection != connection {
                // Sent on a connection that ended: its entries went with it (not a failure of
                // the path; the canary is registered again on the new one).
                self.pending = None;
            } else if now >= p.sent + self.bound {
                self.fail();
            }
        }
        if let Some(until) = self.until
            && now >= until
        {
            self.until = None;
            if self.pending.is_none_or(|p| p.sent >= until) {
                self.counters.expiries += 1;
            }
        }
        self.until.is_some_and(|until| now < until)
    }

    /// A read of the cache at `now` on `connection`: whether entries may answer, and the
    /// renewal to send, if one is due (half the bound left, none proven, or a busy path) and
    /// none is on its way.
    pub(crate) fn check(&mut self, now: Instant, connection: u64) -> (bool, Option<Renewal>) {
        let fresh = self.fresh(now, connection);
        if self.pending.is_some() {
            return (fresh, None);
        }
        let due = match self.until {
            Some(until) => {
                until.saturating_duration_since(now) <= self.bound / 2
                    || self.since_renewal >= RENEW_AFTER_NOTIFICATIONS
            }
            None => true,
        };
        if !due {
            return (fresh, None);
        }
        self.seq += 1;
        self.pending = Some(Pending {
            seq: self.seq,
            sent: now,
            connection,
        });
        self.since_renewal = 0;
        self.counters.renewals += 1;
        let renewal = Renewal {
            seq: self.seq,
            register: self.canary_on != Some(connection),
            connection,
        };
        (fresh, Some(renewal))
    }

    /// The canary's KEYNOTIFY was accepted on `connection`.
    pub(crate) fn registered(&mut self, connection: u64) {
        self.canary_on = Some(connection);
    }

    /// The renewal `seq` failed (its KEYNOTIFY or SET was not accepted).
    pub(crate) fn renewal_failed(&mut self, seq: u64) {
        if self.pending.is_some_and(|p| p.seq == seq) {
            self.fail();
        }
    }

    /// A notification other than the canary's was applied to the cache.
    pub(crate) fn notified(&mut self) {
        self.since_proof += 1;
        self.since_renewal += 1;
    }

    /// The canary's notification carrying `seq` was applied at `now`.
    pub(crate) fn proof(&mut self, seq: u64, now: Instant) {
        let Some(p) = self.pending.filter(|p| p.seq == seq) else {
            // An older renewal's (a duplicate, or one given up): proves nothing new.
            return;
        };
        if now >= p.sent + self.bound || self.since_proof > BACKLOG_LIMIT {
            self.fail();
            return;
        }
        self.pending = None;
        self.since_proof = 0;
        self.until = Some(p.sent + self.bound);
        self.last_until = self.until;
    }

    /// While entries may not answer at `now` on `connection` and a renewal is on its way that
    /// may let them: the time by which it is proven or has failed. A read that has just
    /// filled an entry waits for it, so that the next read of the key is a hit.
    pub(crate) fn proving(&mut self, now: Instant, connection: u64) -> Option<Instant> {
        if self.fresh(now, connection) {
            return None;
        }
        self.pending
            .filter(|p| p.connection == connection)
            .map(|p| p.sent + self.bound)
    }

    /// The renewal on its way, if any: its sequence number.
    #[cfg(test)]
    pub(crate) fn pending(&self) -> Option<u64> {
        self.pending.map(|p| p.seq)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const B: Duration = Duration::from_millis(1000);

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    /// A lease proven at `t0` (renewal sent then, on connection 1, notification at `t0+rtt`).
    fn proven(t0: Instant, rtt: Duration) -> Lease {
        let mut l = Lease::new(B);
        let (fresh, r) = l.check(t0, 1);
        assert!(!fresh);
        let r = r.expect("a first read renews");
        assert!(r.register, "the canary is registered first");
        l.registered(1);
        l.proof(r.seq, t0 + rtt);
        l
    }

    #[test]
    fn a_proof_lets_entries_answer_for_the_bound_after_the_renewal_was_sent() {
        let t0 = Instant::now();
        let mut l = proven(t0, ms(5));
        assert_eq!(l.until(), Some(t0 + B));
        assert_eq!(l.check(t0 + ms(100), 1), (true, None));
        assert!(!l.fresh(t0 + B, 1), "not at the bound itself");
        assert_eq!(l.counters.expiries, 1);
        assert_eq!(l.generation(), 0, "an expiry is no failure");
    }

    #[test]
    fn renews_at_half_the_bound_while_read_and_chains_without_a_gap() {
        let t0 = Instant::now();
        let mut l = proven(t0, ms(5));
        let (fresh, r) = l.check(t0 + ms(500), 1);
        let r = r.expect("half the bound left: renew");
        assert!(fresh && !r.register);
        assert_eq!(
            l.check(t0 + ms(501), 1),
            (true, None),
            "one renewal at a time"
        );
        l.proof(r.seq, t0 + ms(510));
        assert_eq!(l.until(), Some(t0 + ms(1500)));
        assert_eq!(l.counters.renewals, 2);
        assert_eq!(l.counters.expiries, 0);
    }

    #[test]
    fn a_renewal_not_proven_within_the_bound_is_a_failure() {
        let t0 = Instant::now();
        let mut l = proven(t0, ms(5));
        let (_, r) = l.check(t0 + ms(600), 1);
        let r = r.unwrap();
        // The path goes silent: the lease runs out at t0 + 1 s; the renewal is overdue at
        // t0 + 1.6 s.
        assert!(!l.fresh(t0 + ms(1100), 1));
        assert_eq!(l.generation(), 0);
        assert_eq!(
            l.counters.expiries, 0,
            "a renewal was on its way: no expiry"
        );
        assert!(!l.fresh(t0 + ms(1600), 1));
        assert_eq!(l.generation(), 1);
        assert_eq!(l.counters.failures, 1);
        // Its late proof proves nothing; the next renewal registers the canary again.
        l.proof(r.seq, t0 + ms(1700));
        assert!(!l.fresh(t0 + ms(1700), 1));
        let (_, next) = l.check(t0 + ms(1700), 1);
        assert!(next.unwrap().register);
    }

    #[test]
    fn a_proof_that_arrives_after_the_bound_is_a_failure() {
        // A frozen process: the renewal's notification is read after the bound.
        let t0 = Instant::now();
        let mut l = Lease::new(B);
        let (_, r) = l.check(t0, 1);
        l.registered(1);
        l.proof(r.unwrap().seq, t0 + ms(3000));
        assert_eq!(l.generation(), 1);
        assert_eq!(l.until(), None);
    }

    #[test]
    fn a_failed_renewal_is_a_failure_and_a_stale_one_is_ignored() {
        let t0 = Instant::now();
        let mut l = proven(t0, ms(5));
        let (_, r) = l.check(t0 + ms(600), 1);
        l.renewal_failed(r.unwrap().seq - 1);
        assert_eq!(l.generation(), 0);
        l.renewal_failed(r.unwrap().seq);
        assert_eq!(l.generation(), 1);
        assert!(!l.fresh(t0 + ms(601), 1));
    }

    #[test]
    fn a_backlog_past_the_limit_breaks_the_chain_and_a_busy_path_renews_sooner() {
        let t0 = Instant::now();
        let mut l = proven(t0, ms(5));
        for _ in 0..RENEW_AFTER_NOTIFICATIONS {
            l.notified();
        }
        let (_, r) = l.check(t0 + ms(10), 1);
        let r = r.expect("a busy path renews before half the bound");
        for _ in 0..=BACKLOG_LIMIT {
            l.notified();
        }
        l.proof(r.seq, t0 + ms(20));
        assert_eq!(l.generation(), 1, "a broker may have dropped one");
    }

    #[test]
    fn a_new_connection_drops_the_renewal_on_its_way_and_registers_again() {
        let t0 = Instant::now();
        let mut l = proven(t0, ms(5));
        let (_, r) = l.check(t0 + ms(600), 1);
        let (fresh, next) = l.check(t0 + ms(700), 2);
        assert!(fresh, "the proof still bounds what was read before");
        let next = next.expect("renewed on the new connection");
        assert!(next.register && next.connection == 2);
        l.proof(r.unwrap().seq, t0 + ms(710));
        assert_eq!(
            l.pending(),
            Some(next.seq),
            "the old renewal proves nothing"
        );
        assert_eq!(l.generation(), 0);
    }

    #[test]
    fn a_renewal_on_its_way_is_waited_for_only_while_entries_cannot_answer() {
        let t0 = Instant::now();
        let mut l = Lease::new(B);
        assert_eq!(l.proving(t0, 1), None, "nothing on its way");
        let (_, r) = l.check(t0, 1);
        assert_eq!(l.proving(t0 + ms(3), 1), Some(t0 + B));
        l.registered(1);
        l.proof(r.unwrap().seq, t0 + ms(5));
        assert_eq!(l.proving(t0 + ms(6), 1), None, "proven: entries answer");
        let (fresh, next) = l.check(t0 + ms(600), 1);
        assert!(fresh && next.is_some());
        assert_eq!(l.proving(t0 + ms(601), 1), None, "still fresh: no wait");
        assert_eq!(
            l.proving(t0 + ms(1601), 1),
            None,
            "overdue: failed, no wait"
        );
        assert_eq!(l.generation(), 1);
        let _ = l.check(t0 + ms(1700), 1);
        assert_eq!(
            l.proving(t0 + ms(1701), 2),
            None,
            "sent on another connection"
        );
    }
}
