//! The Rust client against the real thing: mqstate-server behind Debian's mosquitto, and
//! behind its embedded broker. Every API call and option, every store error reaching the
//! caller as its typed kind, argument validation, timeouts, concurrency and observation.

mod support;

use std::time::Duration;

use mqstate::codec::{KeyEvent, SetCondition, StoreErrorKind};
use mqstate::{
    Client, ClientOptions, ConnectionSettings, DelOptions, ErrorKind, SetOptions, VdelOutcome,
};
use support::{Env, eventually, next_notification, raw_subscriber};

async fn api_round_trip(env: &Env) {
    let client = env.client("api").await;
    // SET / GET with versions.
    let set = client.set("k1", "v1", SetOptions::default()).await.unwrap();
    assert!(set.applied);
    let v1 = set.version.expect("a SET carries its version");
    let got = client.get("k1").await.unwrap().expect("present");
    assert_eq!(&got.value[..], b"v1");
    assert_eq!(got.version.as_ref(), Some(&v1));
    let set2 = client.set("k1", "v2", SetOptions::default()).await.unwrap();
    assert!(set2.version.clone().unwrap() > v1, "versions increase");

    // NX / NEX.
    let nx = SetOptions {
        condition: SetCondition::NotExists,
        ..SetOptions::default()
    };
    assert!(!client.set("k1", "x", nx.clone()).await.unwrap().applied);
    assert!(client.set("k-nx", "x", nx).await.unwrap().applied);
    let nex = SetOptions {
        condition: SetCondition::NotExistsOrEqual,
        ..SetOptions::default()
    };
    assert!(
        client.set("k1", "v2", nex.clone()).await.unwrap().applied,
        "same value"
    );
    let refused = client.set("k1", "other", nex).await.unwrap();
    assert!(!refused.applied && refused.version.is_none());

    // DEL / VDEL.
    assert_eq!(client.del("k1", DelOptions::default()).await.unwrap(), 1);
    assert_eq!(client.del("k1", DelOptions::default()).await.unwrap(), 0);
    assert!(client.get("k1").await.unwrap().is_none());
    client
        .set("k2", "mine", SetOptions::default())
        .await
        .unwrap();
    let d = DelOptions::default();
    assert_eq!(
        client.vdel("k2", "theirs", d.clone()).await.unwrap(),
        VdelOutcome::ValueMismatch
    );
    assert_eq!(
        client.vdel("k2", "mine", d.clone()).await.unwrap(),
        VdelOutcome::Deleted
    );
    assert_eq!(
        client.vdel("k2", "mine", d).await.unwrap(),
        VdelOutcome::NotFound
    );

    // Binary keys and values, empty values, persistence flag.
    let key = b"\x00bin\r\nkey\xff";
    let value = b"$3\r\n\x00\x01*";
    let persist = SetOptions {
        persist: true,
        ..SetOptions::default()
    };
    assert!(client.set(key, value, persist).await.unwrap().applied);
    assert_eq!(&client.get(key).await.unwrap().unwrap().value[..], value);
    client
        .set("empty", "", SetOptions::default())
        .await
        .unwrap();
    assert_eq!(client.get("empty").await.unwrap().unwrap().value.len(), 0);

    // PX expiry fires without being touched.
    let px = SetOptions {
        expiry: Some(Duration::from_millis(150)),
        ..SetOptions::default()
    };
    client.set("short", "lived", px).await.unwrap();
    eventually(Duration::from_secs(5), || async {
        client.get("short").await.unwrap().is_none()
    })
    .await;

    // Fencing tokens, every service error reaching the caller typed, with its exact text.
    let token = client.clock().tick().unwrap();
    let fenced = SetOptions {
        fencing_token: Some(token.clone()),
        ..SetOptions::default()
    };
    assert!(client.set("fenced", "a", fenced).await.unwrap().applied);
    let err = client
        .set("fenced", "b", SetOptions::default())
        .await
        .unwrap_err();
    assert_eq!(
        err.kind(),
        ErrorKind::Store(StoreErrorKind::FencingTokenRequired)
    );
    assert_eq!(
        err.message(),
        "a fencing token is required for this request"
    );
    let err = client
        .del("fenced", DelOptions::default())
        .await
        .unwrap_err();
    assert_eq!(
        err.kind(),
        ErrorKind::Store(StoreErrorKind::FencingTokenRequired)
    );
    let old = mqstate::Hlc::new(token.wall_ms() - 1, 0, "old").unwrap();
    let stale = SetOptions {
        fencing_token: Some(old),
        ..SetOptions::default()
    };
    let err = client.set("fenced", "c", stale).await.unwrap_err();
    assert_eq!(
        err.kind(),
        ErrorKind::Store(StoreErrorKind::FencingTokenLowerVersion)
    );
    let newer = client.clock().tick().unwrap();
    let ok = DelOptions {
        fencing_token: Some(newer),
        timeout: Some(Duration::from_millis(900)),
    };
    assert_eq!(client.del("fenced", ok).await.unwrap(), 1);
    assert_eq!(client.pending_requests(), 0);
    client.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn api_through_mosquitto() {
    api_round_trip(&Env::mosquitto().await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn api_through_embedded_broker() {
    api_round_trip(&Env::embedded().await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn arguments_are_checked_before_sending() {
    let env = Env::embedded().await;
    let client = env.client("args").await;
    let kind = |r: Result<(), mqstate::Error>| r.unwrap_err().kind();
    assert_eq!(
        kind(client.set("", "v", SetOptions::default()).await.map(drop)),
        ErrorKind::InvalidArgument
    );
    assert_eq!(
        kind(client.get("").await.map(drop)),
        ErrorKind::InvalidArgument
    );
    assert_eq!(
        kind(client.del("", DelOptions::default()).await.map(drop)),
        ErrorKind::InvalidArgument
    );
    assert_eq!(
        kind(client.vdel("", "v", DelOptions::default()).await.map(drop)),
        ErrorKind::InvalidArgument
    );
    assert_eq!(
        kind(client.observe("").await.map(drop)),
        ErrorKind::InvalidArgument
    );
    let zero = SetOptions {
        expiry: Some(Duration::ZERO),
        ..SetOptions::default()
    };
    assert_eq!(
        kind(client.set("k", "v", zero).await.map(drop)),
        ErrorKind::InvalidArgument
    );

    let forbidden = ClientOptions {
        response_topic: Some(mqstate::topics::REQUEST_TOPIC.to_owned()),
        ..ClientOptions::default()
    };
    let err = Client::connect_with(env.settings("forbidden"), forbidden)
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidArgument);

    let port = mqstate_tests::free_port().unwrap();
    let err = Client::connect(ConnectionSettings::new("127.0.0.1", port))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::ConnectRefused, "{err:?}");
    client.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sub_second_timeout_without_a_service() {
    // A broker with no state store behind it: nobody answers.
    let mosquitto = mqstate_tests::Mosquitto::start().unwrap();
    let settings = ConnectionSettings::new("127.0.0.1", mosquitto.port());
    let client = Client::connect(settings)
        .await
        .unwrap()
        .with_timeout(Duration::from_millis(300));
    let started = std::time::Instant::now();
    let err = client.get("k").await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Timeout, "{err}");
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "the timeout was honoured"
    );
    assert_eq!(
        client.pending_requests(),
        0,
        "a timed-out request leaves nothing behind"
    );
    client.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thousand_concurrent_requests_from_one_client() {
    let env = Env::mosquitto().await;
    let client = env.client("many").await;
    let mut tasks = tokio::task::JoinSet::new();
    for i in 0..1000u32 {
        let client = client.clone();
        tasks.spawn(async move {
            let key = format!("many/{i}");
            let value = format!("value-{i}");
            let set = client.set(&key, &value, SetOptions::default()).await?;
            assert!(set.applied);
            let got = client.get(&key).await?.expect("present");
            assert_eq!(got.value, value.as_bytes());
            assert_eq!(got.version, set.version);
            Ok::<_, mqstate::Error>(())
        });
    }
    let mut done = 0;
    while let Some(joined) = tasks.join_next().await {
        joined.unwrap().unwrap();
        done += 1;
    }
    assert_eq!(done, 1000);
    assert_eq!(client.pending_requests(), 0);
    client.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn observers_share_one_registration_and_stop_after_the_last() {
    let env = Env::mosquitto().await;
    let watcher = env.client("watcher").await;
    let other = env.client("other-watcher").await;
    let writer = env.client("writer").await;

    let mut a = watcher.observe("obs").await.unwrap();
    let mut b = watcher.observe("obs").await.unwrap();
    let mut c = other.observe("obs").await.unwrap();
    let mut raw = raw_subscriber(
        env.port,
        &mqstate::topics::notification_filter(watcher.client_id()),
    )
    .await;

    let set = writer
        .set("obs", "one", SetOptions::default())
        .await
        .unwrap();
    for observer in [&mut a, &mut b, &mut c] {
        let n = next_notification(observer).await;
        assert_eq!(n.event, KeyEvent::Set("one".into()));
        assert_eq!(n.version, set.version);
        assert!(!n.resync);
    }
    assert_eq!(
        raw.count_within(Duration::from_secs(5), 1).await,
        1,
        "one notification per client, not per observer"
    );

    drop(a);
    writer.del("obs", DelOptions::default()).await.unwrap();
    assert_eq!(next_notification(&mut b).await.event, KeyEvent::Delete);
    assert_eq!(next_notification(&mut c).await.event, KeyEvent::Delete);
    assert_eq!(
        raw.count_within(Duration::from_secs(5), 1).await,
        1,
        "still registered after the first drop"
    );

    drop(b);
    // STOP goes out in the background; once it is through, the service stops notifying.
    let mut stopped = false;
    for _ in 0..20 {
        writer
            .set("obs", "probe", SetOptions::default())
            .await
            .unwrap();
        next_notification(&mut c).await;
        if raw.count_within(Duration::from_millis(300), 1).await == 0 {
            stopped = true;
            break;
        }
    }
    assert!(
        stopped,
        "the service still notifies the client after its last observer dropped"
    );
    writer
        .set("obs", "after", SetOptions::default())
        .await
        .unwrap();
    assert_eq!(
        next_notification(&mut c).await.event,
        KeyEvent::Set("after".into())
    );
    for client in [watcher, other, writer] {
        client.shutdown().await;
    }
}
