//! Telemetry's one vocabulary, and the trace context a request carries.
//!
//! Every language reports the same things under the same names: each binding hands what the
//! core measures to its own OpenTelemetry API (Python `opentelemetry-api`, Node
//! `@opentelemetry/api`, the JVM's `io.opentelemetry:opentelemetry-api`, Rust's `tracing`),
//! and converts nothing but types. The names follow the OpenTelemetry semantic conventions
//! for database clients where they have one (`db.client.operation.duration`,
//! `db.operation.name`, `error.type`, `server.address`); the rest are `mqstate.*`, listed
//! here and in docs/telemetry.md.
//!
//! - [`names`]: span, attribute and event names.
//! - [`METRICS`]: every metric with its unit, kind and meaning.
//! - [`TraceContext`]: a W3C `traceparent` (and `tracestate`), checked, which a request
//!   carries as MQTT5 user properties of the same names, so that a store that records them
//!   (`mqstate serve --otlp-endpoint`) links its side of each call into the caller's trace.
//! - With the `client` feature, [`CallTrace`]: what one call met on its way (resendings,
//!   waits for a connection, a `no_store` refusal), for the binding to put on its span;
//!   [`CallRecord`]: one completed call, measured once here, for a binding with no
//!   OpenTelemetry API of its own (C's call observer), told through [`CallObservers`].

mod trace_context;

pub use trace_context::{MAX_TRACESTATE, TraceContext, TraceParent, tracestate_acceptable};

#[cfg(feature = "client")]
mod call_trace;
#[cfg(feature = "client")]
pub use call_trace::{CallEvent, CallTrace};
#[cfg(feature = "client")]
mod counters;
#[cfg(feature = "client")]
pub use counters::ClientCounters;
#[cfg(feature = "client")]
pub(crate) use counters::LockChange;
#[cfg(feature = "client")]
mod call_record;
#[cfg(feature = "client")]
pub(crate) use call_record::Measured;
#[cfg(feature = "client")]
pub use call_record::{CallObserver, CallObservers, CallRecord};

/// Span, attribute and event names (OpenTelemetry's where it has one).
pub mod names {
    /// `db.system.name`: which database system; its value is [`DB_SYSTEM`].
    pub const DB_SYSTEM_NAME: &str = "db.system.name";
    /// The value of `db.system.name`: the state store protocol, whoever serves it.
    pub const DB_SYSTEM: &str = "azure.iot_operations.state_store";
    /// `db.operation.name`: the request's verb as the wire spells it (`GET`, `SET`, `DEL`,
    /// `VDEL`, `KEYNOTIFY`, `SCAN`). A call's span is named by it too.
    pub const DB_OPERATION_NAME: &str = "db.operation.name";
    /// `db.operation.batch.size`: set only on calls that name more than one key.
    pub const DB_OPERATION_BATCH_SIZE: &str = "db.operation.batch.size";
    /// `server.address`: the broker's host, as the settings name it.
    pub const SERVER_ADDRESS: &str = "server.address";
    /// `server.port`: the broker's port.
    pub const SERVER_PORT: &str = "server.port";
    /// `error.type`: the error's code ([`ErrorKind::code`](crate::ErrorKind::code), e.g.
    /// `timeout`, `no_store`, `fencing_token_lower_version`); absent when the call succeeded.
    pub const ERROR_TYPE: &str = "error.type";
    /// `mqstate.key`: the key, as text (escaped where it is not UTF-8). Only when the user
    /// opts in: keys can name people, devices or secrets.
    pub const KEY: &str = "mqstate.key";
    /// `mqstate.cache.hit`: `true` when the client's cache answered (no round trip).
    pub const CACHE_HIT: &str = "mqstate.cache.hit";
    /// `mqstate.client_id`: the MQTT client id that sent the request.
    pub const CLIENT_ID: &str = "mqstate.client_id";
    /// `mqstate.outcome`: the outcome of a call that succeeded without doing what it asked
    /// (`not_applied` for a SET whose condition failed; `not_found`, `value_mismatch` for a
    /// VDEL).
    pub const OUTCOME: &str = "mqstate.outcome";

