//! Fault tests of the Rust client: connections cut with requests in flight (through a TCP
//! proxy), brokers restarted with and without persistence, the service restarted. Every
//! request completes or fails with a typed error within its timeout (never a hang), and
//! observations resume and deliver the final state.

mod support;

use std::time::Duration;

use mqstate::codec::KeyEvent;
use mqstate::{Client, ClientOptions, ErrorKind, SetOptions};
use mqstate_server::{BrokerTarget, Server, ServerConfig};
use mqstate_tests::proxy::TcpProxy;
use mqstate_tests::{BrokerKind, Mosquitto, StateStoreFixture};
use support::{Env, disconnect_logged, eventually, next_notification, raw_subscriber};

const REQUEST_TIMEOUT: Duration = Duration::from_secs(3);

/// A client that reaches the broker through a fault proxy.
async fn proxied_client(env: &Env, name: &str) -> (TcpProxy, Client) {
    let proxy = TcpProxy::start(([127, 0, 0, 1], env.port).into())
        .await
        .unwrap();
    let options = ClientOptions {
        request_timeout: REQUEST_TIMEOUT,
        ..ClientOptions::default()
    };
    let client = Client::connect_with(env.settings_on(name, proxy.port()), options)
        .await
        .unwrap();
    (proxy, client)
}

