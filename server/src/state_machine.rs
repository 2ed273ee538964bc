//! The state store as a pure state machine (spec §3–§7): keys, versions, fencing tokens,
//! PX expiry, KEYNOTIFY registrations and the key quota. No MQTT, no I/O, no clock of its
//! own: the MQTT adapter passes the time in and publishes what comes out.
//!
//! Versions (`__ts`) the store answers with:
//!
//! | Answer | `__ts` |
//! |---|---|
//! | SET `+OK` | the new version (newer than the request's `__ts` and the key's old version) |
//! | SET `:-1` (NX/NEX failed), VDEL `:-1` | the key's current version |
//! | GET hit | the key's version |
//! | GET miss | none |
//! | DEL / VDEL `:1` | the deletion's new version (the one the DELETE notification carries) |
//! | DEL / VDEL `:0` (no such key) | the service clock's current value |
//! | SCAN page | the service clock's current value |
//! | KEYNOTIFY, errors | none |
//!
//! Checks, in order: the payload ([`Request::decode`]'s exact errors); `__ts` (`missing
//! timestamp` on a SET without one; `malformed timestamp`; more than `max_drift_ms` ahead is
//! the timestamp skew error) on every verb; `__ft` on SET, DEL and VDEL only (malformed, or
//! the fencing-token skew error); then the fencing rule of the key, the NX/NEX condition,
//! and the quota for a new key. A `__ts` whose counter cannot be advanced (`u64::MAX`) is
//! answered `malformed timestamp`, and so is one whose counter is above half the range: the
//! service clock is shared, and one client's stamp must not leave it unable to tick. The
//! key quota also bounds how many keys one client may observe, so no client input grows
//! memory beyond it; a KEYNOTIFY whose notification topic would exceed MQTT's 65,535 bytes is
//! refused. Keys and values are copied out of the request packet before they are stored.
//!
//! With [`StateMachine::handle_persisting`], a change to a persisted key is written to the journal
//! before it is applied, and not applied at all if that write fails.
//!
//! Every due PX expiry fires at the start of [`StateMachine::handle`], so an expired key is absent
//! even if the adapter has not called [`StateMachine::expire`] yet, and its DELETE notification
//! (older version) comes before the effects of the request.

mod clock;
mod inspect;
mod ops;
mod scan;
mod table;
#[cfg(test)]
mod test_calls;
mod watchers;

use std::collections::BTreeSet;

use bytes::Bytes;
use mqstate::Hlc;
use mqstate::codec::{KeyEvent, Request, Response, StoreError, StoreErrorKind, Verb};

use clock::{ServiceClock, parse_stamp};
use table::{Entry, Removed, Table};
use watchers::Watchers;

pub use inspect::{KeyInfo, KeyPage, KeySummary, LockInfo, MAX_HOLDER_LEN};

/// How a [`StateMachine`] behaves.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoreConfig {
    /// The service clock's node id; default `"StateStore"`.
    pub node_id: String,
    /// The key quota; `None` is unlimited.
    pub max_keys: Option<usize>,
    /// How far ahead of the service time a `__ts` or `__ft` may be.
    pub max_drift_ms: u64,
    /// SCAN: the most keys one page holds.
    pub scan_page_keys: usize,
    /// SCAN: a page ends once its keys add up to this many bytes (a single longer key
    /// still makes a page of its own).
    pub scan_page_bytes: usize,
}

/// SCAN's default page size in keys.
pub const DEFAULT_SCAN_PAGE_KEYS: usize = 500;

/// SCAN's default page size in bytes of keys: far below any broker's packet size limit.
pub const DEFAULT_SCAN_PAGE_BYTES: usize = 64 * 1024;

