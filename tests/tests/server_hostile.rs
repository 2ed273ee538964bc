//! The server against clients that are not well-behaved or not ours (issue 9): clients that
//! never subscribe to their notification topic, clients that claim another client's id,
//! keys too long to observe. Driven by raw rumqttc requests.

use bytes::Bytes;
use mqstate::envelope::property;
use mqstate::topics;
use mqstate_tests::raw::{RawClient, RequestOptions, resp};
use mqstate_tests::{BrokerKind, StateStoreFixture};

async fn fixture(kind: BrokerKind) -> StateStoreFixture {
    mqstate_tests::init_tracing();
    match kind {
        BrokerKind::Mosquitto => StateStoreFixture::mosquitto().await,
        BrokerKind::Embedded => StateStoreFixture::embedded().await,
    }
    .expect("fixture")
}

async fn request(c: &mut RawClient, args: &[&[u8]]) -> Bytes {
    let answer = c
        .request(resp(args), RequestOptions::default())
        .await
        .expect("answered");
    assert_eq!(answer.status(), Some("200"));
    answer.payload().clone()
}

/// As the official Go SDK does: a client that subscribes to its response topic only still
/// receives its notifications from the embedded broker.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn notifications_reach_a_client_that_never_subscribed_to_them() {
    let f = fixture(BrokerKind::Embedded).await;
    let mut observer = RawClient::connect_with(f.host(), f.port(), "go-sdk-like", false)
        .await
        .unwrap();
    let mut writer = RawClient::connect(f.host(), f.port(), "writer")
        .await
        .unwrap();
    assert_eq!(
        &request(&mut observer, &[b"KEYNOTIFY", b"k"]).await[..],
        b"+OK\r\n"
    );
    request(&mut writer, &[b"SET", b"k", b"v1"]).await;
    let n = observer.next_message().await.expect("a notification");
    assert_eq!(
        std::str::from_utf8(&n.topic).unwrap(),
        topics::notification_topic("go-sdk-like", b"k")
    );
    assert_eq!(
        &n.payload[..],
        b"*4\r\n$6\r\nNOTIFY\r\n$3\r\nSET\r\n$5\r\nVALUE\r\n$2\r\nv1\r\n"
    );
    // After STOP, nothing more arrives.
    assert_eq!(
        &request(&mut observer, &[b"KEYNOTIFY", b"k", b"STOP"]).await[..],
        b"+OK\r\n"
    );
    request(&mut writer, &[b"SET", b"k", b"v2"]).await;
    request(&mut observer, &[b"GET", b"barrier"]).await;
    assert!(observer.drain_received().is_empty());
    f.shutdown().await;
}

/// A client that does subscribe gets each notification once, not once per route.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_subscribed_client_gets_each_notification_once() {
    let f = fixture(BrokerKind::Embedded).await;
    let mut observer = RawClient::connect(f.host(), f.port(), "subscribed")
        .await
        .unwrap();
    request(&mut observer, &[b"KEYNOTIFY", b"k"]).await;
    request(&mut observer, &[b"SET", b"k", b"v"]).await;
    request(&mut observer, &[b"GET", b"barrier"]).await;
    let received = observer.drain_received();
    assert_eq!(received.len(), 1, "{received:?}");
    f.shutdown().await;
}

/// On the embedded broker the connection's client id is known: a `__srcId` naming another
/// client is refused, so nobody registers, stops or spends quota under another's id.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_src_id_that_is_not_the_connection_id_is_refused() {
    let f = fixture(BrokerKind::Embedded).await;
    let mut victim = RawClient::connect(f.host(), f.port(), "victim")
        .await
        .unwrap();
    let mut mallory = RawClient::connect(f.host(), f.port(), "mallory")
        .await
        .unwrap();
    request(&mut victim, &[b"KEYNOTIFY", b"k"]).await;
    let spoofed = RequestOptions {
        src_id: false,
        extra: vec![(property::SOURCE_ID.to_owned(), "victim".to_owned())],
        ..RequestOptions::default()
    };
    let answer = mallory
        .request(resp(&[b"KEYNOTIFY", b"k", b"STOP"]), spoofed)
        .await
        .unwrap();
    assert_eq!(answer.status(), Some("400"));
    assert_eq!(
        answer.user_property(property::PROPERTY_NAME),
        Some(property::SOURCE_ID)
    );
    // The victim's registration is intact.
    request(&mut mallory, &[b"SET", b"k", b"v"]).await;
    let n = victim.next_message().await.expect("still notified");
    assert_eq!(
        std::str::from_utf8(&n.topic).unwrap(),
        topics::notification_topic("victim", b"k")
    );
    f.shutdown().await;
}

