//! The client-side cache: reads at memory speed for keys that change rarely, kept fresh by
//! KEYNOTIFY (spec §7). Opt-in ([`ClientOptions::cache`](crate::ClientOptions::cache), or
//! the `cache` / `cache_keys` settings in every language), bounded in entries and bytes
//! (least recently read out first), with counters ([`Client::cache_stats`](crate::Client::cache_stats)).
//!
//! A key enters on its first read: an entry is made to collect changes, KEYNOTIFY is sent,
//! then GET, so no change can fall between the two; the entry keeps the newer of the GET's
//! answer and what arrived meanwhile. Notifications then update it, applied on the
//! connection's task as they are read (nothing is queued for the cache, so nothing is
//! dropped for a slow reader), ordered by version: an older or equal version never replaces
//! a newer one. The client's own acknowledged SET, DEL and VDEL update its entries with the
//! version the store answered. Eviction ends the key's registration (STOP) unless an
//! observer of the same key still needs it; an `observe` and the cache share one
//! registration.
//!
//! # What a cached read may return
//!
//! - **Own writes:** once this client's SET, DEL or VDEL is acknowledged, its reads return
//!   that write or a newer state.
//! - **Monotonic reads:** while a connection lasts, a read never returns a version older than
//!   one a read of the same client returned before.
//! - **Others' writes** become visible when their notification arrives: a cached read may
//!   return a state up to one notification's delay old (the store publishes it when it
//!   applies the write; `docs/benchmarks.md` measures the delay).
//! - **Connection loss:** an entry is fresh only while the connection its registration was
//!   made on lasts (the store drops registrations with the connection). When it is cut,
//!   reads go to the store — and fail or wait as an uncached read does — unless
//!   `max_staleness` is set: then entries that were fresh at the cut answer for that long
//!   after it, never longer. A reconnection, with or without its MQTT session, empties the
//!   cache. A KEYNOTIFY the store refuses leaves the key uncached (the read still answers,
//!   from a GET).
//! - **What it cannot see:** a connection that is dead but not yet known to be (until the
//!   keep-alive notices) keeps serving entries; a broker that drops a QoS 1 message for a
//!   connected client (a full queue: mosquitto's `max_queued_messages`) drops an update
//!   unseen. A read with `bypass_cache` goes to the store.
//!
//! The state machine is [`state`] (pure, property-tested); the wire work is the client's
//! (`client/cached.rs`).

mod options;
mod state;

use std::sync::{Mutex, MutexGuard};
use std::time::Instant;

use bytes::Bytes;

pub use options::{
    CacheOptions, CacheStats, DEFAULT_CACHE_MAX_BYTES, DEFAULT_CACHE_MAX_ENTRIES, parse_cache_keys,
};
pub(crate) use state::Change;
use state::{At, State};

use crate::codec::KeyEvent;
use crate::hlc::Hlc;

/// The environment variable that plants a bug in every cache of the process, for the
/// history checker (`tests/jepsen`) to prove it catches one: `ignore_notifications` (entries
/// are never updated by others' writes) or `keep_across_connections` (entries outlive the
/// connection their registration was made on). Never set it outside such a test.
pub const PLANTED_BUG_ENV: &str = "MQSTATE_CACHE_PLANTED_BUG";

/// A bug planted on purpose ([`PLANTED_BUG_ENV`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum PlantedBug {
    IgnoreNotifications,
    KeepAcrossConnections,
}

