//! How to reach the broker: [`ConnectionSettings`], built in code, from a `mqtt://` /
//! `mqtts://` URL, or from the Azure IoT Operations environment variables.

mod table;

use std::path::PathBuf;
use std::time::Duration;

use crate::error::Error;

pub use table::{
    SETTINGS, SettingInfo, SettingType, parse_bool, parse_count, parse_duration,
    parse_duration_with_unit, setting_info,
};

/// TLS settings. Certificates and keys are PEM files.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TlsSettings {
    /// CA bundle to trust to verify the broker; `None` trusts the system's root
    /// certificates (as a web browser does; [`crate::tls`]).
    pub ca_file: Option<PathBuf>,
    /// Client certificate chain, for mutual TLS.
    pub cert_file: Option<PathBuf>,
    /// The client certificate's private key (unencrypted PEM).
    pub key_file: Option<PathBuf>,
    /// A password for the private key. Encrypted keys are not supported yet: setting this
    /// makes connecting fail with a clear error rather than a confusing TLS failure.
    pub key_password_file: Option<PathBuf>,
}

/// Everything needed to connect to an MQTT 5 broker.
///
/// Defaults: port 1883 (8883 with TLS), a generated client id, keep-alive 60 s, clean start
/// on the first connection, a session expiry of 1 hour (so a short outage keeps the session
/// and in-flight requests), 256 MiB maximum incoming packet size.
///
/// Every field can also be set by name ([`ConnectionSettings::set`], the names of
/// [`SETTINGS`]). `Debug` never shows the password.
#[derive(Clone, PartialEq, Eq)]
pub struct ConnectionSettings {
    /// Broker host name or address.
    pub host: String,
    /// Broker port.
    pub port: u16,
    /// MQTT client id; generated (`mqstate-<random>`) when `None`.
    pub client_id: Option<String>,
    /// MQTT keep-alive.
    pub keep_alive: Duration,
    /// Clean start on the first connection. Reconnections always ask to resume the session.
    ///
    /// Note: mosquitto 2.0 does not save a session that began with clean start to its
    /// persistence file, so such a session does not survive a restart of mosquitto itself;
    /// set `false` where that matters.
    pub clean_start: bool,
    /// How long the broker keeps the session after a disconnect. Zero means the session ends
    /// with the connection (every reconnection is then a new session).
    pub session_expiry: Duration,
    /// TLS; `None` is plain TCP.
    pub tls: Option<TlsSettings>,
    /// User name.
    pub username: Option<String>,
    /// Password (prefer `password_file`).
    pub password: Option<String>,
    /// A file holding the password, re-read at every connection attempt.
    pub password_file: Option<PathBuf>,
    /// A Kubernetes service account token file for MQTT 5 enhanced authentication (method
    /// `K8S-SAT`), re-read at every connection attempt so rotated tokens are picked up.
    pub sat_file: Option<PathBuf>,
    /// The largest packet this client accepts (announced to the broker). Values larger than
    /// the broker's own maximum are refused before sending.
    pub max_packet_size: u32,
    /// How long a connection attempt may take.
    pub connect_timeout: Duration,
    /// First delay between reconnection attempts; doubles up to `reconnect_max_delay`, with
    /// jitter.
    pub reconnect_min_delay: Duration,
    /// Longest delay between reconnection attempts.
    pub reconnect_max_delay: Duration,
}

impl std::fmt::Debug for ConnectionSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConnectionSettings")
            .field("host", &self.host)
            .field("port", &self.port)
            .field("client_id", &self.client_id)
            .field("keep_alive", &self.keep_alive)
            .field("clean_start", &self.clean_start)
            .field("session_expiry", &self.session_expiry)
            .field("tls", &self.tls)
            .field("username", &self.username)
            .field("password", &self.password.as_ref().map(|_| "<redacted>"))
            .field("password_file", &self.password_file)
            .field("sat_file", &self.sat_file)
            .field("max_packet_size", &self.max_packet_size)
            .field("connect_timeout", &self.connect_timeout)
            .field("reconnect_min_delay", &self.reconnect_min_delay)
            .field("reconnect_max_delay", &self.reconnect_max_delay)
            .finish()
    }
}

