//! How a [`Server`](crate::Server) is set up: where it listens or which broker it attaches
//! to, where persisted keys live, the store's limits, and the bounds on what it queues.

use std::net::SocketAddr;
use std::path::PathBuf;

/// The default of [`ServerConfig::max_offline_sessions`].
pub const DEFAULT_MAX_OFFLINE_SESSIONS: usize = 10_000;

/// The default of [`ServerConfig::max_clients`].
pub const DEFAULT_MAX_CLIENTS: usize = 100_000;

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
    /// [`DEFAULT_SCAN_PAGE_BYTES`](crate::store::DEFAULT_SCAN_PAGE_BYTES) of keys).
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
    /// With the embedded broker: serve the store through an MQTT connection of its own to
    /// the broker (the adapter, as with an external broker) instead of inside the broker's
    /// process. Slower (four loopback crossings per request instead of two); kept to compare
    /// the two paths and to run every suite against both.
    pub embedded_adapter: bool,
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
            scan_page_keys: crate::store::DEFAULT_SCAN_PAGE_KEYS,
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
            embedded_adapter: false,
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
    /// Parses `mqtt://host:port` or `mqtts://host:port` (port defaults to 1883 / 8883).
    pub fn parse(url: &str) -> Result<BrokerTarget, String> {
        let (tls, rest) = if let Some(rest) = url.strip_prefix("mqtt://") {
            (false, rest)
        } else if let Some(rest) = url.strip_prefix("mqtts://") {
            (true, rest)
        } else if let Some(rest) = url.strip_prefix("tcp://") {
            (false, rest)
        } else {
            return Err(format!(
                "broker URL {url:?} must start with mqtt:// or mqtts://"
            ));
        };
        let rest = rest.trim_end_matches('/');
        let default_port = if tls { 8883 } else { 1883 };
        let (host, port_text) = if let Some(bracketed) = rest.strip_prefix('[') {
            let (host, after) = bracketed
                .split_once(']')
                .ok_or_else(|| format!("unclosed [ in broker URL {url:?}"))?;
            (host, after.strip_prefix(':'))
        } else {
            match rest.rsplit_once(':') {
                Some((host, port)) => (host, Some(port)),
                None => (rest, None),
            }
        };
        let port = match port_text {
            Some(text) => text
                .parse::<u16>()
                .map_err(|_| format!("bad port in broker URL {url:?}"))?,
            None => default_port,
        };
        if host.is_empty() {
            return Err(format!("no host in broker URL {url:?}"));
        }
        Ok(BrokerTarget {
            host: host.to_owned(),
            port,
            tls,
            ca_file: None,
            username: None,
            password: None,
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
        assert!(BrokerTarget::parse("http://x").is_err());
        assert!(BrokerTarget::parse("mqtt://h:notaport").is_err());
        assert!(BrokerTarget::parse("mqtt://:1883").is_err());
    }
}
