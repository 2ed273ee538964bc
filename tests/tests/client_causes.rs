//! Errors that name their cause: a broker with nothing serving the state store behind it,
//! and a peer that is not an MQTT broker at all. Read-only requests never claim they "may
//! have been applied".

use std::io::{Read, Write};
use std::net::TcpListener;
use std::time::Duration;

use mqstate::{Client, ConnectionSettings, DelOptions, ErrorKind, GetOptions, ScanOptions};
use mqstate_tests::Mosquitto;

fn settings(port: u16) -> ConnectionSettings {
    let mut s = ConnectionSettings::new("127.0.0.1", port);
    s.connect_timeout = Duration::from_secs(3);
    s
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_broker_without_a_state_store_is_named_as_such() {
    let broker = Mosquitto::start().unwrap();
    let client = Client::connect(settings(broker.port())).await.unwrap();
    let short = Some(Duration::from_millis(500));
    let err = client
        .get_with("k", GetOptions { timeout: short })
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Timeout);
    assert!(
        err.message()
            .contains("no subscriber on the state store's request topic"),
        "{err}"
    );
    assert!(!err.may_have_applied(), "a GET only reads: {err}");
    let mut pages = client
        .scan_with("*", ScanOptions { timeout: short })
        .unwrap();
    let err = pages.next_page().await.unwrap_err();
    assert!(!err.may_have_applied(), "a SCAN only reads: {err}");
    // A write may still have been applied: it says so, with the cause.
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
    assert!(err.may_have_applied(), "{err}");
    assert!(err.message().contains("no state store"), "{err}");
    client.shutdown().await;
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
