//! The plain values the bindings exchange: clock values, durations, results, per-call
//! options (records whose every field has a default, so Kotlin callers write
//! `SetOptions(expiry = 1.minutes)`), events, and their conversions from and to the core's
//! types. No behaviour lives here: durations, conditions and outcomes are converted by the
//! core's own functions.

use std::cmp::Ordering;
use std::fmt;
use std::time::Duration;

use bytes::Bytes;
use mqstate::bridge::{Event as CoreEvent, secs_to_duration};
use mqstate::codec::{KeyEvent, SetCondition as CoreCondition};
use mqstate::lock::LockStatus as CoreLockStatus;
use mqstate::lock::{Edit as CoreEdit, EditOutcome};
use mqstate::vocabulary::{Language, Unit, option_name};
use mqstate::{
    DelOptions as CoreDel, GetOptions as CoreGet, ObserveOptions as CoreObserve,
    SetOptions as CoreSet, VdelOutcome, Versioned,
};

use crate::MqstateError;

/// A duration as it crosses the FFI: seconds, as a float. Kotlin sees a
/// `kotlin.time.Duration` and Swift a `TimeInterval` (the custom types of `uniffi.toml`);
/// every duration the caller gives is converted by the core ([`secs_to_duration`]), which
/// refuses a negative, NaN or infinite one naming the option.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Seconds(pub f64);

uniffi::custom_newtype!(Seconds, f64);

impl From<Duration> for Seconds {
    fn from(d: Duration) -> Seconds {
        Seconds(d.as_secs_f64())
    }
}

/// The option `name` (canonical snake_case, as in the core's vocabulary) as a duration; an
/// error names the option as Kotlin and Swift spell it.
pub(crate) fn duration(
    name: &str,
    value: Option<Seconds>,
) -> Result<Option<Duration>, MqstateError> {
    value
        .map(|Seconds(secs)| {
            secs_to_duration(&option_name(Language::Kotlin, name, Unit::Duration), secs)
        })
        .transpose()
        .map_err(MqstateError::from)
}

/// A hybrid logical clock value: a version, or a fencing token. Its text form (`toString()`)
/// is the canonical `{wall_ms}:{counter}:{node_id}`.
#[derive(Clone, Debug, PartialEq, Eq, Hash, uniffi::Record)]
#[uniffi::export(Display, Ord)]
pub struct Hlc {
    /// Milliseconds since the Unix epoch.
    pub wall_ms: u64,
    /// The logical counter.
    pub counter: u64,
    /// The node id of the clock that made it.
    pub node_id: String,
}

impl From<mqstate::Hlc> for Hlc {
    fn from(h: mqstate::Hlc) -> Hlc {
        Hlc {
            wall_ms: h.wall_ms(),
            counter: h.counter(),
            node_id: h.node_id().to_owned(),
        }
    }
}

impl Hlc {
    /// The core's value (the node id must be non-empty and free of `:`).
    pub(crate) fn to_core(&self) -> Result<mqstate::Hlc, MqstateError> {
        Ok(mqstate::Hlc::new(
            self.wall_ms,
            self.counter,
            self.node_id.as_str(),
        )?)
    }
}

/// Ordered by wall clock, then counter, then node id (spec §5.2), as the core orders them.
impl Ord for Hlc {
    fn cmp(&self, other: &Hlc) -> Ordering {
        (self.wall_ms, self.counter, self.node_id.as_bytes()).cmp(&(
            other.wall_ms,
            other.counter,
            other.node_id.as_bytes(),
        ))
    }
}

impl PartialOrd for Hlc {
    fn partial_cmp(&self, other: &Hlc) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl fmt::Display for Hlc {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{:015}:{:05}:{}",
            self.wall_ms, self.counter, self.node_id
        )
    }
}

#[uniffi::export]
impl Hlc {
    /// Compares by time only (wall clock, then counter), as fencing does: negative, zero or
    /// positive.
    pub fn compare_time(&self, other: Hlc) -> i32 {
        match (self.wall_ms, self.counter).cmp(&(other.wall_ms, other.counter)) {
            Ordering::Less => -1,
            Ordering::Equal => 0,
            Ordering::Greater => 1,
        }
    }
}