    /// Event: the request was sent again (the broker routed it to nobody: no store was
    /// subscribed yet). Attribute [`ATTEMPT`].
    pub const EVENT_RESENT: &str = "mqstate.resent";
    /// Event: the request waited for the connection (lost, or not yet up). Attribute
    /// [`WAITED_MS`].
    pub const EVENT_CONNECTION_WAIT: &str = "mqstate.connection_wait";
    /// Event: the call was refused with `no_store`: no state store took the request for
    /// [`NO_STORE_WINDOW`](crate::vocabulary::NO_STORE_WINDOW).
    pub const EVENT_NO_STORE: &str = "mqstate.no_store";
    /// Event on the caller's span when a read was answered from the client's cache.
    pub const EVENT_CACHE_HIT: &str = "mqstate.cache_hit";
    /// Attribute of [`EVENT_RESENT`]: the sending's number (2 for the first resending).
    pub const ATTEMPT: &str = "mqstate.attempt";
    /// Attribute of [`EVENT_CONNECTION_WAIT`]: how long the wait lasted, in milliseconds.
    pub const WAITED_MS: &str = "mqstate.waited_ms";

    /// Span of a lock's acquire (waiting for it): kind INTERNAL, one per call, its
    /// requests (SET NX, KEYNOTIFY) carrying its trace context; `error.type` when it failed;
    /// the lock key ([`KEY`]) only when the user opts in. The other lock and election spans
    /// below are alike.
    pub const SPAN_LOCK_ACQUIRE: &str = "mqstate.lock.acquire";
    /// Span of a lock's single try (`try_acquire`).
    pub const SPAN_LOCK_TRY_ACQUIRE: &str = "mqstate.lock.try_acquire";
    /// Span of a lock's renewal called by the application (the automatic renewal has none).
    pub const SPAN_LOCK_RENEW: &str = "mqstate.lock.renew";
    /// Span of a lock's release.
    pub const SPAN_LOCK_RELEASE: &str = "mqstate.lock.release";
    /// Span of a fenced edit under a lock (acquire, read, write, release).
    pub const SPAN_LOCK_EDIT: &str = "mqstate.lock.edit";
    /// Span of an election's campaign (waiting to lead).
    pub const SPAN_ELECTION_CAMPAIGN: &str = "mqstate.election.campaign";
    /// Span of an election's single try (`try_campaign`).
    pub const SPAN_ELECTION_TRY_CAMPAIGN: &str = "mqstate.election.try_campaign";
    /// Span of a candidate's resignation.
    pub const SPAN_ELECTION_RESIGN: &str = "mqstate.election.resign";

    /// The instrumentation scope every binding names its tracer and meter by.
    pub const SCOPE: &str = "mqstate";
    /// The user properties a request carries its trace context in (W3C Trace Context, MQTT
    /// convention).
    pub const TRACEPARENT: &str = "traceparent";
    /// See [`TRACEPARENT`].
    pub const TRACESTATE: &str = "tracestate";

