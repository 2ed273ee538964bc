//! The embedded MQTT5 broker (the `mqtt5` crate's broker, in the same process), so that
//! `mqstate serve` needs nothing installed.
//!
//! Sessions are kept in memory (the crate's session storage on its memory backend; its
//! default is a file backend in `./mqtt_storage`): a client that connects with clean start 0
//! and a session expiry resumes its session after a reconnect (`session_present = 1`, its
//! subscriptions and its queued and in-flight QoS 1 messages kept), until the session
//! expires; a clean start discards it. Sessions do not survive a restart of the server.
//! When a client's *session* ends — with its connection when its expiry is 0, else at
//! expiry or at a clean start that replaces it ([`session_ends`]) — the store is told
//! ([`Command::SessionEnded`]) and drops the client's KEYNOTIFY registrations. The
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
use std::sync::{Arc, Mutex, OnceLock, Weak};

use mqstate::codec::Request;
use mqtt5::broker::MqttBroker;
use mqtt5::broker::config::{StorageBackend, StorageConfig, TlsConfig};
use mqtt5::broker::events::{
    ClientPublishEvent, ClientSubscribeEvent, ClientUnsubscribeEvent, PublishAction,
    SubAckReasonCode,
};
use mqtt5::broker::router::{MessageRouter, SubscriptionRequest};
use mqtt5::broker::server::BrokerShutdownHandle;
use mqtt5::broker::storage::StoredSubscription;
use mqtt5::broker::{
    BrokerConfig, BrokerEventHandler, ClientConnectEvent, ClientDisconnectEvent, DynamicStorage,
    ResourceLimits, StorageBackend as _,
};
use tokio::sync::mpsc::UnboundedSender as Sender;
use tokio::task::JoinHandle;

use mqtt5::packet::publish::PublishPacket;
use tokio::sync::mpsc::error::TrySendError;

use crate::access::Gate;
use crate::config::TlsFiles;
use crate::outbox::{Message, Sink};
use crate::service::{BrokerControl, Command};

pub(crate) mod session;
pub(crate) mod session_ends;
pub(crate) mod workers;

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
    /// The connection events' handler (for its counts).
    events: Arc<Events>,
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

/// How often the broker sweeps expired sessions out of its router and storage (the crate's
/// default is an hour). The store learns of each expiry on time from [`session_ends`] and
/// frees that session then ([`Events::free_session`]); the sweep is the backstop for what
/// no watcher covers. It visits every offline session (a lock, two storage reads and a copy
/// of the session each): run every 5 s, as it was, 10,000 offline sessions kept the idle
/// store busy for 0.7-0.9 % of a core (issue 49).
const SWEEP_INTERVAL: std::time::Duration = std::time::Duration::from_secs(300);

/// The embedded broker's session counts, readable from anywhere ([`crate::MetricsReader`]).
#[derive(Clone)]
pub(crate) struct SessionCounts(Arc<Events>);

impl SessionCounts {
    /// Client ids with a connection open now (the store's own included in adapter mode).
    pub(crate) fn online(&self) -> u64 {
        lock(&self.0.live).len() as u64
    }

    /// Sessions kept now for clients without a connection.
    pub(crate) fn offline(&self) -> u64 {
        self.0
            .sessions
            .get()
            .map_or(0, |s| s.offline_sessions() as u64)
    }

    /// Sessions kept without a connection that ended over the bound, in all.
    pub(crate) fn offline_ended(&self) -> u64 {
        lock(&self.0.offline_ended).total
    }
}

impl std::fmt::Debug for SessionCounts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SessionCounts")
            .field("online", &self.online())
            .field("offline", &self.offline())
            .finish()
    }
}

