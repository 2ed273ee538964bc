//! The embedded MQTT5 broker (the `mqtt5` crate's broker, in the same process), so that
//! `mqstate serve` needs nothing installed.
//!
//! Storage is in memory with persistence off (the crate's default is a file backend in
//! `./mqtt_storage`). The broker reports every clean and abrupt disconnect through
//! [`BrokerEventHandler::on_client_disconnect`]; those events become
//! [`Command::Disconnected`] for the store, which drops the client's registrations. The
//! broker also vouches for each publisher's client id (user property `x-mqtt-client-id`,
//! which it overwrites), and can drop a client's connection: used for requests with a
//! forbidden response topic. The store's responses and notifications are handed straight
//! to the broker's router ([`RouterSink`]), so they do not carry that property.
//!
//! Authentication and `--acl` are [`crate::access`]'s; TLS is the crate's own listener.
//! Each client's backlog is bounded in bytes (a short delivery lane, then a queue that
//! drops its oldest), so a subscriber that never reads cannot pin the server's memory.
//!
//! # Notifications without a subscription
//!
//! The real service delivers a KEYNOTIFY notification to the registering client's session
//! whether or not it subscribed to its notification topic, and the official Go and .NET
//! SDKs depend on that (one never subscribes, the other subscribes to the wrong topic).
//! The embedded broker does the same: when a client publishes a KEYNOTIFY request, the
//! [`BrokerEventHandler::on_client_publish`] hook — which runs before the request is routed
//! to the store — adds a subscription to that key's exact notification topic to the client's
//! session, unless one of the client's own subscriptions already matches it (no duplicate
//! deliveries). `KEYNOTIFY … STOP` removes it; the session's end removes it too. An external
//! broker offers no such hook: there, a client must subscribe itself (the server warns at
//! the first KEYNOTIFY it serves).

use std::collections::{HashMap, HashSet};
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::{Arc, Mutex, OnceLock};

use mqstate::codec::Request;
use mqtt5::broker::MqttBroker;
use mqtt5::broker::config::{StorageBackend, StorageConfig, TlsConfig};
use mqtt5::broker::events::{
    ClientPublishEvent, ClientSubscribeEvent, ClientUnsubscribeEvent, PublishAction,
    SubAckReasonCode,
};
use mqtt5::broker::router::{MessageRouter, SubscriptionRequest};
use mqtt5::broker::server::BrokerShutdownHandle;
use mqtt5::broker::{BrokerConfig, BrokerEventHandler, ClientConnectEvent, ClientDisconnectEvent};
use tokio::sync::mpsc::UnboundedSender as Sender;
use tokio::task::JoinHandle;

use mqtt5::packet::publish::PublishPacket;
use tokio::sync::mpsc::error::TrySendError;

use crate::access::Gate;
use crate::config::TlsFiles;
use crate::outbox::{Message, Sink};
use crate::service::{BrokerControl, Command};

pub(crate) mod session;

/// The Maximum Packet Size the embedded broker announces in its CONNACK: MQTT 5's maximum.
pub(crate) const MAX_PACKET_SIZE: u32 = 268_435_455;

/// Messages in each client's delivery lane (the broker's default, 10,000, is counted in
/// messages only: 10,000 × 64 KB held for one subscriber that never reads). Beyond the lane
/// messages wait in the client's queue, which is bounded in bytes and drops its oldest.
const DELIVERY_LANE: usize = 64;

/// A running embedded broker.
pub(crate) struct EmbeddedBroker {
    /// Where clients connect (the TLS listener with TLS).
    addr: SocketAddr,
    /// Where the server's own connection goes: the plain listener (on loopback with TLS).
    internal: SocketAddr,
    router: Arc<MessageRouter>,
    shutdown: BrokerShutdownHandle,
    task: JoinHandle<()>,
}

/// Lets the service drop a client's connection on the embedded broker.
#[derive(Clone)]
pub(crate) struct Disconnector {
    router: Arc<MessageRouter>,
    runtime: tokio::runtime::Handle,
}

impl BrokerControl for Disconnector {
    fn disconnect(&self, client_id: &str) {
        let router = Arc::clone(&self.router);
        let client_id = client_id.to_owned();
        self.runtime.spawn(async move {
            router.disconnect_client(&client_id).await;
        });
    }
}