pub use crate::envelope::MQTT_MAX_PACKET_SIZE;

impl Default for ConnectionSettings {
    fn default() -> Self {
        ConnectionSettings {
            host: "localhost".into(),
            port: 1883,
            client_id: None,
            keep_alive: Duration::from_secs(60),
            clean_start: true,
            session_expiry: Duration::from_secs(3600),
            tls: None,
            username: None,
            password: None,
            password_file: None,
            sat_file: None,
            max_packet_size: MQTT_MAX_PACKET_SIZE,
            connect_timeout: Duration::from_secs(10),
            reconnect_min_delay: Duration::from_millis(50),
            reconnect_max_delay: Duration::from_secs(10),
        }
    }
}

/// The URL schemes a broker URL may have, and whether each means TLS: `mqtt` and `mqtts`,
/// with `tcp` and `ssl` as their aliases (the spellings of Paho and other MQTT tools).
pub const URL_SCHEMES: [(&str, bool); 4] = [
    ("mqtt", false),
    ("mqtts", true),
    ("tcp", false),
    ("ssl", true),
];

/// What a broker URL's scheme must be, as every refusal says it.
pub const URL_SCHEME_RULE: &str =
    "a broker URL starts with mqtt:// or mqtts:// (TLS); tcp:// and ssl:// are their aliases";

impl ConnectionSettings {
    /// Settings for `host:port`, everything else default.
    pub fn new(host: impl Into<String>, port: u16) -> Self {
        ConnectionSettings {
            host: host.into(),
            port,
            ..Default::default()
        }
    }

    /// Parses `mqtt://[user[:password]@]host[:port][?name=value&…]` or `mqtts://…` (TLS,
    /// default port 8883). `tcp://` and `ssl://` are aliases of `mqtt://` and `mqtts://`
    /// ([`URL_SCHEMES`]); any other scheme is refused with [`URL_SCHEME_RULE`]. Query items
    /// are any settings of [`SETTINGS`] (for example `client_id=ID`, `ca_file=PATH`,
    /// `keep_alive=30`).
    pub fn from_url(url: &str) -> Result<Self, Error> {
        let bad = |why: &str| Error::invalid_argument(format!("invalid broker URL {url:?}: {why}"));
        let (scheme, rest) = url.split_once("://").ok_or_else(|| bad(URL_SCHEME_RULE))?;
        let tls = URL_SCHEMES
            .iter()
            .find(|(name, _)| scheme.eq_ignore_ascii_case(name))
            .map(|(_, tls)| *tls)
            .ok_or_else(|| bad(URL_SCHEME_RULE))?;
        let (authority, query) = match rest.split_once('?') {
            Some((a, q)) => (a, Some(q)),
            None => (rest, None),
        };
        let authority = authority.trim_end_matches('/');
        let (userinfo, hostport) = match authority.rsplit_once('@') {
            Some((u, h)) => (Some(u), h),
            None => (None, authority),
        };
        let (host, port) = split_host_port(hostport).map_err(&bad)?;
        let mut settings =
            ConnectionSettings::new(host, port.unwrap_or(if tls { 8883 } else { 1883 }));
        if tls {
            settings.tls = Some(TlsSettings::default());
        }
        if let Some(userinfo) = userinfo {
            let (user, password) = match userinfo.split_once(':') {
                Some((u, p)) => (u, Some(p)),
                None => (userinfo, None),
            };
            settings.username = Some(user.to_owned());
            settings.password = password.map(str::to_owned);
        }
        for pair in query.unwrap_or("").split('&').filter(|p| !p.is_empty()) {
            let (name, value) = pair
                .split_once('=')
                .ok_or_else(|| bad("query item without '='"))?;
            settings.set(name, value).map_err(|e| bad(e.message()))?;
        }
        Ok(settings)
    }

