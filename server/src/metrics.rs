//! What the store counts for operators: requests by command and outcome, how long the store
//! took to answer them, and the size of what it holds. Plain atomics, updated on the request
//! path (a few relaxed adds per request); read as a [`Metrics`] snapshot through
//! [`ServerHandle::metrics`](crate::ServerHandle::metrics) or a [`MetricsReader`], and
//! exposed in the Prometheus format by `mqstate serve --http` (the CLI formats them; this
//! crate has no HTTP or Prometheus dependency, so `LocalStore` stays small).

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// The commands requests are counted by, as the service names them (`mqstate::codec::Verb`);
/// `other` is a request whose command could not be read.
pub const COMMANDS: [&str; 7] = ["SET", "GET", "DEL", "VDEL", "KEYNOTIFY", "SCAN", "other"];

/// What became of a request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Answered by the store (a value, not found, applied or not: anything but an error).
    Ok,
    /// Answered with a state store error (`-ERR …`, e.g. a fencing token too low).
    StoreError,
    /// Answered with an RPC failure (`__stat` 4xx/5xx: a malformed request, a failed write
    /// of the persistence log).
    Failed,
    /// Not answered (no response topic, a forbidden one, an envelope it could not read).
    Dropped,
    /// A redelivered write, answered again from the duplicate-answer cache, not applied again.
    Duplicate,
}

impl Outcome {
    /// Every outcome, in the order of the counters' index.
    pub const ALL: [Outcome; 5] = [
        Outcome::Ok,
        Outcome::StoreError,
        Outcome::Failed,
        Outcome::Dropped,
        Outcome::Duplicate,
    ];

    /// Its name as a metric label.
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Ok => "ok",
            Outcome::StoreError => "store_error",
            Outcome::Failed => "failed",
            Outcome::Dropped => "dropped",
            Outcome::Duplicate => "duplicate",
        }
    }

    fn index(self) -> usize {
        self as usize
    }
}

/// The upper bounds of the latency histogram's buckets, in seconds (the last bucket, +Inf,
/// is implied): 50 µs to 1 s.
pub const LATENCY_BUCKETS: [f64; 14] = [
    0.000_05, 0.000_1, 0.000_25, 0.000_5, 0.001, 0.002_5, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5,
    1.0,
];

/// The live counters (shared by the service, which writes them, and every reader).
#[derive(Debug, Default)]
pub(crate) struct Recorder {
    requests: [[AtomicU64; Outcome::ALL.len()]; COMMANDS.len()],
    /// Cumulative per bucket is computed on read; these are per-bucket counts, the last one
    /// past every bound.
    buckets: [AtomicU64; LATENCY_BUCKETS.len() + 1],
    latency_sum_ns: AtomicU64,
    keys: AtomicU64,
    data_bytes: AtomicU64,
    dedup_entries: AtomicU64,
    journal_bytes: AtomicU64,
    journal_compactions: AtomicU64,
}

impl Recorder {
    /// Counts one request of `command` (an index into [`COMMANDS`]) that ended with
    /// `outcome` after `took`.
    pub(crate) fn request(&self, command: usize, outcome: Outcome, took: Duration) {
        self.requests[command.min(COMMANDS.len() - 1)][outcome.index()]
            .fetch_add(1, Ordering::Relaxed);
        let secs = took.as_secs_f64();
        let bucket = LATENCY_BUCKETS
            .iter()
            .position(|&bound| secs <= bound)
            .unwrap_or(LATENCY_BUCKETS.len());
        self.buckets[bucket].fetch_add(1, Ordering::Relaxed);
        let ns = u64::try_from(took.as_nanos()).unwrap_or(u64::MAX);
        self.latency_sum_ns.fetch_add(ns, Ordering::Relaxed);
    }

    /// Records the size of what the store holds.
    pub(crate) fn sizes(&self, keys: usize, data_bytes: u64, dedup_entries: usize) {
        self.keys.store(keys as u64, Ordering::Relaxed);
        self.data_bytes.store(data_bytes, Ordering::Relaxed);
        self.dedup_entries
            .store(dedup_entries as u64, Ordering::Relaxed);
    }

    /// Records the persistence log's size and how many compactions it has had.
    pub(crate) fn journal(&self, bytes: u64, compactions: u64) {
        self.journal_bytes.store(bytes, Ordering::Relaxed);
        self.journal_compactions
            .store(compactions, Ordering::Relaxed);
    }

    pub(crate) fn snapshot(&self) -> RequestMetrics {
        let requests = std::array::from_fn(|c| {
            std::array::from_fn(|o| self.requests[c][o].load(Ordering::Relaxed))
        });
        let buckets = std::array::from_fn(|b| self.buckets[b].load(Ordering::Relaxed));
        RequestMetrics {
            requests,
            buckets,
            latency_sum: Duration::from_nanos(self.latency_sum_ns.load(Ordering::Relaxed)),
            keys: self.keys.load(Ordering::Relaxed),
            data_bytes: self.data_bytes.load(Ordering::Relaxed),
            dedup_entries: self.dedup_entries.load(Ordering::Relaxed),
            journal_bytes: self.journal_bytes.load(Ordering::Relaxed),
            journal_compactions: self.journal_compactions.load(Ordering::Relaxed),
        }
    }
}