    /// Every name above as `(constant, value)`, plus the duration histogram's
    /// ([`CALL_DURATION`](super::CALL_DURATION)): what a binding exports, each spelling the
    /// constant in its own case (Python's `NAMES["ERROR_TYPE"]`, Node's `names.errorType`).
    pub const ALL: &[(&str, &str)] = &[
        ("DB_SYSTEM_NAME", DB_SYSTEM_NAME),
        ("DB_SYSTEM", DB_SYSTEM),
        ("DB_OPERATION_NAME", DB_OPERATION_NAME),
        ("DB_OPERATION_BATCH_SIZE", DB_OPERATION_BATCH_SIZE),
        ("SERVER_ADDRESS", SERVER_ADDRESS),
        ("SERVER_PORT", SERVER_PORT),
        ("ERROR_TYPE", ERROR_TYPE),
        ("KEY", KEY),
        ("CACHE_HIT", CACHE_HIT),
        ("CLIENT_ID", CLIENT_ID),
        ("OUTCOME", OUTCOME),
        ("EVENT_RESENT", EVENT_RESENT),
        ("EVENT_CONNECTION_WAIT", EVENT_CONNECTION_WAIT),
        ("EVENT_NO_STORE", EVENT_NO_STORE),
        ("EVENT_CACHE_HIT", EVENT_CACHE_HIT),
        ("ATTEMPT", ATTEMPT),
        ("WAITED_MS", WAITED_MS),
        ("SPAN_LOCK_ACQUIRE", SPAN_LOCK_ACQUIRE),
        ("SPAN_LOCK_TRY_ACQUIRE", SPAN_LOCK_TRY_ACQUIRE),
        ("SPAN_LOCK_RENEW", SPAN_LOCK_RENEW),
        ("SPAN_LOCK_RELEASE", SPAN_LOCK_RELEASE),
        ("SPAN_LOCK_EDIT", SPAN_LOCK_EDIT),
        ("SPAN_ELECTION_CAMPAIGN", SPAN_ELECTION_CAMPAIGN),
        ("SPAN_ELECTION_TRY_CAMPAIGN", SPAN_ELECTION_TRY_CAMPAIGN),
        ("SPAN_ELECTION_RESIGN", SPAN_ELECTION_RESIGN),
        ("SCOPE", SCOPE),
        ("TRACEPARENT", TRACEPARENT),
        ("TRACESTATE", TRACESTATE),
        ("CALL_DURATION", super::CALL_DURATION),
    ];
}

/// What a metric is, for the binding that reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MetricKind {
    /// A distribution of values (call durations).
    Histogram,
    /// A count that only grows (read from the core's counters when the reader collects).
    Counter,
    /// A value that goes up and down (read when the reader collects).
    Gauge,
}

impl MetricKind {
    /// `histogram`, `counter`, `gauge`.
    pub fn as_str(self) -> &'static str {
        match self {
            MetricKind::Histogram => "histogram",
            MetricKind::Counter => "counter",
            MetricKind::Gauge => "gauge",
        }
    }
}

/// One metric every binding reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MetricSpec {
    /// Its name.
    pub name: &'static str,
    /// Its unit (UCUM, as OpenTelemetry writes them: `s`, `By`, `{request}`).
    pub unit: &'static str,
    /// Histogram, counter or gauge.
    pub kind: MetricKind,
    /// What it counts, for the instrument's description.
    pub description: &'static str,
    /// Where the value comes from: `call` (measured around each call, attributes
    /// `db.operation.name` and `error.type`), `link` (the client's link info), `client` (the
    /// client's `ClientCounters`), `cache` (the cache's counter of the same name:
    /// [`CacheStats`](crate::CacheStats)). Every one but `call` is in [`Client::metric_values`](crate::Client::metric_values).
    pub source: &'static str,
}

const fn metric(
    name: &'static str,
    unit: &'static str,
    kind: MetricKind,
    source: &'static str,
    description: &'static str,
) -> MetricSpec {
    MetricSpec {
        name,
        unit,
        kind,
        description,
        source,
    }
}

/// The name of the call-duration histogram (OpenTelemetry's, in seconds).
pub const CALL_DURATION: &str = "db.client.operation.duration";

/// The boundaries of [`CALL_DURATION`]'s buckets, in seconds (OpenTelemetry's advice for
/// database client durations: from a cache hit's microseconds to a timeout's seconds).
pub const CALL_DURATION_BUCKETS: [f64; 14] = [
    0.000_01, 0.000_05, 0.000_1, 0.000_5, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1.0, 5.0, 10.0, 30.0,
];

