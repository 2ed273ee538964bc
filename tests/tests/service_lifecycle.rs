//! The server across restarts and under pressure: persistence with a data directory,
//! reconnection after a broker restart, the client-id fallback, protocol versions, and a
//! notification flood that must not grow the server's queues past their bounds.

use std::time::{Duration, Instant};

use bytes::Bytes;
use mqstate::envelope::{self, property};
use mqstate::topics;
use mqstate_server::ServerConfig;
use mqstate_tests::raw::{RawClient, RequestOptions, resp};
use mqstate_tests::{BrokerKind, StateStoreFixture};

async fn client(f: &StateStoreFixture, id: &str) -> RawClient {
    RawClient::connect(f.host(), f.port(), id)
        .await
        .expect("connect")
}

/// Retries a GET until the server answers it (after a restart, it needs a moment to
/// connect and subscribe).
async fn get_when_back(f: &StateStoreFixture, id: &str, key: &[u8]) -> Bytes {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Ok(mut c) = RawClient::connect(f.host(), f.port(), id).await {
            let answer = c
                .request_within(
                    resp(&[b"GET", key]),
                    RequestOptions::default(),
                    Duration::from_millis(500),
                )
                .await;
            if let Ok(answer) = answer {
                return answer.payload().clone();
            }
        }
        assert!(Instant::now() < deadline, "the server never came back");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn persisted_keys_survive_a_restart(kind: BrokerKind) {
    mqstate_tests::init_tracing();
    let mut f = StateStoreFixture::with_data_dir(kind).await.unwrap();
    let mut c = client(&f, "persister").await;
    let persist = RequestOptions {
        persist: true,
        ..RequestOptions::default()
    };
    let kept = c
        .request(resp(&[b"SET", b"kept", b"1"]), persist.clone())
        .await
        .unwrap();
    assert_eq!(kept.payload(), &Bytes::from_static(b"+OK\r\n"));
    c.request(resp(&[b"SET", b"lost", b"2"]), RequestOptions::default())
        .await
        .unwrap();
    c.request(resp(&[b"SET", b"unpersisted", b"3"]), persist)
        .await
        .unwrap();
    // Overwriting without persistence stops persisting the key.
    c.request(
        resp(&[b"SET", b"unpersisted", b"4"]),
        RequestOptions::default(),
    )
    .await
    .unwrap();
    drop(c);
    f.restart().await.unwrap();
    assert_eq!(
        get_when_back(&f, "persister-2", b"kept").await,
        Bytes::from_static(b"$1\r\n1\r\n")
    );
    assert_eq!(
        get_when_back(&f, "persister-2", b"lost").await,
        Bytes::from_static(b"$-1\r\n")
    );
    assert_eq!(
        get_when_back(&f, "persister-2", b"unpersisted").await,
        Bytes::from_static(b"$-1\r\n")
    );
    f.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn persisted_keys_survive_a_restart_on_mosquitto() {
    persisted_keys_survive_a_restart(BrokerKind::Mosquitto).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn persisted_keys_survive_a_restart_on_embedded() {
    persisted_keys_survive_a_restart(BrokerKind::Embedded).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_data_dir_a_restart_forgets_everything() {
    mqstate_tests::init_tracing();
    let mut f = StateStoreFixture::embedded().await.unwrap();
    let mut c = client(&f, "forgetful").await;
    let persist = RequestOptions {
        persist: true,
        ..RequestOptions::default()
    };
    c.request(resp(&[b"SET", b"k", b"1"]), persist)
        .await
        .unwrap();
    drop(c);
    f.restart().await.unwrap();
    assert_eq!(
        get_when_back(&f, "forgetful-2", b"k").await,
        Bytes::from_static(b"$-1\r\n")
    );
    f.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_server_comes_back_after_mosquitto_restarts() {
    mqstate_tests::init_tracing();
    let mut f = StateStoreFixture::mosquitto().await.unwrap();
    let mut c = client(&f, "survivor").await;
    c.request(resp(&[b"SET", b"k", b"v"]), RequestOptions::default())
        .await
        .unwrap();
    drop(c);
    f.restart_broker().unwrap();
    // The store kept its state; the server reconnected and subscribed again.
    assert_eq!(
        get_when_back(&f, "survivor-2", b"k").await,
        Bytes::from_static(b"$1\r\nv\r\n")
    );
    f.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_src_id_the_embedded_broker_names_the_client() {
    mqstate_tests::init_tracing();
    let f = StateStoreFixture::embedded().await.unwrap();
    let mut c = client(&f, "anonymous-ish").await;
    let no_src = RequestOptions {
        src_id: false,
        ..RequestOptions::default()
    };
    let ok = c
        .request(resp(&[b"KEYNOTIFY", b"w"]), no_src.clone())
        .await
        .unwrap();
    assert_eq!(ok.payload(), &Bytes::from_static(b"+OK\r\n"));
    c.request(resp(&[b"SET", b"w", b"1"]), no_src)
        .await
        .unwrap();
    let n = c.next_message().await.unwrap();
    assert_eq!(
        std::str::from_utf8(&n.topic).unwrap(),
        topics::notification_topic("anonymous-ish", b"w")
    );
    f.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_src_id_mosquitto_requests_get_a_400() {
    mqstate_tests::init_tracing();
    let f = StateStoreFixture::mosquitto().await.unwrap();
    let mut c = client(&f, "nameless").await;
    let no_src = RequestOptions {
        src_id: false,
        ..RequestOptions::default()
    };
    let answer = c.request(resp(&[b"GET", b"w"]), no_src).await.unwrap();
    assert_eq!(answer.status(), Some("400"));
    assert_eq!(
        answer.user_property(property::PROPERTY_NAME),
        Some(property::SOURCE_ID)
    );
    f.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unsupported_protocol_version_gets_a_505() {
    mqstate_tests::init_tracing();
    for kind in [BrokerKind::Mosquitto, BrokerKind::Embedded] {
        let f = StateStoreFixture::start(kind, mqstate_tests::server_config())
            .await
            .unwrap();
        let mut c = client(&f, "future").await;
        let correlation = send_with_version(&c, "2.0").await;
        let answer = c.response_for(&correlation).await.unwrap();
        assert_eq!(answer.status(), Some("505"), "{kind:?}");
        assert_eq!(
            answer.user_property(property::SUPPORTED_MAJOR_VERSIONS),
            Some(envelope::SUPPORTED_MAJOR_VERSIONS)
        );
        assert_eq!(
            answer.user_property(property::REQUEST_PROTOCOL_VERSION),
            Some("2.0")
        );
        f.shutdown().await;
    }
}

/// Publishes a GET whose only `__protVer` is `version`.
async fn send_with_version(c: &RawClient, version: &str) -> Bytes {
    use rumqttc::v5::mqttbytes::QoS;
    use rumqttc::v5::mqttbytes::v5::PublishProperties;
    let correlation = Bytes::from_static(b"version-probe-01");
    let properties = PublishProperties {
        response_topic: Some(topics::response_topic(c.id())),
        correlation_data: Some(correlation.clone()),
        user_properties: vec![
            (property::SOURCE_ID.to_owned(), c.id().to_owned()),
            (property::PROTOCOL_VERSION.to_owned(), version.to_owned()),
        ],
        ..PublishProperties::default()
    };
    c.mqtt()
        .publish_with_properties(
            topics::REQUEST_TOPIC,
            QoS::AtLeastOnce,
            false,
            resp(&[b"GET", b"k"]),
            properties,
        )
        .await
        .unwrap();
    correlation
}

/// A broker that stops acknowledging (SIGSTOP) while expiries produce a flood of
/// notifications for one client: the server's queue for that client stays at its limit,
/// the oldest are dropped and counted, and the server answers again once the broker
/// resumes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_notification_flood_to_a_stalled_broker_stays_bounded() {
    mqstate_tests::init_tracing();
    const KEYS: usize = 300;
    const LIMIT: usize = 8;
    let config = ServerConfig {
        notify_queue_limit: LIMIT,
        mqtt_channel_capacity: 4,
        ..mqstate_tests::server_config()
    };
    let mut f = StateStoreFixture::start(BrokerKind::Mosquitto, config)
        .await
        .unwrap();
    let mut c = client(&f, "flooded").await;
    let keys: Vec<Vec<u8>> = (0..KEYS)
        .map(|i| format!("flood-{i}").into_bytes())
        .collect();
    let mut pending = Vec::new();
    for key in &keys {
        pending.push(
            c.send(resp(&[b"KEYNOTIFY", key]), &RequestOptions::default())
                .await
                .unwrap(),
        );
    }
    for correlation in &pending {
        c.response_for(correlation).await.unwrap();
    }
    // Every key expires 2 s from now; the broker is stalled long before that.
    pending.clear();
    for key in &keys {
        pending.push(
            c.send(
                resp(&[b"SET", key, b"v", b"PX", b"2000"]),
                &RequestOptions::default(),
            )
            .await
            .unwrap(),
        );
    }
    for correlation in &pending {
        c.response_for(correlation).await.unwrap();
    }
    // The SET notifications alone may already overflow the tiny channel; the expiries
    // below must add to the drops while the broker is stalled.
    let dropped_before = f.stats().notifications_dropped;
    f.mosquitto_mut().unwrap().pause(true).unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while f.stats().notifications_dropped == dropped_before {
        assert!(
            Instant::now() < deadline,
            "no notification was ever dropped: {:?}",
            f.stats()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    f.mosquitto_mut().unwrap().pause(false).unwrap();
    let stats = f.stats();
    assert!(stats.max_client_queue <= LIMIT as u64, "{stats:?}");
    assert!(stats.notifications_dropped > 0, "{stats:?}");
    // The server is still serving.
    assert_eq!(
        get_when_back(&f, "after-flood", b"flood-0").await,
        Bytes::from_static(b"$-1\r\n")
    );
    f.shutdown().await;
}