/// The request counters and sizes at one moment.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RequestMetrics {
    /// Requests by command ([`COMMANDS`]) and outcome ([`Outcome::ALL`]).
    pub requests: [[u64; Outcome::ALL.len()]; COMMANDS.len()],
    /// Requests by how long the store took to answer: per bucket of [`LATENCY_BUCKETS`]
    /// (not cumulative), the last one past every bound.
    pub buckets: [u64; LATENCY_BUCKETS.len() + 1],
    /// The time all of them took together.
    pub latency_sum: Duration,
    /// Keys held.
    pub keys: u64,
    /// Bytes of keys and values held.
    pub data_bytes: u64,
    /// Answers kept to answer a redelivered write again.
    pub dedup_entries: u64,
    /// Bytes of the persistence log (0 without `--data-dir`).
    pub journal_bytes: u64,
    /// Compactions of the persistence log since start.
    pub journal_compactions: u64,
}

impl RequestMetrics {
    /// Requests counted in all.
    pub fn total(&self) -> u64 {
        self.requests.iter().flatten().sum()
    }
}

/// A snapshot of the server's counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Requests received on the request topic.
    pub requests: u64,
    /// Requests dropped or answered with an RPC error.
    pub rejected: u64,
    /// Notifications handed to the broker.
    pub notifications: u64,
    /// Notifications dropped because their client's queue was full.
    pub notifications_dropped: u64,
    /// Responses dropped because the response queue was full.
    pub responses_dropped: u64,
    /// The longest any client's notification queue has been.
    pub max_client_queue: u64,
    /// KEYNOTIFY registrations dropped because their client disconnected.
    pub registrations_dropped: u64,
    /// Embedded broker: sessions kept without a connection that ended because more than
    /// [`ServerConfig::max_offline_sessions`](crate::ServerConfig::max_offline_sessions)
    /// were kept (the oldest first).
    pub offline_sessions_ended: u64,
    /// Embedded broker: MQTT sessions kept now for clients without a connection.
    pub offline_sessions: u64,
}

/// Reads a running server's counters from anywhere (it lives with the server).
pub use crate::server::MetricsReader;

/// Everything the server counts, at one moment.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Metrics {
    /// The server's counters ([`ServerHandle::stats`](crate::ServerHandle::stats)).
    pub stats: Stats,
    /// Requests by command, outcome and latency; sizes of what the store holds.
    pub requests: RequestMetrics,
    /// Embedded broker: client connections open now (`None` behind `--broker`: the
    /// external broker counts its own).
    pub sessions_online: Option<u64>,
    /// Embedded broker: MQTT sessions kept now for clients without a connection.
    pub sessions_offline: Option<u64>,
    /// The span exporter's counters (`None` without
    /// [`ServerConfig::otlp`](crate::ServerConfig::otlp)).
    pub spans: Option<crate::telemetry::SpanMetrics>,
}

/// The index in [`COMMANDS`] of the command of the request `payload` (a RESP array whose
/// first element is the command), read without decoding the rest.
pub(crate) fn command_of(payload: &[u8]) -> usize {
    let other = COMMANDS.len() - 1;
    let name = (|| {
        // `*N\r\n$L\r\nNAME\r\n…`: the longest name fits in the first 32 bytes.
        let head = &payload[..payload.len().min(32)];
        let rest = head.strip_prefix(b"*")?;
        let rest = &rest[rest.windows(2).position(|w| w == b"\r\n")? + 2..];
        let rest = rest.strip_prefix(b"$")?;
        let digits = rest.windows(2).position(|w| w == b"\r\n")?;
        let len: usize = std::str::from_utf8(&rest[..digits]).ok()?.parse().ok()?;
        rest.get(digits + 2..(digits + 2).checked_add(len)?)
    })();
    // Upper case only, as the service requires (anything else fails as a malformed request).
    name.and_then(|name| COMMANDS[..other].iter().position(|c| c.as_bytes() == name))
        .unwrap_or(other)
}

#[cfg(test)]
mod tests {
    use super::*;
    use mqstate::codec::{Request, SetCondition};

    #[test]
    fn the_command_is_read_from_the_first_element() {
        let set = Request::Set {
            key: &b"k"[..],
            value: &b"v"[..],
            condition: SetCondition::Always,
            expiry_ms: None,
        };
        assert_eq!(COMMANDS[command_of(&set.encode())], "SET");
        assert_eq!(
            COMMANDS[command_of(&Request::Get { key: &b"k"[..] }.encode())],
            "GET"
        );
        assert_eq!(
            COMMANDS[command_of(&Request::Del { key: &b"k"[..] }.encode())],
            "DEL"
        );
        assert_eq!(COMMANDS[command_of(b"*1\r\n$4\r\nSCAN\r\n")], "SCAN");
        assert_eq!(COMMANDS[command_of(b"*1\r\n$4\r\nscan\r\n")], "other");
        for junk in [
            &b""[..],
            b"*",
            b"*1\r\n$99\r\nSET\r\n",
            b"PING",
            b"*1\r\n$4\r\nPING\r\n",
        ] {
            assert_eq!(COMMANDS[command_of(junk)], "other", "{junk:?}");
        }
    }

    #[test]
    fn latencies_land_in_the_first_bucket_that_holds_them() {
        let r = Recorder::default();
        r.request(0, Outcome::Ok, Duration::from_micros(10));
        r.request(0, Outcome::Ok, Duration::from_micros(100));
        r.request(1, Outcome::StoreError, Duration::from_secs(5));
        let m = r.snapshot();
        assert_eq!(m.buckets[0], 1);
        assert_eq!(m.buckets[1], 1, "100 µs is within the 100 µs bucket");
        assert_eq!(m.buckets[LATENCY_BUCKETS.len()], 1, "past every bound");
        assert_eq!(m.requests[0][Outcome::Ok.index()], 2);
        assert_eq!(m.requests[1][Outcome::StoreError.index()], 1);
        assert_eq!(m.total(), 3);
        assert_eq!(m.latency_sum, Duration::from_micros(5_000_110));
    }
}
