//! The client-side cache: reads at memory speed for keys that change rarely, kept fresh by
//! KEYNOTIFY (spec §7) and bounded in staleness by a freshness lease. Opt-in
//! ([`ClientOptions::cache`](crate::ClientOptions::cache), or the `cache` / `cache_keys`
//! settings in every language), bounded in entries and bytes (least recently read out
//! first), with counters ([`Client::cache_stats`](crate::Client::cache_stats)).
//!
//! A key enters on its first read: an entry is made to collect changes, KEYNOTIFY is sent,
//! then GET, so no change can fall between the two; the entry keeps the newer of the GET's
//! answer and what arrived meanwhile. Concurrent misses of one key share that one fetch,
//! which returns once the lease's renewal on its way is proven or has failed, so that the
//! next read of the key hits.
//! Notifications then update it, applied on the connection's task as they are read (nothing
//! is queued for the cache, so nothing is dropped for a slow reader), ordered by version: an
//! older or equal version never replaces a newer one. The client's own acknowledged SET, DEL
//! and VDEL update its entries with the version the store answered. Every entry removed
//! (evicted, invalidated, retired) gives its registration back (STOP) unless an observer of
//! the same key still needs it; an `observe` and the cache share one registration.
//!
//! # The bound: no cached read lags the store by more than `freshness`
//!
//! A read's *lag* is how long before it began the store had acknowledged a newer write of
//! the key. An entry answers only while the client holds a **freshness lease**
//! (`cache/lease.rs`): a proof, renewed through the store itself, that the store's notification
//! path to this client is alive and that every notification published before the proof has
//! been applied. The client registers (KEYNOTIFY) a private canary key
//! (`__mqstate/cache-lease/{client id}`, expiring 30 s after its last renewal) and, while the
//! cache is read, SETs it when half the lease is left; the canary's notification is the
//! proof. A proof of a renewal sent at time `t0` lets entries answer until `t0 + freshness`
//! (default 1 s), so a cached read lags by less than `freshness` in any failure:
//!
//! - **A silent link, a hung broker, a frozen process:** the renewal's notification does not
//!   arrive in time; reads go to the store meanwhile, and the lease has **failed**: entries
//!   made before never answer again until read anew (KEYNOTIFY and GET).
//! - **The store restarted behind its broker, or lost its registrations:** the canary's
//!   registration is lost with the others, so the renewal fails the same way.
//! - **A broker that dropped notifications from a full queue:** a drop needs a backlog; more
//!   than 256 notifications between two proofs fails the lease, and a busy path renews
//!   every 64.
//! - **A cut or a lost session:** an entry belongs to the connection its registration was
//!   made on (the store drops registrations with the connection): a reconnection, with or
//!   without its MQTT session, empties the cache (and sends STOP for its keys when the
//!   session was kept, since the store then kept them). While disconnected, reads go to the
//!   store — and fail or wait as an uncached read does — unless `max_staleness` is set: then
//!   entries that the lease let answer at the cut answer for that long after it.
//! - **A version the client's clock refuses** (more than the drift limit ahead): the
//!   notification or GET that carries it removes the key's entry instead of being ignored.
//! - **A KEYNOTIFY the store refuses:** the key is read from the store each time (remembered
//!   per connection, counted in `refused`), never cached.
//!
//! What it costs: nothing while the cache is not read (the lease expires; the next read goes
//! to the store while a renewal proves the path again); while it is read, two SETs of the
//! canary and their notifications per `freshness` (a path busy with notifications renews
//! more often). What it assumes: the broker delivers one publisher's messages to one
//! subscriber in order (MQTT's ordered topics; mosquitto and the embedded broker do, across
//! topics too); the client's monotonic clock advances while the process is stopped (it
//! does on Linux; a suspended machine's does not, but its connection rarely survives).
//!
//! # What a cached read may return
//!
//! - **Own writes:** once this client's SET, DEL or VDEL is acknowledged, its reads return
//!   that write or a newer state.
//! - **Monotonic reads:** while a connection lasts, a read never returns a version older than
//!   one a read of the same client returned before.
//! - **Others' writes** are visible within `freshness` of their acknowledgement (usually
//!   within one notification's delay: `docs/benchmarks.md` measures it).
//! - A read with `bypass_cache` goes to the store, and so do the lock and election helpers.
//!
//! The state machines are `cache/state.rs` (the entries) and `cache/lease.rs` (the proofs),
//! both pure and tested alone; the wire work is the client's (`client/cached.rs`).

mod lease;
mod options;
mod state;

use std::collections::{HashMap, HashSet};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use bytes::Bytes;
use tokio::sync::watch;

