//! The adapter's MQTT connection (rumqttc v5): options, the poll loop, reconnects with
//! backoff and re-subscription, and learning of client disconnects from mosquitto's
//! `$SYS/broker/log/#` topic.
//!
//! rumqttc traps handled here: `tcp_nodelay` on, the packet size set explicitly, nothing
//! awaited inside the poll loop (subscriptions are sent from a spawned task), a backoff
//! after every connection error, re-subscription after a CONNACK without a session, no
//! topic aliases, and the event loop dropped to close the socket.
//!
//! # Disconnects on an external broker: the limits
//!
//! The store must drop a client's KEYNOTIFY registrations when it disconnects. With the
//! embedded broker this is exact (its disconnect hook). Attached to another broker, the
//! server only learns what that broker publishes:
//!
//! - **mosquitto** with `log_dest topic` (and `log_type notice`, on by default): every
//!   "Client X disconnected…", "closed its connection", "has exceeded timeout", "already
//!   connected, closing old connection" (session takeover) and "Bad socket read/write on
//!   client X" line on `$SYS/broker/log/#` drops X's registrations. The `$SYS` topics must
//!   be readable by the server's user (ACLs), and log lines are QoS 0: one lost while the
//!   server itself is reconnecting leaves stale registrations behind until the client
//!   re-registers or disconnects again. Notifications to such a stale registration go to
//!   a topic nobody subscribes to; they cost a publish each, and nothing is queued.
//! - **other brokers**, or mosquitto without `log_dest topic`: disconnects are not seen.
//!   Registrations then live until `KEYNOTIFY … STOP` or a server restart.
//! - The PUBACK reason "No matching subscribers" is not used: rumqttc reports it without
//!   the packet's topic, so it cannot be tied to a client reliably.
//! - Requests with a forbidden response topic are dropped and logged, but the client
//!   cannot be disconnected (MQTT gives one client no way to disconnect another).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::time::Duration;

use rumqttc::v5::mqttbytes::QoS;
use rumqttc::v5::mqttbytes::v5::{Filter, Packet, SubscribeReasonCode};
use rumqttc::v5::{AsyncClient, ClientError, Event, EventLoop, MqttOptions, Request};
use rumqttc::{NetworkOptions, Transport};
use tokio::sync::mpsc::UnboundedReceiver;
use tokio::sync::watch;

use crate::config::BrokerTarget;
use crate::outbox::{Message, Sink};
use crate::service::{Command, Service};

/// mosquitto publishes its log here with `log_dest topic`.
pub(crate) const SYS_LOG_FILTER: &str = "$SYS/broker/log/#";

/// What the server adds to mosquitto's configuration so it can see client disconnects.
pub const MOSQUITTO_SYS_LOG_LINES: &str = "log_dest topic\nlog_type notice";

/// Whether client disconnects are visible: not known yet.
pub(crate) const DISCONNECTS_UNKNOWN: u8 = 0;
/// Whether client disconnects are visible: yes (embedded broker, or `$SYS` log seen).
pub(crate) const DISCONNECTS_SEEN: u8 = 1;
/// Whether client disconnects are visible: no.
pub(crate) const DISCONNECTS_UNSEEN: u8 = 2;

/// How long the start-up probe waits for the broker's log to mention its connection.
const PROBE_WAIT: Duration = Duration::from_secs(3);

const BACKOFF_MIN: Duration = Duration::from_millis(50);
const BACKOFF_MAX: Duration = Duration::from_secs(5);

/// Builds the client options for `host:port`.
pub(crate) fn options(
    client_id: &str,
    host: &str,
    port: u16,
    target: Option<&BrokerTarget>,
) -> std::io::Result<MqttOptions> {
    let mut options = MqttOptions::new(client_id, host, port);
    options
        .set_keep_alive(Duration::from_secs(30))
        .set_clean_start(true)
        .set_max_packet_size(Some(mqstate::MQTT_MAX_PACKET_SIZE))
        .set_receive_maximum(Some(u16::MAX))
        .set_outgoing_inflight_upper_limit(mqstate::envelope::MAX_IN_FLIGHT)
        .set_topic_alias_max(None);
    if let Some(target) = target {
        if let Some(user) = &target.username {
            options.set_credentials(user.clone(), target.password.clone().unwrap_or_default());
        }
        if target.tls {
            // One TLS set-up with the clients: the CA file, or the system's roots.
            let ca = match &target.ca_file {
                Some(path) => Some((path.as_path(), std::fs::read(path)?)),
                None => None,
            };
            let (config, roots) = mqstate::tls::client_config(ca, None)
                .map_err(|e| std::io::Error::other(e.message().to_owned()))?;
            tracing::debug!(%roots, "TLS to the broker");
            options.set_transport(Transport::tls_with_config(config));
        }
    }
    Ok(options)
}

