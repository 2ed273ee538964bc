//! The server as a library: [`Server::start`] wires the embedded broker (or an existing
//! one), the MQTT connection (which serves the store) and the publisher together and returns a
//! [`ServerHandle`] that reports the bound address and shuts everything down.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rumqttc::v5::AsyncClient;
use rumqttc::v5::mqttbytes::QoS;
use tokio::sync::mpsc::UnboundedSender;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::access::{Gate, GateConfig};
use crate::config::ServerConfig;
use crate::connection::Loop;
use crate::connection::{self, ClientSink};
use crate::embedded::{EmbeddedBroker, RouterSink, workers};
use crate::journal::Journal;
use crate::metrics::{Metrics, Stats};
use crate::outbox::{Counters, Outbox, Sink};
use crate::service::{BrokerControl, Command, Service, now_ms};
use crate::state_machine::{StateMachine, StoreConfig};

/// How long [`Server::start`] waits for the broker to grant the request subscription.
const READY_TIMEOUT: Duration = Duration::from_secs(10);

/// The local state store service.
#[derive(Debug)]
pub struct Server;

/// See [`ServerHandle::probe_settings`]: `internal` is the embedded broker's plain listener.
fn probe_settings(
    client_id: &str,
    secret: &str,
    internal: Option<SocketAddr>,
    target: Option<&crate::config::BrokerTarget>,
) -> mqstate::ConnectionSettings {
    let mut settings = match (internal, target) {
        (Some(addr), _) => {
            let ip = if addr.ip().is_unspecified() {
                match addr {
                    SocketAddr::V4(_) => IpAddr::V4(Ipv4Addr::LOCALHOST),
                    SocketAddr::V6(_) => IpAddr::V6(Ipv6Addr::LOCALHOST),
                }
            } else {
                addr.ip()
            };
            let mut s = mqstate::ConnectionSettings::new(ip.to_string(), addr.port());
            s.username = Some(client_id.to_owned());
            s.password = Some(secret.to_owned());
            s
        }
        (None, Some(target)) => {
            let mut s = mqstate::ConnectionSettings::new(target.host.clone(), target.port);
            if target.tls {
                s.tls = Some(mqstate::TlsSettings {
                    ca_file: target.ca_file.clone(),
                    ..Default::default()
                });
            }
            s.username = target.username.clone();
            s.password = target.password.clone();
            s
        }
        (None, None) => mqstate::ConnectionSettings::new("127.0.0.1", 1883),
    };
    settings.client_id = Some(format!("{client_id}-probe"));
    settings
}

/// A handle that reads the counters of a running server from anywhere (a metrics endpoint),
/// without holding the [`ServerHandle`](crate::ServerHandle).
#[derive(Clone, Debug)]
pub struct MetricsReader {
    pub(crate) counters: Arc<Counters>,
    pub(crate) sessions: Option<crate::embedded::SessionCounts>,
    /// Whether spans are exported (their counters are reported only then).
    pub(crate) spans_on: bool,
}

impl MetricsReader {
    /// The counters now.
    pub fn read(&self) -> Metrics {
        Metrics {
            stats: self.stats(),
            requests: self.counters.recorder.snapshot(),
            sessions_online: self.sessions.as_ref().map(|s| s.online()),
            sessions_offline: self.sessions.as_ref().map(|s| s.offline()),
            spans: self.spans_on.then(|| self.counters.spans.snapshot()),
        }
    }

    /// Only the server's counters ([`ServerHandle::stats`](crate::ServerHandle::stats)),
    /// without the request counters' snapshot.
    pub fn stats(&self) -> Stats {
        let (offline, ended) = self
            .sessions
            .as_ref()
            .map_or((0, 0), |s| (s.offline(), s.offline_ended()));
        self.counters.stats(offline, ended)
    }
}