impl Default for StoreConfig {
    fn default() -> Self {
        StoreConfig {
            node_id: "StateStore".to_owned(),
            max_keys: None,
            max_drift_ms: mqstate::hlc::DEFAULT_MAX_DRIFT_MS,
            scan_page_keys: DEFAULT_SCAN_PAGE_KEYS,
            scan_page_bytes: DEFAULT_SCAN_PAGE_BYTES,
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
    /// What to append to the persistence log (may be empty). Empty with
    /// [`StateMachine::handle_persisting`], which has written it already.
    pub journal: Vec<JournalOp>,
    /// [`StateMachine::handle_persisting`] only: the journal refused the write, so the request was
    /// not applied (answer it with an RPC error, not with `response`).
    pub journal_failed: bool,
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
    /// The service clock reached `version` (written with every [`Remove`](Self::Remove),
    /// carrying the version of that change): a restart raises its clock to it, so a key
    /// deleted before a restart never gets an older version after it (spec §5.4), even
    /// when versions ran ahead of the wall clock.
    Clock {
        /// The version the clock reached.
        version: Hlc,
    },
}

/// What [`StateMachine::expire`] produced.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Expired {
    /// DELETE notifications for the expired keys.
    pub notifications: Vec<Notice>,
    /// Removals of expired persisted keys.
    pub journal: Vec<JournalOp>,
}

/// The state store as a pure state machine: keys, versions, fencing, expiry, registrations
/// and quota, fed requests and the time (the client-side handle is `mqstate::bridge::Store`).
#[derive(Debug)]
pub struct StateMachine {
    config: StoreConfig,
    clock: ServiceClock,
    entries: Table,
    /// `(deadline, key)` of every key with a PX; kept in step with `Entry::expires_at_ms`.
    expiries: BTreeSet<(u64, Bytes)>,
    watchers: Watchers,
}

/// Writes journal ops before the store applies them; false if the write failed.
pub type JournalWriter<'w> = dyn FnMut(&[JournalOp]) -> bool + 'w;

/// Notifications and journal ops collected while handling one request.
#[derive(Default)]
struct Effects<'w> {
    notifications: Vec<Notice>,
    journal: Vec<JournalOp>,
    /// With [`StateMachine::handle_persisting`]: where journal ops go before a change is applied.
    writer: Option<&'w mut JournalWriter<'w>>,
    journal_failed: bool,
}

impl Effects<'_> {
    /// Makes a change durable before it is applied: hands `ops` to the writer (an error if
    /// it refuses them, and the caller must then change nothing), or collects them for the
    /// reply when there is no writer.
    fn write(&mut self, ops: Vec<JournalOp>) -> Result<(), StoreError> {
        if ops.is_empty() {
            return Ok(());
        }
        match &mut self.writer {
            Some(writer) => {
                if writer(&ops) {
                    Ok(())
                } else {
                    self.journal_failed = true;
                    Err(StoreError::other(
                        "the store could not write its persistence log",
                    ))
                }
            }
            None => {
                self.journal.extend(ops);
                Ok(())
            }
        }
    }
}

/// The longest topic MQTT can carry (a two-byte length).
pub const MAX_TOPIC_LEN: usize = 65_535;

/// The store error for a KEYNOTIFY whose notification topic would exceed [`MAX_TOPIC_LEN`].
pub const KEY_TOO_LONG_TO_OBSERVE: &str =
    "the key is too long to be observed: its notification topic would exceed 65535 bytes";

/// The length of `client_id`'s notification topic for `key` (spec §7).
pub fn notification_topic_len(client_id: &str, key: &[u8]) -> usize {
    mqstate::topics::notification_topic("", b"").len()
        + 2usize
            .saturating_mul(client_id.len())
            .saturating_add(2usize.saturating_mul(key.len()))
}

/// The journal ops of a persisted key's removal by a change of version `version`.
fn removal(key: &[u8], version: &Hlc) -> Vec<JournalOp> {
    vec![
        JournalOp::Remove {
            key: Bytes::copy_from_slice(key),
        },
        JournalOp::Clock {
            version: version.clone(),
        },
    ]
}

/// A successful answer: the payload and its `__ts`.
type Answer = (Response, Option<Hlc>);

impl StateMachine {
    /// An empty store whose clock starts at `now_ms`.
    pub fn new(config: StoreConfig, now_ms: u64) -> StateMachine {
        StateMachine {
            clock: ServiceClock::new(&config.node_id, now_ms),
            config,
            entries: Table::default(),
            expiries: BTreeSet::new(),
            watchers: Watchers::default(),
        }
    }

    /// The service clock's current value (the version the next change will exceed).
    pub fn clock(&self) -> &Hlc {
        self.clock.current()
    }

    /// Handles one request at `now_ms`; the journal ops it produces are in the reply, for
    /// the caller to write (the change is already applied in memory).
    pub fn handle(&mut self, now_ms: u64, invocation: Invocation<'_>) -> Reply {
        self.handle_with(now_ms, invocation, Effects::default())
    }

    /// Handles one request at `now_ms`, writing each persisted change with `writer` before
    /// applying it. If the writer fails, nothing is applied, nobody is notified, and the
    /// reply says [`journal_failed`](Reply::journal_failed): memory never holds what the
    /// disk does not. (Journal removals of expired keys are written the same way, but an
    /// expired key is gone whatever the writer says: it would be dropped at the next start.)
    pub fn handle_persisting(
        &mut self,
        now_ms: u64,
        invocation: Invocation<'_>,
        writer: &mut JournalWriter<'_>,
    ) -> Reply {
        let effects = Effects {
            writer: Some(writer),
            ..Effects::default()
        };
        self.handle_with(now_ms, invocation, effects)
    }

