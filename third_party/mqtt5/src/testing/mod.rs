//! Testing utilities for Turmoil-based deterministic testing

pub mod mqtt_scenario;
pub mod turmoil_broker;
pub mod turmoil_client;

pub use mqtt_scenario::{MqttScenario, NetworkConditions, ScenarioBuilder};
pub use turmoil_broker::{TurmoilBroker, TurmoilBrokerConfig};
pub use turmoil_client::{TurmoilClient, TurmoilClientConfig};