fn planted_bug() -> Option<PlantedBug> {
    match std::env::var(PLANTED_BUG_ENV).ok()?.as_str() {
        "ignore_notifications" => Some(PlantedBug::IgnoreNotifications),
        "keep_across_connections" => Some(PlantedBug::KeepAcrossConnections),
        other => {
            tracing::warn!(
                value = other,
                "{PLANTED_BUG_ENV} names no planted bug: ignored"
            );
            None
        }
    }
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

/// One client's cache: the options and the state machine under one lock, and the keys
/// evicted whose registrations still have to be released.
pub(crate) struct Cache {
    options: CacheOptions,
    state: Mutex<State>,
    /// Evicted keys not yet handed to [`Cache::take_evicted`].
    evicted: Mutex<Vec<Bytes>>,
    bug: Option<PlantedBug>,
}

impl Cache {
    pub(crate) fn new(options: CacheOptions) -> Cache {
        let state = State::new(options.max_entries, options.max_bytes);
        let bug = planted_bug();
        if let Some(bug) = bug {
            tracing::warn!(
                ?bug,
                "this client's cache has a bug planted on purpose ({PLANTED_BUG_ENV})"
            );
        }
        Cache {
            options,
            state: Mutex::new(state),
            evicted: Mutex::new(Vec::new()),
            bug,
        }
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn evicted(&self, keys: Vec<Bytes>) {
        if !keys.is_empty() {
            self.evicted
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .extend(keys);
        }
    }

    /// Keys evicted since the last call: their registrations are to be released.
    pub(crate) fn take_evicted(&self) -> Vec<Bytes> {
        std::mem::take(&mut *self.evicted.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// Whether reads of `key` go through the cache.
    pub(crate) fn covers(&self, key: &[u8]) -> bool {
        self.options
            .keys
            .iter()
            .any(|p| &p[..] == b"*" || crate::glob::matches(p, key))
    }

    /// Where `link` is, as a read sees it.
    fn at(&self, link: LinkView) -> At {
        if self.bug == Some(PlantedBug::KeepAcrossConnections) {
            return At {
                epoch: 0,
                connected: true,
                stale_ok: false,
            };
        }
        let connected = link.connected && !link.closed;
        let stale_ok = !connected
            && !link.closed
            && !self.options.max_staleness.is_zero()
            && link.cut_at.is_some_and(|cut| {
                Instant::now().saturating_duration_since(cut) <= self.options.max_staleness
            });
        At {
            epoch: link.connection,
            connected,
            stale_ok,
        }
    }

    /// A read of `key`: the cached state, or `None` (go to the store).
    pub(crate) fn lookup(&self, key: &[u8], link: LinkView) -> Option<Change> {
        let at = self.at(link);
        self.state().lookup(key, at)
    }

    /// A read missed and registers `key` on connection `epoch`: its ticket.
    pub(crate) fn begin(&self, key: &Bytes, epoch: u64) -> u64 {
        let epoch = if self.bug == Some(PlantedBug::KeepAcrossConnections) {
            0
        } else {
            epoch
        };
        let (ticket, evicted) = self.state().begin(key, epoch);
        self.evicted(evicted);
        ticket
    }

    /// The read with `ticket` got `read` on connection `epoch`; the link is `link` now.
    pub(crate) fn fill(&self, key: &[u8], ticket: u64, epoch: u64, read: Change, link: LinkView) {
        let at = self.at(link);
        let epoch = if self.bug == Some(PlantedBug::KeepAcrossConnections) {
            0
        } else {
            epoch
        };
        let evicted = self.state().fill(key, ticket, epoch, read, at);
        self.evicted(evicted);
    }

    /// The read with `ticket` failed: its entry goes, unless another read took it over.
    pub(crate) fn abandon(&self, key: &[u8], ticket: u64) {
        self.state().abandon(key, ticket);
    }

    /// A notification of `key`.
    pub(crate) fn notified(&self, key: &[u8], event: &KeyEvent, version: Option<&Hlc>) {
        if self.bug == Some(PlantedBug::IgnoreNotifications) {
            return;
        }
        let change = Change {
            value: match event {
                KeyEvent::Set(value) => Some(value.clone()),
                KeyEvent::Delete => None,
            },
            version: version.cloned(),
        };
        let evicted = self.state().apply(key, change, true);
        self.evicted(evicted);
    }

    /// This client's own write or read of `key` was answered with `change` (made only when
    /// the key has an entry: copying a value costs).
    pub(crate) fn answered(&self, key: &[u8], change: impl FnOnce() -> Change) {
        let mut state = self.state();
        if state.holds(key) {
            let evicted = state.apply(key, change(), false);
            drop(state);
            self.evicted(evicted);
        }
    }

    /// Whether `key` has an entry (fresh or being filled).
    pub(crate) fn holds(&self, key: &[u8]) -> bool {
        self.state().holds(key)
    }

    /// A new connection, `epoch`, began: entries of earlier ones go; their keys.
    pub(crate) fn retire(&self, epoch: u64) -> Vec<Bytes> {
        if self.bug == Some(PlantedBug::KeepAcrossConnections) {
            return Vec::new();
        }
        self.state().retire(epoch)
    }

    /// The counters now.
    pub(crate) fn stats(&self) -> CacheStats {
        let state = self.state();
        let c = state.counters;
        CacheStats {
            hits: c.hits,
            misses: c.misses,
            evictions: c.evictions,
            invalidations: c.invalidations,
            entries: state.len() as u64,
            bytes: state.bytes() as u64,
        }
    }
}
