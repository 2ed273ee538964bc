//! Settings by name: one table of every setting a caller can give, with its environment
//! variable (Azure IoT Operations) where it has one, and one parser per value type. The URL
//! query, [`ConnectionSettings::from_env`], [`ConnectionSettings::set`] and the bindings
//! (C's `mqstate_settings_set`, Python keyword arguments, JavaScript option objects, Kotlin
//! builders) all go through it, so every language accepts and refuses the same values with
//! the same messages.
//!
//! Value syntax: durations are seconds (`"30"`, `"0.25"`) or carry a unit (`"250ms"`,
//! `"1.5s"`, `"2m"`); booleans are `true`/`false`/`1`/`0`/`yes`/`no` in any case; paths and
//! texts are taken as given.

use std::path::PathBuf;
use std::time::Duration;

use super::{ConnectionSettings, TlsSettings};
use crate::error::Error;

/// The type of a setting's value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SettingType {
    /// Free text.
    Text,
    /// A file path.
    Path,
    /// `true` / `false`.
    Bool,
    /// A whole number.
    Count,
    /// A duration.
    Duration,
}

impl SettingType {
    /// The type's name in every binding's settings table: `text`, `path`, `bool`, `count`,
    /// `duration`.
    pub fn name(self) -> &'static str {
        match self {
            SettingType::Text => "text",
            SettingType::Path => "path",
            SettingType::Bool => "bool",
            SettingType::Count => "count",
            SettingType::Duration => "duration",
        }
    }
}

/// One row of [`SETTINGS`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SettingInfo {
    /// The name (snake_case; each binding adapts only the casing).
    pub name: &'static str,
    /// The Azure IoT Operations environment variable, if any.
    pub env: Option<&'static str>,
    /// The value's type.
    pub value: SettingType,
    /// Whether it belongs to the connection ([`ConnectionSettings`]) or to the client
    /// (request timeout, observer capacity, response topic).
    pub client_side: bool,
    /// One line for people.
    pub description: &'static str,
}

const fn conn(
    name: &'static str,
    env: Option<&'static str>,
    value: SettingType,
    description: &'static str,
) -> SettingInfo {
    SettingInfo {
        name,
        env,
        value,
        client_side: false,
        description,
    }
}

const fn client(name: &'static str, value: SettingType, description: &'static str) -> SettingInfo {
    SettingInfo {
        name,
        env: None,
        value,
        client_side: true,
        description,
    }
}

/// Every setting, connection settings first.
#[rustfmt::skip]
pub const SETTINGS: [SettingInfo; 28] = {
    use SettingType as T;
    [
        conn("host", Some("AIO_BROKER_HOSTNAME"), T::Text, "broker host name or address"),
        conn("port", Some("AIO_BROKER_TCP_PORT"), T::Count, "broker port (default 1883, 8883 with TLS)"),
        conn("use_tls", Some("AIO_MQTT_USE_TLS"), T::Bool, "connect with TLS"),
        conn("ca_file", Some("AIO_TLS_CA_FILE"), T::Path, "PEM CA bundle to trust (turns TLS on)"),
        conn("cert_file", Some("AIO_TLS_CERT_FILE"), T::Path, "PEM client certificate chain for mutual TLS"),
        conn("key_file", Some("AIO_TLS_KEY_FILE"), T::Path, "PEM private key of the client certificate"),
        conn("key_password_file", Some("AIO_TLS_KEY_PASSWORD_FILE"), T::Path, "password of an encrypted key (not supported yet)"),
        conn("client_id", Some("AIO_MQTT_CLIENT_ID"), T::Text, "MQTT client id (generated when absent)"),
        conn("keep_alive", Some("AIO_MQTT_KEEP_ALIVE"), T::Duration, "MQTT keep-alive (default 60 s)"),
        conn("clean_start", Some("AIO_MQTT_CLEAN_START"), T::Bool, "clean start on the first connection (default true)"),
        conn("session_expiry", Some("AIO_MQTT_SESSION_EXPIRY"), T::Duration, "how long the broker keeps the session (default 1 h)"),
        conn("username", Some("AIO_MQTT_USERNAME"), T::Text, "MQTT user name"),
        conn("password", None, T::Text, "MQTT password (prefer password_file)"),
        conn("password_file", Some("AIO_MQTT_PASSWORD_FILE"), T::Path, "file holding the password, re-read at every connection"),
        conn("sat_file", Some("AIO_SAT_FILE"), T::Path, "Kubernetes SAT token file (K8S-SAT auth), re-read at every connection"),
        conn("max_packet_size", None, T::Count, "largest packet accepted, in bytes"),
        conn("connect_timeout", None, T::Duration, "how long a connection attempt may take (default 10 s)"),
        conn("reconnect_min_delay", None, T::Duration, "first delay between reconnection attempts (default 50 ms)"),
        conn("reconnect_max_delay", None, T::Duration, "longest delay between reconnection attempts (default 10 s)"),
        client("request_timeout", T::Duration, "default time a call waits for its answer (default 10 s)"),
        client("observer_capacity", T::Count, "notifications buffered per observer before the oldest are dropped"),
        client("response_topic", T::Text, "the response topic (default clients/<id>/services/statestore/_any_/command/invoke/response)"),
        client("cache", T::Bool, "a client-side cache of values read, kept fresh by notifications (default false; every cache_ setting turns it on)"),
        client("cache_keys", T::Text, "the keys cached: glob patterns separated by commas (blanks around each trimmed), a comma inside one written \\, (default *: every key read)"),
        client("cache_max_entries", T::Count, "the most entries cached, least recently read out first (default 10000)"),
        client("cache_max_bytes", T::Count, "the most key and value bytes cached (default 67108864: 64 MiB)"),
        client("cache_max_staleness", T::Duration, "while disconnected, how long after the cut cached entries may still answer (default 0: go to the store)"),
        client("cache_freshness", T::Duration, "the most a cached read may lag the store, in any failure: the freshness lease's bound (default 1 s, at least 10 ms)"),
    ]
};