    fn handle_with(
        &mut self,
        now_ms: u64,
        invocation: Invocation<'_>,
        mut effects: Effects<'_>,
    ) -> Reply {
        self.expire_into(now_ms, &mut effects);
        // Expiry removals never fail the request.
        effects.journal_failed = false;
        let (response, version) = match self.dispatch(now_ms, &invocation, &mut effects) {
            Ok(answer) => answer,
            Err(error) => (Response::Error(error), None),
        };
        Reply {
            response,
            version,
            notifications: effects.notifications,
            journal: effects.journal,
            journal_failed: effects.journal_failed,
        }
    }

    /// Decodes the request, checks its stamps, merges `__ts` and runs the verb.
    fn dispatch(
        &mut self,
        now_ms: u64,
        invocation: &Invocation<'_>,
        effects: &mut Effects<'_>,
    ) -> Result<Answer, StoreError> {
        let request = Request::decode(invocation.payload)?;
        let drift = self.config.max_drift_ms;
        let stamp = parse_stamp(
            invocation.timestamp,
            now_ms,
            drift,
            StoreErrorKind::TimestampSkew,
        )?;
        let verb = request.verb();
        if verb == Verb::Set && stamp.is_none() {
            return Err(StoreErrorKind::TimestampMissing.into());
        }
        // GET and KEYNOTIFY never need a fencing token: theirs is ignored.
        let token = match verb {
            Verb::Set | Verb::Del | Verb::VDel => parse_stamp(
                invocation.fencing_token,
                now_ms,
                drift,
                StoreErrorKind::FencingTokenSkew,
            )?,
            Verb::Get | Verb::KeyNotify | Verb::Scan => None,
        };
        if let Some(stamp) = &stamp {
            self.clock.merge(stamp, now_ms)?;
        }
        let token = token.as_ref();
        match request {
            Request::Set {
                key,
                value,
                condition,
                expiry_ms,
            } => {
                let expires_at_ms = expiry_ms.map(|ms| now_ms.saturating_add(ms.get()));
                // Copies: the decoded key and value point into the request packet, which
                // they would otherwise keep alive as long as the key lives.
                let set = ops::Set {
                    key: Bytes::copy_from_slice(&key),
                    value: Bytes::copy_from_slice(&value),
                    condition,
                    expires_at_ms,
                    token,
                    persist: invocation.persist,
                };
                self.set(now_ms, set, effects)
            }
            Request::Get { key } => Ok(self.get(&key)),
            Request::Del { key } => self.del(now_ms, &key, None, token, effects),
            Request::VDel { key, value } => self.del(now_ms, &key, Some(&value), token, effects),
            Request::KeyNotify { key, stop } => {
                self.key_notify(invocation.client_id, &Bytes::copy_from_slice(&key), stop)
            }
            Request::Scan { pattern, token } => self.scan(&pattern, token.as_deref()),
        }
    }

    /// Fires every PX expiry due at `now_ms` (DELETE notifications, journal removals).
    pub fn expire(&mut self, now_ms: u64) -> Expired {
        let mut effects = Effects::default();
        self.expire_into(now_ms, &mut effects);
        Expired {
            notifications: effects.notifications,
            journal: effects.journal,
        }
    }

    fn expire_into(&mut self, now_ms: u64, effects: &mut Effects<'_>) {
        while let Some((deadline, _)) = self.expiries.first()
            && *deadline <= now_ms
        {
            let Some((_, key)) = self.expiries.pop_first() else {
                break;
            };
            if let Some(removed) = self.entries.remove(&key) {
                let version = self.deletion_version(now_ms, &removed.version);
                if removed.persisted {
                    // Gone whatever the journal says (see `handle_persisting`).
                    let _ = effects.write(removal(&key, &version));
                }
                self.deleted(key, &version, effects);
            }
        }
    }

    /// When the next expiry is due, so the adapter can sleep exactly until then.
    pub fn next_expiry_ms(&self) -> Option<u64> {
        self.expiries.first().map(|(deadline, _)| *deadline)
    }

    /// Drops every KEYNOTIFY registration of a client; returns how many were dropped.
    pub fn client_disconnected(&mut self, client_id: &str) -> usize {
        self.watchers.drop_client(client_id)
    }

    /// Drops every client's registrations (a store that lost them); how many there were.
    pub fn drop_all_registrations(&mut self) -> usize {
        self.watchers.drop_all()
    }