/// Publishes the server's responses and notifications straight into the broker's router,
/// in order, through a bounded channel (its [`Sink::try_send`] gives a message back when
/// the channel is full, so the outbox queues it). Messages routed this way are not stamped
/// with `x-mqtt-client-id`, which SDKs would surface to their users as message metadata.
#[derive(Clone)]
pub(crate) struct RouterSink {
    tx: tokio::sync::mpsc::Sender<Message>,
}

impl Sink for RouterSink {
    fn try_send(&self, message: Message) -> Result<(), Message> {
        self.tx.try_send(message).map_err(|e| match e {
            TrySendError::Full(message) | TrySendError::Closed(message) => message,
        })
    }
}

impl RouterSink {
    /// Hands `message` over, waiting for room.
    pub(crate) async fn send(&self, message: Message) -> Result<(), String> {
        self.tx
            .send(message)
            .await
            .map_err(|_| "the embedded broker's router is gone".to_owned())
    }
}

/// The broker's form of one of the server's messages (QoS 1, not retained).
fn to_packet(message: Message) -> PublishPacket {
    let Message {
        topic,
        payload,
        properties,
    } = message;
    let mut packet = PublishPacket::new(topic, payload, mqtt5::QoS::AtLeastOnce);
    let p = &mut packet.properties;
    if let Some(correlation) = properties.correlation_data {
        p.set_correlation_data(correlation);
    }
    if let Some(content_type) = properties.content_type {
        p.set_content_type(content_type);
    }
    if let Some(topic) = properties.response_topic {
        p.set_response_topic(topic);
    }
    if let Some(expiry) = properties.message_expiry_interval {
        p.set_message_expiry_interval(expiry);
    }
    if let Some(format) = properties.payload_format_indicator {
        p.set_payload_format_indicator(format == 1);
    }
    for (name, value) in properties.user_properties {
        p.add_user_property(name, value);
    }
    packet
}

/// Forwards the broker's connection events to the log and the store, and routes
/// notifications to clients that did not subscribe to them.
struct Events {
    commands: Sender<Command>,
    /// Set once the broker exists (the handler is created before it).
    router: OnceLock<Arc<MessageRouter>>,
    /// Each client's granted subscription filters.
    filters: Mutex<HashMap<String, Vec<String>>>,
    /// The notification topics subscribed on each client's behalf.
    added: Mutex<HashMap<String, HashSet<String>>>,
    /// At most this many per client (the store's key quota, which also bounds how many keys
    /// a client observes): a client cannot grow them beyond what the store would register.
    max_added: Option<usize>,
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|poison| poison.into_inner())
}

/// Whether the MQTT topic filter `filter` matches `topic` (`+`, `#`; a `$share/group/`
/// filter counts as not matching: the client may not be the member served).
pub(crate) fn filter_matches(filter: &str, topic: &str) -> bool {
    if filter.starts_with("$share/") {
        return false;
    }
    let mut levels = topic.split('/');
    for part in filter.split('/') {
        match (part, levels.next()) {
            ("#", _) => return true,
            ("+", Some(_)) => {}
            (part, Some(level)) if part == level => {}
            _ => return false,
        }
    }
    levels.next().is_none()
}

impl Events {
    /// Forgets what is known of a client's subscriptions (its session ended).
    fn forget(&self, client_id: &str) {
        lock(&self.filters).remove(client_id);
        lock(&self.added).remove(client_id);
    }

    /// Subscribes `client_id` to the notification topic of `key` on its behalf (or drops
    /// that subscription with `stop`), when none of its own subscriptions covers it.
    async fn route_notifications(&self, client_id: &str, key: &[u8], stop: bool) {
        let Some(router) = self.router.get() else {
            return;
        };
        if crate::store::notification_topic_len(client_id, key) > crate::store::MAX_TOPIC_LEN {
            return;
        }
        let topic = mqstate::topics::notification_topic(client_id, key);
        if stop {
            let removed = lock(&self.added)
                .get_mut(client_id)
                .is_some_and(|topics| topics.remove(&topic));
            if removed {
                router.unsubscribe(client_id, &topic, None).await;
            }
            return;
        }
        let covered = lock(&self.filters)
            .get(client_id)
            .is_some_and(|filters| filters.iter().any(|f| filter_matches(f, &topic)));
        if covered {
            return;
        }
        let new = {
            let mut added = lock(&self.added);
            let topics = added.entry(client_id.to_owned()).or_default();
            if self.max_added.is_some_and(|max| topics.len() >= max) {
                return;
            }
            topics.insert(topic.clone())
        };
        if new {
            let request = SubscriptionRequest::new(client_id, topic, mqtt5::QoS::AtLeastOnce);
            if let Err(e) = router.subscribe(request).await {
                tracing::warn!(client_id, error = %e, "could not route notifications to a client");
            }
        }
    }
}