/// The row of `name`, or an error listing the known names.
pub fn setting_info(name: &str) -> Result<&'static SettingInfo, Error> {
    SETTINGS.iter().find(|s| s.name == name).ok_or_else(|| {
        let known: Vec<&str> = SETTINGS.iter().map(|s| s.name).collect();
        Error::invalid_argument(format!(
            "unknown setting {name:?} (known: {})",
            known.join(", ")
        ))
    })
}

fn invalid(name: &str, value: &str, want: &str) -> Error {
    Error::invalid_argument(format!("setting {name}={value:?} is not {want}"))
}

/// Parses a boolean setting value.
pub fn parse_bool(name: &str, value: &str) -> Result<bool, Error> {
    match value.trim().to_ascii_lowercase().as_str() {
        "true" | "1" | "yes" | "on" => Ok(true),
        "false" | "0" | "no" | "off" => Ok(false),
        _ => Err(invalid(name, value, "a boolean (true or false)")),
    }
}

/// The units a duration's text may carry, with their length in seconds (`ms` before `m`,
/// `s`: the first suffix that matches is the unit).
const DURATION_UNITS: [(&str, f64); 3] = [("ms", 0.001), ("s", 1.0), ("m", 60.0)];

/// The text of a duration split into its number and its unit's scale (`None`: no unit).
fn duration_parts(value: &str) -> (&str, Option<f64>) {
    let v = value.trim();
    DURATION_UNITS
        .iter()
        .find_map(|(unit, scale)| v.strip_suffix(unit).map(|n| (n.trim(), Some(*scale))))
        .unwrap_or((v, None))
}

/// Seconds times `scale` as a duration; `Err` holds why the text is not one.
fn duration_of(number: &str, scale: f64) -> Result<Duration, &'static str> {
    let seconds: f64 = number
        .parse()
        .ok()
        .filter(|s: &f64| s.is_finite())
        .ok_or("not a duration")?;
    if seconds < 0.0 {
        return Err("a duration must not be negative");
    }
    Duration::try_from_secs_f64(seconds * scale).map_err(|_| "out of range")
}

/// Parses a duration setting value (seconds, or with a unit `ms`, `s`, `m`).
pub fn parse_duration(name: &str, value: &str) -> Result<Duration, Error> {
    let (number, scale) = duration_parts(value);
    duration_of(number, scale.unwrap_or(1.0)).map_err(|why| match why {
        "out of range" => invalid(name, value, "a duration in range"),
        _ => invalid(name, value, "a duration (seconds, or 250ms / 1.5s / 2m)"),
    })
}

/// Parses a duration that must carry its unit (`250ms`, `1.5s`, `2m`), as the command line
/// takes them: a bare number is refused, because Node and C read bare numbers as
/// milliseconds and Python as seconds, so `2000` alone would mean two things. The message
/// does not name the option (the caller does).
pub fn parse_duration_with_unit(value: &str) -> Result<Duration, Error> {
    let (number, scale) = duration_parts(value);
    let Some(scale) = scale else {
        let shown = value.trim();
        let message = if shown.parse::<f64>().is_ok_and(|n| n < 0.0) {
            format!("{shown:?}: a duration must not be negative")
        } else if shown.parse::<f64>().is_ok() {
            format!(
                "{shown:?} has no unit: write {shown}ms, {shown}s or {shown}m (a bare number \
                 is refused: it would be seconds here and milliseconds in Node and C)"
            )
        } else {
            format!("{shown:?} is not a duration (a number with a unit: 250ms, 1.5s, 2m)")
        };
        return Err(Error::invalid_argument(message));
    };
    duration_of(number, scale).map_err(|why| {
        let why = match why {
            "not a duration" => "is not a duration (a number with a unit: 250ms, 1.5s, 2m)",
            "out of range" => "is out of range",
            other => other,
        };
        let sep = if why.starts_with("is ") { " " } else { ": " };
        Error::invalid_argument(format!("{:?}{sep}{why}", value.trim()))
    })
}

/// Parses a whole-number setting value.
pub fn parse_count<T: std::str::FromStr>(name: &str, value: &str) -> Result<T, Error> {
    value
        .trim()
        .parse()
        .map_err(|_| invalid(name, value, "a whole number in range"))
}

