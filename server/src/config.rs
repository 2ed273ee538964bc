//! How a [`Server`](crate::Server) is set up: where it listens or which broker it attaches
//! to, where persisted keys live, the store's limits, and the bounds on what it queues.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

pub use crate::journal::Fsync;

/// The default of [`ServerConfig::max_offline_sessions`].
pub const DEFAULT_MAX_OFFLINE_SESSIONS: usize = 10_000;

/// The default of [`ServerConfig::max_clients`].
pub const DEFAULT_MAX_CLIENTS: usize = 100_000;

/// The default of [`ServerConfig::dedup_window`]: longer than any request's time to live.
pub const DEFAULT_DEDUP_WINDOW: Duration = crate::dedup::DEFAULT_WINDOW;

/// The default of [`ServerConfig::dedup_max_answers`].
pub const DEFAULT_DEDUP_MAX_ANSWERS: usize = crate::dedup::DEFAULT_MAX_ANSWERS;

/// What one answer kept for duplicates costs at most, in bytes (see `docs/server.md`,
/// "Memory").
pub const DEDUP_BYTES_PER_ANSWER: usize = crate::dedup::BYTES_PER_ANSWER;

/// The default of [`ServerHandle::shutdown_within`](crate::ServerHandle::shutdown_within)
/// (and of `mqstate serve --shutdown-timeout`).
pub const DEFAULT_SHUTDOWN_TIMEOUT: Duration = Duration::from_secs(10);

/// Everything [`Server::start`](crate::Server::start) needs.
#[derive(Clone, Debug)]
pub struct ServerConfig {
    /// Where the embedded broker listens (port 0 picks a free port). Ignored with
    /// [`broker`](Self::broker).
    pub listen: SocketAddr,
    /// Attach to this existing broker instead of embedding one.
    pub broker: Option<BrokerTarget>,
    /// Keep keys SET with `aio-persistence: true` in this directory across restarts;
    /// `None` keeps everything in memory.
    pub data_dir: Option<PathBuf>,
    /// The key quota; `None` is unlimited.
    pub max_keys: Option<usize>,
    /// SCAN: the most keys one page holds (pages also stop at
    /// [`DEFAULT_SCAN_PAGE_BYTES`](crate::state_machine::DEFAULT_SCAN_PAGE_BYTES) of keys).
    pub scan_page_keys: usize,
    /// The service clock's node id.
    pub node_id: String,
    /// The MQTT client id the adapter connects with; `None` generates
    /// `mqstate-server-<uuid>`.
    pub client_id: Option<String>,
    /// How many notifications may wait for one client before the oldest are dropped
    /// (see [`outbox`](crate::outbox)).
    pub notify_queue_limit: usize,
    /// How many responses may wait for the broker before the oldest are dropped.
    pub response_queue_limit: usize,
    /// Capacity of the MQTT client's request channel (outgoing publishes not yet written).
    pub mqtt_channel_capacity: usize,
    /// Let debug logs show values (they show keys, escaped, and lengths otherwise).
    pub log_values: bool,
    /// Embedded broker: how many bytes of messages may wait for one client that does not
    /// read (beyond a short delivery lane) before its oldest messages are dropped. Bounds
    /// what one stalled subscriber can make the process hold.
    pub client_queue_bytes: usize,
    /// Embedded broker: how many MQTT sessions may be kept without a connection (clients
    /// gone without ending their session, each kept for its session expiry); past it, the
    /// sessions disconnected longest ago end first. Bounds what abandoned clients can make
    /// the process hold.
    pub max_offline_sessions: usize,
    /// Embedded broker: how many clients may be connected at once, in all and from one
    /// address; a connection beyond it is closed at once (the broker logs why).
    pub max_clients: usize,
    /// Embedded broker: accept `K8S-SAT` enhanced authentication only with a token listed
    /// in this file (one per line); `None` accepts any token.
    pub sat_token_file: Option<PathBuf>,
    /// Embedded broker: require a user name and password listed in this file
    /// (`user:password` lines); `None` accepts any credentials, or none.
    pub password_file: Option<PathBuf>,
    /// Embedded broker: clients may publish only to the request topic and subscribe only
    /// to their own response and notification topics (plus [`acl_allow`](Self::acl_allow)).
    pub acl: bool,
    /// With [`acl`](Self::acl): topic filters every client may also publish and subscribe to.
    pub acl_allow: Vec<String>,
    /// Embedded broker: listen with TLS (on [`listen`](Self::listen)).
    pub tls: Option<TlsFiles>,
    /// With [`data_dir`](Self::data_dir): when the persistence log is fsynced, so what an
    /// acknowledged persistent write survives ([`Fsync`]; the default, [`Fsync::Always`],
    /// survives power loss).
    pub fsync: Fsync,
    /// How long the answer to a write is kept, so that a request delivered twice is answered
    /// again rather than applied again. Shorter than the clients' request timeout, a late
    /// redelivery may be applied twice.
    pub dedup_window: Duration,
    /// How many such answers are kept at most (the oldest go first); each costs at most
    /// [`DEDUP_BYTES_PER_ANSWER`] bytes.
    pub dedup_max_answers: usize,
    /// With the embedded broker: serve the store through an MQTT connection of its own to
    /// the broker (the adapter, as with an external broker) instead of inside the broker's
    /// process. Slower (four loopback crossings per request instead of two); kept to compare
    /// the two paths and to run every suite against both.
    pub embedded_adapter: bool,
    /// Export a span per request over OTLP/HTTP ([`crate::telemetry`]); `None` (the
    /// default) exports nothing and costs one branch per request.
    pub otlp: Option<crate::telemetry::OtlpConfig>,
    /// Report every request, notification, connect and disconnect to this live event stream
    /// ([`crate::monitor`]; the console of `mqstate serve --http`). Pass the same monitor
    /// again to a restarted server and its viewers go on. `None` (the default) reports
    /// nothing; with a monitor nobody watches, a request pays one atomic load.
    pub monitor: Option<crate::monitor::Monitor>,
}

