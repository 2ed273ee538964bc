//! # mqstate-tests
//!
//! The integration test harness every mqstate suite shares:
//!
//! - [`Mosquitto`]: Debian's mosquitto on a free loopback port with a generated config
//!   (`start`, `start_persistent`, `port`, `url`, `restart`, `stop`, `pause`; killed on drop);
//! - [`StateStoreFixture`]: a broker (mosquitto or the embedded one) plus an in-process
//!   mqstate server (`mosquitto()`, `embedded()`, `with_data_dir(kind)`, `host`, `port`,
//!   `url`, `restart`, `restart_broker`, `shutdown`);
//! - [`raw`]: a raw rumqttc v5 client that speaks the protocol by hand, so the server is
//!   tested independently of the mqstate client.
//!
//! Tests that need mosquitto fail with a clear error when it is not installed
//! (`scripts/lib/setup/server` installs it).

pub mod fixture;
pub mod listening;
pub mod mosquitto;
pub mod pki;
pub mod proxy;
pub mod raw;
pub mod wire;

pub use fixture::{BrokerKind, StateStoreFixture, server_config};
pub use listening::wait_listening;
pub use mosquitto::{Mosquitto, free_port};

/// Installs a `tracing` subscriber for a test binary once (level from `RUST_LOG`, default
/// `warn`), writing through the test harness's captured output.
pub fn init_tracing() {
    use std::sync::Once;
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let filter = tracing_subscriber::EnvFilter::try_from_default_env()
            .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
        let _ = tracing_subscriber::fmt()
            .with_env_filter(filter)
            .with_test_writer()
            .try_init();
    });
}

/// Runs each named `async fn NAME(kind: BrokerKind)` of the calling test file as two tests,
/// `on_mosquitto::NAME` and `on_embedded::NAME`: every server suite runs against both
/// deployments (its functions are looked up in the calling module, `super::NAME`).
#[macro_export]
macro_rules! both_brokers {
    ($($name:ident),* $(,)?) => {
        mod on_mosquitto {
            $(#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $name() { super::$name($crate::BrokerKind::Mosquitto).await; })*
        }
        mod on_embedded {
            $(#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $name() { super::$name($crate::BrokerKind::Embedded).await; })*
        }
    };
}