async fn a_key_too_long_to_observe(kind: BrokerKind) {
    let f = fixture(kind).await;
    let mut watcher = RawClient::connect(f.host(), f.port(), "w").await.unwrap();
    let mut other = RawClient::connect(f.host(), f.port(), "other")
        .await
        .unwrap();
    let long = vec![b'x'; 40_000];
    let refused = request(&mut watcher, &[b"KEYNOTIFY", &long]).await;
    assert!(
        refused.starts_with(b"-ERR") && String::from_utf8_lossy(&refused).contains("too long"),
        "{refused:?}"
    );
    // Setting it (twice) leaves the store's broker connection alone: everyone is answered.
    for _ in 0..2 {
        assert_eq!(
            &request(&mut watcher, &[b"SET", &long, b"v"]).await[..],
            b"+OK\r\n"
        );
        assert_eq!(
            &request(&mut other, &[b"GET", b"nothing"]).await[..],
            b"$-1\r\n"
        );
    }
    assert!(watcher.drain_received().is_empty());
    f.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_key_too_long_to_observe_is_refused_on_mosquitto() {
    a_key_too_long_to_observe(BrokerKind::Mosquitto).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_key_too_long_to_observe_is_refused_on_embedded() {
    a_key_too_long_to_observe(BrokerKind::Embedded).await;
}

/// Waits (a few seconds at most) for the start-up probe's answer.
async fn sees_disconnects(server: &mqstate_server::ServerHandle) -> Option<bool> {
    for _ in 0..500 {
        if let Some(seen) = server.sees_disconnects() {
            return Some(seen);
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    None
}

async fn attached_to(broker: &mqstate_tests::Mosquitto) -> mqstate_server::ServerHandle {
    let config = mqstate_server::ServerConfig {
        broker: Some(mqstate_server::BrokerTarget::parse(&broker.url()).unwrap()),
        ..mqstate_tests::server_config()
    };
    mqstate_server::Server::start(config).await.unwrap()
}

/// Behind a mosquitto without `log_dest topic` the server cannot see disconnects: it finds
/// out at start-up (and warns with the lines to add); with the log it sees them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_broker_without_a_sys_log_is_detected_at_start() {
    mqstate_tests::init_tracing();
    let plain = mqstate_tests::Mosquitto::start_without_sys_log().unwrap();
    let server = attached_to(&plain).await;
    assert_eq!(sees_disconnects(&server).await, Some(false));
    server.shutdown().await;

    let logging = mqstate_tests::Mosquitto::start().unwrap();
    let server = attached_to(&logging).await;
    assert_eq!(sees_disconnects(&server).await, Some(true));
    server.shutdown().await;
    assert!(mqstate_server::MOSQUITTO_SYS_LOG_LINES.contains("log_dest topic"));
}

/// The resident memory of this process, in bytes (Linux).
fn rss_bytes() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with("VmRSS:")).unwrap();
    let kb: u64 = line.split_whitespace().nth(1).unwrap().parse().unwrap();
    kb * 1024
}

/// Connects a bare MQTT 5 client that subscribes to `#` and then never reads again.
fn stalled_subscriber(port: u16) -> std::net::TcpStream {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    let id = b"staller";
    let mut connect = vec![0x10, 0];
    connect.extend_from_slice(&[0, 4, b'M', b'Q', b'T', b'T', 5, 0x02, 0, 60, 0]);
    connect.extend_from_slice(&[0, id.len() as u8]);
    connect.extend_from_slice(id);
    connect[1] = (connect.len() - 2) as u8;
    s.write_all(&connect).unwrap();
    let subscribe = [0x82, 7, 0, 1, 0, 0, 1, b'#', 0x01];
    s.write_all(&subscribe).unwrap();
    // CONNACK and SUBACK are small: read them, then stop reading for good.
    let mut buf = [0u8; 64];
    let mut got = 0;
    s.set_read_timeout(Some(std::time::Duration::from_secs(5)))
        .unwrap();
    while got < 2 {
        let n = s.read(&mut buf).unwrap();
        assert!(n > 0, "connection closed");
        got += buf[..n]
            .iter()
            .filter(|b| **b == 0x20 || **b == 0x90)
            .count();
    }
    s
}

/// A subscriber to `#` that never reads must not make the server hold everything it is
/// sent: the embedded broker's per-client backlog is bounded in bytes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stalled_subscriber_does_not_pin_server_memory() {
    mqstate_tests::init_tracing();
    let config = mqstate_server::ServerConfig {
        client_queue_bytes: 4 * 1024 * 1024,
        ..mqstate_tests::server_config()
    };
    let f = StateStoreFixture::start(BrokerKind::Embedded, config)
        .await
        .unwrap();
    let _staller = stalled_subscriber(f.port());
    let mut writer = RawClient::connect(f.host(), f.port(), "flooder")
        .await
        .unwrap();
    let value = vec![b'v'; 64 * 1024];
    // Warm up allocations, then measure.
    for _ in 0..50 {
        request(&mut writer, &[b"SET", b"big", &value]).await;
    }
    let before = rss_bytes();
    for _ in 0..2_000 {
        request(&mut writer, &[b"SET", b"big", &value]).await;
    }
    let grown = rss_bytes().saturating_sub(before);
    // 2,000 × 64 KB = 128 MB went to the stalled subscriber.
    assert!(
        grown < 64 * 1024 * 1024,
        "resident memory grew by {} MB",
        grown / (1024 * 1024)
    );
    f.shutdown().await;
}

