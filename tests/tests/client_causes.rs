//! Errors that name their cause: a broker with nothing serving the state store behind it,
//! and a peer that is not an MQTT broker at all. Read-only requests never claim they "may
//! have been applied".

use std::io::{Read, Write};
use std::net::TcpListener;
use std::time::Duration;

use mqstate::{
    Client, ConnectionSettings, DelOptions, ErrorKind, GetOptions, ScanOptions, SetOptions,
};
use mqstate_tests::{Mosquitto, StateStoreFixture};

fn settings(port: u16) -> ConnectionSettings {
    let mut s = ConnectionSettings::new("127.0.0.1", port);
    s.connect_timeout = Duration::from_secs(3);
    s
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_broker_without_a_state_store_is_named_as_such() {
    let broker = Mosquitto::start().unwrap();
    let client = Client::connect(settings(broker.port())).await.unwrap();
    // Shorter than the no-store window: the timeout comes first, and names the cause.
    let short = Some(Duration::from_millis(500));
    let err = client
        .get_with(
            "k",
            GetOptions {
                timeout: short,
                ..GetOptions::default()
            },
        )
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Timeout);
    assert!(
        err.message()
            .contains("the broker says no state store is subscribed to the request topic"),
        "{err}"
    );
    assert!(!err.may_have_applied(), "a GET only reads: {err}");
    let mut pages = client
        .scan_with("*", ScanOptions { timeout: short })
        .unwrap();
    let err = pages.next_page().await.unwrap_err();
    assert!(!err.may_have_applied(), "a SCAN only reads: {err}");
    // A write that the broker routed to nobody, every time, was not applied.
    let err = client
        .del(
            "k",
            DelOptions {
                timeout: short,
                ..DelOptions::default()
            },
        )
        .await
        .unwrap_err();
    assert!(err.message().contains("no state store"), "{err}");
    assert!(
        !err.may_have_applied(),
        "routed to nobody every time: {err}"
    );
    client.shutdown().await;
}

/// mosquitto answers a request nobody subscribes to with PUBACK 0x10: after the no-store
/// window the call fails with `no_store`, not after its 30 s timeout (a `timeout` error).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_broker_without_a_state_store_fails_fast_with_no_store() {
    let broker = Mosquitto::start().unwrap();
    let client = Client::connect(settings(broker.port())).await.unwrap();
    let long = Some(Duration::from_secs(30));
    let err = client
        .get_with(
            "k",
            GetOptions {
                timeout: long,
                ..GetOptions::default()
            },
        )
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::NoStore, "{err}");
    assert!(
        err.message().contains("no state store is subscribed"),
        "{err}"
    );
    assert!(!err.may_have_applied(), "{err}");
    let err = client
        .set(
            "k",
            "v",
            SetOptions {
                timeout: long,
                ..SetOptions::default()
            },
        )
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::NoStore, "{err}");
    assert!(!err.may_have_applied(), "never delivered: {err}");
    assert!(err.kind().is_retryable());
    client.shutdown().await;
}

/// A state store that restarts behind its broker costs its clients a wait, not errors: a
/// request sent while nobody is subscribed is sent again until the store is back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_state_store_restarting_behind_mosquitto_is_waited_for() {
    let mut fixture = StateStoreFixture::mosquitto().await.unwrap();
    let mut s = settings(fixture.port());
    s.host = fixture.host().to_owned();
    let client = Client::connect(s).await.unwrap();
    client.set("k", "v", SetOptions::default()).await.unwrap();
    fixture.stop_server().await;
    // Nobody is subscribed now: mosquitto says so.
    let err = client
        .get_with(
            "k",
            GetOptions {
                timeout: Some(Duration::from_millis(300)),
                ..GetOptions::default()
            },
        )
        .await
        .unwrap_err();
    assert!(
        err.message().contains("no state store is subscribed"),
        "{err}"
    );
    let waiting = {
        let client = client.clone();
        tokio::spawn(async move {
            client
                .get_with(
                    "k",
                    GetOptions {
                        timeout: Some(Duration::from_secs(30)),
                        ..GetOptions::default()
                    },
                )
                .await
        })
    };
    tokio::time::sleep(Duration::from_millis(400)).await;
    fixture.restart().await.unwrap();
    // An answer, not an error (the in-memory store forgot the key with its restart).
    waiting
        .await
        .unwrap()
        .expect("answered once the store was back");
    client.shutdown().await;
    fixture.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_peer_that_is_not_mqtt_is_named_as_such() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming().take(20) {
            let Ok(mut stream) = stream else { continue };
            let mut buf = [0u8; 256];
            let _ = stream.read(&mut buf);
            let _ = stream.write_all(b"HTTP/1.0 400 Bad Request\r\nServer: not-mqtt\r\n\r\n");
        }
    });
    let err = Client::connect(settings(port)).await.unwrap_err();
    assert!(err.kind().is_connect(), "{err}");
    // Said in words, with the address, not rumqttc's "Promised boundary crossed, contains
    // 17487 bytes".
    let expected = format!("the server at 127.0.0.1:{port} did not answer as an MQTT broker");
    assert!(err.message().contains(&expected), "{err}");
    assert!(!err.message().contains("boundary"), "{err}");
}

/// A timeout too short for any round trip is named as such, never taken for a missing store
/// (the message said "no state store has answered this client yet" while one was running);
/// a zero one is refused before anything is sent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tiny_timeout_is_named_as_such_and_a_zero_one_is_refused() {
    let fixture = StateStoreFixture::embedded().await.unwrap();
    let mut s = settings(fixture.port());
    s.host = fixture.host().to_owned();
    let client = Client::connect(s).await.unwrap();
    let tiny = Some(Duration::from_micros(1));
    let err = client
        .get_with(
            "k",
            GetOptions {
                timeout: tiny,
                ..GetOptions::default()
            },
        )
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Timeout, "{err}");
    assert!(err.message().contains("may be too short"), "{err}");
    assert!(!err.message().contains("no state store"), "{err}");
    let zero = Some(Duration::ZERO);
    for _ in 0..5 {
        let err = client
            .get_with(
                "k",
                GetOptions {
                    timeout: zero,
                    ..GetOptions::default()
                },
            )
            .await
            .unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidArgument, "never racy: {err}");
    }
    assert_eq!(client.pending_requests(), 0);
    client.get("k").await.expect("a default timeout works");
    client.shutdown().await;
    fixture.shutdown().await;
}
