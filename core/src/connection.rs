//! The connection: one rumqttc v5 event loop per client, driven by one task, with the traps
//! of rumqttc handled (see `shared/design/toolchain-notes.md`):
//!
//! - TCP_NODELAY on, an explicit maximum packet size, an explicit session expiry, no topic
//!   aliases, and clean start only on the first connection;
//! - reconnection with exponential backoff and jitter (rumqttc alone retries in a hot loop),
//!   credentials and SAT tokens re-read before every attempt;
//! - subscriptions restored after every CONNACK without a session, each waited for by SUBACK;
//! - a CONNACK without a session fails the requests of the lost session at once with
//!   [`ErrorKind::ConnectionLost`] (rumqttc silently drops their publishes);
//! - a `CollisionTimeout` rebuilds the client and event loop instead of livelocking;
//! - the event loop never awaits a publish; closing really closes the socket.

use std::collections::{HashSet, VecDeque};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use bytes::Bytes;
use rumqttc::v5::mqttbytes::QoS;
use rumqttc::v5::mqttbytes::v5::{Filter, Packet, Publish};
use rumqttc::v5::{AsyncClient, ConnectionError, Event, EventLoop, MqttOptions, StateError};
use rumqttc::{Outgoing, TlsConfiguration, Transport};
use tokio::sync::watch;
use tracing::{debug, info, warn};

use crate::error::{Error, ErrorKind};
use crate::observe::Registry;
use crate::rpc::PendingMap;
use crate::settings::{ConnectionSettings, MQTT_MAX_PACKET_SIZE};
use crate::topics;

/// Capacity of the channel between callers and the event loop.
const REQUEST_CHANNEL_CAPACITY: usize = 4096;
/// How long a closing client waits for its DISCONNECT to go out.
const CLOSE_GRACE: Duration = Duration::from_secs(1);

/// The state of the link, watched by callers.
#[derive(Clone, Debug, Default)]
pub(crate) struct Link {
    /// CONNACKs received so far.
    pub(crate) connection: u64,
    /// MQTT sessions begun so far (CONNACKs without a session present).
    pub(crate) session: u64,
    /// Connected now.
    pub(crate) connected: bool,
    /// Filters subscribed (SUBACK received) in the current session.
    pub(crate) acked: HashSet<String>,
    /// Connected with the response topic subscribed: requests may be sent (derived from
    /// `connected` and `acked` by [`Link::refresh_ready`], kept to spare the hot path a
    /// hash lookup).
    pub(crate) ready: bool,
    /// The broker's maximum packet size.
    pub(crate) broker_max_packet: u32,
    /// The last connection failure.
    pub(crate) last_error: Option<Error>,
    /// The client is closing or closed.
    pub(crate) closed: bool,
}

impl Link {
    /// Recomputes `ready` after `connected` or `acked` changed.
    fn refresh_ready(&mut self, response_topic: &str) {
        self.ready = self.connected && !self.closed && self.acked.contains(response_topic);
    }
}

/// Subscriptions wanted, and SUBSCRIBE packets waiting for their packet id and SUBACK.
#[derive(Default)]
struct Subscriptions {
    wanted: Vec<String>,
    /// Filters of SUBSCRIBE requests queued to rumqttc, in order, until their packet id is seen.
    queued: VecDeque<Vec<String>>,
    /// Filters of SUBSCRIBE packets sent, by packet id, until their SUBACK.
    sent: std::collections::HashMap<u16, Vec<String>>,
}

/// What the client handle, the observers and the event loop share.
pub(crate) struct Shared {
    pub(crate) client_id: String,
    pub(crate) response_topic: String,
    pub(crate) notification_filter: String,
    pub(crate) settings: ConnectionSettings,
    pub(crate) pending: PendingMap,
    pub(crate) link: watch::Sender<Link>,
    pub(crate) observers: Registry,
    mqtt: RwLock<AsyncClient>,
    subs: Mutex<Subscriptions>,
}

