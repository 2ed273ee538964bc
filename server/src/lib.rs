//! # mqstate-server
//!
//! A local MQTT5 state store that behaves like the Azure IoT Operations service byte for
//! byte: the emulator every mqstate suite talks to, and a zero-install store for
//! developers.
//!
//! - [`state_machine`]: the store as a pure state machine ([`state_machine::StateMachine`]);
//!   [`journal`]: its persistence log.
//! - [`service`]: the MQTT adapter (requests in, responses and notifications out);
//!   [`envelope`]: the request/response properties and the rules for bad requests;
//!   [`outbox`]: the bounded queues in front of the broker; [`telemetry`]: the store's own
//!   spans, exported over OTLP/HTTP when asked to.
//! - [`Server`] / [`ServerConfig`] / [`ServerHandle`]: start it with an embedded MQTT5
//!   broker (the default; with optional TLS, K8S-SAT and password authentication and an
//!   `--acl` mode) or attached to an existing one such as mosquitto.
//! - `testing` (the cargo feature of that name): `testing::LocalStore`, a store that a
//!   test starts in process, with faults on demand (connection cuts, pauses, restarts,
//!   injected store errors) and a look inside. What the emulator does
//!   beyond the spec, and its limits: `docs/server.md`.
//!
//! Module dependencies point one way: `server` wires `connection` (the MQTT client) and
//! `embedded` (the broker) to `service`, which knows neither of them (it talks to the
//! broker through [`outbox::Sink`] and a small control trait); `service` uses `envelope`,
//! `journal`, `outbox` and `state_machine`; `state_machine` depends on nothing in the crate.
//!
//! ```no_run
//! # async fn demo() -> std::io::Result<()> {
//! use mqstate_server::{Server, ServerConfig};
//! let server = Server::start(ServerConfig::ephemeral()).await?;
//! println!("broker at {}", server.addr());
//! server.shutdown().await;
//! # Ok(())
//! # }
//! ```

mod access;
pub mod config;
mod connection;
mod dedup;
mod embedded;
pub mod envelope;
mod faults;
pub mod inspect;
pub mod journal;
pub mod metrics;
pub mod monitor;
pub mod outbox;
mod server;
pub mod service;
pub mod state_machine;
pub mod telemetry;
mod telemetry_names;
mod wall_clock;
/// The module was named `store` before 0.3: it holds [`state_machine::StateMachine`].
#[deprecated(since = "0.3.0", note = "use mqstate_server::state_machine")]
pub mod store {
    pub use crate::state_machine::*;
}
#[cfg(feature = "testing")]
pub mod testing;

pub use access::SAT_METHOD;
pub use config::{BrokerTarget, ServerConfig, TlsFiles};
pub use connection::MOSQUITTO_SYS_LOG_LINES;
pub use metrics::{Metrics, MetricsReader, Stats};
pub use server::{Server, ServerHandle};
