//! The MQTT adapter of mqstate-server, driven by raw rumqttc v5 requests, against both
//! mosquitto and the embedded broker: every test body runs once per broker.
//!
//! Absence of a response is checked without timing: after the request under test, a
//! well-formed "barrier" request is sent by the same client; the server handles requests
//! in order, so any answer to the first would arrive before the barrier's.

use bytes::Bytes;
use mqstate::envelope::{self, property};
use mqstate::topics;
use mqstate_tests::raw::{RawClient, RequestOptions, resp, user_property};
use mqstate_tests::{BrokerKind, StateStoreFixture};
use rumqttc::v5::mqttbytes::QoS;

async fn fixture(kind: BrokerKind) -> StateStoreFixture {
    mqstate_tests::init_tracing();
    match kind {
        BrokerKind::Mosquitto => StateStoreFixture::mosquitto().await,
        BrokerKind::Embedded => StateStoreFixture::embedded().await,
    }
    .expect("fixture")
}

async fn client(f: &StateStoreFixture, id: &str) -> RawClient {
    RawClient::connect(f.host(), f.port(), id)
        .await
        .expect("connect")
}

/// Sends GET of a barrier key and returns every other message received before its answer.
async fn barrier(c: &mut RawClient) -> Vec<rumqttc::v5::mqttbytes::v5::Publish> {
    let answer = c
        .request(resp(&[b"GET", b"barrier"]), RequestOptions::default())
        .await
        .expect("barrier answered");
    assert_eq!(answer.status(), Some("200"));
    c.drain_received()
}

mqstate_tests::both_brokers!(
    answers_with_status_version_and_echoed_correlation,
    qos0_request_gets_a_400,
    request_without_response_topic_is_dropped,
    request_without_correlation_is_dropped,
    forbidden_response_topic_is_dropped,
    client_id_comes_from_src_id,
    notifications_reach_the_observer_with_version,
    registrations_end_when_the_observer_disconnects,
    expiry_fires_a_delete_notification,
    store_errors_arrive_with_status_200,
);

async fn answers_with_status_version_and_echoed_correlation(kind: BrokerKind) {
    let f = fixture(kind).await;
    let mut c = client(&f, "answerer").await;
    let correlation = c
        .send(resp(&[b"SET", b"k", b"v"]), &RequestOptions::default())
        .await
        .unwrap();
    let set = c.response_for(&correlation).await.unwrap();
    assert_eq!(set.correlation(), Some(&correlation));
    assert_eq!(set.payload(), &Bytes::from_static(b"+OK\r\n"));
    assert_eq!(set.status(), Some("200"));
    assert_eq!(
        set.user_property(property::PROTOCOL_VERSION),
        Some(envelope::PROTOCOL_VERSION)
    );
    assert_eq!(set.content_type(), Some(envelope::CONTENT_TYPE));
    let version = mqstate::Hlc::parse(set.version().expect("a version on SET")).unwrap();

    let get = c
        .request(resp(&[b"GET", b"k"]), RequestOptions::default())
        .await
        .unwrap();
    assert_eq!(get.payload(), &Bytes::from_static(b"$1\r\nv\r\n"));
    assert_eq!(get.version(), Some(version.to_string().as_str()));

    let miss = c
        .request(resp(&[b"GET", b"nope"]), RequestOptions::default())
        .await
        .unwrap();
    assert_eq!(miss.payload(), &Bytes::from_static(b"$-1\r\n"));
    assert_eq!(miss.status(), Some("200"));
    f.shutdown().await;
}

async fn qos0_request_gets_a_400(kind: BrokerKind) {
    let f = fixture(kind).await;
    let mut c = client(&f, "qos0").await;
    let options = RequestOptions {
        qos: QoS::AtMostOnce,
        ..RequestOptions::default()
    };
    let answer = c
        .request(resp(&[b"SET", b"q", b"v"]), options)
        .await
        .unwrap();
    assert_eq!(answer.status(), Some("400"));
    assert!(
        answer
            .user_property(property::STATUS_MESSAGE)
            .unwrap()
            .contains("QoS 0")
    );
    // The store was not touched.
    let get = c
        .request(resp(&[b"GET", b"q"]), RequestOptions::default())
        .await
        .unwrap();
    assert_eq!(get.payload(), &Bytes::from_static(b"$-1\r\n"));
    assert!(f.stats().rejected >= 1);
    f.shutdown().await;
}