/// A running server. Dropping it stops everything without waiting; prefer
/// [`ServerHandle::shutdown`].
pub struct ServerHandle {
    addr: SocketAddr,
    embedded: Option<EmbeddedBroker>,
    /// Kept so the command channel stays open while the server runs.
    _commands: UnboundedSender<Command>,
    connection: Option<JoinHandle<()>>,
    publisher: Option<JoinHandle<()>>,
    stop: watch::Sender<bool>,
    counters: Arc<Counters>,
    client_id: String,
    disconnects: Arc<AtomicU8>,
    probe: Option<JoinHandle<()>>,
    /// The store, when served in process (the embedded broker without the adapter).
    service: Option<Arc<Mutex<Service>>>,
    /// The faults armed on the store.
    faults: Arc<crate::faults::Faults>,
    /// The live event stream, if one was given.
    monitor: Option<crate::monitor::Monitor>,
    /// How a client reaches the store through its broker with the server's own rights.
    probe_settings: mqstate::ConnectionSettings,
    /// The span exporter (with [`ServerConfig::otlp`]).
    exporter: Option<crate::telemetry::Exporter>,
}

impl Server {
    /// [`Server::start`] for a port just freed (a restart on the same port after
    /// [`ServerHandle::kill`]): a lingering accept, or rarely another process, may hold it a
    /// moment, so a start that fails is tried again for up to `within`.
    pub async fn start_rebinding(
        config: ServerConfig,
        within: Duration,
    ) -> std::io::Result<ServerHandle> {
        let deadline = tokio::time::Instant::now() + within;
        loop {
            match Server::start(config.clone()).await {
                Ok(server) => return Ok(server),
                Err(e) if tokio::time::Instant::now() < deadline => {
                    tracing::debug!(error = %e, listen = %config.listen, "restart: port not free yet");
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// Starts the server and returns once it is subscribed to the request topic. An
    /// [`otlp`](ServerConfig::otlp) endpoint that is not `http://` is refused first
    /// (`InvalidInput`).
    pub async fn start(config: ServerConfig) -> std::io::Result<ServerHandle> {
        if let Some(otlp) = &config.otlp {
            otlp.validate()
                .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e))?;
        }
        let now = now_ms();
        let mut store = StateMachine::new(
            StoreConfig {
                node_id: config.node_id.clone(),
                max_keys: config.max_keys,
                scan_page_keys: config.scan_page_keys,
                ..StoreConfig::default()
            },
            now,
        );
        let journal = match &config.data_dir {
            Some(dir) => {
                let (mut journal, entries) = Journal::open(dir)?;
                journal.set_fsync(config.fsync)?;
                tracing::info!(dir = %dir.display(), persisted = entries.len(), fsync = %config.fsync, "persistence log opened");
                store.restore(entries, now);
                Some(journal)
            }
            None => None,
        };

        let (commands, commands_rx) = tokio::sync::mpsc::unbounded_channel();
        let client_id = config
            .client_id
            .clone()
            .unwrap_or_else(|| format!("mqstate-server-{}", uuid::Uuid::new_v4().simple()));
        // The server's own credentials on the embedded broker (see `access`).
        let secret = uuid::Uuid::new_v4().simple().to_string();
        // `addr` is what clients use; `own` is where the server's connection goes.
        let (embedded, host, addr, own) = match &config.broker {
            None => {
                let gate = Gate::new(&GateConfig {
                    sat_token_file: config.sat_token_file.as_deref(),
                    password_file: config.password_file.as_deref(),
                    acl: config.acl,
                    acl_allow: &config.acl_allow,
                    server_user: &client_id,
                    server_secret: &secret,
                })?;
                let limits = crate::embedded::Limits {
                    client_queue_bytes: config.client_queue_bytes,
                    max_keys: config.max_keys,
                    max_offline_sessions: config.max_offline_sessions,
                    max_clients: config.max_clients,
                };
                let broker = EmbeddedBroker::start(
                    config.listen,
                    commands.clone(),
                    gate,
                    config.tls.as_ref(),
                    limits,
                    config.monitor.clone(),
                )
                .await?;
                let addr = broker.addr();
                let own = broker.internal_addr();
                let ip = match own.ip() {
                    IpAddr::V4(ip) if ip.is_unspecified() => IpAddr::V4(Ipv4Addr::LOCALHOST),
                    IpAddr::V6(ip) if ip.is_unspecified() => IpAddr::V6(Ipv6Addr::LOCALHOST),
                    ip => ip,
                };
                (Some(broker), ip.to_string(), addr, own)
            }
            Some(target) => {
                let addr = tokio::net::lookup_host((target.host.as_str(), target.port))
                    .await?
                    .next()
                    .ok_or_else(|| std::io::Error::other("broker host did not resolve"))?;
                (None, target.host.clone(), addr, addr)
            }
        };

        let in_process = embedded.is_some() && !config.embedded_adapter;
        let watch_sys_log = config.broker.as_ref().is_some_and(|t| t.watch_sys_log);
        let (ready_tx, mut ready) = watch::channel(false);
        let (stop, stop_rx) = watch::channel(false);
        let counters = Arc::new(Counters::default());
        let sys_log_seen = Arc::new(AtomicBool::new(false));
        let disconnects = Arc::new(AtomicU8::new(if embedded.is_some() {
            connection::DISCONNECTS_SEEN
        } else if watch_sys_log {
            connection::DISCONNECTS_UNKNOWN
        } else {
            connection::DISCONNECTS_UNSEEN
        }));
        let outbox = Arc::new(Outbox::new(
            config.notify_queue_limit,
            config.response_queue_limit,
        ));
        // The adapter's MQTT connection: to the external broker, or to the embedded one
        // when asked to (`embedded_adapter`). In process, the store has none.
        let mqtt = (!in_process)
            .then(|| {
                let mut options =
                    connection::options(&client_id, &host, own.port(), config.broker.as_ref())?;
                if embedded.is_some() {
                    options.set_credentials(client_id.clone(), secret.clone());
                }
                Ok::<_, std::io::Error>(connection::client(options, config.mqtt_channel_capacity))
            })
            .transpose()?;
        // With the embedded broker, replies go straight into its router: no TCP hop, and no
        // `x-mqtt-client-id` stamped on them (the broker adds it to what clients publish).
        let (publisher, sink): (Publisher, Box<dyn Sink + Send>) = match (&embedded, &mqtt) {
            (Some(broker), _) => {
                let router = broker.router_sink(&client_id, config.mqtt_channel_capacity);
                (Publisher::Router(router.clone()), Box::new(router))
            }
            (None, Some((client, _))) => (
                Publisher::Mqtt(client.clone()),
                Box::new(ClientSink(client.clone())),
            ),
            (None, None) => unreachable!("an external broker always has the adapter"),
        };
        let publisher = tokio::spawn(publish_loop(
            Arc::clone(&outbox),
            publisher,
            Arc::clone(&counters),
        ));
        let faults = Arc::new(crate::faults::Faults::default());
        let (tracer, exporter) = match &config.otlp {
            Some(otlp) => {
                let (tracer, exporter) =
                    crate::telemetry::start(otlp, addr, Arc::clone(&counters.spans))?;
                tracing::info!(endpoint = %otlp.endpoint, "exporting a span per request over OTLP/HTTP");
                (Some(tracer), Some(exporter))
            }
            None => (None, None),
        };
        let service = Service {
            store,
            journal,
            outbox,
            sink,
            counters: Arc::clone(&counters),
            disconnector: embedded
                .as_ref()
                .map(|broker| Box::new(broker.disconnector()) as Box<dyn BrokerControl>),
            trust_broker_id: embedded.is_some(),
            own_client_id: client_id.clone(),
            log_values: config.log_values,
            warned_unrouted: false,
            answered: crate::dedup::Answered::new(config.dedup_window, config.dedup_max_answers),
            faults: Arc::clone(&faults),
            tracer,
            monitor: config.monitor.clone(),
        };
        let mut shared_service = None;
        let connection = match (mqtt, &embedded) {
            (Some((client, eventloop)), _) => tokio::spawn(connection::run(Loop {
                eventloop,
                client,
                service,
                commands: commands_rx,
                filters: connection::filters(watch_sys_log),
                ready: ready_tx,
                shutdown: stop_rx,
                sys_log_seen: Arc::clone(&sys_log_seen),
            })),
            (None, Some(broker)) => {
                let session = broker.store_session(&client_id).await?;
                ready_tx.send_replace(true);
                let service = Arc::new(Mutex::new(service));
                shared_service = Some(Arc::clone(&service));
                tokio::spawn(workers::run(
                    service,
                    session,
                    broker.responder(&client_id),
                    workers::default_workers(),
                    commands_rx,
                    stop_rx,
                ))
            }
            (None, None) => unreachable!("an external broker always has the adapter"),
        };
        let probe_options = connection::options(
            &format!("{client_id}-probe"),
            &host,
            addr.port(),
            config.broker.as_ref(),
        )?;

        let probe_settings = probe_settings(
            &client_id,
            &secret,
            embedded.as_ref().map(EmbeddedBroker::internal_addr),
            config.broker.as_ref(),
        );
        let mut handle = ServerHandle {
            addr,
            embedded,
            _commands: commands,
            connection: Some(connection),
            publisher: Some(publisher),
            stop,
            counters,
            client_id,
            disconnects: Arc::clone(&disconnects),
            probe: None,
            service: shared_service,
            faults,
            probe_settings,
            exporter,
            monitor: config.monitor.clone(),
        };
        // A bool, not the `watch::Ref` the wait returns: holding that across the `await` below
        // would make this future `!Send` (bindings spawn it on their runtimes).
        let subscribed = matches!(
            tokio::time::timeout(READY_TIMEOUT, ready.wait_for(|ready| *ready)).await,
            Ok(Ok(_))
        );
        if !subscribed {
            handle.stop_all().await;
            return Err(std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                format!("could not subscribe to the request topic on the broker at {addr}"),
            ));
        }
        if handle.embedded.is_none() {
            if watch_sys_log {
                handle.probe = Some(tokio::spawn(connection::probe_sys_log(
                    probe_options,
                    sys_log_seen,
                    disconnects,
                )));
            } else {
                tracing::warn!(
                    "not watching $SYS/broker/log/#: client disconnects are not seen, and \
                     KEYNOTIFY registrations outlive their clients"
                );
            }
        }
        tracing::info!(%addr, client_id = %handle.client_id, embedded = handle.embedded.is_some(), in_process, "state store ready");
        Ok(handle)
    }
}

/// Where the publisher task hands queued messages.
enum Publisher {
    /// The MQTT client (an external broker).
    Mqtt(AsyncClient),
    /// The embedded broker's router.
    Router(RouterSink),
}

/// Hands queued messages on, waiting for room.
async fn publish_loop(outbox: Arc<Outbox>, publisher: Publisher, counters: Arc<Counters>) {
    while let Some(message) = outbox.next(&counters).await {
        let result = match &publisher {
            Publisher::Mqtt(client) => client
                .publish_with_properties(
                    message.topic,
                    QoS::AtLeastOnce,
                    false,
                    message.payload,
                    message.properties,
                )
                .await
                .map_err(|e| e.to_string()),
            Publisher::Router(router) => router.send(message).await,
        };
        outbox.done();
        if let Err(e) = result {
            tracing::error!(error = %e, "could not hand a message to the broker");
        }
    }
}

impl ServerHandle {
    /// The broker's address: the embedded broker's bound address (port 0 resolved), or
    /// the attached broker's.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Whether the broker is the embedded one.
    pub fn is_embedded(&self) -> bool {
        self.embedded.is_some()
    }

