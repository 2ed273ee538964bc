//! How every client command reaches the store: the connection flags, all of them mapped
//! onto the core's settings table (`ConnectionSettings::set` by name), so the CLI accepts
//! and refuses exactly what the Python, Node and C clients accept.

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;
use mqstate::{Client, ClientOptions, ConnectionSettings, setting_info};

use crate::failure::{CliResult, Failure};

/// Connection flags shared by every client command (`get`, `set`, `watch`, `lock` …).
#[derive(Debug, Args, Clone, Default)]
#[command(next_help_heading = "Connection")]
pub struct ConnArgs {
    /// Broker URL: mqtt://[user[:password]@]host[:port][?setting=value&…] or mqtts://…
    /// [default: mqtt://localhost:1883; ignored with --env]
    #[arg(long, global = true, env = "MQSTATE_URL")]
    pub url: Option<String>,
    /// Read the connection from the Azure IoT Operations variables (AIO_BROKER_HOSTNAME,
    /// AIO_BROKER_TCP_PORT, AIO_MQTT_USE_TLS, AIO_TLS_CA_FILE, AIO_SAT_FILE, …).
    #[arg(long, global = true)]
    pub env: bool,
    /// Broker host (overrides the URL's).
    #[arg(long, global = true, value_name = "HOST")]
    pub host: Option<String>,
    /// Broker port (overrides the URL's).
    #[arg(short = 'p', long, global = true, value_name = "PORT")]
    pub port: Option<String>,
    /// Connect with TLS (also implied by mqtts:// and the TLS file flags).
    #[arg(long, global = true)]
    pub tls: bool,
    /// PEM CA bundle to trust for the broker's certificate (turns TLS on).
    #[arg(long, global = true, value_name = "PATH")]
    pub ca_file: Option<PathBuf>,
    /// PEM client certificate chain (mutual TLS).
    #[arg(long, global = true, value_name = "PATH")]
    pub cert_file: Option<PathBuf>,
    /// PEM private key of the client certificate.
    #[arg(long, global = true, value_name = "PATH")]
    pub key_file: Option<PathBuf>,
    /// MQTT user name.
    #[arg(short = 'u', long, global = true, value_name = "NAME")]
    pub username: Option<String>,
    /// File holding the MQTT password (re-read at every connection).
    #[arg(long, global = true, value_name = "PATH")]
    pub password_file: Option<PathBuf>,
    /// Kubernetes service account token file (K8S-SAT enhanced authentication).
    #[arg(long, global = true, value_name = "PATH")]
    pub sat_file: Option<PathBuf>,
    /// MQTT client id (default: generated).
    #[arg(long, global = true, value_name = "ID")]
    pub client_id: Option<String>,
    /// How long connecting may take, with its unit: 250ms, 1.5s, 2m (default 10s).
    #[arg(long, global = true, value_name = "DURATION", value_parser = duration_arg, allow_hyphen_values = true)]
    pub connect_timeout: Option<Duration>,
    /// How long a request waits for the store's answer, with its unit: 250ms, 1.5s, 2m
    /// (default 10s).
    #[arg(long, global = true, value_name = "DURATION", value_parser = duration_arg, allow_hyphen_values = true)]
    pub timeout: Option<Duration>,
    /// Any setting of the core's table by name, e.g. -o keep_alive=30s -o
    /// key_password_file=PATH -o response_topic=T (repeatable; see `mqstate settings`;
    /// durations need their unit, as every duration of the command line).
    #[arg(short = 'o', long = "option", global = true, value_name = "NAME=VALUE")]
    pub options: Vec<String>,
}

/// What the connection flags resolve to.
#[derive(Debug, Clone)]
pub struct Target {
    /// The connection.
    pub settings: ConnectionSettings,
    /// Client-side settings (request timeout, response topic, observer capacity).
    pub options: ClientOptions,
    /// `mqtt://host:port` for messages.
    pub display: String,
}

const DEFAULT_URL: &str = "mqtt://localhost:1883";

