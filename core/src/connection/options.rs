//! From [`ConnectionSettings`] to rumqttc's options: the transport (TLS files read once, at
//! connect), and the credentials (password file and SAT token re-read before every
//! connection attempt).
//!
//! Every file read here runs on a blocking thread (`spawn_blocking`), never on the event
//! loop's task: a slow or hung file system must not stall keep-alives and responses.

use std::path::Path;
use std::time::Duration;

use bytes::Bytes;
use rumqttc::Transport;
use rumqttc::v5::MqttOptions;

use super::REQUEST_CHANNEL_CAPACITY;
use crate::error::{Error, ErrorKind};
use crate::settings::ConnectionSettings;

/// Credentials read from the settings and their files, ready to put into the options.
#[derive(Clone, Default)]
pub(crate) struct Credentials {
    user_password: Option<(String, String)>,
    sat_token: Option<Bytes>,
}

fn read_file(path: &Path, what: &str, kind: ErrorKind) -> Result<Vec<u8>, Error> {
    std::fs::read(path).map_err(|e| {
        Error::new(
            kind,
            format!("cannot read the {what} {}: {e}", path.display()),
        )
    })
}

/// Runs a file-reading closure on a blocking thread.
pub(crate) async fn off_loop<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, Error> + Send + 'static,
) -> Result<T, Error> {
    tokio::task::spawn_blocking(f)
        .await
        .unwrap_or_else(|e| Err(Error::new(ErrorKind::Closed, format!("file reader: {e}"))))
}

impl Credentials {
    /// Reads the password and SAT token files now (blocking: call through [`off_loop`]).
    pub(crate) fn read(settings: &ConnectionSettings) -> Result<Credentials, Error> {
        let password = match (&settings.password, &settings.password_file) {
            (Some(p), _) => Some(p.clone()),
            (None, Some(path)) => Some(
                String::from_utf8_lossy(&read_file(path, "password file", ErrorKind::Connect)?)
                    .trim_end()
                    .to_owned(),
            ),
            (None, None) => None,
        };
        let user_password = (settings.username.is_some() || password.is_some()).then(|| {
            (
                settings.username.clone().unwrap_or_default(),
                password.unwrap_or_default(),
            )
        });
        let sat_token = match &settings.sat_file {
            Some(path) => Some(Bytes::from(read_file(
                path,
                "SAT token file",
                ErrorKind::Connect,
            )?)),
            None => None,
        };
        Ok(Credentials {
            user_password,
            sat_token,
        })
    }

    /// Puts the credentials into the options of the next connection attempt.
    pub(crate) fn apply(&self, opts: &mut MqttOptions) {
        if let Some((user, password)) = &self.user_password {
            opts.set_credentials(user.clone(), password.clone());
        }
        if let Some(token) = &self.sat_token {
            opts.set_authentication_method(Some("K8S-SAT".to_owned()));
            opts.set_authentication_data(Some(token.clone()));
        }
    }
}

/// Builds the rumqttc options from the settings, reading TLS files and credentials
/// (blocking: call through [`off_loop`]).
pub(crate) fn mqtt_options(
    settings: &ConnectionSettings,
    client_id: &str,
) -> Result<MqttOptions, Error> {
    let mut opts = MqttOptions::new(client_id, settings.host.clone(), settings.port);
    opts.set_keep_alive(settings.keep_alive.max(Duration::from_secs(1)));
    opts.set_clean_start(settings.clean_start);
    let expiry = u32::try_from(settings.session_expiry.as_secs()).unwrap_or(u32::MAX);
    opts.set_session_expiry_interval(Some(expiry));
    opts.set_max_packet_size(Some(settings.max_packet_size));
    opts.set_topic_alias_max(None);
    opts.set_request_channel_capacity(REQUEST_CHANNEL_CAPACITY);
    opts.set_outgoing_inflight_upper_limit(crate::envelope::MAX_IN_FLIGHT);
    opts.set_connection_timeout(settings.connect_timeout.as_secs().max(1));
    let mut net = rumqttc::NetworkOptions::new();
    net.set_tcp_nodelay(true);
    // A broker with Nagle's algorithm on (mosquitto's default) holds a response behind our
    // delayed ACK of its PUBACK: acknowledge at once (third_party/rumqttc/PATCHES.md).
    net.set_tcp_quickack(true);
    net.set_connection_timeout(settings.connect_timeout.as_secs().max(1));
    opts.set_network_options(net);
    if let Some(tls) = &settings.tls {
        let read = |path: &Path, what: &str| read_file(path, what, ErrorKind::InvalidArgument);
        if tls.key_password_file.is_some() {
            return Err(Error::new(
                ErrorKind::Unsupported,
                "encrypted TLS private keys (a key password file) are not supported yet",
            ));
        }
        let ca = match &tls.ca_file {
            Some(path) => Some((path.as_path(), read(path, "CA file")?)),
            // Without a CA file: the system's root certificates (crate::tls).
            None => None,
        };
        let client_auth = match (&tls.cert_file, &tls.key_file) {
            (Some(cert), Some(key)) => {
                Some((read(cert, "certificate")?, read(key, "private key")?))
            }
            (None, None) => None,
            _ => {
                return Err(Error::invalid_argument(
                    "a client certificate needs both a cert and a key file",
                ));
            }
        };
        let (config, _roots) = crate::tls::client_config(ca, client_auth)?;
        opts.set_transport(Transport::tls_with_config(config));
    }
    Credentials::read(settings)?.apply(&mut opts);
    Ok(opts)
}