/// Parses the text form `{wall_ms}:{counter}:{node_id}` (error `malformed` otherwise).
#[uniffi::export]
pub fn parse_hlc(text: String) -> Result<Hlc, MqstateError> {
    Ok(mqstate::Hlc::parse(&text)?.into())
}

pub(crate) fn version(h: Option<mqstate::Hlc>) -> Option<Hlc> {
    h.map(Hlc::from)
}

fn token(h: Option<Hlc>) -> Result<Option<mqstate::Hlc>, MqstateError> {
    h.as_ref().map(Hlc::to_core).transpose()
}

/// A key's value and its version.
#[derive(Clone, Debug, PartialEq, Eq, uniffi::Record)]
pub struct Value {
    /// The value.
    pub value: Vec<u8>,
    /// Its version.
    pub version: Option<Hlc>,
}

pub(crate) fn value(v: Option<Versioned>) -> Option<Value> {
    v.map(|v| Value {
        value: v.value.to_vec(),
        version: version(v.version),
    })
}

/// A hit of the client-side cache ([`crate::client::Client::get_cached`]): what a GET
/// answers, a value or none for a key cached as missing.
#[derive(Clone, Debug, PartialEq, Eq, uniffi::Record)]
pub struct CacheHit {
    /// The value and its version; none: the key does not exist.
    pub value: Option<Value>,
}

/// The outcome of a `set`.
#[derive(Clone, Debug, PartialEq, Eq, uniffi::Record)]
pub struct SetResult {
    /// `false` when an `NX` / `NEX` condition failed.
    pub applied: bool,
    /// The key's new version when applied (also a lock's fencing token).
    pub version: Option<Hlc>,
}

/// The condition of a `set`. Each variant's name is the spelling the core parses
/// ([`CoreCondition::parse`], any case): the names are not repeated here.
#[derive(Clone, Copy, Debug, PartialEq, Eq, uniffi::Enum)]
pub enum SetCondition {
    /// Only if the key does not exist.
    Nx,
    /// Only if the key does not exist or holds the same value.
    Nex,
}

impl SetCondition {
    fn to_core(self) -> Result<CoreCondition, MqstateError> {
        Ok(CoreCondition::parse(Some(&format!("{self:?}")))?)
    }
}

/// Options of a `set`.
#[derive(Clone, Debug, Default, PartialEq, uniffi::Record)]
pub struct SetOptions {
    /// `NX` / `NEX`; none: always.
    #[uniffi(default = None)]
    pub condition: Option<SetCondition>,
    /// The key expires this long after the set (at least 1 ms).
    #[uniffi(default = None)]
    pub expiry: Option<Seconds>,
    /// Write fenced with this token (a lock's `fencingToken()`).
    #[uniffi(default = None)]
    pub fencing_token: Option<Hlc>,
    /// Ask the service to persist the value.
    #[uniffi(default = false)]
    pub persist: bool,
    /// This call's timeout instead of the client's `request_timeout`.
    #[uniffi(default = None)]
    pub timeout: Option<Seconds>,
}

impl SetOptions {
    pub(crate) fn to_core(&self) -> Result<CoreSet, MqstateError> {
        Ok(CoreSet {
            condition: match self.condition {
                None => CoreCondition::Always,
                Some(c) => c.to_core()?,
            },
            expiry: duration("expiry", self.expiry)?,
            fencing_token: token(self.fencing_token.clone())?,
            persist: self.persist,
            timeout: duration("timeout", self.timeout)?,
        })
    }
}

/// Options of a `get`.
#[derive(Clone, Debug, Default, PartialEq, uniffi::Record)]
pub struct GetOptions {
    /// This call's timeout instead of the client's.
    #[uniffi(default = None)]
    pub timeout: Option<Seconds>,
    /// Read from the store even when the client-side cache could answer (what the store
    /// answers still updates the cache).
    #[uniffi(default = false)]
    pub bypass_cache: bool,
}