/// Forwards the broker's connection events to the log and the store, and routes
/// notifications to clients that did not subscribe to them.
struct Events {
    /// Itself, for the tasks that watch kept sessions.
    this: Weak<Events>,
    commands: Sender<Command>,
    /// Set once the broker exists (the handler is created before it).
    router: OnceLock<Arc<MessageRouter>>,
    /// Set once the broker exists: which sessions ended.
    sessions: OnceLock<session_ends::SessionEnds>,
    /// Each client's granted subscription filters.
    filters: Mutex<HashMap<String, Vec<String>>>,
    /// The notification topics subscribed on each client's behalf.
    added: Mutex<HashMap<String, HashSet<String>>>,
    /// The task watching each disconnected client's kept session.
    watchers: Mutex<HashMap<String, tokio::task::AbortHandle>>,
    /// Set once the broker exists: its session storage.
    storage: OnceLock<Arc<DynamicStorage>>,
    /// At most this many per client (the store's key quota, which also bounds how many keys
    /// a client observes): a client cannot grow them beyond what the store would register.
    max_added: Option<usize>,
    /// At most this many sessions kept without a connection; past it the oldest end.
    max_offline: usize,
    /// Offline sessions ended over the bound: in all, and not yet logged.
    offline_ended: Mutex<OfflineEnded>,
    /// The client connections open now, by client id (see [`Live`]).
    live: Mutex<HashMap<String, Live>>,
    /// Fires whenever a client connection closes.
    closed: tokio::sync::Notify,
    /// Where clients authenticated from (the access gate fills it).
    peers: crate::access::Peers,
    /// Where connects and disconnects are reported (the live event stream).
    monitor: Option<crate::monitor::Monitor>,
}

/// The connections of one client id: how many are open (two for a moment during a
/// takeover), and how many closed while any was open (the entry goes once none is).
#[derive(Default)]
struct Live {
    open: u32,
    closed: u64,
    /// When the newest connection opened (Unix ms).
    since_ms: u64,
    /// Where it came from, if the access gate saw it.
    address: Option<SocketAddr>,
}

/// A client as [`BrokerView::clients`] lists it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ClientSeen {
    pub(crate) id: String,
    pub(crate) connected: bool,
    /// Connected: since its connection opened; kept: since it left (Unix ms).
    pub(crate) since_ms: u64,
    pub(crate) address: Option<SocketAddr>,
}

/// Counts of offline sessions ended over the bound, logged at most every
/// [`OFFLINE_LOG_EVERY`].
#[derive(Default)]
struct OfflineEnded {
    total: u64,
    unlogged: u64,
    logged_at: Option<std::time::Instant>,
}

/// How often the log says how many offline sessions ended over the bound.
const OFFLINE_LOG_EVERY: std::time::Duration = std::time::Duration::from_secs(10);

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|poison| poison.into_inner())
}

impl Events {
    /// A client's session ended: the store drops its registrations, and what is known of
    /// its subscriptions is forgotten.
    fn session_ended(&self, client_id: &str) {
        tracing::debug!(client_id, "session ended");
        // The store thread may already be gone during shutdown: nothing to do then.
        let _ = self
            .commands
            .send(Command::SessionEnded(client_id.to_owned()));
        lock(&self.filters).remove(client_id);
        lock(&self.added).remove(client_id);
    }

    /// Watches a session kept after its connection closed until it expires or the client
    /// comes back (one task per client id: a connect stops it, see [`Events::stop_watch`]).
    fn watch(&self, mut watch: session_ends::Watch) {
        let Some(events) = self.this.upgrade() else {
            return;
        };
        let client_id = watch.client_id().to_owned();
        let id = client_id.clone();
        let mut watchers = lock(&self.watchers);
        let task = tokio::spawn(async move {
            loop {
                tokio::time::sleep(watch.wait()).await;
                let Some(sessions) = events.sessions.get() else {
                    return;
                };
                let mut expired = false;
                let next = sessions
                    .recheck(watch, || {
                        expired = true;
                        events.session_ended(&id);
                    })
                    .await;
                if expired {
                    events.free_session(&id).await;
                }
                match next {
                    Some(next) => watch = next,
                    None => break,
                }
            }
            let me = tokio::task::id();
            let mut watchers = lock(&events.watchers);
            if watchers.get(&id).is_some_and(|t| t.id() == me) {
                watchers.remove(&id);
            }
        });
        if let Some(previous) = watchers.insert(client_id, task.abort_handle()) {
            previous.abort();
        }
    }

    /// Ends the oldest sessions kept without a connection beyond `max_offline`, and says so
    /// in the log (a line at most every [`OFFLINE_LOG_EVERY`]).
    async fn bound_offline(&self, sessions: &session_ends::SessionEnds) {
        let gone = sessions
            .end_oldest_over(self.max_offline, |id| self.session_ended(id))
            .await;
        if gone.is_empty() {
            return;
        }
        for id in &gone {
            self.stop_watch(id);
            self.free_session(id).await;
        }
        let mut counts = lock(&self.offline_ended);
        counts.total += gone.len() as u64;
        counts.unlogged += gone.len() as u64;
        if counts
            .logged_at
            .is_none_or(|at| at.elapsed() >= OFFLINE_LOG_EVERY)
        {
            tracing::info!(
                ended = counts.unlogged,
                total = counts.total,
                max_offline_sessions = self.max_offline,
                "ended the oldest offline sessions over the bound (--max-offline-sessions)"
            );
            counts.unlogged = 0;
            counts.logged_at = Some(std::time::Instant::now());
        }
    }

