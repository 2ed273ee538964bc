//! A broker plus an in-process mqstate server: what every suite that talks to a state
//! store starts from.
//!
//! ```no_run
//! # async fn demo() -> anyhow::Result<()> {
//! use mqstate_tests::StateStoreFixture;
//! let mut store = StateStoreFixture::mosquitto().await?; // or ::embedded()
//! let (host, port) = (store.host().to_owned(), store.port());
//! // ... connect a client to host:port ...
//! store.restart().await?;        // the server (and the embedded broker) restarts
//! store.shutdown().await;         // also done, less gracefully, on drop
//! # let _ = (host, port); Ok(()) }
//! ```
//!
//! With mosquitto, the broker outlives server restarts ([`StateStoreFixture::restart`])
//! and can itself be restarted ([`StateStoreFixture::restart_broker`]). With the embedded
//! broker, the server and broker are one: a restart drops every connection and comes
//! back on the same port.

use std::path::{Path, PathBuf};

use anyhow::Context;
use mqstate_server::{BrokerTarget, Server, ServerConfig, ServerHandle, Stats};
use tempfile::TempDir;

use crate::mosquitto::Mosquitto;

/// Which broker a fixture runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BrokerKind {
    /// Debian's mosquitto, with the server attached to it.
    Mosquitto,
    /// The server's embedded MQTT5 broker.
    Embedded,
}

/// A broker and a state store server, torn down together.
pub struct StateStoreFixture {
    kind: BrokerKind,
    mosquitto: Option<Mosquitto>,
    server: Option<ServerHandle>,
    config: ServerConfig,
    host: String,
    port: u16,
    data_dir: Option<TempDir>,
}

/// What the suites start a server with: [`ServerConfig::ephemeral`], in the mode that
/// `MQSTATE_TEST_EMBEDDED` names — `in-process` (the default: the store inside the embedded
/// broker) or `adapter` (the store on its own MQTT connection to the embedded broker), so
/// that every server suite runs against both paths (`scripts/test` runs them twice).
pub fn server_config() -> ServerConfig {
    let adapter = match std::env::var("MQSTATE_TEST_EMBEDDED").as_deref() {
        Ok("adapter") => true,
        Ok("in-process") | Err(_) => false,
        Ok(other) => panic!("MQSTATE_TEST_EMBEDDED={other:?}: use in-process or adapter"),
    };
    ServerConfig {
        embedded_adapter: adapter,
        ..ServerConfig::ephemeral()
    }
}

impl StateStoreFixture {
    /// mosquitto (no persistence) and a server attached to it.
    pub async fn mosquitto() -> anyhow::Result<StateStoreFixture> {
        StateStoreFixture::start(BrokerKind::Mosquitto, server_config()).await
    }

    /// A server with its embedded broker on a free loopback port.
    pub async fn embedded() -> anyhow::Result<StateStoreFixture> {
        StateStoreFixture::start(BrokerKind::Embedded, server_config()).await
    }

    /// Either broker, with a server configured by `config` (its `listen` and `broker`
    /// are set by the fixture). A `data_dir` of `None` stays in memory; use
    /// [`StateStoreFixture::with_data_dir`] for a temporary persistence directory.
    pub async fn start(
        kind: BrokerKind,
        config: ServerConfig,
    ) -> anyhow::Result<StateStoreFixture> {
        StateStoreFixture::start_with(kind, config, None).await
    }

    /// Like [`StateStoreFixture::start`] with persistence into a temporary directory that
    /// lives as long as the fixture (so [`StateStoreFixture::restart`] keeps persisted keys).
    pub async fn with_data_dir(kind: BrokerKind) -> anyhow::Result<StateStoreFixture> {
        let dir = tempfile::Builder::new().prefix("mqstate-data").tempdir()?;
        let mut config = server_config();
        config.data_dir = Some(dir.path().to_owned());
        StateStoreFixture::start_with(kind, config, Some(dir)).await
    }