use lease::Lease;
pub(crate) use lease::Renewal;
pub use options::{
    CacheOptions, CacheStats, DEFAULT_CACHE_FRESHNESS, DEFAULT_CACHE_MAX_BYTES,
    DEFAULT_CACHE_MAX_ENTRIES, parse_cache_keys,
};
use state::{At, Epoch, State};
pub(crate) use state::{Change, Lookup};

use crate::codec::KeyEvent;
use crate::hlc::Hlc;

/// How long the canary key lives after its last renewal (so that a client that stopped
/// reading, or died, leaves nothing behind for long).
pub(crate) const CANARY_EXPIRY: Duration = Duration::from_secs(30);

/// The canary key of the client `client_id`.
pub(crate) fn canary_key(client_id: &str) -> Bytes {
    Bytes::from(format!("__mqstate/cache-lease/{client_id}"))
}

/// The environment variable that plants a bug in every cache of the process, for the
/// history checker (`tests/jepsen`) to prove it catches one: `ignore_notifications` (entries
/// are never updated by others' writes), `keep_across_connections` (entries outlive the
/// connection their registration was made on, and a failed lease) or `ignore_lease`
/// (entries answer whether or not the lease holds). Read by debug builds only: a release
/// build never plants anything.
pub const PLANTED_BUG_ENV: &str = "MQSTATE_CACHE_PLANTED_BUG";

/// A bug planted on purpose ([`PLANTED_BUG_ENV`]); never made in a release build.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(not(debug_assertions), allow(dead_code))]
enum PlantedBug {
    IgnoreNotifications,
    KeepAcrossConnections,
    IgnoreLease,
}

#[cfg(debug_assertions)]
fn planted_bug() -> Option<PlantedBug> {
    match std::env::var(PLANTED_BUG_ENV).ok()?.as_str() {
        "ignore_notifications" => Some(PlantedBug::IgnoreNotifications),
        "keep_across_connections" => Some(PlantedBug::KeepAcrossConnections),
        "ignore_lease" => Some(PlantedBug::IgnoreLease),
        other => {
            tracing::warn!(
                value = other,
                "{PLANTED_BUG_ENV} names no planted bug: ignored"
            );
            None
        }
    }
}

#[cfg(not(debug_assertions))]
fn planted_bug() -> Option<PlantedBug> {
    None
}

/// The link's state as the cache needs it (made from the connection's link state).
#[derive(Clone, Copy, Debug)]
pub(crate) struct LinkView {
    /// CONNACKs received so far: the current connection's number.
    pub(crate) connection: u64,
    /// Connected now.
    pub(crate) connected: bool,
    /// The client closed.
    pub(crate) closed: bool,
    /// When the last connection was lost (`None` while connected).
    pub(crate) cut_at: Option<Instant>,
}

/// A read's registration of a key: its ticket and the epoch it was made in.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Ticket {
    id: u64,
    epoch: Epoch,
}

/// Keys whose KEYNOTIFY the store refused, on one connection.
#[derive(Default)]
struct Refused {
    connection: u64,
    keys: HashSet<Bytes>,
    /// Refusals so far (every connection).
    count: u64,
}

/// What one lock guards: the entries, the lease and the refused keys.
struct Inner {
    state: State,
    lease: Lease,
    refused: Refused,
}

/// A fetch of a key that concurrent misses share: the first leads (and fetches), the others
/// follow (and wait for it).
pub(crate) enum Flight<'a> {
    /// Fetch it; dropping this tells the followers the fetch is over.
    Lead(FlightGuard<'a>),
    /// Another read fetches it: changed() ends when it is over.
    Follow(watch::Receiver<()>),
}

/// The leader's side of a [`Flight`].
pub(crate) struct FlightGuard<'a> {
    cache: &'a Cache,
    key: Bytes,
    _done: watch::Sender<()>,
}

impl Drop for FlightGuard<'_> {
    fn drop(&mut self) {
        self.cache.flights().remove(&self.key);
    }
}

/// One client's cache: the options, and the entries and lease under one lock.
pub(crate) struct Cache {
    options: CacheOptions,
    canary: Bytes,
    inner: Mutex<Inner>,
    flights: Mutex<HashMap<Bytes, watch::Receiver<()>>>,
    /// Told at every proof and failure of the lease (what a read waiting for a renewal waits
    /// on).
    lease_settled: watch::Sender<()>,
    bug: Option<PlantedBug>,
}

impl Cache {
    /// The cache of the client `client_id`.
    pub(crate) fn new(options: CacheOptions, client_id: &str) -> Cache {
        let state = State::new(options.max_entries, options.max_bytes);
        let bug = planted_bug();
        if let Some(bug) = bug {
            tracing::warn!(
                ?bug,
                "this client's cache has a bug planted on purpose ({PLANTED_BUG_ENV})"
            );
        }
        Cache {
            inner: Mutex::new(Inner {
                state,
                lease: Lease::new(options.freshness),
                refused: Refused::default(),
            }),
            options,
            canary: canary_key(client_id),
            flights: Mutex::new(HashMap::new()),
            lease_settled: watch::Sender::new(()),
            bug,
        }
    }