    /// Frees at once what the broker holds for the ended session of `client_id` (its
    /// subscriptions in the router, its queue), as the broker's periodic sweep would: the
    /// watchers are the timers of the expiry (one per kept session, in tokio's timer wheel),
    /// so the sweep, which visits every offline session, runs seldom ([`SWEEP_INTERVAL`]).
    async fn free_session(&self, client_id: &str) {
        if let Some(router) = self.router.get() {
            router.sweep_client(client_id).await;
        }
    }

    /// Stops watching the session of `client_id` (it connected again: the connect decides
    /// whether that session ended).
    fn stop_watch(&self, client_id: &str) {
        if let Some(task) = lock(&self.watchers).remove(client_id) {
            task.abort();
        }
    }

    /// Keeps the subscription `topic` added on behalf of `client_id` in its stored session
    /// (or takes it out with `stop`), so that a resumed session gets it back with the
    /// client's own subscriptions.
    async fn store_added(&self, client_id: &str, topic: &str, stop: bool) {
        let Some(storage) = self.storage.get() else {
            return;
        };
        let Ok(Some(session)) = storage.get_session(client_id).await else {
            return;
        };
        let topic = topic.to_owned();
        let stored = storage
            .update_session(client_id, session.connection_token, move |session| {
                if stop {
                    session.subscriptions.remove(&topic);
                } else {
                    session
                        .subscriptions
                        .entry(topic)
                        .or_insert_with(|| StoredSubscription::new(mqtt5::QoS::AtLeastOnce));
                }
            })
            .await;
        if let Err(e) = stored {
            tracing::warn!(client_id, error = %e, "could not keep a notification route in the session");
        }
    }

    /// Subscribes `client_id` to the notification topic of `key` on its behalf (or drops
    /// that subscription with `stop`), when none of its own subscriptions covers it.
    async fn route_notifications(&self, client_id: &str, key: &[u8], stop: bool) {
        let Some(router) = self.router.get() else {
            return;
        };
        if crate::state_machine::notification_topic_len(client_id, key)
            > crate::state_machine::MAX_TOPIC_LEN
        {
            return;
        }
        let topic = mqstate::topics::notification_topic(client_id, key);
        if stop {
            let removed = lock(&self.added)
                .get_mut(client_id)
                .is_some_and(|topics| topics.remove(&topic));
            if removed {
                router.unsubscribe(client_id, &topic, None).await;
                self.store_added(client_id, &topic, true).await;
            }
            return;
        }
        let covered = lock(&self.filters).get(client_id).is_some_and(|filters| {
            filters
                .iter()
                .any(|f| mqstate::topics::filter_matches(f, &topic))
        });
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
            let request =
                SubscriptionRequest::new(client_id, topic.clone(), mqtt5::QoS::AtLeastOnce);
            if let Err(e) = router.subscribe(request).await {
                tracing::warn!(client_id, error = %e, "could not route notifications to a client");
            }
            self.store_added(client_id, &topic, false).await;
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
        let address = lock(&self.peers).remove(&*event.client_id);
        {
            let mut live = lock(&self.live);
            let entry = live.entry(event.client_id.to_string()).or_default();
            entry.open += 1;
            entry.since_ms = crate::service::now_ms();
            entry.address = address;
        }
        if let Some(monitor) = &self.monitor {
            monitor.publish(crate::monitor::What::Connected {
                client: event.client_id.to_string(),
                address,
            });
        }
        Box::pin(async move {
            let client_id = &*event.client_id;
            self.stop_watch(client_id);
            let replaced = match self.sessions.get() {
                Some(sessions) => {
                    sessions
                        .connected(client_id, || self.session_ended(client_id))
                        .await
                }
                None => false,
            };
            tracing::info!(
                client_id,
                clean_start = event.clean_start,
                session_expiry = event.session_expiry_interval,
                previous_session_ended = replaced,
                "client connected"
            );
        })
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
        {
            let mut live = lock(&self.live);
            if let Some(entry) = live.get_mut(&*event.client_id) {
                entry.open = entry.open.saturating_sub(1);
                entry.closed += 1;
                if entry.open == 0 {
                    live.remove(&*event.client_id);
                }
            }
        }
        self.closed.notify_waiters();
        if let Some(monitor) = &self.monitor {
            monitor.publish(crate::monitor::What::Disconnected {
                client: event.client_id.to_string(),
            });
        }
        Box::pin(async move {
            let client_id = &*event.client_id;
            let Some(sessions) = self.sessions.get() else {
                self.session_ended(client_id);
                return;
            };
            let after = sessions
                .disconnected(client_id, || self.session_ended(client_id))
                .await;
            if let session_ends::AfterDisconnect::Kept(watch) = after {
                tracing::debug!(client_id, wait = ?watch.wait(), "session kept");
                self.watch(watch);
                self.bound_offline(sessions).await;
            }
        })
    }
}

