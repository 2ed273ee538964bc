//! The adapter's MQTT connection (rumqttc v5): options, the poll loop, reconnects with
//! backoff and re-subscription, and learning of client disconnects from mosquitto's
//! `$SYS/broker/log/#` topic.
//!
//! rumqttc traps handled here: `tcp_nodelay` on, the packet size set explicitly, nothing
//! awaited inside the poll loop (subscriptions are sent from a spawned task), a backoff
//! after every connection error, re-subscription after a CONNACK without a session, no
//! topic aliases, and the event loop dropped to close the socket.

use std::sync::mpsc::Sender;
use std::time::Duration;

use rumqttc::v5::mqttbytes::QoS;
use rumqttc::v5::mqttbytes::v5::{Filter, Packet, SubscribeReasonCode};
use rumqttc::v5::{AsyncClient, ClientError, Event, EventLoop, MqttOptions, Request};
use rumqttc::{NetworkOptions, Transport};
use tokio::sync::watch;

use crate::config::BrokerTarget;
use crate::outbox::{Message, Sink};
use crate::service::Command;

/// The largest packet the adapter accepts or sends (rumqttc caps incoming at 10 KiB
/// unless told otherwise).
pub(crate) const MAX_PACKET_SIZE: u32 = 256 * 1024 * 1024;

/// mosquitto publishes its log here with `log_dest topic`.
pub(crate) const SYS_LOG_FILTER: &str = "$SYS/broker/log/#";

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
        .set_max_packet_size(Some(MAX_PACKET_SIZE))
        .set_receive_maximum(Some(u16::MAX))
        .set_topic_alias_max(None);
    if let Some(target) = target {
        if let Some(user) = &target.username {
            options.set_credentials(user.clone(), target.password.clone().unwrap_or_default());
        }
        if target.tls {
            let transport = match &target.ca_file {
                Some(path) => Transport::tls(std::fs::read(path)?, None, None),
                None => Transport::tls_with_default_config(),
            };
            options.set_transport(transport);
        }
    }
    Ok(options)
}

/// Creates the client and its event loop with `tcp_nodelay` on.
pub(crate) fn client(mut options: MqttOptions, capacity: usize) -> (AsyncClient, EventLoop) {
    let mut network = NetworkOptions::new();
    network.set_tcp_nodelay(true);
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

/// Runs the poll loop until `shutdown` flips: forwards requests and disconnects to the
/// store thread, (re)subscribes after every CONNACK without a session, and sets `ready`
/// once the request subscription is granted.
pub(crate) async fn run(
    mut eventloop: EventLoop,
    client: AsyncClient,
    commands: Sender<Command>,
    filters: Vec<Filter>,
    ready: watch::Sender<bool>,
    mut shutdown: watch::Receiver<bool>,
) {
    let mut backoff = BACKOFF_MIN;
    let request_topic = mqstate::topics::REQUEST_TOPIC.as_bytes();
    loop {
        let event = tokio::select! {
            _ = shutdown.changed() => break,
            event = eventloop.poll() => event,
        };
        match event {
            Ok(Event::Incoming(Packet::Publish(publish))) => {
                if publish.topic == request_topic {
                    if commands.send(Command::Request(publish)).is_err() {
                        break;
                    }
                } else if publish.topic.starts_with(b"$SYS/broker/log/") {
                    let text = String::from_utf8_lossy(&publish.payload);
                    if let Some(client_id) = parse_sys_log(&text) {
                        let _ = commands.send(Command::Disconnected(client_id.to_owned()));
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