    /// Loads entries read back from the journal at start (expired ones are skipped; so
    /// are `Remove` ops). Restored keys stay persisted, their versions raise the service
    /// clock, and the key quota does not apply to them (they were stored under it).
    pub fn restore(&mut self, entries: Vec<JournalOp>, now_ms: u64) {
        for op in entries {
            let (key, value, version, expires_at_ms, fencing_token) = match op {
                JournalOp::Put {
                    key,
                    value,
                    version,
                    expires_at_ms,
                    fencing_token,
                } => (key, value, version, expires_at_ms, fencing_token),
                JournalOp::Clock { version } => {
                    self.clock.raise_to(&version);
                    continue;
                }
                JournalOp::Remove { .. } => continue,
            };
            if expires_at_ms.is_some_and(|deadline| deadline <= now_ms) {
                continue;
            }
            self.clock.raise_to(&version);
            let entry = Entry {
                value,
                version,
                expires_at_ms,
                fencing_token,
                persisted: true,
            };
            self.insert(key, entry);
        }
    }

    /// Stores `entry` under `key`, keeping the expiry index in step.
    fn insert(&mut self, key: Bytes, entry: Entry) {
        let deadline = entry.expires_at_ms;
        if let Some(Some(old)) = self.entries.insert(&key, entry)
            && Some(old) != deadline
        {
            self.expiries.remove(&(old, key.clone()));
        }
        if let Some(deadline) = deadline {
            self.expiries.insert((deadline, key));
        }
    }

    /// Removes `key`, keeping the expiry index in step.
    fn remove(&mut self, key: &[u8]) -> Option<(Bytes, Removed)> {
        let removed = self.entries.remove(key)?;
        let key = Bytes::copy_from_slice(key);
        if let Some(deadline) = removed.expires_at_ms {
            self.expiries.remove(&(deadline, key.clone()));
        }
        Some((key, removed))
    }

    /// The effects of a key's deletion (by DEL, VDEL or expiry) once its journal removal
    /// (if it was persisted) is written: a new version and DELETE to every observer.
    /// Returns the new version.
    ///
    /// The key is gone whatever happens: if the clock cannot tick (its counter is at the
    /// maximum), the deletion carries the clock's current value instead.
    fn deleted(&mut self, key: Bytes, version: &Hlc, effects: &mut Effects<'_>) {
        self.notify(&key, KeyEvent::Delete, version, effects);
    }

    /// The version a deletion of a key whose version was `previous` carries, issued before
    /// its journal removal is written (the removal records it, see [`removal`]).
    fn deletion_version(&mut self, now_ms: u64, previous: &Hlc) -> Hlc {
        self.clock
            .issue(now_ms, Some(previous))
            .unwrap_or_else(|_| self.clock.current().clone())
    }

    /// Queues `event` for every observer of `key`.
    fn notify(&self, key: &Bytes, event: KeyEvent, version: &Hlc, effects: &mut Effects<'_>) {
        for client in self.watchers.observers(key) {
            effects.notifications.push(Notice {
                client_id: client.to_string(),
                key: key.clone(),
                event: event.clone(),
                version: version.clone(),
            });
        }
    }

    /// The keys that match the glob `pattern` (SCAN's syntax), in byte order, read
    /// directly (no request, no clock tick; fire due expiries first with
    /// [`StateMachine::expire`]).
    pub fn keys_matching(&self, pattern: &[u8]) -> Vec<Bytes> {
        let prefix = mqstate::glob::literal_prefix(pattern);
        self.entries
            .keys_from(std::ops::Bound::Included(&prefix[..]))
            .take_while(|key| key.starts_with(&prefix))
            .filter(|key| mqstate::glob::matches(pattern, key))
            .map(Bytes::copy_from_slice)
            .collect()
    }

    /// The value and version of `key`, read directly (no request, no clock tick; fire due
    /// expiries first with [`StateMachine::expire`]); `None` when it is absent.
    pub fn peek(&self, key: &[u8]) -> Option<(Bytes, Hlc)> {
        let entry = self.entries.get(key)?;
        Some((Bytes::copy_from_slice(entry.value()), entry.version()))
    }

    /// Deletes every key, fenced or not, as a DEL by its owner would: each observer gets a
    /// DELETE, and each persisted key's removal is in the returned journal ops (for the
    /// caller to write, as with [`StateMachine::expire`]). KEYNOTIFY registrations stay.
    pub fn clear(&mut self, now_ms: u64) -> Expired {
        let mut effects = Effects::default();
        let keys: Vec<Bytes> = self
            .entries
            .keys_from(std::ops::Bound::Unbounded)
            .map(Bytes::copy_from_slice)
            .collect();
        for key in keys {
            if let Some((key, removed)) = self.remove(&key) {
                let version = self.deletion_version(now_ms, &removed.version);
                if removed.persisted {
                    effects.journal.extend(removal(&key, &version));
                }
                self.deleted(key, &version, &mut effects);
            }
        }
        Expired {
            notifications: effects.notifications,
            journal: effects.journal,
        }
    }

    /// The number of keys held.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether no key is held.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The bytes of every key and value held, together.
    pub fn data_bytes(&self) -> u64 {
        self.entries.data_bytes()
    }
}