/// Every duration of the command line: a number with its unit (`250ms`, `1.5s`, `2m`),
/// parsed by the core ([`mqstate::parse_duration_with_unit`]). A bare number is refused
/// (Node and C read one as milliseconds, Python as seconds), and so is a negative one.
pub fn duration_arg(text: &str) -> Result<Duration, String> {
    mqstate::parse_duration_with_unit(text).map_err(|e| e.message().to_owned())
}

fn path_text(p: &std::path::Path) -> CliResult<&str> {
    p.to_str()
        .ok_or_else(|| Failure::usage(format!("path {} is not valid UTF-8", p.display())))
}

impl ConnArgs {
    /// Resolves the flags: `--env` or the URL first, then each flag, then `-o` items, all
    /// through the core's settings table.
    pub fn target(&self) -> CliResult<Target> {
        let bad = |e: mqstate::Error| Failure::usage(e.message().to_owned());
        let mut settings = if self.env {
            ConnectionSettings::from_env().map_err(bad)?
        } else {
            ConnectionSettings::from_url(self.url.as_deref().unwrap_or(DEFAULT_URL)).map_err(bad)?
        };
        let mut named: Vec<(&str, String)> = Vec::new();
        if let Some(h) = &self.host {
            named.push(("host", h.clone()));
        }
        if let Some(p) = &self.port {
            named.push(("port", p.clone()));
        }
        if self.tls {
            named.push(("use_tls", "true".into()));
        }
        for (name, path) in [
            ("ca_file", &self.ca_file),
            ("cert_file", &self.cert_file),
            ("key_file", &self.key_file),
            ("password_file", &self.password_file),
            ("sat_file", &self.sat_file),
        ] {
            if let Some(p) = path {
                named.push((name, path_text(p)?.to_owned()));
            }
        }
        if let Some(u) = &self.username {
            named.push(("username", u.clone()));
        }
        if let Some(c) = &self.client_id {
            named.push(("client_id", c.clone()));
        }
        // The duration flags are parsed already (with their unit): given to the core's
        // table as milliseconds.
        if let Some(t) = &self.connect_timeout {
            named.push(("connect_timeout", format!("{}ms", t.as_secs_f64() * 1e3)));
        }
        if let Some(t) = &self.timeout {
            named.push(("request_timeout", format!("{}ms", t.as_secs_f64() * 1e3)));
        }
        for item in &self.options {
            let (name, value) = item.split_once('=').ok_or_else(|| {
                Failure::usage(format!(
                    "-o {item:?}: expected NAME=VALUE (see `mqstate settings`)"
                ))
            })?;
            let name = name.trim();
            if setting_info(name).is_ok_and(|i| i.value == mqstate::SettingType::Duration) {
                duration_arg(value).map_err(|e| Failure::usage(format!("-o {name}: {e}")))?;
            }
            named.push((name, value.to_owned()));
        }
        let mut options = ClientOptions::default();
        for (name, value) in named {
            let info = setting_info(name).map_err(bad)?;
            if !info.client_side {
                settings.set(name, &value).map_err(bad)?;
                continue;
            }
            match name {
                "request_timeout" => {
                    let t = mqstate::parse_duration(name, &value).map_err(bad)?;
                    if t.is_zero() {
                        return Err(Failure::usage("the request timeout must be positive"));
                    }
                    options.request_timeout = t;
                }
                "observer_capacity" => {
                    options.observer_capacity = mqstate::parse_count(name, &value).map_err(bad)?
                }
                "response_topic" => options.response_topic = Some(value),
                other => return Err(Failure::usage(format!("setting {other} is not supported"))),
            }
        }
        settings.validate().map_err(bad)?;
        let scheme = if settings.tls.is_some() {
            "mqtts"
        } else {
            "mqtt"
        };
        let display = format!("{scheme}://{}:{}", settings.host, settings.port);
        Ok(Target {
            settings,
            options,
            display,
        })
    }
}

impl Target {
    /// Connects, with the failure classified (refused, timed out, unauthorised, TLS).
    pub async fn connect(&self) -> CliResult<Client> {
        Client::connect_with(self.settings.clone(), self.options.clone())
            .await
            .map_err(|e| self.fail(&e))
    }

    /// Classifies an error of a call on this target.
    pub fn fail(&self, e: &mqstate::Error) -> Failure {
        Failure::from_core(e, &self.display)
    }
}