    /// Reads the Azure IoT Operations variables (`AIO_BROKER_HOSTNAME`,
    /// `AIO_BROKER_TCP_PORT`, `AIO_MQTT_USE_TLS`, `AIO_TLS_CA_FILE`, `AIO_MQTT_CLEAN_START`,
    /// `AIO_MQTT_KEEP_ALIVE` (seconds), `AIO_MQTT_CLIENT_ID`, `AIO_MQTT_SESSION_EXPIRY`
    /// (seconds), `AIO_MQTT_USERNAME`, `AIO_MQTT_PASSWORD_FILE`, `AIO_TLS_CERT_FILE`,
    /// `AIO_TLS_KEY_FILE`, `AIO_TLS_KEY_PASSWORD_FILE`, `AIO_SAT_FILE`).
    /// `AIO_BROKER_HOSTNAME` is required; a malformed value is an error naming the variable.
    pub fn from_env() -> Result<Self, Error> {
        Self::from_lookup(|name| std::env::var(name).ok())
    }

    /// [`ConnectionSettings::from_env`] over any variable lookup (for tests and embedding).
    pub fn from_lookup(get: impl Fn(&str) -> Option<String>) -> Result<Self, Error> {
        let var = |name: &str| get(name).filter(|v| !v.trim().is_empty());
        let host = var("AIO_BROKER_HOSTNAME")
            .ok_or_else(|| Error::invalid_argument("AIO_BROKER_HOSTNAME is not set"))?;
        let mut s = ConnectionSettings::new(host, 0);
        // TLS is on unless AIO_MQTT_USE_TLS says otherwise; it is applied last so that
        // `false` wins over the TLS file variables.
        let mut use_tls = "true".to_owned();
        for row in SETTINGS.iter().filter(|r| r.name != "host") {
            let (Some(env), false) = (row.env, row.client_side) else {
                continue;
            };
            let Some(value) = var(env) else { continue };
            if row.name == "use_tls" {
                use_tls = value;
                continue;
            }
            s.set(row.name, value.trim())
                .map_err(|e| Error::invalid_argument(format!("{env}: {}", e.message())))?;
        }
        s.set("use_tls", &use_tls)
            .map_err(|e| Error::invalid_argument(format!("AIO_MQTT_USE_TLS: {}", e.message())))?;
        if var("AIO_BROKER_TCP_PORT").is_none() {
            s.port = if s.tls.is_some() { 8883 } else { 1883 };
        }
        s.validate()?;
        Ok(s)
    }

    /// Checks the settings for values the broker or the protocol cannot take.
    pub fn validate(&self) -> Result<(), Error> {
        if self.host.is_empty() {
            return Err(Error::invalid_argument("the broker host must not be empty"));
        }
        if let Some(id) = &self.client_id
            && (id.is_empty() || id.len() > 65_535 || id.contains(['+', '#', '/', '\0']))
        {
            return Err(Error::invalid_argument(format!(
                "client id {id:?} must be 1..65535 bytes without '+', '#', '/' or NUL"
            )));
        }
        if self.keep_alive > Duration::from_secs(u64::from(u16::MAX)) {
            return Err(Error::invalid_argument(
                "keep-alive must be at most 65535 s",
            ));
        }
        if self.max_packet_size < 1024 || self.max_packet_size > MQTT_MAX_PACKET_SIZE {
            return Err(Error::invalid_argument(format!(
                "max_packet_size must be between 1024 and {MQTT_MAX_PACKET_SIZE}"
            )));
        }
        if self.password.is_some() && self.password_file.is_some() {
            return Err(Error::invalid_argument(
                "give a password or a password file, not both",
            ));
        }
        if self.reconnect_min_delay.is_zero() || self.reconnect_min_delay > self.reconnect_max_delay
        {
            return Err(Error::invalid_argument(
                "reconnect delays must satisfy 0 < min <= max",
            ));
        }
        Ok(())
    }
}