    /// The MQTT client id the server uses.
    pub fn client_id(&self) -> &str {
        &self.client_id
    }

    /// Whether the server learns of client disconnects (to drop their KEYNOTIFY
    /// registrations): always with the embedded broker; with an external broker, once a
    /// start-up probe found its `$SYS/broker/log` (mosquitto's `log_dest topic`). `None`
    /// while the probe runs (a few seconds after start).
    pub fn sees_disconnects(&self) -> Option<bool> {
        match self.disconnects.load(Ordering::Relaxed) {
            connection::DISCONNECTS_SEEN => Some(true),
            connection::DISCONNECTS_UNSEEN => Some(false),
            _ => None,
        }
    }

    /// The server's counters.
    pub fn stats(&self) -> Stats {
        self.metrics_reader().stats()
    }

    /// Settings for a client that checks the store answers through its broker (a readiness
    /// probe, `mqstate serve --http`'s `/readyz`): on the embedded broker, its plain loopback
    /// listener with the server's own credentials (so it passes `--password-file`, SAT and
    /// ACL checks); behind `--broker`, that broker with the server's TLS and credentials.
    /// The client id is the server's own with `-probe` appended.
    pub fn probe_settings(&self) -> mqstate::ConnectionSettings {
        self.probe_settings.clone()
    }