/// Creates the client and its event loop with `tcp_nodelay` and `tcp_quickack` on.
pub(crate) fn client(mut options: MqttOptions, capacity: usize) -> (AsyncClient, EventLoop) {
    let mut network = NetworkOptions::new();
    network.set_tcp_nodelay(true);
    // Requests arrive behind PUBACKs of the broker's too: acknowledge at once (a broker with
    // Nagle's algorithm on holds them until then; third_party/rumqttc/PATCHES.md).
    network.set_tcp_quickack(true);
    network.set_connection_timeout(5);
    options.set_network_options(network);
    AsyncClient::new(options, capacity.max(1))
}

/// The MQTT client as the outbox's [`Sink`].
#[derive(Clone)]
pub(crate) struct ClientSink(pub(crate) AsyncClient);

impl Sink for ClientSink {
    fn try_send(&self, message: Message) -> Result<(), Message> {
        let Message {
            topic,
            payload,
            properties,
        } = message;
        match self.0.try_publish_with_properties(
            topic,
            QoS::AtLeastOnce,
            false,
            payload,
            properties,
        ) {
            Ok(()) => Ok(()),
            Err(ClientError::TryRequest(Request::Publish(p)))
            | Err(ClientError::Request(Request::Publish(p))) => Err(Message {
                topic: String::from_utf8_lossy(&p.topic).into_owned(),
                payload: p.payload,
                properties: p.properties.unwrap_or_default(),
            }),
            Err(e) => {
                tracing::error!(error = %e, "could not hand a message to the MQTT client");
                Ok(())
            }
        }
    }
}

/// What the poll loop works with.
pub(crate) struct Loop {
    pub(crate) eventloop: EventLoop,
    pub(crate) client: AsyncClient,
    pub(crate) service: Service,
    /// Disconnect events from the embedded broker.
    pub(crate) commands: UnboundedReceiver<Command>,
    pub(crate) filters: Vec<Filter>,
    /// Set once the request subscription is granted, cleared on connection loss.
    pub(crate) ready: watch::Sender<bool>,
    pub(crate) shutdown: watch::Receiver<bool>,
    /// Set when anything arrives on `$SYS/broker/log/#`.
    pub(crate) sys_log_seen: Arc<AtomicBool>,
}

/// Runs the poll loop until `shutdown` flips: serves requests inline, fires expiries on
/// time, applies disconnect events, (re)subscribes after every CONNACK without a
/// session, and sets `ready` once the request subscription is granted.
pub(crate) async fn run(parts: Loop) {
    let Loop {
        mut eventloop,
        client,
        mut service,
        mut commands,
        filters,
        ready,
        mut shutdown,
        sys_log_seen,
    } = parts;
    let mut backoff = BACKOFF_MIN;
    let request_topic = mqstate::topics::REQUEST_TOPIC.as_bytes();
    loop {
        let expiry = service.until_next_expiry();
        let event = tokio::select! {
            _ = shutdown.changed() => break,
            Some(command) = commands.recv() => {
                service.command(command);
                continue;
            }
            () = Service::next_expiry(expiry) => {
                service.expire_due();
                continue;
            }
            event = eventloop.poll() => event,
        };
        match event {
            Ok(Event::Incoming(Packet::Publish(publish))) => {
                if publish.topic == request_topic {
                    service.request(&publish);
                } else if publish.topic.starts_with(b"$SYS/broker/log/") {
                    sys_log_seen.store(true, Ordering::Relaxed);
                    let text = String::from_utf8_lossy(&publish.payload);
                    if let Some(client_id) = parse_sys_log(&text) {
                        service.disconnected(client_id);
                    }
                }
            }
            Ok(Event::Incoming(Packet::ConnAck(ack))) => {
                backoff = BACKOFF_MIN;
                tracing::info!(
                    session_present = ack.session_present,
                    "connected to the broker"
                );
                if !ack.session_present {
                    let client = client.clone();
                    let filters = filters.clone();
                    tokio::spawn(async move {
                        if let Err(e) = client.subscribe_many(filters).await {
                            tracing::error!(error = %e, "could not subscribe");
                        }
                    });
                }
            }
            Ok(Event::Incoming(Packet::SubAck(suback))) => {
                let granted = suback
                    .return_codes
                    .first()
                    .is_some_and(|code| matches!(code, SubscribeReasonCode::Success(_)));
                if granted {
                    ready.send_replace(true);
                } else {
                    tracing::error!(codes = ?suback.return_codes, "the broker refused the request subscription");
                }
                if suback.return_codes.len() > 1
                    && !matches!(suback.return_codes[1], SubscribeReasonCode::Success(_))
                {
                    tracing::warn!(
                        "no $SYS/broker/log subscription: client disconnects will not be seen"
                    );
                }
            }
            Ok(Event::Incoming(Packet::Disconnect(disconnect))) => {
                tracing::warn!(reason = ?disconnect.reason_code, "the broker disconnected the server");
            }
            Ok(_) => {}
            Err(e) => {
                ready.send_replace(false);
                tracing::warn!(error = %e, retry_in = ?backoff, "broker connection failed");
                tokio::select! {
                    _ = shutdown.changed() => break,
                    () = tokio::time::sleep(backoff) => {}
                }
                backoff = (backoff * 2).min(BACKOFF_MAX);
            }
        }
    }
    service.outbox.close();
    service.close();
    // Say goodbye if the connection is up; dropping the event loop closes the socket.
    if client.try_disconnect().is_ok() {
        let _ = tokio::time::timeout(Duration::from_millis(200), async {
            while let Ok(event) = eventloop.poll().await {
                if matches!(event, Event::Outgoing(rumqttc::Outgoing::Disconnect)) {
                    break;
                }
            }
        })
        .await;
    }
}