fn split_host_port(hostport: &str) -> Result<(String, Option<u16>), &'static str> {
    let (host, port) = if let Some(rest) = hostport.strip_prefix('[') {
        let (host, after) = rest.split_once(']').ok_or("unclosed '[' in host")?;
        (host, after.strip_prefix(':'))
    } else {
        match hostport.rsplit_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (hostport, None),
        }
    };
    if host.is_empty() {
        return Err("no host");
    }
    let port = port
        .map(|p| p.parse::<u16>().map_err(|_| "invalid port"))
        .transpose()?;
    Ok((host.to_owned(), port))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    #[test]
    fn urls() {
        let s = ConnectionSettings::from_url("mqtt://localhost:1884").unwrap();
        assert_eq!(
            (s.host.as_str(), s.port, s.tls.is_some()),
            ("localhost", 1884, false)
        );
        let s =
            ConnectionSettings::from_url("mqtts://u:p@[::1]?client_id=c1&ca_file=/ca.pem").unwrap();
        assert_eq!((s.host.as_str(), s.port), ("::1", 8883));
        assert_eq!(s.username.as_deref(), Some("u"));
        assert_eq!(s.password.as_deref(), Some("p"));
        assert_eq!(s.client_id.as_deref(), Some("c1"));
        assert_eq!(s.tls.unwrap().ca_file, Some(PathBuf::from("/ca.pem")));
        for (alias, tls) in [
            ("tcp://h:1", false),
            ("ssl://h:1", true),
            ("MQTTS://h", true),
        ] {
            let s = ConnectionSettings::from_url(alias).unwrap();
            assert_eq!(s.tls.is_some(), tls, "{alias}");
        }
        for refused in ["http://x", "localhost:1883", "ws://x"] {
            let err = ConnectionSettings::from_url(refused).unwrap_err();
            assert!(err.message().contains(URL_SCHEME_RULE), "{err}");
        }
        for bad in [
            "localhost:1883",
            "http://x",
            "mqtt://:1883",
            "mqtt://h:99999",
            "mqtt://h?x=1",
        ] {
            let err = ConnectionSettings::from_url(bad).unwrap_err();
            assert_eq!(err.kind(), crate::ErrorKind::InvalidArgument, "{bad}");
        }
    }

    #[test]
    fn aio_environment() {
        let env: HashMap<&str, &str> = [
            ("AIO_BROKER_HOSTNAME", "aio-broker"),
            ("AIO_BROKER_TCP_PORT", "18883"),
            ("AIO_MQTT_USE_TLS", "true"),
            ("AIO_TLS_CA_FILE", "/var/run/certs/ca.crt"),
            ("AIO_MQTT_CLEAN_START", "false"),
            ("AIO_MQTT_KEEP_ALIVE", "30"),
            ("AIO_MQTT_CLIENT_ID", "app-1"),
            ("AIO_MQTT_SESSION_EXPIRY", "600"),
            ("AIO_SAT_FILE", "/var/run/secrets/tokens/mq-sat"),
        ]
        .into_iter()
        .collect();
        let s = ConnectionSettings::from_lookup(|k| env.get(k).map(|v| v.to_string())).unwrap();
        assert_eq!((s.host.as_str(), s.port), ("aio-broker", 18883));
        assert!(!s.clean_start);
        assert_eq!(s.keep_alive, Duration::from_secs(30));
        assert_eq!(s.session_expiry, Duration::from_secs(600));
        assert_eq!(s.client_id.as_deref(), Some("app-1"));
        assert_eq!(
            s.tls.unwrap().ca_file,
            Some(PathBuf::from("/var/run/certs/ca.crt"))
        );
        assert_eq!(
            s.sat_file,
            Some(PathBuf::from("/var/run/secrets/tokens/mq-sat"))
        );

        let err = ConnectionSettings::from_lookup(|_| None).unwrap_err();
        assert!(err.message().contains("AIO_BROKER_HOSTNAME"));
        let err = ConnectionSettings::from_lookup(|k| match k {
            "AIO_BROKER_HOSTNAME" => Some("h".into()),
            "AIO_MQTT_KEEP_ALIVE" => Some("soon".into()),
            _ => None,
        })
        .unwrap_err();
        assert!(err.message().contains("AIO_MQTT_KEEP_ALIVE"), "{err}");
    }
}