use MetricKind::{Counter, Gauge, Histogram};

/// Every metric, in the order the docs list them. `mqstate.cache.*` mirror the cache's
/// counters one for one (their names are the counters' names with the prefix).
pub const METRICS: &[MetricSpec] = &[
    metric(
        CALL_DURATION,
        "s",
        Histogram,
        "call",
        "Duration of state store calls, cache hits included (mqstate.cache.hit)",
    ),
    metric(
        "db.client.operation.pending_requests",
        "{request}",
        Gauge,
        "link",
        "Requests sent and not yet answered",
    ),
    metric(
        "mqstate.connection.up",
        "1",
        Gauge,
        "link",
        "1 while the client is connected to the broker, else 0",
    ),
    metric(
        "mqstate.connection.connects",
        "{connection}",
        Counter,
        "link",
        "Connections made (CONNACKs received); reconnections are this minus one",
    ),
    metric(
        "mqstate.connection.sessions",
        "{session}",
        Counter,
        "link",
        "MQTT sessions begun; a reconnection that resumed its session does not count",
    ),
    metric(
        "mqstate.notifications.received",
        "{notification}",
        Counter,
        "client",
        "Notifications delivered to the client's observed keys",
    ),
    metric(
        "mqstate.notifications.dropped",
        "{notification}",
        Counter,
        "client",
        "Notifications an observer's full buffer discarded (its oldest)",
    ),
    metric(
        "mqstate.locks.acquired",
        "{lock}",
        Counter,
        "client",
        "Locks (and elections) this client acquired",
    ),
    metric(
        "mqstate.locks.held",
        "{lock}",
        Gauge,
        "client",
        "Locks (and elections) this client holds now",
    ),
    metric(
        "mqstate.locks.lost",
        "{lock}",
        Counter,
        "client",
        "Locks this client lost while holding them (expired, taken over, renewal failed)",
    ),
    metric(
        "mqstate.locks.renewals",
        "{renewal}",
        Counter,
        "client",
        "Lock leases renewed",
    ),
    metric(
        "mqstate.election.leader_changes",
        "{change}",
        Counter,
        "client",
        "Times one of this client's candidates became or stopped being leader",
    ),
    metric(
        "mqstate.cache.hits",
        "{read}",
        Counter,
        "cache",
        "Reads answered from the client's cache",
    ),
    metric(
        "mqstate.cache.misses",
        "{read}",
        Counter,
        "cache",
        "Reads of cached keys that went to the store",
    ),
    metric(
        "mqstate.cache.evictions",
        "{entry}",
        Counter,
        "cache",
        "Entries removed to stay within the cache's bounds",
    ),
    metric(
        "mqstate.cache.invalidations",
        "{entry}",
        Counter,
        "cache",
        "Entries changed or removed by a notification, a cut, a lost session, a failed lease",
    ),
    metric(
        "mqstate.cache.entries",
        "{entry}",
        Gauge,
        "cache",
        "Entries held now",
    ),
    metric(
        "mqstate.cache.bytes",
        "By",
        Gauge,
        "cache",
        "Key and value bytes held now",
    ),
    metric(
        "mqstate.cache.lease_renewals",
        "{renewal}",
        Counter,
        "cache",
        "Renewals of the freshness lease sent",
    ),
    metric(
        "mqstate.cache.lease_expiries",
        "{expiry}",
        Counter,
        "cache",
        "Times the freshness lease ran out with no renewal on its way",
    ),
    metric(
        "mqstate.cache.lease_failures",
        "{failure}",
        Counter,
        "cache",
        "Times the freshness lease failed: every entry is read again before it answers",
    ),
    metric(
        "mqstate.cache.lease_misses",
        "{read}",
        Counter,
        "cache",
        "Reads of cached keys sent to the store because the lease did not hold",
    ),
    metric(
        "mqstate.cache.refused",
        "{key}",
        Counter,
        "cache",
        "KEYNOTIFYs the store refused (those keys are read uncached)",
    ),
];