    /// Everything the server counts: [`stats`](ServerHandle::stats), requests by command
    /// and outcome with their latencies, the store's sizes, sessions.
    pub fn metrics(&self) -> Metrics {
        self.metrics_reader().read()
    }

    /// A handle that reads [`metrics`](ServerHandle::metrics) from anywhere while the
    /// server runs (after it stops, it reads the last values).
    pub fn metrics_reader(&self) -> MetricsReader {
        MetricsReader {
            counters: Arc::clone(&self.counters),
            sessions: self.embedded.as_ref().map(EmbeddedBroker::session_counts),
            spans_on: self.exporter.is_some(),
        }
    }

    /// Stops cleanly within [`DEFAULT_SHUTDOWN_TIMEOUT`](crate::config::DEFAULT_SHUTDOWN_TIMEOUT):
    /// see [`ServerHandle::shutdown_within`].
    pub async fn shutdown(self) {
        self.shutdown_within(crate::config::DEFAULT_SHUTDOWN_TIMEOUT)
            .await;
    }

    /// Stops cleanly, in this order: the store takes no new requests (with the embedded
    /// broker, its session leaves the request topic), finishes and answers the ones it is
    /// applying, answers those already waiting for it `__stat 503` (not applied), fsyncs and
    /// closes the persistence log, then the broker closes its listener and every client
    /// connection. Returns `true` if all that ended within `bound`; past it, what is left is
    /// stopped without waiting (responses not yet written to a client are lost; their
    /// requests were applied or not, as the journal says), the log is fsynced all the same,
    /// and `false` is returned.
    pub async fn shutdown_within(mut self, bound: Duration) -> bool {
        let clean = tokio::time::timeout(bound, self.stop_all()).await.is_ok();
        if !clean {
            tracing::warn!(
                ?bound,
                "shutdown: not done within the bound; stopping the rest without waiting"
            );
            if let Some(connection) = self.connection.take() {
                // The adapter's loop owns its store: dropping it fsyncs the journal.
                connection.abort();
            }
            if let Some(publisher) = self.publisher.take() {
                publisher.abort();
            }
            if let Some(exporter) = self.exporter.take() {
                exporter.abort();
            }
            if let Some(broker) = self.embedded.take() {
                broker.signal_shutdown();
            }
            // Free unless a worker is stuck in a write to the disk; then the journal's own
            // drop fsyncs it when that write returns.
            if let Some(service) = &self.service
                && let Ok(mut service) = service.try_lock()
            {
                service.close();
            }
        }
        tracing::info!(clean, "state store stopped");
        clean
    }