/// Sends a SET with `options` that the service must drop: no answer, nothing stored, one
/// rejection counted.
async fn assert_request_dropped(kind: BrokerKind, name: &str, options: RequestOptions) {
    let f = fixture(kind).await;
    let mut c = client(&f, name).await;
    c.send(resp(&[b"SET", b"dropped", b"v"]), &options)
        .await
        .unwrap();
    assert!(barrier(&mut c).await.is_empty(), "{name}: no answer");
    let get = c
        .request(resp(&[b"GET", b"dropped"]), RequestOptions::default())
        .await
        .unwrap();
    assert_eq!(get.payload(), &Bytes::from_static(b"$-1\r\n"));
    assert_eq!(f.stats().rejected, 1);
    f.shutdown().await;
}

async fn request_without_response_topic_is_dropped(kind: BrokerKind) {
    let options = RequestOptions {
        response_topic: Some(None),
        ..RequestOptions::default()
    };
    assert_request_dropped(kind, "no-topic", options).await;
}

async fn request_without_correlation_is_dropped(kind: BrokerKind) {
    let options = RequestOptions {
        no_correlation: true,
        ..RequestOptions::default()
    };
    assert_request_dropped(kind, "no-corr", options).await;
}

async fn forbidden_response_topic_is_dropped(kind: BrokerKind) {
    let f = fixture(kind).await;
    let mut bad = client(&f, "forbidden").await;
    let forbidden = format!(
        "{}/{}/x",
        topics::NOTIFICATION_PREFIX,
        topics::hex_encode(b"forbidden")
    );
    let options = RequestOptions {
        response_topic: Some(Some(forbidden)),
        ..RequestOptions::default()
    };
    bad.send(resp(&[b"SET", b"forbidden-key", b"v"]), &options)
        .await
        .unwrap();
    match kind {
        BrokerKind::Embedded => {
            // The embedded broker disconnects the client.
            let reason = bad.closed().await.expect("disconnected");
            assert!(!reason.is_empty());
        }
        BrokerKind::Mosquitto => {
            // mosquitto cannot be asked to disconnect it: the request is only dropped.
            let stray = barrier(&mut bad).await;
            assert!(stray.is_empty(), "nothing answered on any topic: {stray:?}");
        }
    }
    let mut other = client(&f, "observer").await;
    let get = other
        .request(resp(&[b"GET", b"forbidden-key"]), RequestOptions::default())
        .await
        .unwrap();
    assert_eq!(get.payload(), &Bytes::from_static(b"$-1\r\n"));
    assert_eq!(f.stats().rejected, 1);
    f.shutdown().await;
}

async fn client_id_comes_from_src_id(kind: BrokerKind) {
    // KEYNOTIFY registers the client named by __srcId: the notification goes to the topic
    // of that id, which this client subscribes to.
    let f = fixture(kind).await;
    let mut c = client(&f, "claimed-id").await;
    let ok = c
        .request(resp(&[b"KEYNOTIFY", b"watched"]), RequestOptions::default())
        .await
        .unwrap();
    assert_eq!(ok.payload(), &Bytes::from_static(b"+OK\r\n"));
    c.request(resp(&[b"SET", b"watched", b"1"]), RequestOptions::default())
        .await
        .unwrap();
    let n = c.next_message().await.unwrap();
    assert_eq!(
        std::str::from_utf8(&n.topic).unwrap(),
        topics::notification_topic("claimed-id", b"watched")
    );
    f.shutdown().await;
}

