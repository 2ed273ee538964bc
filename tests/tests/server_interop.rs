//! The embedded broker with clients nobody here wrote: paho-mqtt (Python) and mqtt.js
//! (Node) each run a SET / GET / KEYNOTIFY round against `Server::start` (the scripts are in
//! `tests/interop/`). paho-mqtt validates the CONNACK strictly, so a broker that announces a
//! Maximum Packet Size above MQTT 5's 268,435,455 never gets past the connection.
//!
//! The interpreters and packages come from `scripts/setup` (paho-mqtt in the project's
//! `.venv`, mqtt.js with `npm ci` in `tests/interop`). They are required: a missing one fails
//! the test with the command that installs it, rather than skipping it.

use std::path::{Path, PathBuf};
use std::process::Command;

use mqstate_server::Server;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("workspace root")
        .to_path_buf()
}

fn python() -> PathBuf {
    std::env::var_os("MQSTATE_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| root().join(".venv/bin/python"))
}

/// Runs one interop script against `port`; panics with its output unless it exits 0.
async fn run(mut command: Command, what: &str) {
    let output = tokio::task::spawn_blocking(move || command.output())
        .await
        .expect("join")
        .unwrap_or_else(|e| panic!("{what}: could not start: {e} (run scripts/setup)"));
    assert!(
        output.status.success(),
        "{what} failed ({}):\nstdout: {}\nstderr: {}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

fn paho(port: u16, client_id: &str, extra: &[&str]) -> Command {
    let python = python();
    assert!(
        python.exists(),
        "{} is missing: run scripts/lib/setup/python",
        python.display()
    );
    let mut command = Command::new(python);
    command
        .arg(root().join("tests/interop/paho_round.py"))
        .args(["127.0.0.1", &port.to_string(), client_id])
        .args(extra);
    command
}

fn mqttjs(port: u16, client_id: &str, extra: &[&str]) -> Command {
    let dir = root().join("tests/interop");
    assert!(
        dir.join("node_modules/mqtt").exists(),
        "mqtt.js is missing: run scripts/lib/setup/server (npm ci in tests/interop)"
    );
    let mut command = Command::new("node");
    command
        .current_dir(&dir)
        .arg("mqttjs_round.js")
        .args(["127.0.0.1", &port.to_string(), client_id])
        .args(extra);
    command
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn paho_mqtt_runs_a_round_on_the_embedded_broker() {
    mqstate_tests::init_tracing();
    let server = Server::start(mqstate_tests::server_config()).await.unwrap();
    run(paho(server.addr().port(), "paho-client", &[]), "paho-mqtt").await;
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mqttjs_runs_a_round_on_the_embedded_broker() {
    mqstate_tests::init_tracing();
    let server = Server::start(mqstate_tests::server_config()).await.unwrap();
    run(
        mqttjs(server.addr().port(), "mqttjs-client", &[]),
        "mqtt.js",
    )
    .await;
    server.shutdown().await;
}

/// paho-mqtt without a subscription to its notification topic (as the Go SDK behaves)
/// still gets its notification from the embedded broker.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn paho_mqtt_without_a_notification_subscription_is_notified() {
    mqstate_tests::init_tracing();
    let server = Server::start(mqstate_tests::server_config()).await.unwrap();
    let port = server.addr().port();
    run(
        paho(port, "paho-unsubscribed", &["--no-notify-subscription"]),
        "paho-mqtt (no notification subscription)",
    )
    .await;
    run(
        mqttjs(port, "mqttjs-unsubscribed", &["--no-notify-subscription"]),
        "mqtt.js (no notification subscription)",
    )
    .await;
    server.shutdown().await;
}

/// A client id with '/' (MQTT 5 allows any UTF-8 client id, and mosquitto accepts it): the
/// embedded broker used to refuse it as unsafe for a file name (mqtt5's
/// `is_path_safe_client_id`); its fork's patch lets it connect, and a whole round works.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_id_with_a_slash_runs_a_round_on_the_embedded_broker() {
    mqstate_tests::init_tracing();
    let server = Server::start(mqstate_tests::server_config()).await.unwrap();
    run(paho(server.addr().port(), "a/b", &[]), "paho-mqtt as a/b").await;
    server.shutdown().await;
}