/// The embedded broker's TLS files (PEM).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TlsFiles {
    /// The server certificate chain.
    pub cert: PathBuf,
    /// Its private key.
    pub key: PathBuf,
    /// CA certificates for client certificates: set, clients must present one (mutual TLS).
    pub client_ca: Option<PathBuf>,
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            listen: SocketAddr::from(([127, 0, 0, 1], 1883)),
            broker: None,
            data_dir: None,
            max_keys: None,
            scan_page_keys: crate::state_machine::DEFAULT_SCAN_PAGE_KEYS,
            node_id: "StateStore".to_owned(),
            client_id: None,
            notify_queue_limit: 1024,
            response_queue_limit: 65_536,
            mqtt_channel_capacity: 256,
            log_values: false,
            client_queue_bytes: 16 * 1024 * 1024,
            max_offline_sessions: DEFAULT_MAX_OFFLINE_SESSIONS,
            max_clients: DEFAULT_MAX_CLIENTS,
            sat_token_file: None,
            password_file: None,
            acl: false,
            acl_allow: Vec::new(),
            tls: None,
            fsync: Fsync::Always,
            dedup_window: DEFAULT_DEDUP_WINDOW,
            dedup_max_answers: DEFAULT_DEDUP_MAX_ANSWERS,
            embedded_adapter: false,
            otlp: None,
            monitor: None,
        }
    }
}

impl ServerConfig {
    /// A configuration that embeds a broker on `127.0.0.1` at a free port: what tests use.
    pub fn ephemeral() -> ServerConfig {
        ServerConfig {
            listen: SocketAddr::from(([127, 0, 0, 1], 0)),
            ..ServerConfig::default()
        }
    }
}

/// An existing broker to attach to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BrokerTarget {
    /// Host name or address.
    pub host: String,
    /// TCP port.
    pub port: u16,
    /// Connect with TLS (`mqtts://`).
    pub tls: bool,
    /// A PEM file of CA certificates to trust with TLS; `None` uses the system roots.
    pub ca_file: Option<PathBuf>,
    /// User name for the CONNECT packet.
    pub username: Option<String>,
    /// Password for the CONNECT packet (needs a user name).
    pub password: Option<String>,
    /// Subscribe `$SYS/broker/log/#` to learn of client disconnects (mosquitto with
    /// `log_dest topic`).
    pub watch_sys_log: bool,
}

impl BrokerTarget {
    /// Parses a broker URL the way every mqstate client does
    /// ([`mqstate::ConnectionSettings::from_url`]: `mqtt://host:port` or `mqtts://host:port`,
    /// `tcp://` and `ssl://` as their aliases, port 1883 / 8883 by default), taking its
    /// host, port, TLS, user name, password and `ca_file`.
    pub fn parse(url: &str) -> Result<BrokerTarget, String> {
        let settings =
            mqstate::ConnectionSettings::from_url(url).map_err(|e| e.message().to_owned())?;
        Ok(BrokerTarget {
            tls: settings.tls.is_some(),
            ca_file: settings.tls.and_then(|t| t.ca_file),
            host: settings.host,
            port: settings.port,
            username: settings.username,
            password: settings.password,
            watch_sys_log: true,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_broker_urls() {
        let t = BrokerTarget::parse("mqtt://127.0.0.1:1884").unwrap();
        assert_eq!((t.host.as_str(), t.port, t.tls), ("127.0.0.1", 1884, false));
        let t = BrokerTarget::parse("mqtts://broker.local").unwrap();
        assert_eq!(
            (t.host.as_str(), t.port, t.tls),
            ("broker.local", 8883, true)
        );
        let t = BrokerTarget::parse("mqtt://[::1]:1883").unwrap();
        assert_eq!((t.host.as_str(), t.port), ("::1", 1883));
        assert_eq!(BrokerTarget::parse("mqtt://[::1]").unwrap().port, 1883);
        // One rule with the clients: tcp:// and ssl:// are aliases, others are refused
        // with the same words.
        assert!(!BrokerTarget::parse("tcp://h").unwrap().tls);
        assert!(BrokerTarget::parse("ssl://h").unwrap().tls);
        let refused = BrokerTarget::parse("http://x").unwrap_err();
        assert!(refused.contains(mqstate::URL_SCHEME_RULE), "{refused}");
        assert!(BrokerTarget::parse("mqtt://h:notaport").is_err());
        assert!(BrokerTarget::parse("mqtt://:1883").is_err());
    }
}
