//! `ServerHandle::metrics`: what `mqstate serve --http` exposes at `/metrics`, seen move as a
//! real client (the `mqstate` Rust client) works against the server.

use std::time::Duration;

use mqstate::codec::SetCondition;
use mqstate::{Client, ClientOptions, ConnectionSettings, SetOptions};
use mqstate_server::metrics::{COMMANDS, LATENCY_BUCKETS, Outcome};
use mqstate_server::{Server, ServerConfig};

fn command(name: &str) -> usize {
    COMMANDS.iter().position(|c| *c == name).unwrap()
}

fn outcome(o: Outcome) -> usize {
    Outcome::ALL.iter().position(|x| *x == o).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_sizes_and_sessions_are_counted() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(ServerConfig {
        data_dir: Some(dir.path().to_owned()),
        ..ServerConfig::ephemeral()
    })
    .await
    .expect("server starts");
    let reader = server.metrics_reader();
    let before = reader.read();
    assert_eq!(before.requests.total(), 0);
    assert_eq!(before.requests.keys, 0);

    let settings = ConnectionSettings::new("127.0.0.1", server.addr().port());
    let client = Client::connect_with(settings, ClientOptions::default())
        .await
        .expect("connects");
    let persist = SetOptions {
        persist: true,
        ..SetOptions::default()
    };
    client.set("alpha", "12345", persist.clone()).await.unwrap();
    client.set("b", "x", SetOptions::default()).await.unwrap();
    assert!(client.get("alpha").await.unwrap().is_some());
    assert!(client.get("missing").await.unwrap().is_none());
    let nx = SetOptions {
        condition: SetCondition::NotExists,
        ..SetOptions::default()
    };
    // Not applied is an answer like any other: `ok`.
    assert!(!client.set("b", "y", nx).await.unwrap().applied);
    assert_eq!(client.del("b", Default::default()).await.unwrap(), 1);

    let m = reader.read();
    let r = &m.requests;
    assert_eq!(r.requests[command("SET")][outcome(Outcome::Ok)], 3, "{r:?}");
    assert_eq!(r.requests[command("GET")][outcome(Outcome::Ok)], 2);
    assert_eq!(r.requests[command("DEL")][outcome(Outcome::Ok)], 1);
    assert_eq!(r.total(), 6);
    assert_eq!(
        r.buckets.iter().sum::<u64>(),
        6,
        "every request has a latency"
    );
    assert_eq!(r.buckets.len(), LATENCY_BUCKETS.len() + 1);
    assert!(r.latency_sum > Duration::ZERO);
    assert_eq!(r.keys, 1);
    assert_eq!(r.data_bytes, 10, "alpha + 12345");
    assert_eq!(
        r.dedup_entries, 4,
        "the answers of the four writes are kept"
    );
    assert!(r.journal_bytes > 0, "the persisted SET is in the log");
    assert_eq!(m.stats.requests, 6);
    assert_eq!(m.sessions_online, Some(1), "this client");
    assert_eq!(m.sessions_offline, Some(0));
    assert_eq!(m, server.metrics(), "the handle reads the same");

    client.shutdown().await;
    server.shutdown().await;
    // After the server stops, the reader still answers (the last values).
    assert_eq!(reader.read().requests.total(), 6);
}
