//! The embedded MQTT5 broker (the `mqtt5` crate's broker, in the same process), so that
//! `mqstate serve` needs nothing installed.
//!
//! Storage is in memory with persistence off (the crate's default is a file backend in
//! `./mqtt_storage`). The broker reports every clean and abrupt disconnect through
//! [`BrokerEventHandler::on_client_disconnect`]; those events become
//! [`Command::Disconnected`] for the store, which drops the client's registrations. The
//! broker also vouches for each publisher's client id (user property `x-mqtt-client-id`,
//! which it overwrites), and can drop a client's connection: used for requests with a
//! forbidden response topic.

use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;

use mqtt5::broker::MqttBroker;
use mqtt5::broker::config::{StorageBackend, StorageConfig};
use mqtt5::broker::router::MessageRouter;
use mqtt5::broker::server::BrokerShutdownHandle;
use mqtt5::broker::{BrokerConfig, BrokerEventHandler, ClientConnectEvent, ClientDisconnectEvent};
use tokio::sync::mpsc::UnboundedSender as Sender;
use tokio::task::JoinHandle;

use crate::service::Command;

/// The Maximum Packet Size the embedded broker announces in its CONNACK: MQTT 5's maximum.
pub(crate) const MAX_PACKET_SIZE: u32 = 268_435_455;

/// A running embedded broker.
pub(crate) struct EmbeddedBroker {
    addr: SocketAddr,
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

impl Disconnector {
    /// Closes the connection of `client_id` (callable from any thread).
    pub(crate) fn disconnect(&self, client_id: &str) {
        let router = Arc::clone(&self.router);
        let client_id = client_id.to_owned();
        self.runtime.spawn(async move {
            router.disconnect_client(&client_id).await;
        });
    }
}

/// Forwards the broker's connection events to the log and the store.
struct Events {
    commands: Sender<Command>,
}

impl BrokerEventHandler for Events {
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
        Box::pin(async {})
    }
}

impl EmbeddedBroker {
    /// Binds `listen` and starts the broker; connection events go to `commands`.
    pub(crate) async fn start(
        listen: SocketAddr,
        commands: Sender<Command>,
    ) -> std::io::Result<EmbeddedBroker> {
        let storage = StorageConfig::default()
            .with_backend(StorageBackend::Memory)
            .with_persistence(false);
        let config = BrokerConfig::default()
            .with_bind_address(listen)
            .with_storage(storage)
            .with_sys_topics_enabled(false)
            // The crate's default (268,435,456) is one above MQTT 5's limit: strict clients
            // such as paho-mqtt reject such a CONNACK and reconnect forever.
            .with_max_packet_size(MAX_PACKET_SIZE as usize)
            .with_event_handler(Arc::new(Events { commands }));
        let mut broker = MqttBroker::with_config(config)
            .await
            .map_err(|e| std::io::Error::other(format!("embedded broker on {listen}: {e}")))?;
        let addr = broker
            .local_addr()
            .ok_or_else(|| std::io::Error::other("embedded broker has no listener"))?;
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
            router,
            shutdown,
            task,
        })
    }

    /// The bound address.
    pub(crate) fn addr(&self) -> SocketAddr {
        self.addr
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
