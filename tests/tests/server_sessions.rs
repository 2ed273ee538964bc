//! MQTT 5 sessions across a lost connection, packet by packet ([`Wire`]): clean start 0 with
//! a session expiry resumes the session (`session_present = 1`, subscriptions kept, QoS 1
//! messages queued or in flight delivered after the reconnect), expiry 0 or a short expiry
//! ends it, clean start 1 discards it — on mosquitto and on the embedded broker alike. On
//! the embedded broker, a client's KEYNOTIFY registrations (and the notification routes
//! added for them) last as long as its session, not its connection. And the client ids the
//! embedded broker refuses, with what the client sees.

use std::net::SocketAddr;
use std::time::Duration;

use bytes::Bytes;
use mqstate::envelope::{self, property};
use mqstate::topics;
use mqstate_tests::raw::now_ms;
use mqstate_tests::wire::Wire;
use mqstate_tests::{BrokerKind, StateStoreFixture};
use rumqttc::v5::mqttbytes::v5::{ConnectReturnCode, Packet, PublishProperties};

async fn fixture(kind: BrokerKind) -> StateStoreFixture {
    mqstate_tests::init_tracing();
    match kind {
        BrokerKind::Mosquitto => StateStoreFixture::mosquitto().await,
        BrokerKind::Embedded => StateStoreFixture::embedded().await,
    }
    .expect("fixture")
}

fn addr(f: &StateStoreFixture) -> SocketAddr {
    SocketAddr::new(f.host().parse().expect("an IP host"), f.port())
}

async fn connect(f: &StateStoreFixture, id: &str, clean: bool, expiry: u32) -> (Wire, bool) {
    let (wire, ack) = Wire::connect(addr(f), id, clean, expiry)
        .await
        .expect("connect");
    assert_eq!(ack.code, ConnectReturnCode::Success, "CONNACK of {id}");
    (wire, ack.session_present)
}

mqstate_tests::both_brokers!(
    a_session_resumes_with_its_subscription_and_messages,
    clean_start_discards_the_session,
    expiry_ends_the_session,
    a_closed_client_leaves_no_session,
);

async fn a_session_resumes_with_its_subscription_and_messages(kind: BrokerKind) {
    let f = fixture(kind).await;
    let (mut publisher, _) = connect(&f, "sess-publisher", true, 0).await;
    let (mut wire, present) = connect(&f, "sess-keeper", false, 60).await;
    assert!(!present, "a new session");
    wire.subscribe("sess/t").await.unwrap();
    wire.subscribe("sess/in").await.unwrap();

    // Cut; a QoS 1 message published meanwhile waits in the session.
    wire.cut();
    let pkid = publisher
        .publish("sess/t", "while-away", None, None)
        .await
        .unwrap();
    publisher.puback(pkid).await.unwrap();
    let (mut wire, present) = connect(&f, "sess-keeper", false, 60).await;
    assert!(present, "the session resumed");
    let p = wire.next_publish().await.unwrap();
    assert_eq!(&p.payload[..], b"while-away");

    // Delivered but not acknowledged when the connection drops: delivered again.
    wire.cut();
    let (mut wire, present) = connect(&f, "sess-keeper", false, 60).await;
    assert!(present);
    let again = wire.next_publish().await.unwrap();
    assert_eq!(&again.payload[..], b"while-away", "redelivered");
    wire.ack(&again).await.unwrap();

    // The subscription still delivers.
    let pkid = publisher
        .publish("sess/t", "after", None, None)
        .await
        .unwrap();
    publisher.puback(pkid).await.unwrap();
    let p = wire.next_publish().await.unwrap();
    assert_eq!(&p.payload[..], b"after");
    wire.ack(&p).await.unwrap();

    // A QoS 1 publish whose PUBACK the client never saw is sent again (DUP) on the resumed
    // session, acknowledged, and reaches the subscriber at least once.
    let pkid = wire
        .publish("sess/in", "inbound", None, None)
        .await
        .unwrap();
    wire.cut();
    let (mut wire, present) = connect(&f, "sess-keeper", false, 60).await;
    assert!(present);
    wire.publish("sess/in", "inbound", None, Some(pkid))
        .await
        .unwrap();
    let mut acked = false;
    let mut seen = 0;
    while !acked || seen == 0 {
        match wire.read().await.unwrap() {
            Packet::PubAck(ack) if ack.pkid == pkid => acked = true,
            Packet::PubAck(_) => {}
            Packet::Publish(p) => {
                // "after", or even "while-away", again if its PUBACK was lost with the cut:
                // redelivered, marked DUP, as it must be. Written before the cut is not read
                // by the broker: dropping a socket with unread data sends a reset, and the
                // broker's kernel then discards what its side had not read yet (seen on a
                // loaded machine: "while-away" came again).
                let redelivered = matches!(&p.payload[..], b"after" | b"while-away") && p.dup;
                assert!(
                    &p.payload[..] == b"inbound" || redelivered,
                    "unexpected {p:?}"
                );
                seen += usize::from(&p.payload[..] == b"inbound");
                wire.ack(&p).await.unwrap();
            }
            other => panic!("unexpected {other:?}"),
        }
    }
    wire.disconnect().await.unwrap();
    f.shutdown().await;
}

