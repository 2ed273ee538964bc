//! A raw rumqttc v5 client that speaks the state store protocol by hand (not through the
//! mqstate client), so the server is checked independently of the client.
//!
//! ```no_run
//! # async fn demo(port: u16) -> anyhow::Result<()> {
//! use mqstate_tests::raw::{RawClient, RequestOptions, resp};
//! let mut client = RawClient::connect("127.0.0.1", port, "tester").await?;
//! let answer = client.request(resp(&[b"GET", b"k"]), RequestOptions::default()).await?;
//! assert_eq!(answer.status(), Some("200"));
//! # Ok(()) }
//! ```

use std::collections::VecDeque;
use std::time::Duration;

use anyhow::{Context, bail};
use bytes::Bytes;
use mqstate::envelope::{self, property};
use mqstate::topics;
use rumqttc::NetworkOptions;
use rumqttc::v5::mqttbytes::QoS;
use rumqttc::v5::mqttbytes::v5::{Filter, Packet, Publish, PublishProperties};
use rumqttc::v5::{AsyncClient, Event, MqttOptions};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

/// How long a request waits for its response before the test fails.
pub const RESPONSE_TIMEOUT: Duration = Duration::from_secs(10);

/// What the client's connection reports besides messages.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Signal {
    /// A message arrived.
    Message(Box<Publish>),
    /// The connection ended (the broker closed it or it failed).
    Closed(String),
}

/// A connected raw client, subscribed to its response topic and notification filter.
pub struct RawClient {
    client: AsyncClient,
    id: String,
    incoming: mpsc::UnboundedReceiver<Signal>,
    stash: VecDeque<Publish>,
    closed: Option<String>,
    task: Option<JoinHandle<()>>,
}

/// How [`RawClient::request`] builds the request envelope; the defaults are what the
/// official SDKs send.
#[derive(Clone, Debug)]
pub struct RequestOptions {
    /// Publish at this QoS.
    pub qos: QoS,
    /// Override the response topic (`Some(None)` sends none).
    pub response_topic: Option<Option<String>>,
    /// Send no correlation data.
    pub no_correlation: bool,
    /// `__ts`; `None` sends the current time with the client id as node.
    pub timestamp: Option<String>,
    /// `__ft`.
    pub fencing_token: Option<String>,
    /// `aio-persistence: true`.
    pub persist: bool,
    /// Send `__srcId` (default true).
    pub src_id: bool,
    /// Extra user properties, appended.
    pub extra: Vec<(String, String)>,
}

impl Default for RequestOptions {
    fn default() -> Self {
        RequestOptions {
            qos: QoS::AtLeastOnce,
            response_topic: None,
            no_correlation: false,
            timestamp: None,
            fencing_token: None,
            persist: false,
            src_id: true,
            extra: Vec::new(),
        }
    }
}

/// A response as received.
#[derive(Clone, Debug)]
pub struct RawResponse {
    /// The whole PUBLISH.
    pub publish: Publish,
}

impl RawResponse {
    /// The payload.
    pub fn payload(&self) -> &Bytes {
        &self.publish.payload
    }

    /// The first user property called `name`.
    pub fn user_property(&self, name: &str) -> Option<&str> {
        user_property(&self.publish, name)
    }

    /// `__stat`.
    pub fn status(&self) -> Option<&str> {
        self.user_property(property::STATUS)
    }

    /// `__ts`.
    pub fn version(&self) -> Option<&str> {
        self.user_property(property::TIMESTAMP)
    }

    /// The content type.
    pub fn content_type(&self) -> Option<&str> {
        self.publish
            .properties
            .as_ref()
            .and_then(|p| p.content_type.as_deref())
    }

    /// The correlation data.
    pub fn correlation(&self) -> Option<&Bytes> {
        self.publish
            .properties
            .as_ref()
            .and_then(|p| p.correlation_data.as_ref())
    }
}

/// The first user property called `name` of a PUBLISH.
pub fn user_property<'a>(publish: &'a Publish, name: &str) -> Option<&'a str> {
    publish
        .properties
        .as_ref()?
        .user_properties
        .iter()
        .find(|(n, _)| n == name)
        .map(|(_, v)| v.as_str())
}

async fn wait_ack(acked: &mut mpsc::UnboundedReceiver<()>, what: &str) -> anyhow::Result<()> {
    tokio::time::timeout(RESPONSE_TIMEOUT, acked.recv())
        .await
        .ok()
        .flatten()
        .with_context(|| format!("no {what} from the broker"))
}