impl BrokerEventHandler for Events {
    fn on_client_subscribe<'a>(
        &'a self,
        event: ClientSubscribeEvent,
    ) -> Pin<Box<dyn Future<Output = ()> + Send + 'a>> {
        let granted = event.subscriptions.iter().filter(|s| {
            matches!(
                s.result,
                SubAckReasonCode::GrantedQoS0
                    | SubAckReasonCode::GrantedQoS1
                    | SubAckReasonCode::GrantedQoS2
            )
        });
        let mut filters = lock(&self.filters);
        let list = filters.entry(event.client_id.to_string()).or_default();
        for s in granted {
            if !list.iter().any(|f| **f == *s.topic_filter) {
                list.push(s.topic_filter.to_string());
            }
        }
        Box::pin(async {})
    }

    fn on_client_unsubscribe<'a>(
        &'a self,
        event: ClientUnsubscribeEvent,
    ) -> Pin<Box<dyn Future<Output = ()> + Send + 'a>> {
        if let Some(list) = lock(&self.filters).get_mut(&*event.client_id) {
            list.retain(|f| !event.topic_filters.iter().any(|gone| **gone == **f));
        }
        Box::pin(async {})
    }

    fn on_client_publish<'a>(
        &'a self,
        event: ClientPublishEvent,
    ) -> Pin<Box<dyn Future<Output = PublishAction> + Send + 'a>> {
        Box::pin(async move {
            // A cheap look at the verb first: this runs for every publish.
            if &*event.topic == mqstate::topics::REQUEST_TOPIC
                && event.payload[..event.payload.len().min(32)]
                    .windows(9)
                    .any(|w| w == b"KEYNOTIFY")
                && let Ok(Request::KeyNotify { key, stop }) = Request::decode(&event.payload)
            {
                self.route_notifications(&event.client_id, &key, stop).await;
            }
            PublishAction::Continue
        })
    }

    fn on_client_connect<'a>(
        &'a self,
        event: ClientConnectEvent,
    ) -> Pin<Box<dyn Future<Output = ()> + Send + 'a>> {
        tracing::info!(client_id = %event.client_id, clean_start = event.clean_start, "client connected");
        Box::pin(async {})
    }

    fn on_client_disconnect<'a>(
        &'a self,
        event: ClientDisconnectEvent,
    ) -> Pin<Box<dyn Future<Output = ()> + Send + 'a>> {
        tracing::info!(
            client_id = %event.client_id,
            unexpected = event.unexpected,
            reason = ?event.reason,
            "client disconnected"
        );
        // The store thread may already be gone during shutdown: nothing to do then.
        let _ = self
            .commands
            .send(Command::Disconnected(event.client_id.to_string()));
        // Sessions are not kept (persistence is off): every subscription, own or added,
        // ends with the connection.
        self.forget(&event.client_id);
        Box::pin(async {})
    }
}