async fn clean_start_discards_the_session(kind: BrokerKind) {
    let f = fixture(kind).await;
    let (mut publisher, _) = connect(&f, "discard-publisher", true, 0).await;
    let (mut wire, _) = connect(&f, "discarder", false, 60).await;
    wire.subscribe("discard/t").await.unwrap();
    wire.cut();
    let pkid = publisher
        .publish("discard/t", "queued", None, None)
        .await
        .unwrap();
    publisher.puback(pkid).await.unwrap();
    let (mut wire, present) = connect(&f, "discarder", true, 60).await;
    assert!(!present, "clean start 1: no session");
    // Neither the queued message nor the subscription survived: a barrier on a fresh
    // subscription arrives first.
    wire.subscribe("discard/barrier").await.unwrap();
    let pkid = publisher
        .publish("discard/t", "not-subscribed", None, None)
        .await
        .unwrap();
    publisher.puback(pkid).await.unwrap();
    let pkid = publisher
        .publish("discard/barrier", "barrier", None, None)
        .await
        .unwrap();
    publisher.puback(pkid).await.unwrap();
    let p = wire.next_publish().await.unwrap();
    assert_eq!(&p.payload[..], b"barrier");
    wire.disconnect().await.unwrap();
    f.shutdown().await;
}

async fn expiry_ends_the_session(kind: BrokerKind) {
    let f = fixture(kind).await;
    // Expiry 0: the session ends with the connection.
    let (mut wire, _) = connect(&f, "expiry-zero", false, 0).await;
    wire.subscribe("expiry/t").await.unwrap();
    wire.cut();
    tokio::time::sleep(Duration::from_millis(200)).await;
    let (wire, present) = connect(&f, "expiry-zero", false, 60).await;
    assert!(!present, "expiry 0: no session after the connection");
    wire.disconnect().await.unwrap();

    // Expiry 1 s: resumable before, gone after.
    let (mut wire, _) = connect(&f, "expiry-short", false, 1).await;
    wire.subscribe("expiry/t").await.unwrap();
    wire.cut();
    tokio::time::sleep(Duration::from_millis(200)).await;
    let (wire, present) = connect(&f, "expiry-short", false, 1).await;
    assert!(present, "within its expiry the session resumes");
    wire.cut();
    tokio::time::sleep(Duration::from_millis(2500)).await;
    let (wire, present) = connect(&f, "expiry-short", false, 1).await;
    assert!(!present, "past its expiry the session is gone");
    wire.disconnect().await.unwrap();
    f.shutdown().await;
}

/// An mqstate client connects with a session expiry (an hour by default) so that its
/// session survives a lost connection; one that closes ends it: the next connection with its
/// client id finds no session (before 0.2.0 it stayed for the hour).
async fn a_closed_client_leaves_no_session(kind: BrokerKind) {
    let f = fixture(kind).await;
    let mut settings = mqstate::ConnectionSettings::from_url(&f.url()).unwrap();
    settings.client_id = Some("closer".to_owned());
    assert!(settings.session_expiry >= Duration::from_secs(60));
    let client = mqstate::Client::connect(settings).await.unwrap();
    client
        .set("closer/k", "v", mqstate::SetOptions::default())
        .await
        .unwrap();
    client.shutdown().await;
    let (wire, present) = connect(&f, "closer", false, 60).await;
    assert!(!present, "a closed client's session ended with it");
    wire.disconnect().await.unwrap();
    f.shutdown().await;
}