/// A key as the text of [`names::KEY`]: its UTF-8, each byte of an invalid sequence written
/// `\xNN` (lower-case hex), so any key is readable and two keys never read the same.
pub fn key_text(key: &[u8]) -> String {
    let mut out = String::with_capacity(key.len());
    for chunk in key.utf8_chunks() {
        out.push_str(chunk.valid());
        for b in chunk.invalid() {
            out.push_str(&format!("\\x{b:02x}"));
        }
    }
    out
}

/// The prefix of the cache's metrics: `mqstate.cache.` + the counter's name.
pub const CACHE_PREFIX: &str = "mqstate.cache.";

/// The metric named `name`.
pub fn metric_spec(name: &str) -> Option<&'static MetricSpec> {
    METRICS.iter().find(|m| m.name == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metric_names_are_unique_and_dotted_lower_case() {
        for (i, m) in METRICS.iter().enumerate() {
            assert!(
                METRICS[..i].iter().all(|o| o.name != m.name),
                "{} twice",
                m.name
            );
            assert!(
                m.name
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b == b'.' || b == b'_'),
                "{}",
                m.name
            );
            assert!(!m.description.is_empty() && !m.unit.is_empty());
            assert!(
                ["call", "link", "client", "cache"].contains(&m.source),
                "{}",
                m.name
            );
        }
        assert_eq!(metric_spec(CALL_DURATION).unwrap().kind, Histogram);
        // The cache's metrics are its counters, one for one, in their order.
        #[cfg(feature = "client")]
        let cache: Vec<&str> = METRICS
            .iter()
            .filter(|m| m.source == "cache")
            .map(|m| m.name.strip_prefix(CACHE_PREFIX).unwrap())
            .collect();
        #[cfg(feature = "client")]
        assert_eq!(cache, crate::vocabulary::CACHE_COUNTERS);
        assert!(metric_spec("nope").is_none());
    }

    #[test]
    fn keys_read_as_text_with_invalid_bytes_escaped() {
        assert_eq!(key_text(b"plain/key"), "plain/key");
        assert_eq!(key_text("ключ".as_bytes()), "ключ");
        assert_eq!(key_text(b"tel/\xffbin"), "tel/\\xffbin");
        assert_eq!(
            key_text(b"a\xe2\x82"),
            "a\\xe2\\x82",
            "a cut sequence, byte by byte"
        );
    }

    #[test]
    #[cfg(feature = "client")]
    fn the_client_counters_are_the_client_metrics() {
        let rows: Vec<&str> = METRICS
            .iter()
            .filter(|m| m.source == "client")
            .map(|m| m.name)
            .collect();
        let counted: Vec<&str> = ClientCounters::default()
            .values()
            .iter()
            .map(|(name, _)| *name)
            .collect();
        assert_eq!(rows, counted);
    }

    #[test]
    fn every_name_is_listed_once() {
        let source = include_str!("telemetry.rs");
        let declared = source
            .lines()
            .filter(|l| l.trim_start().starts_with("pub const ") && l.contains(": &str = "))
            .filter_map(|l| l.trim_start().strip_prefix("pub const ")?.split(':').next())
            .filter(|c| !["CALL_DURATION", "CACHE_PREFIX"].contains(c))
            .count();
        assert_eq!(
            names::ALL.len(),
            declared + 1,
            "one row per constant of names, and CALL_DURATION"
        );
        for (i, (c, _)) in names::ALL.iter().enumerate() {
            assert!(names::ALL[..i].iter().all(|(o, _)| o != c), "{c} twice");
        }
    }

    #[test]
    fn duration_buckets_grow() {
        assert!(CALL_DURATION_BUCKETS.windows(2).all(|w| w[0] < w[1]));
    }
}