/// The current time in ms since the epoch.
pub fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// Encodes a request payload from its arguments.
pub fn resp(args: &[&[u8]]) -> Bytes {
    let mut out = format!("*{}\r\n", args.len()).into_bytes();
    for arg in args {
        out.extend_from_slice(format!("${}\r\n", arg.len()).as_bytes());
        out.extend_from_slice(arg);
        out.extend_from_slice(b"\r\n");
    }
    Bytes::from(out)
}

impl RawClient {
    /// Connects as `client_id`, subscribes to the default response topic and the
    /// notification filter of that id, and waits for both SUBACKs.
    pub async fn connect(host: &str, port: u16, client_id: &str) -> anyhow::Result<RawClient> {
        RawClient::connect_with(host, port, client_id, true).await
    }

    /// Like [`RawClient::connect`]; without `notification_filter` it subscribes to its
    /// response topic only (as the official Go SDK does).
    pub async fn connect_with(
        host: &str,
        port: u16,
        client_id: &str,
        notification_filter: bool,
    ) -> anyhow::Result<RawClient> {
        let mut options = MqttOptions::new(client_id, host, port);
        options
            .set_clean_start(true)
            .set_keep_alive(Duration::from_secs(30))
            .set_max_packet_size(Some(64 * 1024 * 1024));
        let mut network = NetworkOptions::new();
        network.set_tcp_nodelay(true);
        options.set_network_options(network);
        let (client, mut eventloop) = AsyncClient::new(options, 1024);
        let (tx, incoming) = mpsc::unbounded_channel();
        let (acked_tx, mut acked) = mpsc::unbounded_channel();
        let task = tokio::spawn(async move {
            loop {
                match eventloop.poll().await {
                    Ok(Event::Incoming(Packet::Publish(p))) => {
                        if tx.send(Signal::Message(Box::new(p))).is_err() {
                            break;
                        }
                    }
                    Ok(Event::Incoming(Packet::SubAck(_)))
                    | Ok(Event::Incoming(Packet::ConnAck(_))) => {
                        let _ = acked_tx.send(());
                    }
                    Ok(Event::Outgoing(rumqttc::Outgoing::Disconnect)) => break,
                    Ok(Event::Incoming(Packet::Disconnect(d))) => {
                        let _ = tx.send(Signal::Closed(format!("{:?}", d.reason_code)));
                        break;
                    }
                    Ok(_) => {}
                    Err(e) => {
                        let _ = tx.send(Signal::Closed(e.to_string()));
                        break;
                    }
                }
            }
        });
        wait_ack(&mut acked, "CONNACK").await?;
        let mut filters = vec![Filter::new(
            topics::response_topic(client_id),
            QoS::AtLeastOnce,
        )];
        if notification_filter {
            filters.push(Filter::new(
                topics::notification_filter(client_id),
                QoS::AtLeastOnce,
            ));
        }
        client.subscribe_many(filters).await?;
        wait_ack(&mut acked, "SUBACK").await?;
        Ok(RawClient {
            client,
            id: client_id.to_owned(),
            incoming,
            stash: VecDeque::new(),
            closed: None,
            task: Some(task),
        })
    }

    /// The client id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The underlying rumqttc client (for hand-made publishes).
    pub fn mqtt(&self) -> &AsyncClient {
        &self.client
    }

    /// Subscribes to one more filter at QoS 1 (waits for nothing).
    pub async fn subscribe(&self, filter: &str) -> anyhow::Result<()> {
        self.client.subscribe(filter, QoS::AtLeastOnce).await?;
        Ok(())
    }

    /// Publishes a request with a random correlation id; returns that id.
    pub async fn send(&self, payload: Bytes, options: &RequestOptions) -> anyhow::Result<Bytes> {
        let correlation = Bytes::copy_from_slice(uuid::Uuid::new_v4().as_bytes());
        let mut user_properties = Vec::new();
        if let Some(ft) = &options.fencing_token {
            user_properties.push((property::FENCING_TOKEN.to_owned(), ft.clone()));
        }
        if options.persist {
            user_properties.push((property::PERSISTENCE.to_owned(), "true".to_owned()));
        }
        if options.src_id {
            user_properties.push((property::SOURCE_ID.to_owned(), self.id.clone()));
        }
        let ts = options
            .timestamp
            .clone()
            .unwrap_or_else(|| format!("{:015}:00000:{}", now_ms(), self.id));
        user_properties.push((property::TIMESTAMP.to_owned(), ts));
        user_properties.push((
            property::PROTOCOL_VERSION.to_owned(),
            envelope::PROTOCOL_VERSION.to_owned(),
        ));
        user_properties.extend(options.extra.iter().cloned());
        let properties = PublishProperties {
            response_topic: match &options.response_topic {
                Some(topic) => topic.clone(),
                None => Some(topics::response_topic(&self.id)),
            },
            correlation_data: (!options.no_correlation).then(|| correlation.clone()),
            content_type: Some(envelope::CONTENT_TYPE.to_owned()),
            message_expiry_interval: Some(10),
            user_properties,
            ..PublishProperties::default()
        };
        self.client
            .publish_with_properties(
                topics::REQUEST_TOPIC,
                options.qos,
                false,
                payload,
                properties,
            )
            .await?;
        Ok(correlation)
    }