impl GetOptions {
    pub(crate) fn to_core(&self) -> Result<CoreGet, MqstateError> {
        Ok(CoreGet {
            timeout: duration("timeout", self.timeout)?,
            bypass_cache: self.bypass_cache,
        })
    }
}

/// Options of a `delete` or `vdel`.
#[derive(Clone, Debug, Default, PartialEq, uniffi::Record)]
pub struct DelOptions {
    /// Delete fenced with this token.
    #[uniffi(default = None)]
    pub fencing_token: Option<Hlc>,
    /// This call's timeout instead of the client's.
    #[uniffi(default = None)]
    pub timeout: Option<Seconds>,
}

impl DelOptions {
    pub(crate) fn to_core(&self) -> Result<CoreDel, MqstateError> {
        Ok(CoreDel {
            fencing_token: token(self.fencing_token.clone())?,
            timeout: duration("timeout", self.timeout)?,
        })
    }
}

/// Options of an `observe`.
#[derive(Clone, Debug, Default, PartialEq, uniffi::Record)]
pub struct ObserveOptions {
    /// The time the registration may take instead of the client's request timeout.
    #[uniffi(default = None)]
    pub timeout: Option<Seconds>,
}

impl ObserveOptions {
    pub(crate) fn to_core(&self) -> Result<CoreObserve, MqstateError> {
        Ok(CoreObserve {
            timeout: duration("timeout", self.timeout)?,
        })
    }
}

/// The outcome of a `vdel`: the core's own enum (its names are
/// [`VdelOutcome::name`](mqstate::VdelOutcome::name) in every language).
#[uniffi::remote(Enum)]
pub enum VdelOutcome {
    /// The key held the value and was deleted.
    Deleted,
    /// There was no such key.
    NotFound,
    /// The key holds another value; nothing was deleted.
    ValueMismatch,
}

/// The connection's history.
#[derive(Clone, Debug, PartialEq, Eq, uniffi::Record)]
pub struct LinkInfo {
    /// Connected now.
    pub connected: bool,
    /// Connections made so far.
    pub connections: u64,
    /// MQTT sessions begun so far.
    pub sessions: u64,
    /// The largest packet the broker accepts.
    pub broker_max_packet_size: u32,
}

impl From<mqstate::LinkInfo> for LinkInfo {
    fn from(l: mqstate::LinkInfo) -> LinkInfo {
        LinkInfo {
            connected: l.connected,
            connections: l.connections,
            sessions: l.sessions,
            broker_max_packet_size: l.broker_max_packet_size,
        }
    }
}

/// The client-side cache's counters (`Client.cacheStats()`), named as in every language
/// (`mqstate::vocabulary::CACHE_COUNTERS`, in that order). A snapshot: ask again for newer
/// counts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, uniffi::Record)]
pub struct CacheStats {
    /// Reads answered from the cache.
    pub hits: u64,
    /// Reads of cached keys that went to the store.
    pub misses: u64,
    /// Entries removed to stay within `cache_max_entries` and `cache_max_bytes`.
    pub evictions: u64,
    /// Entries changed or removed by something other than this client's own reads and
    /// writes: a notification, a cut, a lost session.
    pub invalidations: u64,
    /// Entries held now.
    pub entries: u64,
    /// Key and value bytes held now.
    pub bytes: u64,
    /// Renewals of the freshness lease sent.
    pub lease_renewals: u64,
    /// Times the lease ran out with no renewal on its way (nothing read for a while).
    pub lease_expiries: u64,
    /// Times the lease failed (a renewal refused, lost or late; a notification backlog):
    /// every entry made before is read from the store again before it answers.
    pub lease_failures: u64,
    /// Reads of cached keys sent to the store because the lease did not hold (counted in
    /// `misses` too).
    pub lease_misses: u64,
    /// KEYNOTIFYs the store refused: those keys are read from the store, uncached, until the
    /// next connection.
    pub refused: u64,
}

mqstate::cache_stats_into!(CacheStats);

/// What happened to an observed key. Prints as the vocabulary spells it (`set`,
/// `delete`: `mqstate::vocabulary::CHANGE_KINDS`), as Python and Node show it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, uniffi::Enum)]
#[uniffi::export(Display)]
pub enum ChangeKind {
    /// Set to a new value.
    Set,
    /// Deleted (or expired).
    Delete,
}