    async fn start_with(
        kind: BrokerKind,
        mut config: ServerConfig,
        data_dir: Option<TempDir>,
    ) -> anyhow::Result<StateStoreFixture> {
        let mosquitto = match kind {
            BrokerKind::Mosquitto => {
                let broker = Mosquitto::start().context("starting mosquitto")?;
                config.broker =
                    Some(BrokerTarget::parse(&broker.url()).map_err(anyhow::Error::msg)?);
                Some(broker)
            }
            BrokerKind::Embedded => {
                config.broker = None;
                None
            }
        };
        let server = Server::start(config.clone())
            .await
            .context("starting the mqstate server")?;
        let (host, port) = match &mosquitto {
            Some(broker) => (broker.host().to_owned(), broker.port()),
            None => (server.addr().ip().to_string(), server.addr().port()),
        };
        if kind == BrokerKind::Embedded {
            // Restarts come back on the same port.
            config.listen = server.addr();
        }
        Ok(StateStoreFixture {
            kind,
            mosquitto,
            server: Some(server),
            config,
            host,
            port,
            data_dir,
        })
    }

    /// Which broker this is.
    pub fn kind(&self) -> BrokerKind {
        self.kind
    }

    /// The broker's host (`127.0.0.1`).
    pub fn host(&self) -> &str {
        &self.host
    }

    /// The broker's port.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// `mqtt://host:port`.
    pub fn url(&self) -> String {
        format!("mqtt://{}:{}", self.host, self.port)
    }

    /// The server (`None` only while restarting or after shutdown).
    pub fn server(&self) -> Option<&ServerHandle> {
        self.server.as_ref()
    }

    /// The server's counters (zeros when it is not running).
    pub fn stats(&self) -> Stats {
        self.server
            .as_ref()
            .map(ServerHandle::stats)
            .unwrap_or_default()
    }

    /// The persistence directory, if the fixture has one.
    pub fn data_dir(&self) -> Option<&Path> {
        self.data_dir.as_ref().map(TempDir::path)
    }

    /// The mosquitto instance, if this fixture runs one.
    pub fn mosquitto_mut(&mut self) -> Option<&mut Mosquitto> {
        self.mosquitto.as_mut()
    }

    /// Stops the server gracefully and starts it again with the same configuration (and
    /// persistence directory). With the embedded broker, the broker restarts too, on the
    /// same port.
    pub async fn restart(&mut self) -> anyhow::Result<()> {
        self.stop_server().await;
        let mut last = None;
        for _ in 0..50 {
            match Server::start(self.config.clone()).await {
                Ok(server) => {
                    self.server = Some(server);
                    return Ok(());
                }
                Err(e) => last = Some(e),
            }
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
        Err(last.map_or_else(|| anyhow::anyhow!("restart failed"), anyhow::Error::from))
    }

    /// Stops the server (the broker keeps running with mosquitto).
    pub async fn stop_server(&mut self) {
        let Some(server) = self.server.take() else {
            return;
        };
        let id = server.client_id().to_owned();
        let before = self.mosquitto.as_ref().map(|b| b.disconnects_logged(&id));
        server.shutdown().await;
        // Behind mosquitto, until it has logged the end of the server's connection (up to
        // 5 s): it drops the server's subscriptions in the same turn of its loop, so a request
        // sent after this finds no state store subscribed. (A GET right after the stop was
        // once routed to the subscription mosquitto still had, on a loaded machine.)
        if let (Some(broker), Some(before)) = (&self.mosquitto, before) {
            let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(5);
            while broker.disconnects_logged(&id) <= before && tokio::time::Instant::now() < deadline
            {
                tokio::time::sleep(std::time::Duration::from_millis(20)).await;
            }
        }
    }

    /// Restarts mosquitto on the same port (the server reconnects by itself). An error
    /// with the embedded broker: use [`StateStoreFixture::restart`].
    pub fn restart_broker(&mut self) -> anyhow::Result<()> {
        let broker = self
            .mosquitto
            .as_mut()
            .context("restart_broker needs the mosquitto fixture")?;
        broker.restart()?;
        Ok(())
    }

    /// Stops the server and the broker, waiting for both.
    pub async fn shutdown(mut self) {
        self.stop_server().await;
        if let Some(mut broker) = self.mosquitto.take() {
            let _ = broker.stop();
        }
    }

    /// The configuration the server runs with.
    pub fn config(&self) -> &ServerConfig {
        &self.config
    }

    /// A path inside the persistence directory (for tests that inspect it).
    pub fn data_path(&self, name: &str) -> Option<PathBuf> {
        self.data_dir().map(|d| d.join(name))
    }
}