    /// Sends a request and waits for the response with its correlation id. Other
    /// messages that arrive meanwhile are kept for [`RawClient::next_message`].
    pub async fn request(
        &mut self,
        payload: impl Into<Bytes>,
        options: RequestOptions,
    ) -> anyhow::Result<RawResponse> {
        let correlation = self.send(payload.into(), &options).await?;
        self.response_for(&correlation).await
    }

    /// Like [`RawClient::request`] with a shorter wait: for probing a server that may not
    /// be subscribed yet.
    pub async fn request_within(
        &mut self,
        payload: impl Into<Bytes>,
        options: RequestOptions,
        wait: Duration,
    ) -> anyhow::Result<RawResponse> {
        let correlation = self.send(payload.into(), &options).await?;
        self.wait_response(&correlation, tokio::time::Instant::now() + wait)
            .await
    }

    /// Waits for the response with this correlation id.
    pub async fn response_for(&mut self, correlation: &Bytes) -> anyhow::Result<RawResponse> {
        self.wait_response(correlation, tokio::time::Instant::now() + RESPONSE_TIMEOUT)
            .await
    }

    async fn wait_response(
        &mut self,
        correlation: &Bytes,
        deadline: tokio::time::Instant,
    ) -> anyhow::Result<RawResponse> {
        loop {
            let publish = self.recv_until(deadline).await?;
            let matches = publish
                .properties
                .as_ref()
                .and_then(|p| p.correlation_data.as_ref())
                == Some(correlation);
            if matches {
                return Ok(RawResponse { publish });
            }
            self.stash.push_back(publish);
        }
    }

    async fn recv_until(&mut self, deadline: tokio::time::Instant) -> anyhow::Result<Publish> {
        if let Some(reason) = &self.closed {
            bail!("connection closed: {reason}");
        }
        match tokio::time::timeout_at(deadline, self.incoming.recv()).await {
            Ok(Some(Signal::Message(p))) => Ok(*p),
            Ok(Some(Signal::Closed(reason))) => {
                self.closed = Some(reason.clone());
                bail!("connection closed: {reason}")
            }
            Ok(None) => bail!("connection task ended"),
            Err(_) => bail!("nothing received in time"),
        }
    }

    /// The next message that was not a matched response (notifications, stray
    /// responses), waiting up to [`RESPONSE_TIMEOUT`].
    pub async fn next_message(&mut self) -> anyhow::Result<Publish> {
        if let Some(p) = self.stash.pop_front() {
            return Ok(p);
        }
        self.recv_until(tokio::time::Instant::now() + RESPONSE_TIMEOUT)
            .await
    }

    /// Messages received so far and not consumed (without waiting).
    pub fn drain_received(&mut self) -> Vec<Publish> {
        while let Ok(signal) = self.incoming.try_recv() {
            match signal {
                Signal::Message(p) => self.stash.push_back(*p),
                Signal::Closed(reason) => self.closed = Some(reason),
            }
        }
        self.stash.drain(..).collect()
    }

    /// Waits until the connection is closed by the other side; the reason.
    pub async fn closed(&mut self) -> anyhow::Result<String> {
        loop {
            if let Some(reason) = &self.closed {
                return Ok(reason.clone());
            }
            match self
                .recv_until(tokio::time::Instant::now() + RESPONSE_TIMEOUT)
                .await
            {
                Ok(p) => self.stash.push_back(p),
                Err(_) if self.closed.is_some() => {}
                Err(e) => return Err(e),
            }
        }
    }

    /// Drops the connection abruptly (no DISCONNECT packet).
    pub fn kill(mut self) {
        if let Some(task) = self.task.take() {
            task.abort();
        }
    }

    /// Sends DISCONNECT and closes the connection.
    pub async fn disconnect(mut self) {
        let _ = self.client.disconnect().await;
        if let Some(task) = self.task.take() {
            let _ = tokio::time::timeout(Duration::from_secs(5), task).await;
        }
    }
}

impl Drop for RawClient {
    fn drop(&mut self) {
        if let Some(task) = self.task.take() {
            task.abort();
        }
    }
}
