//! The client-side cache (`mqstate::cache`) against the in-process store, with its faults:
//! hits, others' writes arriving by notification, own writes at once, and each way an entry
//! could go stale — a cut, a restart, a lost session, a refused KEYNOTIFY — making the next
//! read go to the store. Needs the `testing` feature.

use std::time::{Duration, Instant};

use mqstate::{
    CacheOptions, CacheStats, Client, ClientOptions, ConnectionSettings, DelOptions, GetOptions,
    SetOptions,
};
use mqstate_server::testing::LocalStore;

/// A bound on anything that should happen, so a bug fails the test instead of hanging it.
const BOUND: Duration = Duration::from_secs(20);

fn settings(store: &LocalStore) -> ConnectionSettings {
    ConnectionSettings::from_url(&store.url()).expect("the store's URL parses")
}

async fn cached_with(store: &LocalStore, cache: CacheOptions) -> Client {
    let options = ClientOptions {
        cache: Some(cache),
        ..ClientOptions::default()
    };
    Client::connect_with(settings(store), options)
        .await
        .expect("connects")
}

async fn cached(store: &LocalStore) -> Client {
    cached_with(store, CacheOptions::default()).await
}

async fn plain(store: &LocalStore) -> Client {
    Client::connect(settings(store)).await.expect("connects")
}

fn stats(client: &Client) -> CacheStats {
    client.cache_stats().expect("the cache is on")
}

async fn value(client: &Client, key: &str) -> Option<String> {
    let got = client.get(key).await.expect("the read succeeds");
    got.map(|v| String::from_utf8(v.value.to_vec()).unwrap())
}

