//! Who may connect to the embedded broker, and — with `--acl` — what they may do there.
//!
//! Clients configured for Azure IoT Operations connect unchanged:
//!
//! - MQTT 5 enhanced authentication with method `K8S-SAT` is accepted with any token, or
//!   only with a token listed in a file (one per line);
//! - a user name and password are accepted as they come, or checked against a file of
//!   `user:password` lines (then a user name is required);
//! - no credentials at all stay accepted unless a password file is given (plain loopback is
//!   the default).
//!
//! The server's own connection authenticates with its client id as user name and a secret
//! generated at start, so these rules never lock it out.
//!
//! **Authorization (`--acl`).** Without it anyone on the port may subscribe to `#` and read
//! every value and every client's notifications, or publish forged responses. With it a
//! client may publish only to the request topic, and subscribe only within its own
//! namespace — `clients/{its id}/…` (its response topics) and its notification topics
//! `clients/statestore/v1/{service}/{HEX(its id)}/command/notify/…` — plus whatever topic
//! filters the operator allows (`acl_allow`).

use std::collections::{HashMap, HashSet};
use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::path::Path;
use std::pin::Pin;
use std::sync::{Arc, Mutex};

use mqtt5::broker::auth::{AuthProvider, AuthResult, EnhancedAuthResult};
use mqtt5::error::Result as MqttResult;
use mqtt5::packet::connect::ConnectPacket;
use mqtt5::protocol::v5::reason_codes::ReasonCode;

use mqstate::topics::filter_matches;

/// The enhanced authentication method of Azure IoT Operations (a Kubernetes service
/// account token in the authentication data).
pub const SAT_METHOD: &str = "K8S-SAT";

/// The embedded broker's authentication and authorization.
pub(crate) struct Gate {
    /// Accepted SAT tokens; `None` accepts any.
    tokens: Option<HashSet<Vec<u8>>>,
    /// Accepted user names and passwords; `None` accepts any (or none).
    passwords: Option<HashMap<String, Vec<u8>>>,
    acl: bool,
    allow: Vec<String>,
    server_user: String,
    server_secret: Vec<u8>,
    /// Where each client id last connected from (read at its connect).
    peers: Peers,
}

/// The address each client id authenticated from, until its connect takes it.
pub(crate) type Peers = Arc<Mutex<HashMap<String, SocketAddr>>>;

/// At most this many addresses wait for their connect (refused attempts leave theirs).
const MAX_PEERS: usize = 10_000;

/// What [`Gate::new`] needs.
pub(crate) struct GateConfig<'a> {
    pub(crate) sat_token_file: Option<&'a Path>,
    pub(crate) password_file: Option<&'a Path>,
    pub(crate) acl: bool,
    pub(crate) acl_allow: &'a [String],
    /// The server's own user name (its client id) and secret.
    pub(crate) server_user: &'a str,
    pub(crate) server_secret: &'a str,
}

fn lines(path: &Path) -> io::Result<Vec<String>> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", path.display())))?;
    Ok(text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(str::to_owned)
        .collect())
}

impl Gate {
    /// Reads the token and password files.
    pub(crate) fn new(config: &GateConfig<'_>) -> io::Result<Gate> {
        let tokens = match config.sat_token_file {
            Some(path) => Some(lines(path)?.into_iter().map(String::into_bytes).collect()),
            None => None,
        };
        let passwords = match config.password_file {
            Some(path) => {
                let mut map = HashMap::new();
                for line in lines(path)? {
                    let (user, password) = line.split_once(':').ok_or_else(|| {
                        io::Error::new(
                            io::ErrorKind::InvalidData,
                            format!("{}: lines must be user:password", path.display()),
                        )
                    })?;
                    map.insert(user.to_owned(), password.as_bytes().to_vec());
                }
                Some(map)
            }
            None => None,
        };
        Ok(Gate {
            tokens,
            passwords,
            acl: config.acl,
            allow: config.acl_allow.to_vec(),
            server_user: config.server_user.to_owned(),
            server_secret: config.server_secret.as_bytes().to_vec(),
            peers: Peers::default(),
        })
    }

    /// Where clients connected from, as the broker's connect events need it.
    pub(crate) fn peers(&self) -> Peers {
        Arc::clone(&self.peers)
    }

    fn check_password(&self, connect: &ConnectPacket) -> AuthResult {
        let password = connect.password.as_deref().unwrap_or_default();
        // The server's client id is its session in the router (the store in process, or
        // the adapter's connection): taking it over would divert every request.
        if connect.client_id == self.server_user
            && connect.username.as_deref() != Some(&self.server_user)
        {
            tracing::warn!(client_id = %connect.client_id, "refused: the server's own client id");
            return AuthResult::fail(ReasonCode::ClientIdentifierNotValid);
        }
        match connect.username.as_deref() {
            Some(user) if user == self.server_user => {
                if password == self.server_secret.as_slice() {
                    AuthResult::success_with_user(user)
                } else {
                    AuthResult::fail(ReasonCode::BadUsernameOrPassword)
                }
            }
            user => match (&self.passwords, user) {
                (None, Some(user)) => AuthResult::success_with_user(user),
                (None, None) => AuthResult::success(),
                (Some(passwords), Some(user))
                    if passwords
                        .get(user)
                        .is_some_and(|p| p.as_slice() == password) =>
                {
                    AuthResult::success_with_user(user)
                }
                (Some(_), _) => AuthResult::fail(ReasonCode::BadUsernameOrPassword),
            },
        }
    }

    fn is_server(&self, user_id: Option<&str>) -> bool {
        user_id == Some(self.server_user.as_str())
    }