fn tls(s: &mut ConnectionSettings) -> &mut TlsSettings {
    s.tls.get_or_insert_with(TlsSettings::default)
}

impl ConnectionSettings {
    /// Sets the connection setting `name` (a row of [`SETTINGS`] that is not client-side)
    /// from its text `value`. Values are checked one by one here and together by
    /// [`ConnectionSettings::validate`].
    pub fn set(&mut self, name: &str, value: &str) -> Result<(), Error> {
        let info = setting_info(name)?;
        if info.client_side {
            return Err(Error::invalid_argument(format!(
                "{name} is a client setting, not a connection setting"
            )));
        }
        let path = || Some(PathBuf::from(value));
        match name {
            "host" => {
                if value.is_empty() {
                    return Err(invalid(name, value, "a host name"));
                }
                self.host = value.to_owned();
            }
            "port" => self.port = parse_count(name, value)?,
            "use_tls" => {
                if parse_bool(name, value)? {
                    tls(self);
                } else {
                    self.tls = None;
                }
            }
            "ca_file" => tls(self).ca_file = path(),
            "cert_file" => tls(self).cert_file = path(),
            "key_file" => tls(self).key_file = path(),
            "key_password_file" => tls(self).key_password_file = path(),
            "client_id" => self.client_id = Some(value.to_owned()),
            "keep_alive" => self.keep_alive = parse_duration(name, value)?,
            "clean_start" => self.clean_start = parse_bool(name, value)?,
            "session_expiry" => self.session_expiry = parse_duration(name, value)?,
            "username" => self.username = Some(value.to_owned()),
            "password" => self.password = Some(value.to_owned()),
            "password_file" => self.password_file = path(),
            "sat_file" => self.sat_file = path(),
            "max_packet_size" => self.max_packet_size = parse_count(name, value)?,
            "connect_timeout" => {
                let t = parse_duration(name, value)?;
                if t.is_zero() {
                    return Err(Error::invalid_argument("connect_timeout must be positive"));
                }
                self.connect_timeout = t;
            }
            "reconnect_min_delay" => self.reconnect_min_delay = parse_duration(name, value)?,
            "reconnect_max_delay" => self.reconnect_max_delay = parse_duration(name, value)?,
            _ => unreachable!("every connection row of SETTINGS is handled"),
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_connection_row_is_settable_and_names_are_unique() {
        let mut names = std::collections::HashSet::new();
        for row in SETTINGS {
            assert!(names.insert(row.name), "{}", row.name);
            let sample = match row.value {
                SettingType::Text => "x",
                SettingType::Path => "/tmp/x",
                SettingType::Bool => "true",
                SettingType::Count => "2048",
                SettingType::Duration => "1.5s",
            };
            let mut s = ConnectionSettings::default();
            assert_eq!(
                s.set(row.name, sample).is_ok(),
                !row.client_side,
                "{}",
                row.name
            );
        }
        let err = ConnectionSettings::default().set("hots", "x").unwrap_err();
        assert!(err.message().contains("known: host"), "{err}");
    }

    #[test]
    fn a_duration_with_its_unit_refuses_bare_and_negative_numbers() {
        assert_eq!(
            parse_duration_with_unit("250ms").unwrap(),
            Duration::from_millis(250)
        );
        assert_eq!(
            parse_duration_with_unit(" 1.5s").unwrap(),
            Duration::from_millis(1500)
        );
        assert_eq!(
            parse_duration_with_unit("2m").unwrap(),
            Duration::from_secs(120)
        );
        let bare = parse_duration_with_unit("2000").unwrap_err();
        assert!(bare.message().contains("2000ms, 2000s or 2000m"), "{bare}");
        for negative in ["-1", "-1s", "-250ms"] {
            let e = parse_duration_with_unit(negative).unwrap_err();
            assert!(e.message().contains("must not be negative"), "{e}");
        }
        for bad in ["", "s", "soon", "nans", "1e400s"] {
            assert!(parse_duration_with_unit(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn values_parse_one_way_everywhere() {
        assert_eq!(
            parse_duration("t", "250ms").unwrap(),
            Duration::from_millis(250)
        );
        assert_eq!(
            parse_duration("t", "1.5").unwrap(),
            Duration::from_millis(1500)
        );
        assert_eq!(parse_duration("t", "2m").unwrap(), Duration::from_secs(120));
        for bad in ["", "-1", "soon", "nan", "1e400"] {
            assert!(parse_duration("t", bad).is_err(), "{bad}");
        }
        assert!(parse_bool("b", "YES").unwrap());
        assert!(!parse_bool("b", "False").unwrap());
        assert!(parse_bool("b", "maybe").is_err());
        let mut s = ConnectionSettings::default();
        assert!(s.set("port", "65536").is_err());
        s.set("ca_file", "/ca.pem").unwrap();
        assert!(s.tls.is_some());
        s.set("use_tls", "false").unwrap();
        assert!(s.tls.is_none());
    }
}