/// Reads `key` until it holds `want` (bounded): a change that arrives by notification.
async fn until_value(client: &Client, key: &str, want: Option<&str>) {
    let deadline = Instant::now() + BOUND;
    loop {
        let got = value(client, key).await;
        if got.as_deref() == want {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{key} still reads {got:?}, not {want:?}"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

async fn set(client: &Client, key: &str, value: &str) {
    let outcome = client.set(key, value, SetOptions::default()).await.unwrap();
    assert!(outcome.applied);
}

/// Waits (bounded) until `client` has reconnected after connection number `before`.
async fn reconnected(client: &Client, before: u64) {
    let deadline = Instant::now() + BOUND;
    while !(client.is_connected() && client.link_info().connections > before) {
        assert!(Instant::now() < deadline, "the client did not come back");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reads_hit_and_others_writes_arrive_by_notification() {
    let mut store = LocalStore::start().await.unwrap();
    let (reader, writer) = (cached(&store).await, plain(&store).await);
    set(&writer, "asset:1", "pump").await;
    assert_eq!(value(&reader, "asset:1").await.as_deref(), Some("pump"));
    for _ in 0..100 {
        assert_eq!(value(&reader, "asset:1").await.as_deref(), Some("pump"));
    }
    assert_eq!(value(&reader, "missing").await, None);
    assert_eq!(
        value(&reader, "missing").await,
        None,
        "a missing key is cached too"
    );
    let s = stats(&reader);
    assert_eq!((s.hits, s.misses, s.entries), (101, 2, 2), "{s:?}");
    assert_eq!(s.bytes, ("asset:1pump".len() + "missing".len()) as u64);

    set(&writer, "asset:1", "valve").await;
    writer
        .set("missing", "now", SetOptions::default())
        .await
        .unwrap();
    until_value(&reader, "asset:1", Some("valve")).await;
    until_value(&reader, "missing", Some("now")).await;
    writer.del("asset:1", DelOptions::default()).await.unwrap();
    until_value(&reader, "asset:1", None).await;
    let s = stats(&reader);
    assert_eq!(s.misses, 2, "every change came by notification: {s:?}");
    assert!(s.invalidations >= 3, "{s:?}");

    // A read past the cache goes to the store and counts neither way.
    let past = reader
        .get_with(
            "asset:1",
            GetOptions {
                bypass_cache: true,
                ..GetOptions::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(past, None);
    assert_eq!(
        (stats(&reader).hits, stats(&reader).misses),
        (s.hits, s.misses)
    );
    store.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn own_acknowledged_writes_are_read_at_once() {
    let mut store = LocalStore::start().await.unwrap();
    let client = cached(&store).await;
    set(&client, "k", "1").await;
    assert_eq!(value(&client, "k").await.as_deref(), Some("1"));
    for i in 2..50 {
        let written = client
            .set("k", i.to_string(), SetOptions::default())
            .await
            .unwrap();
        let read = client.get("k").await.unwrap().unwrap();
        assert_eq!(
            read.value,
            i.to_string().as_bytes(),
            "write {i} read back at once"
        );
        assert_eq!(read.version, written.version);
    }
    client.del("k", DelOptions::default()).await.unwrap();
    assert_eq!(value(&client, "k").await, None);
    set(&client, "k", "again").await;
    client
        .vdel("k", "again", DelOptions::default())
        .await
        .unwrap();
    assert_eq!(value(&client, "k").await, None);
    let s = stats(&client);
    assert_eq!(s.misses, 1, "{s:?}");
    store.stop().await;
}

/// Caches `key` = "old" in `reader`, runs `fault`, writes "new" from a plain client while
/// the reader's registration may be gone, and checks the reader reads "new".
async fn a_fault_invalidates(store: &mut LocalStore, reader: &Client, fault: &str) {
    let writer = plain(store).await;
    let key = format!("{fault}-key");
    writer
        .set(
            &key,
            "old",
            SetOptions {
                persist: true,
                ..SetOptions::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(value(reader, &key).await.as_deref(), Some("old"));
    assert_eq!(value(reader, &key).await.as_deref(), Some("old"));
    let before = (reader.link_info().connections, stats(reader));
    match fault {
        "cut" | "lost session" => {
            store.pause(Duration::from_millis(200)).unwrap();
            store.cut_connections().await.unwrap();
        }
        "restart" => store.restart(true).await.unwrap(),
        _ => unreachable!(),
    }
    // Written as soon as the writer is back: before, or while, the reader comes back.
    tokio::time::timeout(BOUND, async {
        loop {
            let written = writer
                .set(
                    &key,
                    "new",
                    SetOptions {
                        persist: true,
                        ..SetOptions::default()
                    },
                )
                .await;
            if written.is_ok() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
    .expect("the writer came back");
    reconnected(reader, before.0).await;
    until_value(reader, &key, Some("new")).await;
    let after = stats(reader);
    assert!(
        after.invalidations > before.1.invalidations,
        "{fault}: the entry was invalidated: {:?} → {after:?}",
        before.1
    );
    assert!(
        after.misses > before.1.misses,
        "{fault}: read from the store again"
    );
    writer.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cut_a_restart_and_a_lost_session_each_invalidate() {
    let mut store = LocalStore::start().await.unwrap();
    let reader = cached(&store).await;
    a_fault_invalidates(&mut store, &reader, "cut").await;
    a_fault_invalidates(&mut store, &reader, "restart").await;
    let sessions = reader.link_info().sessions;
    assert!(sessions >= 2, "the restart lost the session");
    // A client whose session ends with each connection.
    let mut no_session = settings(&store);
    no_session.session_expiry = Duration::ZERO;
    let options = ClientOptions {
        cache: Some(CacheOptions::default()),
        ..ClientOptions::default()
    };
    let reader = Client::connect_with(no_session, options).await.unwrap();
    a_fault_invalidates(&mut store, &reader, "lost session").await;
    assert!(reader.link_info().sessions >= 2);
    store.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn while_disconnected_entries_answer_only_within_max_staleness() {
    let mut store = LocalStore::start().await.unwrap();
    let staleness = Duration::from_millis(1500);
    let tolerant = cached_with(
        &store,
        CacheOptions {
            max_staleness: staleness,
            ..CacheOptions::default()
        },
    )
    .await;
    let strict = cached(&store).await;
    set(&tolerant, "k", "v").await;
    for client in [&tolerant, &strict] {
        assert_eq!(value(client, "k").await.as_deref(), Some("v"));
    }
    store.stop().await;
    let cut = Instant::now();
    let deadline = cut + BOUND;
    while tolerant.is_connected() || strict.is_connected() {
        assert!(
            Instant::now() < deadline,
            "the clients did not see the store go"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let short = GetOptions {
        timeout: Some(Duration::from_millis(100)),
        ..GetOptions::default()
    };
    let read = tolerant.get_with("k", short.clone()).await;
    if cut.elapsed() < staleness {
        assert_eq!(
            read.unwrap().unwrap().value,
            "v",
            "fresh at the cut, within the bound"
        );
    }
    assert!(
        strict.get_with("k", short.clone()).await.is_err(),
        "max_staleness 0: the read goes to the store, and fails"
    );
    tokio::time::sleep(staleness.saturating_sub(cut.elapsed()) + Duration::from_millis(50)).await;
    assert!(
        tolerant.get_with("k", short).await.is_err(),
        "past max_staleness the read goes to the store, and fails"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_keynotify_leaves_the_key_uncached_and_the_read_answered() {
    let mut store = LocalStore::start().await.unwrap();
    let client = cached(&store).await;
    set(&client, "k", "v").await;
    store
        .fail_next(1, "fencing_token_lower_version", Some("KEYNOTIFY"))
        .unwrap();
    assert_eq!(value(&client, "k").await.as_deref(), Some("v"));
    assert_eq!(stats(&client).entries, 0, "not cached");
    assert_eq!(value(&client, "k").await.as_deref(), Some("v"));
    assert_eq!(value(&client, "k").await.as_deref(), Some("v"));
    let s = stats(&client);
    assert_eq!((s.misses, s.hits, s.entries), (2, 1, 1), "{s:?}");
    store.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bounds_evict_the_least_recently_read_and_observers_keep_their_registration() {
    let mut store = LocalStore::start().await.unwrap();
    let reader = cached_with(
        &store,
        CacheOptions {
            keys: vec!["a*".into(), "b*".into()],
            max_entries: 2,
            ..CacheOptions::default()
        },
    )
    .await;
    let writer = plain(&store).await;
    for k in ["a1", "a2", "b1", "c1"] {
        set(&writer, k, "0").await;
    }
    let mut observer = reader.observe("a1").await.unwrap();
    value(&reader, "a1").await;
    value(&reader, "a2").await;
    value(&reader, "a1").await;
    value(&reader, "b1").await; // evicts a2, the least recently read
    value(&reader, "c1").await; // not covered
    value(&reader, "c1").await;
    let s = stats(&reader);
    assert_eq!(
        (s.entries, s.evictions, s.misses, s.hits),
        (2, 1, 3, 1),
        "{s:?}"
    );
    // a1 is now the least recently read: the next miss evicts it. Its observer shares the
    // registration, which the eviction leaves in place (no STOP).
    value(&reader, "b1").await;
    value(&reader, "a2").await;
    assert_eq!(stats(&reader).evictions, 2);
    set(&writer, "a1", "1").await;
    let change = tokio::time::timeout(BOUND, observer.recv())
        .await
        .expect("the observer still gets changes")
        .expect("the stream is open");
    assert_eq!(change.event, mqstate::codec::KeyEvent::Set("1".into()));
    store.stop().await;
}

#[tokio::test(flavor = "current_thread")]
async fn a_loop_of_hits_yields_to_the_tasks_beside_it() {
    let mut store = LocalStore::start().await.unwrap();
    let client = cached(&store).await;
    set(&client, "k", "v").await;
    assert_eq!(value(&client, "k").await.as_deref(), Some("v"));
    let ran = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let beside = {
        let ran = ran.clone();
        tokio::spawn(async move { ran.store(true, std::sync::atomic::Ordering::SeqCst) })
    };
    // Every read is a hit, ready at once: without a yield now and then, the task beside
    // would never run on this one-thread runtime (nor would the client's connection).
    let mut reads = 0u64;
    while !ran.load(std::sync::atomic::Ordering::SeqCst) {
        client.get("k").await.unwrap();
        reads += 1;
        assert!(
            reads < 1_000_000,
            "a million hits and the task beside never ran"
        );
    }
    beside.await.unwrap();
    store.stop().await;
}
