//! The state store as a pure state machine (spec §3–§7): keys, versions, fencing tokens,
//! PX expiry, KEYNOTIFY registrations and the key quota. No MQTT, no I/O, no clock of its
//! own: the MQTT adapter passes the time in and publishes what comes out.

use bytes::Bytes;
use mqstate::Hlc;
use mqstate::codec::{KeyEvent, Response, StoreError, StoreErrorKind};

/// How a [`Store`] behaves.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoreConfig {
    /// The service clock's node id; default `"StateStore"`.
    pub node_id: String,
    /// The key quota; `None` is unlimited.
    pub max_keys: Option<usize>,
    /// How far ahead of the service time a `__ts` or `__ft` may be.
    pub max_drift_ms: u64,
}

impl Default for StoreConfig {
    fn default() -> Self {
        StoreConfig {
            node_id: "StateStore".to_owned(),
            max_keys: None,
            max_drift_ms: mqstate::hlc::DEFAULT_MAX_DRIFT_MS,
        }
    }
}

/// One request as the MQTT adapter received it.
#[derive(Clone, Copy, Debug)]
pub struct Invocation<'a> {
    /// The requester (from `__srcId`, else the broker's knowledge).
    pub client_id: &'a str,
    /// The request payload.
    pub payload: &'a Bytes,
    /// The `__ts` user property.
    pub timestamp: Option<&'a str>,
    /// The `__ft` user property.
    pub fencing_token: Option<&'a str>,
    /// `aio-persistence: true` was present (meaningful on SET).
    pub persist: bool,
}

/// What the store answers to one invocation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reply {
    /// The payload to send back (store errors included).
    pub response: Response,
    /// The response's `__ts` (`None` on a GET miss and on errors).
    pub version: Option<Hlc>,
    /// To publish, each to its client's notification topic.
    pub notifications: Vec<Notice>,
    /// What to append to the persistence log (may be empty).
    pub journal: Vec<JournalOp>,
}

/// One notification to publish.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Notice {
    /// The client to notify.
    pub client_id: String,
    /// The key that changed.
    pub key: Bytes,
    /// What happened.
    pub event: KeyEvent,
    /// The key's new version: the notification's `__ts`.
    pub version: Hlc,
}

/// A change the persistence log must record.
///
/// Only keys SET with persistence are logged; a persisted key that is deleted, expires,
/// or is overwritten without persistence gets a [`JournalOp::Remove`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum JournalOp {
    /// The key now holds this value.
    Put {
        /// The key.
        key: Bytes,
        /// The value.
        value: Bytes,
        /// The value's version.
        version: Hlc,
        /// When the key expires (ms since the epoch), if it has a PX.
        expires_at_ms: Option<u64>,
        /// The key's fencing token, if any.
        fencing_token: Option<Hlc>,
    },
    /// The key is gone (or no longer persisted).
    Remove {
        /// The key.
        key: Bytes,
    },
}

/// What [`Store::expire`] produced.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Expired {
    /// DELETE notifications for the expired keys.
    pub notifications: Vec<Notice>,
    /// Removals of expired persisted keys.
    pub journal: Vec<JournalOp>,
}

/// The state store.
#[derive(Debug)]
pub struct Store {
    config: StoreConfig,
}

impl Store {
    /// An empty store whose clock starts at `now_ms`.
    pub fn new(config: StoreConfig, now_ms: u64) -> Store {
        let _ = now_ms;
        Store { config }
    }

    /// Handles one request at `now_ms`.
    pub fn handle(&mut self, now_ms: u64, invocation: Invocation<'_>) -> Reply {
        let _ = (now_ms, invocation, &self.config);
        Reply {
            response: Response::Error(StoreError::new(StoreErrorKind::SyntaxError)),
            version: None,
            notifications: Vec::new(),
            journal: Vec::new(),
        }
    }

    /// Fires every PX expiry due at `now_ms` (DELETE notifications, journal removals).
    pub fn expire(&mut self, now_ms: u64) -> Expired {
        let _ = now_ms;
        Expired::default()
    }

    /// When the next expiry is due, so the adapter can sleep exactly until then.
    pub fn next_expiry_ms(&self) -> Option<u64> {
        None
    }

    /// Drops every KEYNOTIFY registration of a client; returns how many were dropped.
    pub fn client_disconnected(&mut self, client_id: &str) -> usize {
        let _ = client_id;
        0
    }

    /// Loads entries read back from the journal at start (expired ones are skipped).
    pub fn restore(&mut self, entries: Vec<JournalOp>, now_ms: u64) {
        let _ = (entries, now_ms);
    }

    /// The number of keys held.
    pub fn len(&self) -> usize {
        0
    }

    /// Whether no key is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}