    /// Stops everything in order and waits for each part (see
    /// [`ServerHandle::shutdown_within`]); cancellable: each part is let go only once done.
    async fn stop_all(&mut self) {
        self.stop.send_replace(true);
        if let Some(probe) = self.probe.take() {
            probe.abort();
        }
        if let Some(connection) = &mut self.connection {
            let _ = connection.await;
            self.connection = None;
        }
        if let Some(publisher) = self.publisher.take() {
            publisher.abort();
            let _ = publisher.await;
        }
        // Every request is answered: the spans left go in one last export.
        if let Some(exporter) = self.exporter.take() {
            exporter.stop().await;
        }
        if let Some(broker) = &mut self.embedded {
            broker.stop().await;
            self.embedded = None;
        }
    }
}

impl ServerHandle {
    /// Stops as `kill -9` does: every client connection reset (no DISCONNECT packet), the
    /// store's tasks ended at once (nothing in flight answered, nothing waiting refused), then
    /// the broker. What was persisted is in the log (start a server on the same
    /// [`data_dir`](ServerConfig::data_dir) to get it back: [`Server::start_rebinding`]).
    pub async fn kill(self) {
        // Connections reset first, as a killed process leaves them (a broker that stops
        // says DISCONNECT to each; a client that reconnects in the instant before the stop
        // still hears it).
        self.cut_connections().await;
        self.stop_abruptly().await;
    }