/// Finds out, once the server is subscribed, whether the external broker publishes client
/// disconnects on `$SYS/broker/log/#`: connects and disconnects a short-lived client with
/// `options` (which the broker logs, with `log_dest topic`), and waits for any log line.
/// Records the answer in `visible` and, if none came, warns with the lines to add to
/// mosquitto's configuration.
pub(crate) async fn probe_sys_log(
    options: MqttOptions,
    seen: Arc<AtomicBool>,
    visible: Arc<AtomicU8>,
) {
    let (client, mut eventloop) = client(options, 4);
    let connected = tokio::time::timeout(PROBE_WAIT, async {
        loop {
            match eventloop.poll().await {
                Ok(Event::Incoming(Packet::ConnAck(_))) => return true,
                Ok(_) => {}
                Err(_) => return false,
            }
        }
    })
    .await
    .unwrap_or(false);
    if connected && client.try_disconnect().is_ok() {
        let _ = tokio::time::timeout(Duration::from_millis(500), async {
            while let Ok(event) = eventloop.poll().await {
                if matches!(event, Event::Outgoing(rumqttc::Outgoing::Disconnect)) {
                    break;
                }
            }
        })
        .await;
    }
    drop(eventloop);
    let deadline = tokio::time::Instant::now() + PROBE_WAIT;
    while !seen.load(Ordering::Relaxed) && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    if seen.load(Ordering::Relaxed) {
        visible.store(DISCONNECTS_SEEN, Ordering::Relaxed);
        tracing::info!(
            "the broker publishes its log on $SYS/broker/log: client disconnects are seen"
        );
    } else {
        visible.store(DISCONNECTS_UNSEEN, Ordering::Relaxed);
        tracing::warn!(
            "nothing arrives on $SYS/broker/log/#: client disconnects are not seen, so \
             KEYNOTIFY registrations outlive their clients and a client reconnecting with \
             the same id gets stale notifications. With mosquitto, add these lines to \
             mosquitto.conf and let the server's user read $SYS/broker/log/#:\n{MOSQUITTO_SYS_LOG_LINES}"
        );
    }
}

/// The subscriptions of the adapter: the request topic, plus mosquitto's log if wanted.
pub(crate) fn filters(watch_sys_log: bool) -> Vec<Filter> {
    let mut filters = vec![Filter::new(
        mqstate::topics::REQUEST_TOPIC,
        QoS::AtLeastOnce,
    )];
    if watch_sys_log {
        filters.push(Filter::new(SYS_LOG_FILTER, QoS::AtMostOnce));
    }
    filters
}

/// Reads a client id out of a mosquitto log line that reports a client's connection
/// ending (`"1700000000: Client foo disconnected."` and its variants); `None` for any
/// other line.
pub(crate) fn parse_sys_log(line: &str) -> Option<&str> {
    let line = line.trim_end();
    // Drop the "<seconds>: " prefix mosquitto puts on every line.
    let line = match line.split_once(": ") {
        Some((stamp, rest)) if stamp.bytes().all(|b| b.is_ascii_digit()) => rest,
        _ => line,
    };
    if let Some(rest) = line.strip_prefix("Bad socket read/write on client ") {
        return rest.rsplit_once(": ").map(|(id, _)| id);
    }
    let rest = line.strip_prefix("Client ")?;
    const ENDINGS: [&str; 6] = [
        " disconnected",
        " closed its connection.",
        " has exceeded timeout, disconnecting.",
        " been disconnected by administrative action.",
        " already connected, closing old connection.",
        " disconnected: ",
    ];
    let cut = ENDINGS.iter().filter_map(|end| rest.rfind(end)).min()?;
    let id = &rest[..cut];
    (!id.is_empty() && id != "<unknown>").then_some(id)
}

#[cfg(test)]
mod tests {
    use super::parse_sys_log;

    #[test]
    fn reads_disconnects_from_the_mosquitto_log() {
        let cases = [
            ("1700000000: Client abc disconnected.", Some("abc")),
            ("Client abc closed its connection.", Some("abc")),
            (
                "1: Client a b has exceeded timeout, disconnecting.",
                Some("a b"),
            ),
            ("1: Client x disconnected: protocol error.", Some("x")),
            (
                "1: Client x disconnected due to malformed packet.",
                Some("x"),
            ),
            (
                "1: Client x already connected, closing old connection.",
                Some("x"),
            ),
            ("1: Bad socket read/write on client x: reset", Some("x")),
            (
                "1: New client connected from 127.0.0.1:5 as x (p5, c1, k30).",
                None,
            ),
            ("1: Client <unknown> closed its connection.", None),
            ("1: Opening ipv4 listen socket on port 1883.", None),
        ];
        for (line, want) in cases {
            assert_eq!(parse_sys_log(line), want, "{line}");
        }
    }
}