/// The embedded broker stamps `x-mqtt-client-id` on what clients publish; the store's own
/// responses and notifications must reach clients without it (SDKs show it as metadata).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn responses_and_notifications_carry_no_broker_client_id() {
    let f = fixture(BrokerKind::Embedded).await;
    let mut c = RawClient::connect(f.host(), f.port(), "metadata")
        .await
        .unwrap();
    request(&mut c, &[b"KEYNOTIFY", b"k"]).await;
    let answer = c
        .request(resp(&[b"SET", b"k", b"v"]), RequestOptions::default())
        .await
        .unwrap();
    let notification = c.next_message().await.unwrap();
    for publish in [&answer.publish, &notification] {
        let names: Vec<&str> = publish
            .properties
            .iter()
            .flat_map(|p| p.user_properties.iter().map(|(n, _)| n.as_str()))
            .collect();
        assert!(
            !names.contains(&mqstate_server::envelope::BROKER_CLIENT_ID_PROPERTY),
            "{names:?}"
        );
    }
    assert_eq!(answer.status(), Some("200"));
    f.shutdown().await;
}

/// One request with a `__ts` just inside the drift and a counter near 2^64 must not stop
/// the store for everyone else.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_clock_exhausting_timestamp_is_refused_and_others_are_served() {
    let f = fixture(BrokerKind::Embedded).await;
    let mut evil = RawClient::connect(f.host(), f.port(), "evil")
        .await
        .unwrap();
    let mut good = RawClient::connect(f.host(), f.port(), "good")
        .await
        .unwrap();
    let hostile = RequestOptions {
        timestamp: Some(format!(
            "{}:{}:evil",
            mqstate_tests::raw::now_ms() + 59_000,
            u64::MAX - 1
        )),
        ..RequestOptions::default()
    };
    let refused = evil
        .request(resp(&[b"SET", b"k", b"v"]), hostile)
        .await
        .unwrap();
    assert_eq!(&refused.payload()[..], b"-ERR malformed timestamp\r\n");
    for i in 0..20u32 {
        let key = format!("k{i}");
        assert_eq!(
            &request(&mut good, &[b"SET", key.as_bytes(), b"v"]).await[..],
            b"+OK\r\n"
        );
    }
    f.shutdown().await;
}