/// Waits (up to 10 s) until `done` holds of the server's counts.
async fn until_stats(f: &StateStoreFixture, done: impl Fn(&mqstate_server::Stats) -> bool) {
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let stats = f.stats();
        if done(&stats) {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the server's counts never got there: {stats:?}"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// The embedded broker keeps at most `max_offline_sessions` sessions of clients gone without
/// ending theirs; past it the sessions disconnected longest ago end first, and no connection
/// resumes them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn offline_sessions_past_the_bound_end_oldest_first() {
    mqstate_tests::init_tracing();
    let config = mqstate_server::ServerConfig {
        max_offline_sessions: 2,
        ..mqstate_tests::server_config()
    };
    let f = StateStoreFixture::start(BrokerKind::Embedded, config)
        .await
        .unwrap();
    let ids = ["gone-a", "gone-b", "gone-c", "gone-d"];
    for (n, id) in ids.iter().enumerate() {
        let (mut wire, _) = connect(&f, id, true, 3600).await;
        wire.subscribe("gone/t").await.unwrap();
        wire.disconnect().await.unwrap();
        // One at a time, so that "oldest" is well defined.
        until_stats(&f, |s| {
            s.offline_sessions + s.offline_sessions_ended == n as u64 + 1
        })
        .await;
    }
    let stats = f.stats();
    assert_eq!(
        (stats.offline_sessions, stats.offline_sessions_ended),
        (2, 2)
    );
    // Every client back at once (online sessions do not count against the bound).
    let mut wires = Vec::new();
    for (id, kept) in ids.iter().zip([false, false, true, true]) {
        let (wire, present) = connect(&f, id, false, 3600).await;
        assert_eq!(present, kept, "{id}: session present");
        wires.push(wire);
    }
    for wire in wires {
        wire.disconnect().await.unwrap();
    }
    f.shutdown().await;
}

/// A state store request from a [`Wire`] client (what the official SDKs send).
fn request_properties(client_id: &str) -> PublishProperties {
    PublishProperties {
        response_topic: Some(topics::response_topic(client_id)),
        correlation_data: Some(Bytes::copy_from_slice(uuid::Uuid::new_v4().as_bytes())),
        content_type: Some(envelope::CONTENT_TYPE.to_owned()),
        message_expiry_interval: Some(10),
        user_properties: vec![
            (property::SOURCE_ID.to_owned(), client_id.to_owned()),
            (
                property::TIMESTAMP.to_owned(),
                format!("{:015}:00000:{client_id}", now_ms()),
            ),
            (
                property::PROTOCOL_VERSION.to_owned(),
                envelope::PROTOCOL_VERSION.to_owned(),
            ),
        ],
        ..PublishProperties::default()
    }
}

/// Sends a request and returns its response's payload, acknowledging what arrives.
async fn request(wire: &mut Wire, client_id: &str, payload: &[u8]) -> Bytes {
    let properties = request_properties(client_id);
    let correlation = properties.correlation_data.clone();
    wire.publish(
        topics::REQUEST_TOPIC,
        Bytes::copy_from_slice(payload),
        Some(properties),
        None,
    )
    .await
    .unwrap();
    loop {
        let p = wire.next_publish().await.unwrap();
        wire.ack(&p).await.unwrap();
        if p.properties
            .as_ref()
            .and_then(|p| p.correlation_data.clone())
            == correlation
        {
            return p.payload;
        }
    }
}

/// Waits until the server has dropped more than `before` registrations in all.
async fn dropped_beyond(f: &StateStoreFixture, before: u64) {
    until_stats(f, |s| s.registrations_dropped > before).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn registrations_last_as_long_as_the_session() {
    let f = fixture(BrokerKind::Embedded).await;
    let (mut writer, _) = connect(&f, "reg-writer", true, 0).await;
    writer
        .subscribe(&topics::response_topic("reg-writer"))
        .await
        .unwrap();
    let id = "reg-observer";
    // The observer subscribes to its responses only: notifications reach it through the
    // route the broker adds at KEYNOTIFY (as for the official Go SDK).
    let (mut wire, _) = connect(&f, id, false, 60).await;
    wire.subscribe(&topics::response_topic(id)).await.unwrap();
    let ok = request(&mut wire, id, b"*2\r\n$9\r\nKEYNOTIFY\r\n$4\r\nkept\r\n").await;
    assert_eq!(&ok[..], b"+OK\r\n");
    let before = f.stats().registrations_dropped;

    // A cut keeps the registration and its route: the notification of a SET made while
    // the observer is away waits in its session.
    wire.cut();
    tokio::time::sleep(Duration::from_millis(300)).await;
    let set = request(
        &mut writer,
        "reg-writer",
        b"*3\r\n$3\r\nSET\r\n$4\r\nkept\r\n$2\r\nv1\r\n",
    )
    .await;
    assert_eq!(&set[..], b"+OK\r\n");
    assert_eq!(
        f.stats().registrations_dropped,
        before,
        "kept across the cut"
    );
    let (mut wire, present) = connect(&f, id, false, 60).await;
    assert!(present);
    let n = wire.next_publish().await.unwrap();
    wire.ack(&n).await.unwrap();
    assert_eq!(
        std::str::from_utf8(&n.topic).unwrap(),
        topics::notification_topic(id, b"kept")
    );
    assert!(
        n.payload
            .starts_with(b"*4\r\n$6\r\nNOTIFY\r\n$3\r\nSET\r\n")
    );

    // A clean start replaces the session: the registration ends with the old one.
    wire.cut();
    let (mut wire, present) = connect(&f, id, true, 60).await;
    assert!(!present);
    dropped_beyond(&f, before).await;
    wire.subscribe("reg/barrier").await.unwrap();
    request(
        &mut writer,
        "reg-writer",
        b"*3\r\n$3\r\nSET\r\n$4\r\nkept\r\n$2\r\nv2\r\n",
    )
    .await;
    let pkid = writer
        .publish("reg/barrier", "b", None, None)
        .await
        .unwrap();
    writer.puback(pkid).await.unwrap();
    let p = wire.next_publish().await.unwrap();
    assert_eq!(
        &p.payload[..],
        b"b",
        "no notification after the session ended"
    );
    wire.disconnect().await.unwrap();

    // With a short expiry, the registration ends at the expiry, not at the cut.
    let id = "reg-short";
    let (mut wire, _) = connect(&f, id, false, 1).await;
    wire.subscribe(&topics::response_topic(id)).await.unwrap();
    request(&mut wire, id, b"*2\r\n$9\r\nKEYNOTIFY\r\n$5\r\nshort\r\n").await;
    let before = f.stats().registrations_dropped;
    wire.cut();
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(
        f.stats().registrations_dropped,
        before,
        "still within the expiry"
    );
    dropped_beyond(&f, before).await;
    f.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_ids_the_embedded_broker_accepts_and_refuses() {
    // MQTT 5 allows any UTF-8 client id, and mosquitto accepts these; the embedded broker
    // refused ids with `/` or `\`, and `.`/`..`, as unsafe file names (mqtt5's
    // `is_path_safe_client_id`) until its fork's patch 0005 (issue 46): now both accept
    // them. The embedded broker still refuses ids longer than 128 bytes (CONNACK 0x85,
    // Client Identifier not valid), which mosquitto accepts.
    for kind in [BrokerKind::Embedded, BrokerKind::Mosquitto] {
        let f = fixture(kind).await;
        for id in ["a/b", "with/slash/", "back\\slash", ".", ".."] {
            let (wire, ack) = Wire::connect(addr(&f), id, true, 0).await.unwrap();
            assert_eq!(ack.code, ConnectReturnCode::Success, "{kind:?} {id}");
            wire.disconnect().await.unwrap();
        }
        let id = "x".repeat(129);
        let (wire, ack) = Wire::connect(addr(&f), &id, true, 0).await.unwrap();
        match kind {
            BrokerKind::Embedded => {
                assert_eq!(ack.code, ConnectReturnCode::ClientIdentifierNotValid);
            }
            BrokerKind::Mosquitto => {
                assert_eq!(ack.code, ConnectReturnCode::Success);
                wire.disconnect().await.unwrap();
            }
        }
        // 128 bytes is still fine.
        let (wire, present) = connect(&f, &"y".repeat(128), true, 0).await;
        assert!(!present);
        wire.disconnect().await.unwrap();
        f.shutdown().await;
    }
}