    /// A look inside the running server, and faults on it (the console's).
    pub fn inspector(&self) -> crate::inspect::Inspector {
        crate::inspect::Inspector {
            service: self.service.clone(),
            broker: self.embedded.as_ref().map(EmbeddedBroker::view),
            faults: Arc::clone(&self.faults),
            monitor: self.monitor.clone(),
            own_id: self.client_id.clone(),
        }
    }

    /// Whether the store is served in this process (the embedded broker without the
    /// adapter): what [`inspector`](ServerHandle::inspector)'s reads need.
    pub fn in_process(&self) -> bool {
        self.service.is_some()
    }

    /// Stops as a killed process does: the store's tasks end at once (nothing in flight is
    /// answered, nothing waiting is refused), then the broker stops.
    async fn stop_abruptly(mut self) {
        if let Some(connection) = self.connection.take() {
            connection.abort();
            let _ = connection.await;
        }
        self.stop_all().await;
    }

    /// The faults armed on the store.
    #[cfg(feature = "testing")]
    pub(crate) fn faults(&self) -> &crate::faults::Faults {
        &self.faults
    }

    /// Runs `f` on the store served in process, under its lock; `None` when the store is
    /// not served in process (an external broker, or the adapter on the embedded one).
    #[cfg(feature = "testing")]
    pub(crate) fn with_service<R>(&self, f: impl FnOnce(&mut Service) -> R) -> Option<R> {
        let service = self.service.as_ref()?;
        let mut service = service.lock().unwrap_or_else(|p| p.into_inner());
        Some(f(&mut service))
    }

    /// Closes every client connection on the embedded broker (not the store's session)
    /// and waits until each has closed; returns how many were closed.
    pub(crate) async fn cut_connections(&self) -> usize {
        match &self.embedded {
            Some(broker) => broker.cut_connections(&self.client_id).await,
            None => 0,
        }
    }
}

impl Drop for ServerHandle {
    fn drop(&mut self) {
        self.stop.send_replace(true);
        if let Some(probe) = self.probe.take() {
            probe.abort();
        }
        if let Some(publisher) = self.publisher.take() {
            publisher.abort();
        }
        if let Some(exporter) = self.exporter.take() {
            exporter.abort();
        }
        if let Some(broker) = self.embedded.take() {
            broker.signal_shutdown();
        }
    }
}

impl std::fmt::Debug for ServerHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerHandle")
            .field("addr", &self.addr)
            .field("embedded", &self.embedded.is_some())
            .field("client_id", &self.client_id)
            .finish_non_exhaustive()
    }
}