impl std::fmt::Display for ChangeKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let [set, delete] = mqstate::vocabulary::CHANGE_KINDS;
        f.write_str(match self {
            ChangeKind::Set => set,
            ChangeKind::Delete => delete,
        })
    }
}

/// A lock's (a candidate's) own status.
#[derive(Clone, Debug, PartialEq, uniffi::Enum)]
pub enum LockStatus {
    /// Not acquired, or released.
    NotHeld,
    /// Held with this fencing token for this lease (or term).
    Held {
        /// The fencing token.
        fencing_token: Hlc,
        /// The lease.
        lease: Seconds,
    },
    /// Was held and is no longer: `expired`, `taken_over` or `renewal_failed`.
    Lost {
        /// Why.
        reason: String,
    },
}

impl From<CoreLockStatus> for LockStatus {
    fn from(s: CoreLockStatus) -> LockStatus {
        match s {
            CoreLockStatus::NotHeld => LockStatus::NotHeld,
            CoreLockStatus::Held { token, lease, .. } => LockStatus::Held {
                fencing_token: token.into(),
                lease: lease.into(),
            },
            CoreLockStatus::Lost(reason) => LockStatus::Lost {
                reason: reason.as_str().to_owned(),
            },
        }
    }
}

/// One event of a subscription.
#[derive(Clone, Debug, PartialEq, uniffi::Enum)]
pub enum Event {
    /// An observed key changed.
    Change {
        /// The key.
        key: Vec<u8>,
        /// Set or deleted.
        kind: ChangeKind,
        /// The new value of a set.
        value: Option<Vec<u8>>,
        /// The key's new version (none for a resync that found the key deleted).
        version: Option<Hlc>,
        /// Found after a reconnection (intermediate changes are not replayed).
        resync: bool,
        /// Events discarded before this one because the reader was too slow.
        dropped_before: u64,
    },
    /// A lock's holder (an election's leader) changed; the first event is the current one.
    Holder {
        /// The holder id, or none when free.
        holder: Option<String>,
        /// The lock key's version at the change.
        version: Option<Hlc>,
        /// Found after a reconnection.
        resync: bool,
    },
    /// This lock's (candidate's) own status changed; the first event is the current one.
    Status {
        /// The status.
        status: LockStatus,
    },
    /// After a reconnection the subscription could not be restored: changes are missed
    /// until `Restored`.
    Degraded {
        /// Why.
        reason: String,
    },
    /// Restored after `Degraded`.
    Restored,
}

impl From<CoreEvent> for Event {
    fn from(e: CoreEvent) -> Event {
        match e {
            CoreEvent::Change(n) => {
                let (kind, value) = match n.event {
                    KeyEvent::Set(v) => (ChangeKind::Set, Some(v.to_vec())),
                    KeyEvent::Delete => (ChangeKind::Delete, None),
                };
                Event::Change {
                    key: n.key.to_vec(),
                    kind,
                    value,
                    version: version(n.version),
                    resync: n.resync,
                    dropped_before: n.dropped_before,
                }
            }
            CoreEvent::Holder(h) => Event::Holder {
                holder: h.holder,
                version: version(h.version),
                resync: h.resync,
            },
            CoreEvent::Status(s) => Event::Status { status: s.into() },
            CoreEvent::Degraded { reason } => Event::Degraded { reason },
            CoreEvent::Restored => Event::Restored,
        }
    }
}

/// What a fenced edit writes, decided from the value read under the lock.
#[derive(Clone, Debug, PartialEq, Eq, uniffi::Enum)]
pub enum Edit {
    /// Set the key to this value.
    Set {
        /// The new value.
        value: Vec<u8>,
    },
    /// Delete the key.
    Delete,
    /// Leave it as it is (nothing is written).
    Keep,
}

impl From<Edit> for CoreEdit {
    fn from(e: Edit) -> CoreEdit {
        match e {
            Edit::Set { value } => CoreEdit::Set(Bytes::from(value)),
            Edit::Delete => CoreEdit::Delete,
            Edit::Keep => CoreEdit::Keep,
        }
    }
}

