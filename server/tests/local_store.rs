//! `mqstate_server::testing::LocalStore` seen from real clients (the `mqstate` Rust client):
//! every fault and every look inside, observed the way an application would observe it.
//! Needs the `testing` feature: `cargo test -p mqstate-server --features testing`.

use std::time::Duration;

use mqstate::codec::StoreErrorKind;
use mqstate::{Client, ConnectionSettings, ErrorKind, SetOptions};
use mqstate_server::testing::LocalStore;

/// A bound on anything that should happen, so a bug fails the test instead of hanging it.
const BOUND: Duration = Duration::from_secs(20);

async fn client(store: &LocalStore) -> Client {
    let settings = ConnectionSettings::from_url(&store.url()).expect("the store's URL parses");
    Client::connect(settings).await.expect("connects")
}

fn persisted() -> SetOptions {
    SetOptions {
        persist: true,
        ..SetOptions::default()
    }
}

/// Waits (bounded) until `client` is connected and can read `key`; its value then.
async fn read_when_back(client: &Client, key: &str) -> Option<bytes::Bytes> {
    tokio::time::timeout(BOUND, async {
        loop {
            if client.is_connected()
                && let Ok(found) = client.get(key).await
            {
                return found.map(|v| v.value);
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .expect("the client came back")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cut_resets_connections_and_requests_in_flight_complete() {
    let mut store = LocalStore::start().await.unwrap();
    assert_eq!(store.url(), format!("mqtt://127.0.0.1:{}", store.port()));
    let client = client(&store).await;
    client
        .set("before", "1", SetOptions::default())
        .await
        .unwrap();
    // Hold the requests in the store so they are in flight when the connection goes.
    store.pause(Duration::from_millis(300)).unwrap();
    let writes: Vec<_> = (0..20)
        .map(|i| {
            let client = client.clone();
            tokio::spawn(async move {
                client
                    .set(format!("k{i:02}"), "v", SetOptions::default())
                    .await
            })
        })
        .collect();
    tokio::time::sleep(Duration::from_millis(50)).await;
    let cut = store.cut_connections().await.unwrap();
    assert_eq!(cut, 1, "the one client connection was cut");
    for write in writes {
        let outcome = tokio::time::timeout(BOUND, write)
            .await
            .expect("the write completed")
            .unwrap();
        assert!(outcome.expect("the write succeeded").applied);
    }
    let link = client.link_info();
    assert!(link.connections >= 2, "the client reconnected: {link:?}");
    assert_eq!(link.sessions, 1, "and resumed its session: {link:?}");
    assert_eq!(store.keys("k*").unwrap().len(), 20);
    store.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_paused_store_answers_what_queued_once_the_pause_ends() {
    let mut store = LocalStore::start().await.unwrap();
    let client = client(&store).await;
    client.set("k", "v", SetOptions::default()).await.unwrap();
    let pause = Duration::from_millis(400);
    let started = tokio::time::Instant::now();
    store.pause(pause).unwrap();
    let read = client.get("k").await.unwrap();
    assert!(
        started.elapsed() >= pause,
        "answered during the pause ({:?})",
        started.elapsed()
    );
    assert_eq!(read.map(|v| v.value), Some("v".into()));
    assert!(client.is_connected(), "a pause keeps the connection");
    assert_eq!(client.link_info().connections, 1);
    store.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restart_keeps_persisted_keys_only_with_keep_data() {
    let mut store = LocalStore::start().await.unwrap();
    let port = store.port();
    let client = client(&store).await;
    client.set("durable", "d", persisted()).await.unwrap();
    client
        .set("volatile", "v", SetOptions::default())
        .await
        .unwrap();
    let version = store.get("durable").unwrap().unwrap().version;

    store.restart(true).await.unwrap();
    assert_eq!(store.port(), port, "the same port");
    assert_eq!(read_when_back(&client, "durable").await, Some("d".into()));
    assert_eq!(read_when_back(&client, "volatile").await, None);
    assert_eq!(store.get("durable").unwrap().unwrap().version, version);
    assert_eq!(client.link_info().sessions, 2, "the session was lost");

    // A request in flight (held by a pause) dies with the session.
    store.pause(Duration::from_secs(5)).unwrap();
    let in_flight = {
        let client = client.clone();
        tokio::spawn(async move { client.set("late", "x", SetOptions::default()).await })
    };
    // Restarted before the request arrives, the store would answer it after the reconnect.
    tokio::time::timeout(BOUND, async {
        while store.held_requests().unwrap() == 0 {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await
    .expect("the pause holds the request");
    store.restart(false).await.unwrap();
    let e = tokio::time::timeout(BOUND, in_flight)
        .await
        .expect("the request ended")
        .unwrap()
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::ConnectionLost, "{e}");
    assert!(e.may_have_applied());
    assert_eq!(read_when_back(&client, "durable").await, None);
    assert!(store.keys("*").unwrap().is_empty());
    store.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fail_next_answers_the_chosen_command_with_the_chosen_error() {
    let mut store = LocalStore::start().await.unwrap();
    let client = client(&store).await;
    client.set("k", "v", SetOptions::default()).await.unwrap();
    store
        .fail_next(2, "fencing_token_lower_version", Some("set"))
        .unwrap();
    // Other commands are served as usual.
    assert!(client.get("k").await.unwrap().is_some());
    for _ in 0..2 {
        let e = client
            .set("k", "w", SetOptions::default())
            .await
            .unwrap_err();
        assert_eq!(
            e.kind(),
            ErrorKind::Store(StoreErrorKind::FencingTokenLowerVersion)
        );
        assert_eq!(e.code(), "fencing_token_lower_version");
        assert_eq!(
            e.message(),
            StoreErrorKind::FencingTokenLowerVersion.text().unwrap(),
            "the service's exact text"
        );
    }
    assert_eq!(store.get("k").unwrap().unwrap().value, "v", "untouched");
    assert!(
        client
            .set("k", "w", SetOptions::default())
            .await
            .unwrap()
            .applied
    );

    // Without a command, any request fails.
    store.fail_next(1, "quota_exceeded", None).unwrap();
    let e = client.get("k").await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Store(StoreErrorKind::QuotaExceeded));
    assert!(client.get("k").await.is_ok());

    for (code, command) in [
        ("timeout", None),
        ("nope", None),
        ("quota_exceeded", Some("PUT")),
    ] {
        let e = store.fail_next(1, code, command).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{code} {command:?}");
    }
    // A pause is a span: at least 1 ms, as the vocabulary says for every language.
    for short in [Duration::ZERO, Duration::from_micros(999)] {
        let e = store.pause(short).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{short:?}");
    }
    assert_eq!(
        store.pause(Duration::MAX).unwrap_err().kind(),
        ErrorKind::InvalidArgument
    );
    store.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keys_get_and_clear_look_inside_without_a_client() {
    let mut store = LocalStore::start().await.unwrap();
    let client = client(&store).await;
    let a = client.set("app/a", "1", persisted()).await.unwrap();
    client
        .set("app/b", "2", SetOptions::default())
        .await
        .unwrap();
    client
        .set("other", "3", SetOptions::default())
        .await
        .unwrap();
    assert_eq!(store.keys("app/*").unwrap(), vec!["app/a", "app/b"]);
    let got = store.get("app/a").unwrap().unwrap();
    assert_eq!(got.value, "1");
    assert_eq!(Some(got.version), a.version, "the version the SET returned");
    assert_eq!(store.get("missing").unwrap(), None);

    assert_eq!(store.clear().unwrap(), 3);
    assert!(store.keys("*").unwrap().is_empty());
    assert_eq!(client.get("app/b").await.unwrap(), None);
    // Persisted keys left the journal too.
    store.restart(true).await.unwrap();
    assert_eq!(read_when_back(&client, "app/a").await, None);
    store.stop().await;
    let e = store.keys("*").unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Closed);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_stores_in_one_process_share_nothing() {
    let mut one = LocalStore::start().await.unwrap();
    let mut two = LocalStore::start().await.unwrap();
    assert_ne!(one.port(), two.port());
    assert_ne!(one.data_dir(), two.data_dir());
    let c1 = client(&one).await;
    let c2 = client(&two).await;
    c1.set("k", "one", persisted()).await.unwrap();
    assert_eq!(c2.get("k").await.unwrap(), None);
    one.fail_next(1, "not_authorized", None).unwrap();
    assert!(c2.get("k").await.is_ok(), "the fault is the other store's");
    one.stop().await;
    c2.set("k", "two", SetOptions::default()).await.unwrap();
    assert_eq!(two.get("k").unwrap().unwrap().value, "two");
    two.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stop_and_drop_return_with_clients_connected() {
    let mut stopped = LocalStore::start().await.unwrap();
    let c1 = client(&stopped).await;
    c1.set("k", "v", SetOptions::default()).await.unwrap();
    let dir = stopped.data_dir().to_owned();
    tokio::time::timeout(BOUND, stopped.stop())
        .await
        .expect("stop returned");
    assert!(!stopped.is_running());
    assert!(!dir.exists(), "the data directory is removed");
    tokio::time::timeout(BOUND, stopped.stop())
        .await
        .expect("a second stop returns too");

    let dropped = LocalStore::start().await.unwrap();
    let c2 = client(&dropped).await;
    let dir = dropped.data_dir().to_owned();
    drop(dropped);
    assert!(!dir.exists());
    let e = tokio::time::timeout(BOUND, c2.with_timeout(Duration::from_secs(2)).get("k"))
        .await
        .expect("the client's request ended")
        .unwrap_err();
    assert!(
        matches!(
            e.kind(),
            ErrorKind::ConnectionLost | ErrorKind::Timeout | ErrorKind::Closed
        ),
        "{e}"
    );
}

/// Bindings spawn the store's futures on multi-thread runtimes: they must be `Send` (a
/// `watch::Ref` held across an `await` in `Server::start` once made them not). A compile-time
/// check: the future is built, never run.
#[test]
fn its_futures_can_be_spawned() {
    fn spawnable<T: Send + 'static>(_: &T) {}
    let all = async {
        let mut store = LocalStore::start().await.unwrap();
        store.restart(true).await.unwrap();
        store.cut_connections().await.unwrap();
        store.stop().await;
    };
    spawnable(&all);
    spawnable(&mqstate_server::Server::start(
        mqstate_server::ServerConfig::ephemeral(),
    ));
}