/// How long [`EmbeddedBroker::cut_connections`] waits for the connections to close.
const CUT_WAIT: std::time::Duration = std::time::Duration::from_secs(5);

/// What the embedded broker bounds (from [`crate::ServerConfig`]).
pub(crate) struct Limits {
    /// Bytes of messages that may wait for one client.
    pub(crate) client_queue_bytes: usize,
    /// The store's key quota (bounds the notification routes added per client).
    pub(crate) max_keys: Option<usize>,
    /// Sessions kept without a connection.
    pub(crate) max_offline_sessions: usize,
    /// Connections at once, in all and from one address.
    pub(crate) max_clients: usize,
}

impl EmbeddedBroker {
    /// Binds `listen` and starts the broker; connection events go to `commands`.
    pub(crate) async fn start(
        listen: SocketAddr,
        commands: Sender<Command>,
        gate: Gate,
        tls: Option<&TlsFiles>,
        limits: Limits,
        monitor: Option<crate::monitor::Monitor>,
    ) -> std::io::Result<EmbeddedBroker> {
        let peers = gate.peers();
        let events = Arc::new_cyclic(|this| Events {
            this: Weak::clone(this),
            commands,
            sessions: OnceLock::new(),
            storage: OnceLock::new(),
            watchers: Mutex::new(HashMap::new()),
            router: OnceLock::new(),
            filters: Mutex::new(HashMap::new()),
            added: Mutex::new(HashMap::new()),
            max_added: limits.max_keys,
            max_offline: limits.max_offline_sessions,
            offline_ended: Mutex::new(OfflineEnded::default()),
            live: Mutex::new(HashMap::new()),
            closed: tokio::sync::Notify::new(),
            peers,
            monitor,
        });
        let storage = StorageConfig::default()
            .with_backend(StorageBackend::Memory)
            .with_persistence(true)
            .with_cleanup_interval(SWEEP_INTERVAL)
            .with_max_queued_bytes_per_client(limits.client_queue_bytes.max(1));
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
            .with_max_packet_size(mqstate::MQTT_MAX_PACKET_SIZE as usize)
            .with_client_channel_capacity(DELIVERY_LANE)
            .with_max_clients(limits.max_clients.max(1))
            .with_server_receive_maximum(mqstate::envelope::MAX_IN_FLIGHT)
            .with_event_handler(Arc::clone(&events) as Arc<dyn BrokerEventHandler>);
        if let Some(files) = tls {
            let mut tls_config =
                TlsConfig::new(files.cert.clone(), files.key.clone()).with_bind_address(listen);
            tls_config.ca_file = files.client_ca.clone();
            tls_config.require_client_cert = files.client_ca.is_some();
            config = config.with_tls(tls_config);
        }
        // The crate also caps connections from one address, at 10,000: clients behind one
        // NAT, or every test on one machine, are one address. One bound for both (its other
        // limits as the crate sets them from the configuration).
        let resource_limits = ResourceLimits {
            max_connections: limits.max_clients.max(1),
            max_connections_per_ip: limits.max_clients.max(1),
            max_message_rate_per_client: config.max_message_rate_per_client,
            max_bandwidth_per_client: config.max_bandwidth_per_client,
            max_connection_rate: 10_000,
            rate_limit_window: std::time::Duration::from_secs(1),
        };
        let mut broker = MqttBroker::with_config(config)
            .await
            .map_err(|e| std::io::Error::other(format!("embedded broker on {listen}: {e}")))?
            .with_auth_provider(Arc::new(gate));
        broker.resource_monitor().update_limits(resource_limits);
        let _ = events.router.set(broker.router());
        let storage = broker
            .storage()
            .ok_or_else(|| std::io::Error::other("embedded broker keeps no sessions"))?;
        let _ = events
            .sessions
            .set(session_ends::SessionEnds::new(Arc::clone(&storage)));
        let _ = events.storage.set(storage);
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
            events,
        })
    }

    /// A handle on the session counts that outlives a borrow of the broker.
    pub(crate) fn session_counts(&self) -> SessionCounts {
        SessionCounts(Arc::clone(&self.events))
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

    /// Routes responses straight from the store's workers (published as `own_id`).
    pub(crate) fn responder(&self, own_id: &str) -> workers::Responder {
        workers::Responder {
            router: Arc::clone(&self.router),
            own_id: own_id.to_owned(),
        }
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

    /// Closes every client connection but `own_id`'s (the store's session) the way a
    /// network failure does — no DISCONNECT packet, the will published, the MQTT session
    /// and its subscriptions and queued messages kept for the client's return — and waits
    /// until each connection has closed (at most [`CUT_WAIT`]). Returns how many it closed.
    pub(crate) async fn cut_connections(&self, own_id: &str) -> usize {
        self.view().cut(own_id, None).await
    }

    /// A handle on the broker's clients that outlives a borrow of the broker.
    pub(crate) fn view(&self) -> BrokerView {
        BrokerView {
            router: Arc::clone(&self.router),
            events: Arc::clone(&self.events),
        }
    }

    /// Tells the broker to stop without waiting.
    pub(crate) fn signal_shutdown(&self) {
        self.shutdown.shutdown();
    }

    /// Stops the broker (its listener, then every connection) and waits for it; may be
    /// cancelled and called again.
    pub(crate) async fn stop(&mut self) {
        self.shutdown.shutdown();
        let _ = (&mut self.task).await;
    }
}

/// The embedded broker's clients, for the console ([`crate::inspect`]).
#[derive(Clone)]
pub(crate) struct BrokerView {
    router: Arc<MessageRouter>,
    events: Arc<Events>,
}

impl BrokerView {
    /// Closes connections as [`EmbeddedBroker::cut_connections`] does: of `only` that client
    /// id when given, else of every client but `own_id`.
    pub(crate) async fn cut(&self, own_id: &str, only: Option<&str>) -> usize {
        let targets: Vec<(String, u64)> = lock(&self.events.live)
            .iter()
            .filter(|(id, live)| {
                live.open > 0 && id.as_str() != own_id && only.is_none_or(|only| only == *id)
            })
            .map(|(id, live)| (id.clone(), live.closed))
            .collect();
        for (id, _) in &targets {
            // Drops the router's entry: the connection's task sees it gone, closes the
            // socket and keeps the session (as for a lost connection).
            self.router.disconnect_client(id).await;
        }
        let deadline = tokio::time::Instant::now() + CUT_WAIT;
        loop {
            let closed = self.events.closed.notified();
            tokio::pin!(closed);
            closed.as_mut().enable();
            let done = {
                let live = lock(&self.events.live);
                targets
                    .iter()
                    .all(|(id, before)| live.get(id).is_none_or(|now| now.closed > *before))
            };
            if done {
                break;
            }
            if tokio::time::timeout_at(deadline, closed).await.is_err() {
                tracing::warn!(
                    "cut_connections: some connections had not closed after {CUT_WAIT:?}"
                );
                break;
            }
        }
        targets.len()
    }

    /// The clients connected now and the sessions kept for clients gone (most recent first),
    /// at most `limit` of each, without `own_id` (the store's session).
    pub(crate) async fn clients(&self, own_id: &str, limit: usize) -> Vec<ClientSeen> {
        let mut seen: Vec<ClientSeen> = lock(&self.events.live)
            .iter()
            .filter(|(id, live)| live.open > 0 && id.as_str() != own_id)
            .take(limit)
            .map(|(id, live)| ClientSeen {
                id: id.clone(),
                connected: true,
                since_ms: live.since_ms,
                address: live.address,
            })
            .collect();
        seen.sort_by(|a, b| a.id.cmp(&b.id));
        if let Some(sessions) = self.events.sessions.get() {
            seen.extend(
                sessions
                    .offline_list(limit)
                    .await
                    .into_iter()
                    .map(|(id, since_ms)| ClientSeen {
                        id,
                        connected: false,
                        since_ms,
                        address: None,
                    }),
            );
        }
        seen
    }
}