impl Shared {
    /// The rumqttc handle to publish with (it is replaced when the event loop is rebuilt).
    pub(crate) fn mqtt(&self) -> AsyncClient {
        self.mqtt.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    fn subs(&self) -> std::sync::MutexGuard<'_, Subscriptions> {
        self.subs.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Queues one SUBSCRIBE for `filters`; the caller holds the subscriptions lock so the
    /// queue order is the order rumqttc sends them in.
    fn send_subscribe(&self, subs: &mut Subscriptions, filters: Vec<String>) {
        let packet: Vec<Filter> = filters
            .iter()
            .map(|f| Filter::new(f.clone(), QoS::AtLeastOnce))
            .collect();
        match self.mqtt().try_subscribe_many(packet) {
            Ok(()) => subs.queued.push_back(filters),
            Err(e) => {
                warn!(error = %e, "could not queue a SUBSCRIBE; it is retried at the next connection")
            }
        }
    }

    /// Subscribes `filter` at QoS 1 (once; it is restored after every reconnection) and waits
    /// for its SUBACK in the current session, up to `timeout`.
    pub(crate) async fn subscribe(&self, filter: &str, timeout: Duration) -> Result<(), Error> {
        {
            let mut subs = self.subs();
            if !subs.wanted.iter().any(|f| f == filter) {
                subs.wanted.push(filter.to_owned());
                if self.link.borrow().connected {
                    self.send_subscribe(&mut subs, vec![filter.to_owned()]);
                }
            }
        }
        let mut link = self.link.subscribe();
        let wait = link.wait_for(|l| l.closed || l.acked.contains(filter));
        match tokio::time::timeout(timeout, wait).await {
            Ok(Ok(l)) if !l.closed => Ok(()),
            Ok(_) => Err(Error::new(ErrorKind::Closed, "the client is closed")),
            Err(_) => Err(Error::new(
                ErrorKind::Timeout,
                format!("no SUBACK for {filter:?} within {timeout:?}"),
            )),
        }
    }

    /// Waits until connected with the response topic subscribed; returns the session number.
    pub(crate) async fn ready(&self, timeout: Duration) -> Result<u64, Error> {
        {
            // The common case, without a receiver or a timer.
            let l = self.link.borrow();
            if l.ready {
                return Ok(l.session);
            }
        }
        let mut link = self.link.subscribe();
        let wait = link.wait_for(|l| l.closed || l.ready);
        match tokio::time::timeout(timeout, wait).await {
            Ok(Ok(l)) if !l.closed => Ok(l.session),
            Ok(_) => Err(Error::new(ErrorKind::Closed, "the client is closed")),
            Err(_) => {
                let l = self.link.borrow();
                let why = l
                    .last_error
                    .as_ref()
                    .map_or(String::new(), |e| format!(": {e}"));
                Err(Error::new(
                    ErrorKind::ConnectionLost,
                    format!("not connected to the broker within {timeout:?}{why}"),
                ))
            }
        }
    }

    /// Starts closing: marks the link closed and asks rumqttc to send DISCONNECT.
    pub(crate) fn close(&self) {
        let mut was_closed = false;
        self.link.send_modify(|l| {
            was_closed = l.closed;
            l.closed = true;
            l.ready = false;
        });
        if !was_closed {
            let _ = self.mqtt().try_disconnect();
        }
    }
}

/// Builds the rumqttc options from the settings.
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
    opts.set_connection_timeout(settings.connect_timeout.as_secs().max(1));
    let mut net = rumqttc::NetworkOptions::new();
    net.set_tcp_nodelay(true);
    net.set_connection_timeout(settings.connect_timeout.as_secs().max(1));
    opts.set_network_options(net);
    if let Some(tls) = &settings.tls {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let read = |path: &std::path::Path, what: &str| {
            std::fs::read(path).map_err(|e| {
                Error::invalid_argument(format!("cannot read the {what} {}: {e}", path.display()))
            })
        };
        if tls.key_password_file.is_some() {
            return Err(Error::invalid_argument(
                "encrypted TLS private keys (a key password file) are not supported yet",
            ));
        }
        let ca = match &tls.ca_file {
            Some(path) => read(path, "CA file")?,
            None => {
                return Err(Error::invalid_argument(
                    "TLS needs a CA file (ca_file, AIO_TLS_CA_FILE)",
                ));
            }
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
        opts.set_transport(Transport::tls_with_config(TlsConfiguration::Simple {
            ca,
            alpn: None,
            client_auth,
        }));
    }
    refresh_credentials(&mut opts, settings)?;
    Ok(opts)
}

/// Re-reads the password file and the SAT token file into the options.
fn refresh_credentials(opts: &mut MqttOptions, settings: &ConnectionSettings) -> Result<(), Error> {
    let read = |path: &std::path::Path, what: &str| {
        std::fs::read(path).map_err(|e| {
            Error::new(
                ErrorKind::Connect,
                format!("cannot read the {what} {}: {e}", path.display()),
            )
        })
    };
    let password = match (&settings.password, &settings.password_file) {
        (Some(p), _) => Some(p.clone()),
        (None, Some(path)) => Some(
            String::from_utf8_lossy(&read(path, "password file")?)
                .trim_end()
                .to_owned(),
        ),
        (None, None) => None,
    };
    if settings.username.is_some() || password.is_some() {
        opts.set_credentials(
            settings.username.clone().unwrap_or_default(),
            password.unwrap_or_default(),
        );
    }
    if let Some(path) = &settings.sat_file {
        let token = read(path, "SAT token file")?;
        opts.set_authentication_method(Some("K8S-SAT".to_owned()));
        opts.set_authentication_data(Some(Bytes::from(token)));
    }
    Ok(())
}

impl Shared {
    /// Creates the shared state and the event loop that drives it.
    pub(crate) fn new(
        settings: ConnectionSettings,
        client_id: String,
        response_topic: String,
        observer_capacity: usize,
    ) -> Result<(Arc<Shared>, EventLoop), Error> {
        let opts = mqtt_options(&settings, &client_id)?;
        let (mqtt, eventloop) = AsyncClient::new(opts, REQUEST_CHANNEL_CAPACITY);
        let link = Link {
            broker_max_packet: MQTT_MAX_PACKET_SIZE,
            ..Link::default()
        };
        let shared = Arc::new(Shared {
            notification_filter: topics::notification_filter(&client_id),
            subs: Mutex::new(Subscriptions {
                wanted: vec![response_topic.clone()],
                ..Subscriptions::default()
            }),
            client_id,
            response_topic,
            settings,
            pending: PendingMap::default(),
            link: watch::Sender::new(link),
            observers: Registry::new(observer_capacity),
            mqtt: RwLock::new(mqtt),
        });
        Ok((shared, eventloop))
    }
}

/// Drives the event loop until the client closes.
pub(crate) async fn run(shared: Arc<Shared>, mut eventloop: EventLoop) {
    // One long-lived wait for the close, instead of a new waiter on every event.
    let closed_signal = {
        let mut closed = shared.link.subscribe();
        async move {
            let _ = closed.wait_for(|l| l.closed).await;
        }
    };
    tokio::pin!(closed_signal);
    let mut close_seen = false;
    let mut failures: u32 = 0;
    let mut closing_deadline: Option<tokio::time::Instant> = None;
    loop {
        let polled = tokio::select! {
            biased;
            _ = &mut closed_signal, if !close_seen => {
                close_seen = true;
                if !shared.link.borrow().connected {
                    break;
                }
                closing_deadline = Some(tokio::time::Instant::now() + CLOSE_GRACE);
                continue;
            }
            _ = sleep_until(closing_deadline), if closing_deadline.is_some() => break,
            polled = eventloop.poll() => polled,
        };
        match polled {
            Ok(Event::Incoming(packet)) => {
                on_packet(&shared, &mut eventloop, packet, &mut failures)
            }
            Ok(Event::Outgoing(Outgoing::Subscribe(pkid))) => {
                let mut subs = shared.subs();
                if let Some(filters) = subs.queued.pop_front() {
                    subs.sent.insert(pkid, filters);
                }
            }
            Ok(Event::Outgoing(Outgoing::Disconnect)) if closing_deadline.is_some() => break,
            Ok(Event::Outgoing(_)) => {}
            Err(e) => {
                on_disconnected(&shared, &e);
                if shared.link.borrow().closed {
                    break;
                }
                if matches!(e, ConnectionError::MqttState(StateError::CollisionTimeout)) {
                    eventloop = rebuild(&shared, &eventloop);
                }
                failures = failures.saturating_add(1);
                let delay = backoff(&shared.settings, failures);
                debug!(?delay, failures, "reconnecting after a delay");
                tokio::select! {
                    _ = tokio::time::sleep(delay) => {}
                    _ = &mut closed_signal, if !close_seen => break,
                }
                if let Err(e) = refresh_credentials(&mut eventloop.options, &shared.settings) {
                    warn!(error = %e, "credentials could not be refreshed");
                    shared.link.send_modify(|l| l.last_error = Some(e));
                }
            }
        }
    }
    // Dropping the event loop closes the socket.
    drop(eventloop);
    shared.link.send_modify(|l| {
        l.connected = false;
        l.closed = true;
        l.acked.clear();
        l.ready = false;
    });
    let n = shared
        .pending
        .fail_all(&Error::new(ErrorKind::Closed, "the client was closed"));
    shared.observers.close_all();
    debug!(failed = n, client_id = %shared.client_id, "event loop stopped");
}

async fn sleep_until(deadline: Option<tokio::time::Instant>) {
    match deadline {
        Some(d) => tokio::time::sleep_until(d).await,
        None => std::future::pending().await,
    }
}

fn on_packet(shared: &Shared, eventloop: &mut EventLoop, packet: Packet, failures: &mut u32) {
    match packet {
        Packet::Publish(publish) => dispatch(shared, publish),
        Packet::ConnAck(ack) => {
            *failures = 0;
            let max_packet = ack
                .properties
                .as_ref()
                .and_then(|p| p.max_packet_size)
                .unwrap_or(MQTT_MAX_PACKET_SIZE);
            let mut new_session = false;
            shared.link.send_modify(|l| {
                l.connection += 1;
                new_session = !ack.session_present || l.connection == 1;
                if new_session {
                    l.session += 1;
                    l.acked.clear();
                }
                l.connected = true;
                l.broker_max_packet = max_packet;
                l.last_error = None;
                l.refresh_ready(&shared.response_topic);
            });
            let link = shared.link.borrow().clone();
            info!(
                client_id = %shared.client_id,
                session_present = ack.session_present,
                connection = link.connection,
                "connected"
            );
            if new_session {
                let lost = shared.pending.fail_sessions_before(
                    link.session,
                    &Error::new(
                        ErrorKind::ConnectionLost,
                        "the MQTT session was lost with the request in flight; it may or may not have been applied",
                    ),
                );
                if lost > 0 {
                    warn!(lost, "requests failed: their MQTT session was lost");
                }
            }
            // Reconnections resume the session when the broker kept it.
            if !shared.settings.session_expiry.is_zero() {
                eventloop.options.set_clean_start(false);
            }
            let mut subs = shared.subs();
            subs.queued.clear();
            subs.sent.clear();
            let missing: Vec<String> = subs
                .wanted
                .iter()
                .filter(|f| !link.acked.contains(*f))
                .cloned()
                .collect();
            if !missing.is_empty() {
                shared.send_subscribe(&mut subs, missing);
            }
        }
        Packet::SubAck(ack) => {
            let filters = shared.subs().sent.remove(&ack.pkid).unwrap_or_default();
            shared.link.send_modify(|l| {
                for (filter, code) in filters.into_iter().zip(&ack.return_codes) {
                    match code {
                        rumqttc::v5::mqttbytes::v5::SubscribeReasonCode::Success(_) => {
                            l.acked.insert(filter);
                        }
                        refused => warn!(%filter, ?refused, "the broker refused a subscription"),
                    }
                }
                l.refresh_ready(&shared.response_topic);
            });
        }
        Packet::Disconnect(d) => warn!(reason = ?d.reason_code, "the broker sent DISCONNECT"),
        _ => {}
    }
}

/// Routes a received PUBLISH: a response to its request, a notification to its observers.
fn dispatch(shared: &Shared, publish: Publish) {
    if publish.topic == shared.response_topic.as_bytes() {
        let correlation = publish
            .properties
            .as_ref()
            .and_then(|p| p.correlation_data.clone());
        match correlation {
            Some(id) => {
                if !shared.pending.complete(&id, publish) {
                    debug!("dropped a response nobody waits for (late, duplicate or unknown)");
                }
            }
            None => debug!("dropped a response without correlation data"),
        }
    } else if publish
        .topic
        .starts_with(topics::NOTIFICATION_PREFIX.as_bytes())
    {
        shared.observers.dispatch(&shared.client_id, publish);
    } else {
        debug!(topic = %String::from_utf8_lossy(&publish.topic), "dropped a message on an unexpected topic");
    }
}

fn on_disconnected(shared: &Shared, e: &ConnectionError) {
    let kind = match e {
        ConnectionError::ConnectionRefused(_) => ErrorKind::Connect,
        _ => ErrorKind::ConnectionLost,
    };
    let was_connected = shared.link.borrow().connected;
    shared.link.send_modify(|l| {
        l.connected = false;
        l.ready = false;
        l.last_error = Some(Error::new(
            kind,
            format!(
                "connection to {}:{} failed: {e}",
                shared.settings.host, shared.settings.port
            ),
        ));
    });
    if was_connected && shared.settings.session_expiry.is_zero() {
        // The session ends with the connection: nothing in flight can be answered.
        let session = shared.link.borrow().session;
        shared.pending.fail_sessions_before(
            session + 1,
            &Error::new(ErrorKind::ConnectionLost, "the connection (and its MQTT session) was lost with the request in flight; it may or may not have been applied"),
        );
    }
    if was_connected {
        warn!(error = %e, client_id = %shared.client_id, "connection lost");
    } else {
        debug!(error = %e, "connection attempt failed");
    }
}

/// Replaces a wedged event loop (rumqttc's CollisionTimeout livelock) with a fresh one. Its
/// in-flight publishes are gone, so their requests fail now.
fn rebuild(shared: &Shared, old: &EventLoop) -> EventLoop {
    warn!("rebuilding the MQTT event loop after a collision timeout");
    let (mqtt, eventloop) = AsyncClient::new(old.options.clone(), REQUEST_CHANNEL_CAPACITY);
    *shared.mqtt.write().unwrap_or_else(|e| e.into_inner()) = mqtt;
    shared.pending.fail_all(&Error::new(
        ErrorKind::ConnectionLost,
        "the MQTT event loop was rebuilt with the request in flight",
    ));
    eventloop
}

/// Exponential backoff with jitter: a random delay in [d/2, d], d = min · 2^(n-1) ≤ max.
pub(crate) fn backoff(settings: &ConnectionSettings, failures: u32) -> Duration {
    let exp = failures.saturating_sub(1).min(20);
    let full = settings
        .reconnect_min_delay
        .saturating_mul(1 << exp)
        .min(settings.reconnect_max_delay);
    let half = full / 2;
    half + full.saturating_sub(half).mul_f64(rand::random::<f64>())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_grows_with_jitter_and_caps() {
        let s = ConnectionSettings::default();
        for n in 1..40 {
            let d = backoff(&s, n);
            let full = s
                .reconnect_min_delay
                .saturating_mul(1 << (n - 1).min(20))
                .min(s.reconnect_max_delay);
            assert!(d >= full / 2 && d <= full, "{n}: {d:?} vs {full:?}");
        }
        assert!(backoff(&s, 1) <= s.reconnect_min_delay);
        assert!(backoff(&s, 30) >= s.reconnect_max_delay / 2);
    }
}