    /// With `--acl`: may `client_id` publish to `topic`?
    pub(crate) fn may_publish(&self, client_id: &str, user_id: Option<&str>, topic: &str) -> bool {
        if !self.acl || self.is_server(user_id) || topic == mqstate::topics::REQUEST_TOPIC {
            return true;
        }
        let allowed = self.allow.iter().any(|f| filter_matches(f, topic));
        if !allowed {
            tracing::warn!(client_id, topic, "--acl: publish refused");
        }
        allowed
    }

    /// With `--acl`: may `client_id` subscribe to `filter`?
    pub(crate) fn may_subscribe(
        &self,
        client_id: &str,
        user_id: Option<&str>,
        filter: &str,
    ) -> bool {
        if !self.acl || self.is_server(user_id) {
            return true;
        }
        let own_namespace = format!("clients/{client_id}/");
        let own_notifications = mqstate::topics::notification_filter(client_id);
        let own_notifications = own_notifications.trim_end_matches('+');
        // A client id with a wildcard would make its "own" namespace match everyone's.
        let plain_id = !client_id.is_empty() && !client_id.contains(['+', '#']);
        let allowed = (plain_id && filter.starts_with(&own_namespace))
            || filter.starts_with(own_notifications)
            || self
                .allow
                .iter()
                .any(|a| a == filter || filter_matches(a, filter));
        if !allowed {
            tracing::warn!(client_id, filter, "--acl: subscription refused");
        }
        allowed
    }
}

impl AuthProvider for Gate {
    fn authenticate<'a>(
        &'a self,
        connect: &'a ConnectPacket,
        client_addr: SocketAddr,
    ) -> Pin<Box<dyn Future<Output = MqttResult<AuthResult>> + Send + 'a>> {
        let result = self.check_password(connect);
        if !connect.client_id.is_empty() {
            let mut peers = self.peers.lock().unwrap_or_else(|p| p.into_inner());
            if peers.len() >= MAX_PEERS {
                peers.clear();
            }
            peers.insert(connect.client_id.clone(), client_addr);
        }
        Box::pin(async move { Ok(result) })
    }

    fn authorize_publish<'a>(
        &'a self,
        client_id: &str,
        user_id: Option<&'a str>,
        topic: &'a str,
    ) -> Pin<Box<dyn Future<Output = bool> + Send + 'a>> {
        let allowed = self.may_publish(client_id, user_id, topic);
        Box::pin(async move { allowed })
    }

    fn authorize_subscribe<'a>(
        &'a self,
        client_id: &str,
        user_id: Option<&'a str>,
        topic_filter: &'a str,
    ) -> Pin<Box<dyn Future<Output = bool> + Send + 'a>> {
        let allowed = self.may_subscribe(client_id, user_id, topic_filter);
        Box::pin(async move { allowed })
    }

    fn supports_enhanced_auth(&self) -> bool {
        true
    }

    fn authenticate_enhanced<'a>(
        &'a self,
        auth_method: &'a str,
        auth_data: Option<&'a [u8]>,
        client_id: &'a str,
    ) -> Pin<Box<dyn Future<Output = MqttResult<EnhancedAuthResult>> + Send + 'a>> {
        let result = if auth_method != SAT_METHOD {
            EnhancedAuthResult::fail(auth_method, ReasonCode::BadAuthenticationMethod)
        } else if client_id == self.server_user {
            tracing::warn!(client_id, "refused: the server's own client id");
            EnhancedAuthResult::fail(auth_method, ReasonCode::ClientIdentifierNotValid)
        } else {
            // Token files end with a newline more often than not: compare trimmed.
            let token = auth_data.unwrap_or_default().trim_ascii();
            let accepted = self
                .tokens
                .as_ref()
                .is_none_or(|tokens| tokens.contains(token));
            if accepted {
                EnhancedAuthResult::success_with_user(auth_method, format!("sat:{client_id}"))
            } else {
                tracing::warn!(client_id, "K8S-SAT token refused");
                EnhancedAuthResult::fail(auth_method, ReasonCode::NotAuthorized)
            }
        };
        Box::pin(async move { Ok(result) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gate(acl: bool) -> Gate {
        Gate::new(&GateConfig {
            sat_token_file: None,
            password_file: None,
            acl,
            acl_allow: &["public/#".to_owned()],
            server_user: "srv",
            server_secret: "s3",
        })
        .unwrap()
    }

    #[test]
    fn acl_confines_clients_to_their_own_topics() {
        let g = gate(true);
        let req = mqstate::topics::REQUEST_TOPIC;
        assert!(g.may_publish("a", None, req));
        assert!(!g.may_publish("a", None, &mqstate::topics::response_topic("b")));
        assert!(g.may_publish("a", None, "public/x"));
        assert!(g.may_publish("srv-id", Some("srv"), "anything"));
        assert!(g.may_subscribe("a", None, &mqstate::topics::response_topic("a")));
        assert!(g.may_subscribe("a", None, &mqstate::topics::notification_filter("a")));
        assert!(!g.may_subscribe("a", None, &mqstate::topics::notification_filter("b")));
        assert!(!g.may_subscribe("a", None, "#"));
        assert!(!g.may_subscribe("a", None, "clients/#"));
        assert!(!g.may_subscribe("a", None, &mqstate::topics::response_topic("ab")));
        assert!(g.may_subscribe("a", None, "public/x"));
        assert!(!g.may_subscribe("+", None, &mqstate::topics::response_topic("+")));
        let open = gate(false);
        assert!(open.may_subscribe("a", None, "#"));
    }
}
