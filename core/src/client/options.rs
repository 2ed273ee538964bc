//! The plain data of the client's API: options of the client and of each call, and the
//! outcomes calls return. No behaviour lives here.

use std::time::Duration;

use bytes::Bytes;

use crate::cache::CacheOptions;
use crate::codec::SetCondition;
use crate::hlc::{Clock, Hlc};

/// The default time a request waits for its response.
pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(10);
/// The default number of notifications buffered per observer.
pub const DEFAULT_OBSERVER_CAPACITY: usize = 1024;
/// The shortest expiry a SET may ask for: the protocol counts whole milliseconds, and a
/// shorter one is surely a unit mistake (seconds taken for milliseconds, or the reverse).
pub const MIN_EXPIRY: Duration = Duration::from_millis(1);

/// `duration` in whole milliseconds (rounded up), refused below `floor` with a message that
/// names `what` and the value given: the one rule for every duration the wire carries in
/// milliseconds (expiries, leases, terms).
pub fn whole_millis(what: &str, duration: Duration, floor: Duration) -> Result<u64, crate::Error> {
    if duration < floor {
        return Err(crate::Error::invalid_argument(format!(
            "the {what} must be at least {floor:?} (got {duration:?}): check its unit"
        )));
    }
    Ok(u64::try_from(duration.as_nanos().div_ceil(1_000_000)).unwrap_or(u64::MAX))
}

/// Client-side behaviour beyond the connection.
#[derive(Clone, Debug)]
pub struct ClientOptions {
    /// How long a request waits for its response (and for a connection), unless the call
    /// says otherwise. Sub-second values are fine.
    pub request_timeout: Duration,
    /// The response topic; default `clients/{clientId}/services/statestore/…/response`.
    pub response_topic: Option<String>,
    /// Notifications buffered per observer before the oldest are discarded.
    pub observer_capacity: usize,
    /// The clock for `__ts`; default one clock shared by every client of the process
    /// (spec §5.3).
    pub clock: Option<Clock>,
    /// A client-side cache of values read, kept fresh by notifications ([`crate::cache`]);
    /// default none.
    pub cache: Option<CacheOptions>,
}

impl Default for ClientOptions {
    fn default() -> Self {
        ClientOptions {
            request_timeout: DEFAULT_REQUEST_TIMEOUT,
            response_topic: None,
            observer_capacity: DEFAULT_OBSERVER_CAPACITY,
            clock: None,
            cache: None,
        }
    }
}

/// Options of a SET.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SetOptions {
    /// `NX` / `NEX`.
    pub condition: SetCondition,
    /// Expire the key this long after the SET (rounded up to whole milliseconds).
    pub expiry: Option<Duration>,
    /// Write with this fencing token (`__ft`).
    pub fencing_token: Option<Hlc>,
    /// Ask the service to persist the value to disk (`aio-persistence`).
    pub persist: bool,
    /// This call's timeout instead of the client's.
    pub timeout: Option<Duration>,
}

/// Options of a GET.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GetOptions {
    /// This call's timeout instead of the client's.
    pub timeout: Option<Duration>,
    /// Read from the store even when the client's cache could answer (what the store
    /// answers still updates the cache).
    pub bypass_cache: bool,
}

impl GetOptions {
    /// A read that goes to the store whatever the cache holds (what the lock and election
    /// helpers read with: a fenced decision is never made on a cached value).
    pub(crate) fn past_cache() -> GetOptions {
        GetOptions {
            bypass_cache: true,
            ..GetOptions::default()
        }
    }
}

/// Options of an observation.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ObserveOptions {
    /// The time the registration (SUBSCRIBE, KEYNOTIFY, GET) may take instead of the
    /// client's request timeout.
    pub timeout: Option<Duration>,
}

/// Options of a DEL or VDEL.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DelOptions {
    /// Delete with this fencing token (`__ft`).
    pub fencing_token: Option<Hlc>,
    /// This call's timeout instead of the client's.
    pub timeout: Option<Duration>,
}

/// The outcome of a SET.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SetOutcome {
    /// `false` when the NX / NEX condition failed.
    pub applied: bool,
    /// The key's new version when applied (also the fencing token of a lock).
    pub version: Option<Hlc>,
}

/// A value with its version.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Versioned {
    /// The value.
    pub value: Bytes,
    /// Its version.
    pub version: Option<Hlc>,
}

/// What [`Client::link_info`](crate::Client::link_info) reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LinkInfo {
    /// Connected now.
    pub connected: bool,
    /// Connections made so far (CONNACKs received).
    pub connections: u64,
    /// MQTT sessions begun so far: a reconnection that resumed the session does not count.
    pub sessions: u64,
    /// The largest packet the broker accepts.
    pub broker_max_packet_size: u32,
}

/// The outcome of a VDEL.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum VdelOutcome {
    /// The key held the value and was deleted.
    Deleted,
    /// There was no such key.
    NotFound,
    /// The key holds another value; nothing was deleted.
    ValueMismatch,
}

impl VdelOutcome {
    /// Every outcome.
    pub const ALL: [VdelOutcome; 3] = [
        VdelOutcome::Deleted,
        VdelOutcome::NotFound,
        VdelOutcome::ValueMismatch,
    ];

    /// The outcome's name in every language: `deleted`, `not_found`, `value_mismatch`.
    pub fn name(self) -> &'static str {
        match self {
            VdelOutcome::Deleted => "deleted",
            VdelOutcome::NotFound => "not_found",
            VdelOutcome::ValueMismatch => "value_mismatch",
        }
    }
}