impl EmbeddedBroker {
    /// Binds `listen` and starts the broker; connection events go to `commands`.
    pub(crate) async fn start(
        listen: SocketAddr,
        commands: Sender<Command>,
        client_queue_bytes: usize,
        gate: Gate,
        tls: Option<&TlsFiles>,
        max_keys: Option<usize>,
    ) -> std::io::Result<EmbeddedBroker> {
        let events = Arc::new(Events {
            commands,
            router: OnceLock::new(),
            filters: Mutex::new(HashMap::new()),
            added: Mutex::new(HashMap::new()),
            max_added: max_keys,
        });
        let storage = StorageConfig::default()
            .with_backend(StorageBackend::Memory)
            .with_persistence(false)
            .with_max_queued_bytes_per_client(client_queue_bytes.max(1));
        // With TLS, clients get the TLS listener on `listen`; the plain one, for the
        // server's own connection, moves to a free loopback port.
        let plain = match tls {
            Some(_) => SocketAddr::from(([127, 0, 0, 1], 0)),
            None => listen,
        };
        let mut config = BrokerConfig::default()
            .with_bind_address(plain)
            .with_storage(storage)
            .with_sys_topics_enabled(false)
            // The crate's default (268,435,456) is one above MQTT 5's limit: strict clients
            // such as paho-mqtt reject such a CONNACK and reconnect forever.
            .with_max_packet_size(MAX_PACKET_SIZE as usize)
            .with_client_channel_capacity(DELIVERY_LANE)
            .with_server_receive_maximum(mqstate::envelope::MAX_IN_FLIGHT)
            .with_event_handler(Arc::clone(&events) as Arc<dyn BrokerEventHandler>);
        if let Some(files) = tls {
            let mut tls_config =
                TlsConfig::new(files.cert.clone(), files.key.clone()).with_bind_address(listen);
            tls_config.ca_file = files.client_ca.clone();
            tls_config.require_client_cert = files.client_ca.is_some();
            config = config.with_tls(tls_config);
        }
        let mut broker = MqttBroker::with_config(config)
            .await
            .map_err(|e| std::io::Error::other(format!("embedded broker on {listen}: {e}")))?
            .with_auth_provider(Arc::new(gate));
        let _ = events.router.set(broker.router());
        let internal = broker
            .local_addr()
            .ok_or_else(|| std::io::Error::other("embedded broker has no listener"))?;
        let addr = match tls {
            Some(_) => broker
                .tls_local_addr()
                .ok_or_else(|| std::io::Error::other("embedded broker has no TLS listener"))?,
            None => internal,
        };
        let router = broker.router();
        let shutdown = broker.shutdown_handle();
        let mut ready = broker.ready_receiver();
        let task = tokio::spawn(async move {
            if let Err(e) = broker.run().await {
                tracing::error!(error = %e, "embedded broker stopped");
            }
        });
        // `run` flips the flag once it accepts connections.
        while !*ready.borrow_and_update() {
            if ready.changed().await.is_err() {
                return Err(std::io::Error::other("embedded broker failed to start"));
            }
        }
        tracing::info!(%addr, "embedded MQTT5 broker listening");
        Ok(EmbeddedBroker {
            addr,
            internal,
            router,
            shutdown,
            task,
        })
    }

    /// The bound address clients connect to.
    pub(crate) fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The plain listener the server's own connection uses.
    pub(crate) fn internal_addr(&self) -> SocketAddr {
        self.internal
    }

    /// A sink that routes the server's messages (published as `own_id`) in order; at most
    /// `capacity` wait in its channel.
    pub(crate) fn router_sink(&self, own_id: &str, capacity: usize) -> RouterSink {
        let (tx, mut rx) = tokio::sync::mpsc::channel::<Message>(capacity.max(1));
        let router = Arc::clone(&self.router);
        let own_id = own_id.to_owned();
        tokio::spawn(async move {
            while let Some(message) = rx.recv().await {
                router
                    .route_message(&to_packet(message), Some(&own_id))
                    .await;
            }
        });
        RouterSink { tx }
    }

    /// Registers the store's own session in the router (see [`session`]).
    pub(crate) async fn store_session(
        &self,
        client_id: &str,
    ) -> std::io::Result<session::StoreSession> {
        session::StoreSession::open(&self.router, client_id).await
    }

    /// A handle that disconnects clients.
    pub(crate) fn disconnector(&self) -> Disconnector {
        Disconnector {
            router: Arc::clone(&self.router),
            runtime: tokio::runtime::Handle::current(),
        }
    }

    /// Tells the broker to stop without waiting.
    pub(crate) fn signal_shutdown(&self) {
        self.shutdown.shutdown();
    }

    /// Stops the broker and waits for it.
    pub(crate) async fn shutdown(self) {
        self.shutdown.shutdown();
        let _ = self.task.await;
    }
}

#[cfg(test)]
mod tests {
    use super::filter_matches;

    #[test]
    fn topic_filters_match_like_mqtt() {
        assert!(filter_matches("a/b", "a/b"));
        assert!(filter_matches("a/+", "a/b"));
        assert!(filter_matches("a/#", "a/b/c"));
        assert!(filter_matches("#", "a"));
        assert!(filter_matches("a/#", "a"));
        assert!(!filter_matches("a/+", "a/b/c"));
        assert!(!filter_matches("a/b/c", "a/b"));
        assert!(!filter_matches("a/c", "a/b"));
        assert!(!filter_matches("$share/g/a/b", "a/b"));
    }
}