    fn inner(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn flights(&self) -> MutexGuard<'_, HashMap<Bytes, watch::Receiver<()>>> {
        self.flights.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The lease's bound.
    pub(crate) fn freshness(&self) -> Duration {
        self.options.freshness
    }

    /// The private key whose notifications prove the lease.
    pub(crate) fn canary(&self) -> &Bytes {
        &self.canary
    }

    /// Whether reads of `key` go through the cache.
    pub(crate) fn covers(&self, key: &[u8]) -> bool {
        key != &self.canary[..]
            && self
                .options
                .keys
                .iter()
                .any(|p| &p[..] == b"*" || crate::glob::matches(p, key))
    }

    /// Where `link` is now, as a read sees it; with `renew`, the renewal due, if any.
    fn at(&self, inner: &mut Inner, link: LinkView, renew: bool) -> (At, Option<Renewal>) {
        let now = Instant::now();
        let connected = link.connected && !link.closed;
        // While disconnected the lease is left as the cut left it: `max_staleness` reads its
        // last proof, and a renewal cut short is no failure of the path (the next connection
        // starts over).
        let (mut fresh, renewal) = match (connected, renew) {
            (true, true) => inner.lease.check(now, link.connection),
            (true, false) => (inner.lease.fresh(now, link.connection), None),
            (false, _) => (false, None),
        };
        let mut epoch = Epoch {
            connection: link.connection,
            generation: inner.lease.generation(),
        };
        let stale_ok = !connected
            && !link.closed
            && !self.options.max_staleness.is_zero()
            && link.cut_at.is_some_and(|cut| {
                now.saturating_duration_since(cut) <= self.options.max_staleness
                    && inner.lease.last_until().is_some_and(|until| until > cut)
            });
        match self.bug {
            Some(PlantedBug::KeepAcrossConnections) => {
                epoch = Epoch::default();
                return (
                    At {
                        epoch,
                        connected: true,
                        fresh: true,
                        stale_ok: false,
                    },
                    renewal,
                );
            }
            Some(PlantedBug::IgnoreLease) => {
                fresh = true;
                epoch.generation = 0;
            }
            _ => {}
        }
        let at = At {
            epoch,
            connected,
            fresh,
            stale_ok,
        };
        (at, renewal)
    }

    /// A read of `key`: what the cache found, and a renewal of the lease to send, if due.
    pub(crate) fn lookup(&self, key: &[u8], link: LinkView) -> (Lookup, Option<Renewal>) {
        let mut inner = self.inner();
        let (at, renewal) = self.at(&mut inner, link, true);
        (inner.state.lookup(key, at), renewal)
    }

    /// Whether `key` has an entry of the current epoch that holds a state (a read that
    /// missed while the lease did not hold: read the store, no registration needed).
    pub(crate) fn current(&self, key: &[u8], link: LinkView) -> bool {
        let mut inner = self.inner();
        let (at, _) = self.at(&mut inner, link, false);
        inner.state.current(key, at.epoch)
    }

    /// The cache's answer now, uncounted (a read that waited for another's fetch).
    pub(crate) fn peek(&self, key: &[u8], link: LinkView) -> Option<Change> {
        let mut inner = self.inner();
        let (at, _) = self.at(&mut inner, link, false);
        inner.state.peek(key, at)
    }

    /// The fetch of `key` that concurrent misses share: lead it, or follow the one on its way.
    pub(crate) fn flight(&self, key: &Bytes) -> Flight<'_> {
        let mut flights = self.flights();
        if let Some(rx) = flights.get(key) {
            return Flight::Follow(rx.clone());
        }
        let (tx, rx) = watch::channel(());
        flights.insert(key.clone(), rx);
        Flight::Lead(FlightGuard {
            cache: self,
            key: key.clone(),
            _done: tx,
        })
    }

    /// A read missed and registers `key` on the link's connection, in the lease's current
    /// generation: its ticket.
    pub(crate) fn begin(&self, key: &Bytes, link: LinkView) -> Ticket {
        let mut inner = self.inner();
        let (at, _) = self.at(&mut inner, link, false);
        let epoch = at.epoch;
        Ticket {
            id: inner.state.begin(key, epoch),
            epoch,
        }
    }

    /// The read with `ticket` got `read`; the link is `link` now.
    pub(crate) fn fill(&self, key: &[u8], ticket: Ticket, read: Change, link: LinkView) {
        let mut inner = self.inner();
        let (at, _) = self.at(&mut inner, link, false);
        inner.state.fill(key, ticket.id, ticket.epoch, read, at);
    }

    /// The read with `ticket` failed, or what it read cannot be trusted: its entry goes,
    /// unless another read took it over.
    pub(crate) fn abandon(&self, key: &[u8], ticket: Ticket) {
        self.inner().state.abandon(key, ticket.id);
    }

