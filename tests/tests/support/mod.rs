//! Fixtures shared by the client suites: a state store behind mosquitto or behind the
//! embedded broker, clients with unique ids, a raw MQTT subscriber, and polling helpers.

#![allow(dead_code)] // each suite uses a different part

use std::future::Future;
use std::time::Duration;

use mqstate::{Client, ClientOptions, ConnectionSettings, KeyNotification, Observer};
use mqstate_tests::StateStoreFixture;
use rumqttc::v5::mqttbytes::QoS;
use rumqttc::v5::mqttbytes::v5::Packet;
use rumqttc::v5::{AsyncClient, Event, MqttOptions};
use tokio::sync::mpsc;

/// A state store to test against: the shared fixture plus client helpers.
pub struct Env {
    /// The broker port clients connect to.
    pub port: u16,
    pub fixture: StateStoreFixture,
}

impl Env {
    /// mqstate-server attached to a fresh mosquitto.
    pub async fn mosquitto() -> Env {
        Env::from(
            StateStoreFixture::mosquitto()
                .await
                .expect("fixture starts"),
        )
    }

    /// mqstate-server with its embedded broker.
    pub async fn embedded() -> Env {
        Env::from(StateStoreFixture::embedded().await.expect("fixture starts"))
    }

    /// A running fixture.
    pub fn from(fixture: StateStoreFixture) -> Env {
        Env {
            port: fixture.port(),
            fixture,
        }
    }

    /// Settings for a client with a unique id starting with `name`.
    pub fn settings(&self, name: &str) -> ConnectionSettings {
        self.settings_on(name, self.port)
    }

    /// Settings for a client with a unique id reaching the broker on `port` (a proxy).
    pub fn settings_on(&self, name: &str, port: u16) -> ConnectionSettings {
        let mut s = ConnectionSettings::new("127.0.0.1", port);
        s.client_id = Some(format!("{name}-{}", uuid::Uuid::new_v4().simple()));
        s.reconnect_max_delay = Duration::from_millis(500);
        s
    }

    /// A connected client.
    pub async fn client(&self, name: &str) -> Client {
        Client::connect_with(self.settings(name), ClientOptions::default())
            .await
            .expect("client connects")
    }
}

/// Polls `check` until it returns true; panics after `timeout`.
pub async fn eventually<F, Fut>(timeout: Duration, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    let deadline = tokio::time::Instant::now() + timeout;
    loop {
        if check().await {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "condition not met within {timeout:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The observer's next notification; panics if none arrives within 10 s.
pub async fn next_notification(observer: &mut Observer) -> KeyNotification {
    tokio::time::timeout(Duration::from_secs(10), observer.recv())
        .await
        .expect("a notification within 10 s")
        .expect("the observer is open")
}

/// A plain MQTT subscriber, to see what the service publishes.
pub struct RawSubscriber {
    rx: mpsc::UnboundedReceiver<rumqttc::v5::mqttbytes::v5::Publish>,
    task: tokio::task::JoinHandle<()>,
}

impl RawSubscriber {
    /// The next message, if one arrives within `timeout`.
    pub async fn next(&mut self, timeout: Duration) -> Option<rumqttc::v5::mqttbytes::v5::Publish> {
        tokio::time::timeout(timeout, self.rx.recv())
            .await
            .ok()
            .flatten()
    }

    /// Counts messages arriving within `window`, returning early once `max` arrived.
    pub async fn count_within(&mut self, window: Duration, max: usize) -> usize {
        let deadline = tokio::time::Instant::now() + window;
        let mut n = 0;
        while n < max {
            match tokio::time::timeout_at(deadline, self.rx.recv()).await {
                Ok(Some(_)) => n += 1,
                _ => break,
            }
        }
        n
    }
}

impl Drop for RawSubscriber {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Waits until mosquitto's log (`$SYS/broker/log/#`, read through `log`, a [`raw_subscriber`]
/// made before the connection ended) reports that `client_id`'s connection ended; panics after
/// 10 s. The store reads the same lines to drop a client's KEYNOTIFY registrations, and
/// mosquitto queues each log line to every subscriber before it reads its next packet: a
/// request sent after this returns reaches the store after the line did. (Without this wait a
/// change written while the client is away can still be notified to its stored session and
/// delivered, live, when it resumes.)
pub async fn disconnect_logged(log: &mut RawSubscriber, client_id: &str) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        let left = deadline.saturating_duration_since(tokio::time::Instant::now());
        let Some(line) = log.next(left).await else {
            panic!("mosquitto did not log the end of {client_id}'s connection within 10 s");
        };
        if mqstate_tests::mosquitto::logs_disconnect(
            &String::from_utf8_lossy(&line.payload),
            client_id,
        ) {
            return;
        }
    }
}

/// Subscribes `filter` on the broker at `port` and returns once the SUBACK arrived.
pub async fn raw_subscriber(port: u16, filter: &str) -> RawSubscriber {
    let id = format!("raw-{}", uuid::Uuid::new_v4().simple());
    let mut opts = MqttOptions::new(id, "127.0.0.1", port);
    opts.set_max_packet_size(Some(1 << 20));
    let (client, mut eventloop) = AsyncClient::new(opts, 64);
    client.subscribe(filter, QoS::AtLeastOnce).await.unwrap();
    let (tx, rx) = mpsc::unbounded_channel();
    let (acked_tx, acked_rx) = tokio::sync::oneshot::channel();
    let task = tokio::spawn(async move {
        let _client = client;
        let mut acked = Some(acked_tx);
        loop {
            match eventloop.poll().await {
                Ok(Event::Incoming(Packet::SubAck(_))) => {
                    if let Some(a) = acked.take() {
                        let _ = a.send(());
                    }
                }
                Ok(Event::Incoming(Packet::Publish(p))) => {
                    let _ = tx.send(p);
                }
                Ok(_) => {}
                Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
            }
        }
    });
    tokio::time::timeout(Duration::from_secs(10), acked_rx)
        .await
        .expect("SUBACK within 10 s")
        .unwrap();
    RawSubscriber { rx, task }
}