impl From<CoreEdit> for Edit {
    fn from(e: CoreEdit) -> Edit {
        match e {
            CoreEdit::Set(v) => Edit::Set { value: v.to_vec() },
            CoreEdit::Delete => Edit::Delete,
            CoreEdit::Keep => Edit::Keep,
        }
    }
}

/// The outcome of a fenced edit.
#[derive(Clone, Debug, PartialEq, Eq, uniffi::Record)]
pub struct EditResult {
    /// The key as it was read under the lock.
    pub previous: Option<Value>,
    /// What was written.
    pub edit: Edit,
    /// The key's new version after a set.
    pub version: Option<Hlc>,
    /// The fencing token the write carried.
    pub token: Hlc,
    /// Attempts made (1 when nothing had to be retried).
    pub attempts: u32,
}

impl From<EditOutcome> for EditResult {
    fn from(o: EditOutcome) -> EditResult {
        EditResult {
            previous: value(o.previous),
            edit: o.edit.into(),
            version: version(o.version),
            token: o.token.into(),
            attempts: o.attempts,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn change_kinds_print_as_the_vocabulary_spells_them() {
        assert_eq!(ChangeKind::Set.to_string(), "set");
        assert_eq!(ChangeKind::Delete.to_string(), "delete");
    }

    #[test]
    fn hlc_text_and_order_match_the_core() {
        let a = mqstate::Hlc::parse("000000000000042:00003:node").unwrap();
        let b = mqstate::Hlc::parse("000000000000042:00003:other").unwrap();
        let (ka, kb) = (Hlc::from(a.clone()), Hlc::from(b.clone()));
        assert_eq!(ka.to_string(), a.to_text());
        assert_eq!(ka.cmp(&kb), a.cmp(&b));
        assert_eq!(ka.compare_time(kb.clone()), 0);
        assert_eq!(ka.to_core().unwrap(), a);
        assert_eq!(parse_hlc(a.to_text()).unwrap(), ka);
        assert_eq!(parse_hlc("nope".into()).unwrap_err().code(), "malformed");
    }

    #[test]
    fn options_convert() {
        let o = SetOptions {
            condition: Some(SetCondition::Nex),
            expiry: Some(Seconds(1.5)),
            ..SetOptions::default()
        };
        let core = o.to_core().unwrap();
        assert_eq!(core.condition, CoreCondition::NotExistsOrEqual);
        assert_eq!(core.expiry, Some(Duration::from_millis(1500)));
        let nx = SetOptions {
            condition: Some(SetCondition::Nx),
            ..SetOptions::default()
        };
        assert_eq!(nx.to_core().unwrap().condition, CoreCondition::NotExists);
        assert_eq!(
            SetOptions::default().to_core().unwrap().condition,
            CoreCondition::Always
        );
        let bad = DelOptions {
            fencing_token: Some(Hlc {
                wall_ms: 1,
                counter: 0,
                node_id: "a:b".into(),
            }),
            timeout: None,
        };
        assert_eq!(bad.to_core().unwrap_err().code(), "invalid_argument");
        let past = GetOptions {
            bypass_cache: true,
            ..GetOptions::default()
        };
        assert!(past.to_core().unwrap().bypass_cache);
        assert!(!GetOptions::default().to_core().unwrap().bypass_cache);
    }

    #[test]
    fn bad_durations_are_refused_naming_the_option() {
        for secs in [-1.0, f64::NAN, f64::INFINITY] {
            let e = GetOptions {
                timeout: Some(Seconds(secs)),
                ..GetOptions::default()
            }
            .to_core()
            .unwrap_err();
            assert_eq!(e.code(), "invalid_argument");
            assert!(e.detail().contains("timeout"), "{e}");
        }
        let e = duration("auto_renew", Some(Seconds(-2.0))).unwrap_err();
        assert!(e.detail().contains("autoRenew"), "{e}");
        assert_eq!(duration("lease", None).unwrap(), None);
    }
}