async fn notifications_reach_the_observer_with_version(kind: BrokerKind) {
    let f = fixture(kind).await;
    let mut observer = client(&f, "obs-1").await;
    let mut writer = client(&f, "writer-1").await;
    observer
        .request(resp(&[b"KEYNOTIFY", b"SOMEKEY"]), RequestOptions::default())
        .await
        .unwrap();
    let set = writer
        .request(
            resp(&[b"SET", b"SOMEKEY", b"VALUE"]),
            RequestOptions::default(),
        )
        .await
        .unwrap();
    let n = observer.next_message().await.unwrap();
    assert_eq!(
        std::str::from_utf8(&n.topic).unwrap(),
        topics::notification_topic("obs-1", b"SOMEKEY")
    );
    assert_eq!(
        &n.payload[..],
        b"*4\r\n$6\r\nNOTIFY\r\n$3\r\nSET\r\n$5\r\nVALUE\r\n$5\r\nVALUE\r\n"
    );
    assert_eq!(user_property(&n, property::TIMESTAMP), set.version());
    assert_eq!(n.qos, QoS::AtLeastOnce);

    writer
        .request(resp(&[b"DEL", b"SOMEKEY"]), RequestOptions::default())
        .await
        .unwrap();
    let n = observer.next_message().await.unwrap();
    assert_eq!(&n.payload[..], b"*2\r\n$6\r\nNOTIFY\r\n$6\r\nDELETE\r\n");
    assert!(f.stats().notifications >= 2);
    f.shutdown().await;
}

async fn registrations_end_when_the_observer_disconnects(kind: BrokerKind) {
    let f = fixture(kind).await;
    for (round, abrupt) in [(0, false), (1, true)] {
        let id = format!("leaver-{round}");
        let mut observer = client(&f, &id).await;
        observer
            .request(resp(&[b"KEYNOTIFY", b"left"]), RequestOptions::default())
            .await
            .unwrap();
        let before = f.stats().registrations_dropped;
        if abrupt {
            observer.kill();
        } else {
            observer.disconnect().await;
        }
        // The server learns of it asynchronously (broker event or mosquitto's log).
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while f.stats().registrations_dropped == before {
            assert!(
                std::time::Instant::now() < deadline,
                "registration of {id} never dropped"
            );
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
    }
    f.shutdown().await;
}

async fn expiry_fires_a_delete_notification(kind: BrokerKind) {
    let f = fixture(kind).await;
    let mut c = client(&f, "expiring").await;
    c.request(resp(&[b"KEYNOTIFY", b"px"]), RequestOptions::default())
        .await
        .unwrap();
    let set = c
        .request(
            resp(&[b"SET", b"px", b"v", b"PX", b"50"]),
            RequestOptions::default(),
        )
        .await
        .unwrap();
    assert_eq!(set.payload(), &Bytes::from_static(b"+OK\r\n"));
    let first = c.next_message().await.unwrap();
    assert_eq!(
        &first.payload[..],
        b"*4\r\n$6\r\nNOTIFY\r\n$3\r\nSET\r\n$5\r\nVALUE\r\n$1\r\nv\r\n"
    );
    // Nothing else touches the key: only the expiry can produce this.
    let gone = c.next_message().await.unwrap();
    assert_eq!(&gone.payload[..], b"*2\r\n$6\r\nNOTIFY\r\n$6\r\nDELETE\r\n");
    let get = c
        .request(resp(&[b"GET", b"px"]), RequestOptions::default())
        .await
        .unwrap();
    assert_eq!(get.payload(), &Bytes::from_static(b"$-1\r\n"));
    f.shutdown().await;
}

async fn store_errors_arrive_with_status_200(kind: BrokerKind) {
    let f = fixture(kind).await;
    let mut c = client(&f, "erring").await;
    let answer = c
        .request(Bytes::from_static(b"garbage"), RequestOptions::default())
        .await
        .unwrap();
    assert_eq!(answer.status(), Some("200"));
    assert_eq!(
        answer.payload(),
        &Bytes::from_static(b"-ERR syntax error\r\n")
    );
    let missing_ts = RequestOptions {
        timestamp: Some("not-an-hlc".to_owned()),
        ..RequestOptions::default()
    };
    let answer = c
        .request(resp(&[b"SET", b"k", b"v"]), missing_ts)
        .await
        .unwrap();
    assert_eq!(answer.status(), Some("200"));
    assert_eq!(
        answer.payload(),
        &Bytes::from_static(b"-ERR malformed timestamp\r\n")
    );
    f.shutdown().await;
}
