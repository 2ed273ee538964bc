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

/// A cached reader whose lease holds through a busy machine's slowest renewal (30 s): the
/// tests that count hits and misses exactly must not see a lease fail. The lease's own tests
/// use short bounds (`warm_reader`).
async fn cached(store: &LocalStore) -> Client {
    cached_with(
        store,
        CacheOptions {
            freshness: Duration::from_secs(30),
            ..CacheOptions::default()
        },
    )
    .await
}

async fn plain(store: &LocalStore) -> Client {
    Client::connect(settings(store)).await.expect("connects")
}

fn stats(client: &Client) -> CacheStats {
    client.cache_stats().expect("the cache is on")
}

/// (hits, misses) as they would be with the lease always held: a read the lease sent to the
/// store (`lease_misses`, before the first renewal came back) counted as the hit it would
/// have been. Counts that depend on how fast the first renewal travels would be flaky.
fn settled(s: &CacheStats) -> (u64, u64) {
    (s.hits + s.lease_misses, s.misses - s.lease_misses)
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

/// Reads `key` until a read is answered from the cache (bounded): the lease is proven.
async fn until_hit(client: &Client, key: &str) {
    let deadline = Instant::now() + BOUND;
    loop {
        let before = stats(client).hits;
        value(client, key).await;
        if stats(client).hits > before {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{key} never hit: {:?}",
            stats(client)
        );
        tokio::time::sleep(Duration::from_millis(2)).await;
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
    // The first read waited for the lease's first renewal it sent: every later read hit.
    assert_eq!(
        (s.hits, s.misses, s.lease_misses, s.entries),
        (101, 2, 0, 2),
        "{s:?}"
    );
    assert_eq!(s.lease_renewals, 1, "one renewal proves the lease: {s:?}");
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
    // Every change came by notification; the key found missing and then created is read
    // once more (its notification cannot be ordered against a GET that found nothing).
    assert_eq!(settled(&s).1, 3, "{s:?}");
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
    assert_eq!(settled(&s).1, 1, "{s:?}");
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
            // Long enough that the lease proven below still holds when the store stops.
            freshness: Duration::from_secs(10),
            ..CacheOptions::default()
        },
    )
    .await;
    let strict = cached(&store).await;
    set(&tolerant, "k", "v").await;
    for client in [&tolerant, &strict] {
        until_hit(client, "k").await;
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
    // The lease first (its canary's KEYNOTIFY is not the one to refuse).
    set(&client, "warm", "up").await;
    until_hit(&client, "warm").await;
    let warm = stats(&client);
    store
        .fail_next(1, "fencing_token_lower_version", Some("KEYNOTIFY"))
        .unwrap();
    assert_eq!(value(&client, "k").await.as_deref(), Some("v"));
    assert_eq!(stats(&client).entries, 1, "not cached: only warm is");
    // Remembered for the connection: read from the store, with no KEYNOTIFY asked again.
    assert_eq!(value(&client, "k").await.as_deref(), Some("v"));
    assert_eq!(value(&client, "k").await.as_deref(), Some("v"));
    let s = stats(&client);
    assert_eq!(
        (
            s.misses - warm.misses,
            s.hits - warm.hits,
            s.entries,
            s.refused
        ),
        (3, 0, 1, 1),
        "{s:?}"
    );
    // A new connection asks again: k is cached on it (a hit), its KEYNOTIFY accepted. (The
    // count of entries would race with the retirement of the old connection's, which runs
    // in the background after the reconnection.)
    let before = client.link_info().connections;
    store.cut_connections().await.unwrap();
    reconnected(&client, before).await;
    assert_eq!(value(&client, "k").await.as_deref(), Some("v"));
    until_hit(&client, "k").await;
    assert_eq!(stats(&client).refused, 1, "not refused again");
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
            // Counts exact evictions: a lease that fails on a busy machine would drop a fill
            // in flight (no eviction needed then), so the bound is one no renewal misses.
            freshness: Duration::from_secs(30),
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
        (s.entries, s.evictions, settled(&s).1, settled(&s).0),
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

/// Reads `key` (whatever it answers) until the reader's lease has failed (bounded).
async fn until_lease_failed(reader: &Client, key: &str) {
    let deadline = Instant::now() + BOUND;
    while stats(reader).lease_failures == 0 {
        assert!(
            Instant::now() < deadline,
            "the lease never failed: {:?}",
            stats(reader)
        );
        value(reader, key).await;
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// A reader of `key` ("old", cached, the lease proven) and a writer, with the given
/// freshness bound.
async fn warm_reader(store: &LocalStore, key: &str, freshness: Duration) -> (Client, Client) {
    let reader = cached_with(
        store,
        CacheOptions {
            freshness,
            ..CacheOptions::default()
        },
    )
    .await;
    let writer = plain(store).await;
    set(&writer, key, "old").await;
    until_hit(&reader, key).await;
    (reader, writer)
}

/// Writes "new" to `key` with `writer` and reads it from `reader` until it reads "new":
/// every read that answers "old" must have begun less than `freshness` after the write was
/// acknowledged (its lag). Returns the longest such lag and how many stale reads there were.
async fn lag_of(reader: &Client, writer: &Client, key: &str, freshness: Duration) -> Duration {
    set(writer, key, "new").await;
    let acknowledged = Instant::now();
    let mut lag = Duration::ZERO;
    loop {
        let began = Instant::now();
        let got = value(reader, key).await;
        match got.as_deref() {
            Some("new") => return lag,
            Some("old") => {
                lag = lag.max(began - acknowledged);
                assert!(
                    began - acknowledged < freshness,
                    "a cached read lagged {:?} behind the store (bound {freshness:?}): {:?}",
                    began - acknowledged,
                    stats(reader)
                );
            }
            other => panic!("{key} read {other:?}"),
        }
        assert!(acknowledged.elapsed() < BOUND, "never read the new value");
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_silent_notification_path_is_noticed_within_the_bound() {
    let mut store = LocalStore::start().await.unwrap();
    let freshness = Duration::from_millis(300);
    let (reader, writer) = warm_reader(&store, "k", freshness).await;
    // Everything the store publishes is lost for 2 s: the write's notification, and the
    // lease's renewals.
    store.drop_notifications(Duration::from_secs(2)).unwrap();
    let lag = lag_of(&reader, &writer, "k", freshness).await;
    assert!(store.dropped_notifications().unwrap() >= 1);
    until_lease_failed(&reader, "k").await;
    let s = stats(&reader);
    assert!(
        s.lease_misses >= 1,
        "reads went to the store meanwhile: {s:?}"
    );
    // Once the path is back, the key is registered anew and others' writes arrive again.
    tokio::time::sleep(Duration::from_secs(2)).await;
    until_hit(&reader, "k").await;
    set(&writer, "k", "newer").await;
    until_value(&reader, "k", Some("newer")).await;
    until_hit(&reader, "k").await;
    eprintln!(
        "silent path: stale for {lag:?} at most; {:?}",
        stats(&reader)
    );
    store.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_store_that_lost_its_registrations_is_noticed_within_the_bound() {
    let mut store = LocalStore::start().await.unwrap();
    let freshness = Duration::from_millis(300);
    let (reader, writer) = warm_reader(&store, "k", freshness).await;
    // The store restarted behind its broker: connections up, registrations gone.
    assert!(
        store.forget_registrations().unwrap() >= 2,
        "k and the canary"
    );
    lag_of(&reader, &writer, "k", freshness).await;
    until_lease_failed(&reader, "k").await;
    // Registered anew on the next reads: changes come by notification again.
    until_hit(&reader, "k").await;
    set(&writer, "k", "newer").await;
    until_value(&reader, "k", Some("newer")).await;
    until_hit(&reader, "k").await;
    store.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_paused_store_never_lets_a_cached_read_lag_past_the_bound() {
    let mut store = LocalStore::start().await.unwrap();
    let freshness = Duration::from_millis(300);
    let (reader, writer) = warm_reader(&store, "k", freshness).await;
    let other = plain(&store).await;
    // The write is applied and acknowledged before the pause; the pause holds every later
    // request (the reader's renewal among them) for 1 s.
    set(&writer, "k", "new").await;
    let acknowledged = Instant::now();
    store.pause(Duration::from_secs(1)).unwrap();
    let _ = other; // a second client keeps the store busy with nothing
    loop {
        let began = Instant::now();
        let got = value(&reader, "k").await;
        if got.as_deref() == Some("new") {
            break;
        }
        assert!(
            began - acknowledged < freshness,
            "read old {:?} after the write",
            began - acknowledged
        );
        assert!(acknowledged.elapsed() < BOUND);
    }
    store.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_cache_sends_nothing_and_renews_when_read_again() {
    let mut store = LocalStore::start().await.unwrap();
    let freshness = Duration::from_millis(500);
    let (reader, _writer) = warm_reader(&store, "k", freshness).await;
    tokio::time::sleep(freshness).await;
    let idle = stats(&reader);
    tokio::time::sleep(freshness * 5).await;
    let after = stats(&reader);
    assert_eq!(
        after.lease_renewals, idle.lease_renewals,
        "no renewal while nothing is read"
    );
    // The first read after finds the lease expired, goes to the store (the registration
    // held: no new KEYNOTIFY), and renews; then reads hit again.
    assert_eq!(value(&reader, "k").await.as_deref(), Some("old"));
    let s = stats(&reader);
    assert_eq!((s.hits, s.misses), (after.hits, after.misses + 1), "{s:?}");
    assert_eq!(s.lease_renewals, after.lease_renewals + 1, "{s:?}");
    // It expired (or, on a machine too busy for the last renewal before the idle time to
    // come back within the bound, failed): either way the read did not answer from memory.
    assert_eq!(
        s.lease_expiries + s.lease_failures,
        after.lease_expiries + after.lease_failures + 1,
        "{s:?}"
    );
    until_hit(&reader, "k").await;
    store.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fenced_edit_reads_the_store_not_the_cache() {
    use mqstate::lock::{Edit, Lock};
    let mut store = LocalStore::start().await.unwrap();
    // A bound long enough that the cache would still answer "old" for the whole test.
    let (reader, writer) = warm_reader(&store, "doc", Duration::from_secs(30)).await;
    store.drop_notifications(Duration::from_secs(30)).unwrap();
    set(&writer, "doc", "new").await;
    assert_eq!(
        value(&reader, "doc").await.as_deref(),
        Some("old"),
        "the cache still answers (within its bound)"
    );
    let lock = Lock::new(&reader, "doc-lock").unwrap();
    let seen = lock
        .edit("doc", Duration::from_secs(5), BOUND, |previous| {
            assert_eq!(
                previous.map(|v| &v.value[..]),
                Some(&b"new"[..]),
                "the store's value"
            );
            Edit::Keep
        })
        .await
        .unwrap();
    assert_eq!(seen.previous.map(|v| v.value).as_deref(), Some(&b"new"[..]));
    lock.try_acquire(Duration::from_secs(5)).await.unwrap();
    assert_eq!(
        lock.holder().await.unwrap().as_deref(),
        Some(lock.holder_id())
    );
    store.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_misses_of_one_key_share_one_fetch() {
    let mut store = LocalStore::start().await.unwrap();
    let reader = cached(&store).await;
    let writer = plain(&store).await;
    set(&writer, "k", "v").await;
    // The store holds every request for 300 ms: all reads miss at once.
    store.pause(Duration::from_millis(300)).unwrap();
    let reads: Vec<_> = (0..20)
        .map(|_| {
            let reader = reader.clone();
            tokio::spawn(async move { reader.get("k").await })
        })
        .collect();
    let deadline = Instant::now() + BOUND;
    while store.held_requests().unwrap() == 0 {
        assert!(Instant::now() < deadline);
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    tokio::time::sleep(Duration::from_millis(50)).await;
    // One KEYNOTIFY of k (the GET follows it), and the lease's KEYNOTIFY of the canary: the
    // other 19 reads wait for the fetch.
    assert!(
        store.held_requests().unwrap() <= 2,
        "{} requests held",
        store.held_requests().unwrap()
    );
    for read in reads {
        let got = read.await.unwrap().unwrap().unwrap();
        assert_eq!(got.value, "v");
    }
    store.stop().await;
}

#[test]
fn the_default_bound_is_one_second_and_a_tiny_one_is_refused() {
    assert_eq!(CacheOptions::default().freshness, Duration::from_secs(1));
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let mut store = LocalStore::start().await.unwrap();
        let options = ClientOptions {
            cache: Some(CacheOptions {
                freshness: Duration::from_millis(1),
                ..CacheOptions::default()
            }),
            ..ClientOptions::default()
        };
        let e = Client::connect_with(settings(&store), options)
            .await
            .unwrap_err();
        assert_eq!(e.kind(), mqstate::ErrorKind::InvalidArgument);
        assert!(e.message().contains("cache_freshness"), "{e}");
        store.stop().await;
    });
}