    /// A notification of `key`; `trusted` is false when the client's clock refused its
    /// version (the entry then goes: a change it cannot order was missed).
    pub(crate) fn notified(
        &self,
        key: &[u8],
        event: &KeyEvent,
        version: Option<&Hlc>,
        trusted: bool,
    ) {
        let mut inner = self.inner();
        if key == &self.canary[..] {
            // The lease's proof: its value is the renewal's sequence number (its version
            // plays no part, so a refused one proves as well).
            if let KeyEvent::Set(value) = event
                && let Some(seq) = std::str::from_utf8(value)
                    .ok()
                    .and_then(|s| s.parse::<u64>().ok())
            {
                inner.lease.proof(seq, Instant::now());
                self.lease_settled.send_replace(());
            }
            return;
        }
        inner.lease.notified();
        if self.bug == Some(PlantedBug::IgnoreNotifications) {
            return;
        }
        if !trusted {
            inner.state.forget(key);
            return;
        }
        let change = Change {
            value: match event {
                KeyEvent::Set(value) => Some(value.clone()),
                KeyEvent::Delete => None,
            },
            version: version.cloned(),
        };
        inner.state.apply(key, change, true);
    }

    /// This client's own write or read of `key` was answered with `change` (made only when
    /// the key has an entry: copying a value costs).
    pub(crate) fn answered(&self, key: &[u8], change: impl FnOnce() -> Change) {
        let mut inner = self.inner();
        if inner.state.holds(key) {
            inner.state.apply(key, change(), false);
        }
    }

    /// What this client read or wrote of `key` carried a version its clock refused: the
    /// entry goes.
    pub(crate) fn distrust(&self, key: &[u8]) {
        self.inner().state.forget(key);
    }

    /// Whether `key` has an entry (fresh or being filled).
    pub(crate) fn holds(&self, key: &[u8]) -> bool {
        self.inner().state.holds(key)
    }

    /// Keys removed since the last call: their registrations are to be given back.
    pub(crate) fn take_released(&self) -> Vec<Bytes> {
        self.inner().state.take_released()
    }

    /// A new connection, `connection`, began: entries of earlier ones go; their keys.
    pub(crate) fn retire(&self, connection: u64) -> Vec<Bytes> {
        if self.bug == Some(PlantedBug::KeepAcrossConnections) {
            return Vec::new();
        }
        self.inner().state.retire(connection)
    }

    /// The canary's KEYNOTIFY was accepted on `connection`.
    pub(crate) fn canary_registered(&self, connection: u64) {
        self.inner().lease.registered(connection);
    }

    /// The renewal `seq` could not be sent or was refused.
    pub(crate) fn renewal_failed(&self, seq: u64) {
        self.inner().lease.renewal_failed(seq);
        self.lease_settled.send_replace(());
    }

    /// While entries cannot answer on `link` and a renewal is on its way: the time by which
    /// it is proven or has failed, and a receiver told when the lease is settled (made
    /// before the check, so that no settling falls between the two).
    pub(crate) fn proving(&self, link: LinkView) -> Option<(Instant, watch::Receiver<()>)> {
        let settled = self.lease_settled.subscribe();
        let mut inner = self.inner();
        if !link.connected || link.closed {
            return None;
        }
        let by = inner.lease.proving(Instant::now(), link.connection)?;
        Some((by, settled))
    }

    /// Whether the store refused to register `key` on `connection`.
    pub(crate) fn is_refused(&self, key: &[u8], connection: u64) -> bool {
        let inner = self.inner();
        inner.refused.connection == connection && inner.refused.keys.contains(key)
    }

    /// The store refused to register `key` on `connection`: read it from the store until
    /// the next connection (at most `max_entries` such keys are remembered).
    pub(crate) fn refused(&self, key: &Bytes, connection: u64) {
        let mut inner = self.inner();
        let max = self.options.max_entries;
        let refused = &mut inner.refused;
        if refused.connection != connection {
            refused.connection = connection;
            refused.keys.clear();
        }
        refused.count += 1;
        if refused.keys.len() < max {
            refused.keys.insert(key.clone());
        }
    }

    /// The counters now.
    pub(crate) fn stats(&self) -> CacheStats {
        let inner = self.inner();
        let c = inner.state.counters;
        let l = inner.lease.counters;
        CacheStats {
            hits: c.hits,
            misses: c.misses,
            evictions: c.evictions,
            invalidations: c.invalidations,
            entries: inner.state.len() as u64,
            bytes: inner.state.bytes() as u64,
            lease_renewals: l.renewals,
            lease_expiries: l.expiries,
            lease_failures: l.failures,
            lease_misses: c.lapsed,
            refused: inner.refused.count,
        }
    }
}