/// Runs `n` SETs at once and returns how each ended; panics on a hang or an untyped error.
async fn burst(client: &Client, n: usize, during: impl FnOnce()) -> (usize, usize) {
    let mut tasks = tokio::task::JoinSet::new();
    for i in 0..n {
        let client = client.clone();
        tasks.spawn(async move {
            client
                .set(format!("burst/{i}"), "v", SetOptions::default())
                .await
        });
    }
    during();
    let (mut ok, mut failed) = (0, 0);
    let all = async {
        while let Some(joined) = tasks.join_next().await {
            match joined.unwrap() {
                Ok(_) => ok += 1,
                Err(e) => {
                    assert!(
                        matches!(e.kind(), ErrorKind::ConnectionLost | ErrorKind::Timeout),
                        "unexpected error kind: {e}"
                    );
                    failed += 1;
                }
            }
        }
    };
    tokio::time::timeout(REQUEST_TIMEOUT * 3, all)
        .await
        .expect("every request ends within its timeout");
    (ok, failed)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cut_with_requests_in_flight() {
    let env = Env::mosquitto().await;
    let (proxy, client) = proxied_client(&env, "cut").await;
    let (ok, failed) = burst(&client, 300, || proxy.cut()).await;
    assert_eq!(ok + failed, 300);
    assert_eq!(client.pending_requests(), 0);
    // The client reconnects by itself and works again.
    eventually(Duration::from_secs(10), || async {
        client
            .set("after-cut", "v", SetOptions::default())
            .await
            .is_ok()
    })
    .await;
    assert!(proxy.connections() >= 2, "it reconnected");
    client.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cut_on_the_embedded_broker_completes_requests_in_flight() {
    // The client keeps a session (expiry 3600 s) and the embedded broker resumes it: the
    // requests, and their responses queued while the client was away, survive the cut.
    let env = Env::embedded().await;
    let (proxy, client) = proxied_client(&env, "resumer").await;
    let (ok, failed) = burst(&client, 300, || proxy.cut()).await;
    assert_eq!(
        (ok, failed),
        (300, 0),
        "every request completes on the resumed session"
    );
    assert!(proxy.connections() >= 2, "the connection was cut");
    assert_eq!(client.pending_requests(), 0);
    client.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_wait_out_a_short_outage() {
    let env = Env::embedded().await;
    let (proxy, client) = proxied_client(&env, "outage").await;
    proxy.set_accepting(false);
    proxy.cut();
    eventually(Duration::from_secs(5), || async { !client.is_connected() }).await;
    let pending = {
        let client = client.clone();
        tokio::spawn(async move { client.set("during", "outage", SetOptions::default()).await })
    };
    tokio::time::sleep(Duration::from_millis(300)).await;
    proxy.set_accepting(true);
    let set = pending
        .await
        .unwrap()
        .expect("a request issued while disconnected completes after the reconnection");
    assert!(set.applied);
    client.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn observation_resumes_with_the_final_state() {
    let env = Env::mosquitto().await;
    let (proxy, watcher) = proxied_client(&env, "resume").await;
    let writer = env.client("resume-writer").await;
    writer
        .set("watched", "before", SetOptions::default())
        .await
        .unwrap();
    let mut observer = watcher.observe("watched").await.unwrap();
    let mut log = raw_subscriber(env.port, "$SYS/broker/log/#").await;

    // Away from the broker while the key changes twice (once the store knows it is away:
    // else a change is notified to the stored session and arrives live when it resumes).
    proxy.set_accepting(false);
    proxy.cut();
    eventually(Duration::from_secs(5), || async { !watcher.is_connected() }).await;
    disconnect_logged(&mut log, watcher.client_id()).await;
    writer
        .set("watched", "during-1", SetOptions::default())
        .await
        .unwrap();
    let last = writer
        .set("watched", "during-2", SetOptions::default())
        .await
        .unwrap();
    proxy.set_accepting(true);

    let n = next_notification(&mut observer).await;
    assert_eq!(
        n.event,
        KeyEvent::Set("during-2".into()),
        "the final state, not the intermediate one"
    );
    assert!(n.resync);
    assert_eq!(n.version, last.version);

    // Live notifications flow again, in order, without duplicates.
    writer.del("watched", Default::default()).await.unwrap();
    let n = next_notification(&mut observer).await;
    assert_eq!(n.event, KeyEvent::Delete);
    assert!(!n.resync);
    assert!(observer.try_recv().is_none(), "no duplicate");

    // A deletion while away is resynchronised too.
    writer
        .set("watched", "again", SetOptions::default())
        .await
        .unwrap();
    assert_eq!(
        next_notification(&mut observer).await.event,
        KeyEvent::Set("again".into())
    );
    proxy.set_accepting(false);
    proxy.cut();
    eventually(Duration::from_secs(5), || async { !watcher.is_connected() }).await;
    disconnect_logged(&mut log, watcher.client_id()).await;
    writer.del("watched", Default::default()).await.unwrap();
    proxy.set_accepting(true);
    let n = next_notification(&mut observer).await;
    assert_eq!((n.event, n.resync), (KeyEvent::Delete, true));
    watcher.shutdown().await;
    writer.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hundred_reconnections_leave_nothing_behind() {
    let env = Env::embedded().await;
    let (proxy, client) = proxied_client(&env, "leak").await;
    let mut observer = client.observe("leak-key").await.unwrap();
    client
        .set("leak-key", "0", SetOptions::default())
        .await
        .unwrap();
    assert_eq!(
        next_notification(&mut observer).await.event,
        KeyEvent::Set("0".into())
    );
    let metrics = tokio::runtime::Handle::current().metrics();
    let tasks_before = metrics.num_alive_tasks();
    for i in 1..=100u32 {
        // The cut lands asynchronously: wait for the new connection, then use it.
        let before = proxy.connections();
        proxy.cut();
        eventually(Duration::from_secs(10), || async {
            proxy.connections() > before
                && client
                    .set("leak-key", i.to_string(), SetOptions::default())
                    .await
                    .is_ok()
        })
        .await;
    }
    // The observer ends on the last value, whatever it skipped on the way.
    let mut last = None;
    while let Ok(Some(n)) = tokio::time::timeout(Duration::from_secs(2), observer.recv()).await {
        last = Some(n.event);
    }
    assert_eq!(last, Some(KeyEvent::Set("100".into())));
    assert!(proxy.connections() >= 101);
    assert_eq!(client.pending_requests(), 0);
    // Background work per reconnection ends with it (a small allowance for STOP/resync
    // tasks that are finishing right now).
    let tasks_after = metrics.num_alive_tasks();
    assert!(
        tasks_after <= tasks_before + 2,
        "tasks grew from {tasks_before} to {tasks_after}"
    );
    drop(observer);
    client.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn broker_restart_without_persistence() {
    let mut env = Env::mosquitto().await;
    let watcher = env.client("restart-watch").await;
    let writer = env.client("restart-write").await;
    let mut observer = watcher.observe("r").await.unwrap();
    let short = watcher.with_timeout(REQUEST_TIMEOUT);
    let (ok, failed) = burst(&short, 100, || env.fixture.restart_broker().unwrap()).await;
    assert_eq!(ok + failed, 100);
    // Both clients and the service reconnect to the new (session-less) broker.
    eventually(Duration::from_secs(15), || async {
        writer
            .set("r", "after-restart", SetOptions::default())
            .await
            .is_ok()
    })
    .await;
    let mut seen = None;
    for _ in 0..3 {
        let n = next_notification(&mut observer).await;
        let done = n.event == KeyEvent::Set("after-restart".into());
        seen = Some(n);
        if done {
            break;
        }
    }
    assert_eq!(seen.unwrap().event, KeyEvent::Set("after-restart".into()));
    // Re-registration requests lost while the service itself reconnected end by timeout.
    eventually(Duration::from_secs(15), || async {
        watcher.pending_requests() == 0
    })
    .await;
    watcher.shutdown().await;
    writer.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn broker_restart_with_persistence_keeps_the_session() {
    let mut mosquitto = Mosquitto::start_persistent().unwrap();
    let config = ServerConfig {
        broker: Some(BrokerTarget::parse(&mosquitto.url()).unwrap()),
        ..mqstate_tests::server_config()
    };
    let server = Server::start(config).await.unwrap();
    let settings = {
        let mut s = mqstate::ConnectionSettings::new("127.0.0.1", mosquitto.port());
        s.reconnect_max_delay = Duration::from_millis(500);
        s
    };
    let client = Client::connect(settings).await.unwrap();
    client.set("p", "1", SetOptions::default()).await.unwrap();
    mosquitto.restart().unwrap();
    eventually(Duration::from_secs(15), || async {
        client.set("p", "2", SetOptions::default()).await.is_ok()
    })
    .await;
    assert_eq!(&client.get("p").await.unwrap().unwrap().value[..], b"2");
    assert_eq!(client.pending_requests(), 0);
    client.shutdown().await;
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn service_restart() {
    // Behind mosquitto the client keeps its connection; requests while the service is down
    // time out (typed), and succeed again once it is back.
    let mut env = Env::mosquitto().await;
    let client = env
        .client("svc")
        .await
        .with_timeout(Duration::from_millis(500));
    client.set("s", "1", SetOptions::default()).await.unwrap();
    env.fixture.stop_server().await;
    let err = client.get("s").await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Timeout);
    env.fixture.restart().await.unwrap();
    eventually(Duration::from_secs(10), || async {
        client.get("s").await.is_ok()
    })
    .await;
    client.shutdown().await;

    // With the embedded broker the broker goes too: observation resumes after the restart.
    let mut env = Env::from(
        StateStoreFixture::start(BrokerKind::Embedded, mqstate_tests::server_config())
            .await
            .unwrap(),
    );
    let watcher = env.client("svc-watch").await;
    let mut observer = watcher.observe("e").await.unwrap();
    env.fixture.restart().await.unwrap();
    let writer = env.client("svc-write").await;
    eventually(Duration::from_secs(10), || async { watcher.is_connected() }).await;
    // The new service knows the watcher again once it has re-registered.
    let mut delivered = false;
    for _ in 0..30 {
        writer
            .set("e", "back", SetOptions::default())
            .await
            .unwrap();
        let n = tokio::time::timeout(Duration::from_millis(300), observer.recv()).await;
        if matches!(n, Ok(Some(n)) if n.event == KeyEvent::Set("back".into())) {
            delivered = true;
            break;
        }
    }
    assert!(delivered, "observation resumed after the service restart");
    watcher.shutdown().await;
    writer.shutdown().await;
}
