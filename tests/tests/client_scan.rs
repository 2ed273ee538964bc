//! SCAN end to end (spec §3.1): the Rust client's pager and key stream against the store
//! behind mosquitto (`--broker`) and behind the embedded broker, with small pages so that
//! tokens are followed; a failed or cancelled page is retried from the same token.

mod support;

use std::collections::BTreeSet;
use std::future::poll_fn;
use std::pin::Pin;
use std::time::Duration;

use bytes::Bytes;
use futures_core::Stream;
use mqstate::{ErrorKind, KeyStream, ScanOptions, SetOptions};
use mqstate_tests::{BrokerKind, StateStoreFixture, server_config};
use support::Env;

/// A store with pages of `page` keys; with `data_dir`, persisted keys survive restarts.
async fn fixture(kind: BrokerKind, page: usize, data_dir: Option<&tempfile::TempDir>) -> Env {
    let mut config = server_config();
    config.scan_page_keys = page;
    config.data_dir = data_dir.map(|d| d.path().to_owned());
    Env::from(
        StateStoreFixture::start(kind, config)
            .await
            .expect("fixture starts"),
    )
}

async fn next(stream: &mut KeyStream) -> Option<mqstate::Result<Bytes>> {
    poll_fn(|cx| Pin::new(&mut *stream).poll_next(cx)).await
}

fn persisted() -> SetOptions {
    SetOptions {
        persist: true,
        ..SetOptions::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_scan_through_mosquitto_follows_every_token() {
    let env = fixture(BrokerKind::Mosquitto, 3, None).await;
    let client = env.client("scan").await;
    let mut want = BTreeSet::new();
    for i in 0..20 {
        let key = format!("m/{i:02}");
        client.set(&key, "v", SetOptions::default()).await.unwrap();
        want.insert(key.into_bytes());
    }
    client
        .set("other", "v", SetOptions::default())
        .await
        .unwrap();
    let mut pages = client.scan("m/*").unwrap();
    let mut got = Vec::new();
    let mut count = 0;
    while let Some(keys) = pages.next_page().await.unwrap() {
        assert!(keys.len() <= 3, "a page of {} keys", keys.len());
        got.extend(keys.into_iter().map(|k| k.to_vec()));
        count += 1;
    }
    assert!(pages.is_done());
    assert_eq!(
        pages.next_page().await.unwrap(),
        None,
        "after the last page"
    );
    assert!(count >= 7, "{count} pages for 20 keys of 3");
    assert_eq!(got.len(), 20, "no key twice");
    assert_eq!(got.into_iter().collect::<BTreeSet<_>>(), want);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_key_stream_yields_every_key_once() {
    let env = fixture(BrokerKind::Embedded, 7, None).await;
    let client = env.client("stream").await;
    for i in 0..50 {
        client
            .set(format!("s/{i}"), "v", SetOptions::default())
            .await
            .unwrap();
    }
    let mut stream = client.scan("s/*").unwrap().into_keys();
    let mut got = BTreeSet::new();
    while let Some(key) = next(&mut stream).await {
        assert!(got.insert(key.unwrap()), "a key came twice");
    }
    assert_eq!(got.len(), 50);
    assert!(next(&mut stream).await.is_none(), "the stream stays ended");
    let all = client.scan("s/4?").unwrap().collect_keys().await.unwrap();
    assert_eq!(all.len(), 10);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_empty_pattern_is_refused_before_anything_is_sent() {
    let env = Env::embedded().await;
    let client = env.client("empty").await;
    let err = client.scan("").unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidArgument, "{err}");
    let zero = ScanOptions {
        timeout: Some(Duration::ZERO),
    };
    assert_eq!(
        client.scan_with("*", zero).unwrap_err().kind(),
        ErrorKind::InvalidArgument
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_or_cancelled_page_is_asked_for_again_from_the_same_token() {
    let dir = tempfile::tempdir().unwrap();
    let mut env = fixture(BrokerKind::Mosquitto, 4, Some(&dir)).await;
    let client = env.client("retry").await;
    for i in 0..12 {
        client
            .set(format!("r/{i:02}"), "v", persisted())
            .await
            .unwrap();
    }
    let short = ScanOptions {
        timeout: Some(Duration::from_millis(400)),
    };
    let mut pages = client.scan_with("r/*", short).unwrap();
    let mut got: Vec<Bytes> = pages.next_page().await.unwrap().unwrap();
    assert_eq!(got.len(), 4);
    // No store behind the broker: the page times out; a read never "may have applied".
    env.fixture.stop_server().await;
    let err = pages.next_page().await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Timeout, "{err}");
    assert!(!err.may_have_applied(), "a SCAN only reads: {err}");
    assert!(!pages.is_done());
    // A page dropped while in flight (cancelled) moves nothing either.
    let cancelled = tokio::time::timeout(Duration::from_millis(100), pages.next_page()).await;
    assert!(
        cancelled.is_err(),
        "the page cannot complete without a store"
    );
    env.fixture.restart().await.unwrap();
    while let Some(keys) = pages.next_page().await.unwrap() {
        got.extend(keys);
    }
    let distinct: BTreeSet<_> = got.iter().cloned().collect();
    assert_eq!(got.len(), 12, "every key once: {got:?}");
    assert_eq!(distinct.len(), 12);
}
