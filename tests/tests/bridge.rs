//! The binding-facing layer (`mqstate::bridge`) as a binding uses it: calls awaited from
//! another runtime, waited for from plain threads, cancelled from other threads, delivered to
//! callbacks; subscriptions closed or dropped on threads without a runtime; user callback
//! errors handed back unchanged.

mod support;

use std::sync::{Arc, mpsc};
use std::thread;
use std::time::Duration;

use mqstate::bridge::{ClientHandle, Event, Settings, Subscription};
use mqstate::lock::{Edit, LockOptions, LockStatus};
use mqstate::{Error, ErrorKind, GetOptions, ObserveOptions, SetOptions};
use support::{Env, RawSubscriber, eventually, raw_subscriber};

const LEASE: Duration = Duration::from_secs(2);

fn settings(env: &Env, name: &str) -> Settings {
    Settings {
        connection: env.settings(name),
        ..Settings::default()
    }
}

/// A store on the library's own runtime, as C, blocking Python and Kotlin get it.
async fn store(env: &Env, name: &str) -> ClientHandle {
    ClientHandle::connect(settings(env, name))
        .await
        .expect("connects")
}

/// Waits on the request tap for `KEYNOTIFY <key> STOP`.
async fn saw_stop(tap: &mut RawSubscriber, key: &str) -> bool {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    while let Some(p) = tap
        .next(deadline.saturating_duration_since(tokio::time::Instant::now()))
        .await
    {
        let text = String::from_utf8_lossy(&p.payload);
        if text.contains("KEYNOTIFY") && text.contains(key) && text.contains("STOP") {
            return true;
        }
    }
    false
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropping_observers_on_threads_without_a_runtime_still_sends_stop() {
    let env = Env::mosquitto().await;
    let mut tap = raw_subscriber(env.port, mqstate::topics::REQUEST_TOPIC).await;

    // A bridge subscription, dropped on a plain thread.
    let store = store(&env, "drop-sub").await;
    let sub = store
        .observe("drop-a", ObserveOptions::default())
        .await
        .unwrap();
    thread::spawn(move || drop(sub)).join().unwrap();
    assert!(
        saw_stop(&mut tap, "drop-a").await,
        "STOP after a plain-thread drop"
    );

    // A Rust observer of a client connected on this runtime, dropped on a plain thread.
    let client = env.client("drop-obs").await;
    let observer = client.observe("drop-b").await.unwrap();
    thread::spawn(move || drop(observer)).join().unwrap();
    assert!(
        saw_stop(&mut tap, "drop-b").await,
        "STOP after a plain-thread drop"
    );

    // close() sends STOP at once, while other clones stay alive.
    let sub = store
        .observe("drop-c", ObserveOptions::default())
        .await
        .unwrap();
    let clone = sub.clone();
    sub.close();
    assert!(saw_stop(&mut tap, "drop-c").await, "STOP on close");
    assert!(clone.is_closed());
    assert_eq!(clone.next().await, None);
    store.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn blocking_waits_are_refused_on_runtime_threads_and_work_on_plain_ones() {
    let env = Env::embedded().await;
    let store = store(&env, "blocking").await;
    let err = store
        .get("k", GetOptions::default())
        .wait(None)
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Unsupported, "{err}");
    let sub = store
        .observe("blocking-k", ObserveOptions::default())
        .await
        .unwrap();
    let err = sub
        .next_blocking(Some(Duration::from_millis(10)))
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Unsupported);

    let s = store.clone();
    let (set, got, waited) = thread::spawn(move || {
        let set = s
            .set("blocking-k", "v1", SetOptions::default())
            .wait(Some(Duration::from_secs(5)))
            .unwrap();
        let got = s
            .get("blocking-k", GetOptions::default())
            .wait(None)
            .unwrap()
            .unwrap();
        let waited = sub.next_blocking(Some(Duration::from_secs(5))).unwrap();
        (set, got, waited)
    })
    .join()
    .unwrap();
    assert!(set.applied);
    assert_eq!(&got.value[..], b"v1");
    assert_eq!(got.version, set.version);
    match waited {
        Some(Event::Change(n)) => assert_eq!(n.version, set.version),
        other => panic!("expected the change, got {other:?}"),
    }

    // A callback gets the result on a library thread.
    let (tx, rx) = mpsc::channel();
    store
        .get("blocking-k", GetOptions::default())
        .on_complete(move |r| tx.send(r.map(|v| v.map(|v| v.value))).unwrap());
    let delivered = tokio::task::spawn_blocking(move || rx.recv_timeout(Duration::from_secs(5)))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(delivered.unwrap().unwrap(), "v1");
    store.close().await.unwrap();
    let err = store.get("k", GetOptions::default()).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Closed, "{err}");
}

/// Cancels `call`'s canceller from a plain thread after `after`.
fn cancel_later(canceller: mqstate::bridge::Canceller, after: Duration) {
    thread::spawn(move || {
        thread::sleep(after);
        canceller.cancel();
    });
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelled_acquire_and_campaign_end_with_cancelled_and_leave_nothing() {
    let env = Env::mosquitto().await;
    let mut tap = raw_subscriber(env.port, mqstate::topics::REQUEST_TOPIC).await;
    let holder = store(&env, "holder").await;
    let waiter = store(&env, "waiter").await;

    let held = holder.lock("cancel-lock", LockOptions::default()).unwrap();
    held.try_acquire(Some(LEASE * 5))
        .await
        .unwrap()
        .expect("free");
    let wanted = waiter.lock("cancel-lock", LockOptions::default()).unwrap();
    let call = wanted.acquire(Some(LEASE), None);
    cancel_later(call.canceller(), Duration::from_millis(300));
    let err = call.await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Cancelled);
    // The waiting task is gone: its observation of the lock key ends ...
    assert!(saw_stop(&mut tap, "cancel-lock").await);
    let w = waiter.clone();
    eventually(Duration::from_secs(5), || {
        let w = w.clone();
        async move { w.client().pending_requests() == 0 }
    })
    .await;
    // ... and a release does not hand the lock to the cancelled waiter.
    assert!(held.release().await.unwrap());
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!wanted.is_held());
    assert_eq!(wanted.holder().await.unwrap(), None);

    let leader = holder
        .election("cancel-election", "a", LockOptions::default())
        .unwrap();
    assert!(leader.try_campaign(Some(LEASE * 5)).await.unwrap());
    let rival = waiter
        .election("cancel-election", "b", LockOptions::default())
        .unwrap();
    let call = rival.campaign(Some(LEASE), None);
    cancel_later(call.canceller(), Duration::from_millis(300));
    assert_eq!(call.await.unwrap_err().kind(), ErrorKind::Cancelled);
    assert!(saw_stop(&mut tap, "cancel-election").await);
    assert!(leader.resign().await.unwrap());
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!rival.is_leader());
    assert_eq!(rival.leader().await.unwrap(), None);

    // A blocking wait that times out cancels its call too.
    let again = waiter
        .lock("cancel-lock-2", LockOptions::default())
        .unwrap();
    let other = holder
        .lock("cancel-lock-2", LockOptions::default())
        .unwrap();
    other
        .try_acquire(Some(LEASE * 5))
        .await
        .unwrap()
        .expect("free");
    let err = thread::spawn(move || {
        again
            .acquire(Some(LEASE), None)
            .wait(Some(Duration::from_millis(200)))
    })
    .join()
    .unwrap()
    .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Timeout);
    holder.close().await.unwrap();
    waiter.close().await.unwrap();
}

/// What a binding's callback raises: compared by identity when it comes back.
#[derive(Debug)]
struct HostError(u32);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn user_callback_errors_come_back_unchanged() {
    let env = Env::embedded().await;
    let store = store(&env, "callback").await;
    store
        .set("cb-key", "before", SetOptions::default())
        .await
        .unwrap();
    let lock = store.lock("cb-lock", LockOptions::default()).unwrap();
    let raised: mqstate::CallbackPayload = Arc::new(HostError(42));
    let payload = Arc::clone(&raised);
    let decide: mqstate::bridge::Decide = Arc::new(move |previous| {
        let payload = Arc::clone(&payload);
        Box::pin(async move {
            assert_eq!(&previous.expect("read under the lock").value[..], b"before");
            Err(Error::callback("the host callback raised", payload))
        })
    });
    let err = lock
        .edit("cb-key", Some(LEASE), Some(Duration::from_secs(5)), decide)
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Callback);
    let back = err.callback_payload().expect("the payload");
    assert!(Arc::ptr_eq(back, &raised), "the very same object");
    assert_eq!(back.downcast_ref::<HostError>().unwrap().0, 42);
    assert!(!lock.is_held(), "released after the failed decision");
    assert_eq!(lock.holder().await.unwrap(), None);
    let value = store.get("cb-key", GetOptions::default()).await.unwrap();
    assert_eq!(&value.unwrap().value[..], b"before", "nothing written");

    // An async decision that succeeds writes, fenced.
    let decide: mqstate::bridge::Decide = Arc::new(|previous| {
        Box::pin(async move {
            tokio::time::sleep(Duration::from_millis(5)).await;
            let mut v = previous.map(|p| p.value.to_vec()).unwrap_or_default();
            v.extend_from_slice(b"+1");
            Ok(Edit::Set(v.into()))
        })
    });
    let outcome = lock
        .edit("cb-key", Some(LEASE), Some(Duration::from_secs(5)), decide)
        .await
        .unwrap();
    assert_eq!(outcome.edit, Edit::Set("before+1".into()));

    // Leader work that fails: the same error back, and the election resigned.
    let election = store
        .election("cb-election", "me", LockOptions::default())
        .unwrap();
    let payload = Arc::clone(&raised);
    let work: mqstate::bridge::Lead = Arc::new(move |_token| {
        let payload = Arc::clone(&payload);
        Box::pin(async move { Err(Error::callback("leader work raised", payload)) })
    });
    let err = election
        .lead(Some(LEASE), Some(Duration::from_secs(5)), work)
        .await
        .unwrap_err();
    assert!(Arc::ptr_eq(err.callback_payload().unwrap(), &raised));
    assert!(!election.is_leader());
    assert_eq!(election.leader().await.unwrap(), None);
    store.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sinks_get_every_event_in_order_on_one_thread_then_their_release() {
    let env = Env::embedded().await;
    let store = store(&env, "sink").await;
    let sub: Subscription = store
        .observe("sink-key", ObserveOptions::default())
        .await
        .unwrap();
    /// Values delivered, each with the thread that delivered it.
    type Seen = Vec<(Vec<u8>, thread::ThreadId)>;
    struct Sink {
        seen: Seen,
        done: mpsc::Sender<(Seen, thread::ThreadId)>,
    }
    impl mqstate::bridge::EventSink for Sink {
        fn deliver(&mut self, event: Event) {
            if let Event::Change(n) = event
                && let mqstate::codec::KeyEvent::Set(v) = n.event
            {
                self.seen.push((v.to_vec(), thread::current().id()));
            }
        }
    }
    impl Drop for Sink {
        fn drop(&mut self) {
            let seen = std::mem::take(&mut self.seen);
            let _ = self.done.send((seen, thread::current().id()));
        }
    }
    let (tx, rx) = mpsc::channel();
    sub.set_sink(Sink {
        seen: Vec::new(),
        done: tx,
    })
    .unwrap();
    assert!(sub.set_sink(|_e: Event| {}).is_err(), "one sink only");
    for i in 0..20 {
        store
            .set("sink-key", format!("v{i}"), SetOptions::default())
            .await
            .unwrap();
    }
    // Every change delivered before the close is handed over, then the release runs.
    tokio::time::sleep(Duration::from_millis(300)).await;
    sub.close();
    let (seen, release_thread) =
        tokio::task::spawn_blocking(move || rx.recv_timeout(Duration::from_secs(5)))
            .await
            .unwrap()
            .expect("the sink is released after the close");
    let values: Vec<String> = seen
        .iter()
        .map(|(v, _)| String::from_utf8(v.clone()).unwrap())
        .collect();
    let want: Vec<String> = (0..20).map(|i| format!("v{i}")).collect();
    assert_eq!(values, want);
    assert!(seen.iter().all(|(_, t)| *t == release_thread));
    assert_ne!(release_thread, thread::current().id());
    store.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lock_status_and_holder_subscriptions() {
    let env = Env::embedded().await;
    let store = store(&env, "status").await;
    let lock = store.lock("status-lock", LockOptions::default()).unwrap();
    let status = lock.watch_status();
    let holders = lock.watch_holder().await.unwrap();
    assert_eq!(
        status.next().await,
        Some(Event::Status(LockStatus::NotHeld))
    );
    match holders.next().await {
        Some(Event::Holder(h)) => assert_eq!(h.holder, None),
        other => panic!("{other:?}"),
    }
    let token = lock.try_acquire(Some(LEASE)).await.unwrap().unwrap();
    match status.next().await {
        Some(Event::Status(LockStatus::Held {
            token: t, lease, ..
        })) => {
            assert_eq!((t, lease), (token.clone(), LEASE));
        }
        other => panic!("{other:?}"),
    }
    match holders.next().await {
        Some(Event::Holder(h)) => assert_eq!(h.holder.as_deref(), Some(lock.holder_id())),
        other => panic!("{other:?}"),
    }
    assert_eq!(lock.fencing_token(), Some(token));
    assert!(lock.release().await.unwrap());
    assert_eq!(
        status.next().await,
        Some(Event::Status(LockStatus::NotHeld))
    );
    match holders.next().await {
        Some(Event::Holder(h)) => assert_eq!(h.holder, None),
        other => panic!("{other:?}"),
    }
    store.close().await.unwrap();
}

#[test]
fn settings_by_name_validate_once_for_every_language() {
    let mut s = Settings::new();
    s.set("host", "broker.local").unwrap();
    s.set("port", "1884").unwrap();
    s.set("request_timeout", "250ms").unwrap();
    s.set("observer_capacity", "16").unwrap();
    s.set("password", "hunter2").unwrap();
    assert_eq!(s.client.request_timeout, Duration::from_millis(250));
    assert_eq!(s.client.observer_capacity, 16);
    assert!(
        !format!("{s:?}").contains("hunter2"),
        "Debug hides the password"
    );
    for (name, value) in [
        ("port", "x"),
        ("request_timeout", "0"),
        ("observer_capacity", "0"),
        ("response_topic", "a/+/b"),
        ("nope", "1"),
    ] {
        let err = s.set(name, value).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidArgument, "{name}={value}");
    }
    let url = Settings::from_url("mqtt://h:1?keep_alive=5&clean_start=false").unwrap();
    assert_eq!(url.connection.keep_alive, Duration::from_secs(5));
    assert!(!url.connection.clean_start);
    // A failed connect through the library runtime is classified.
    let port = mqstate_tests::free_port().unwrap();
    let err =
        ClientHandle::connect(Settings::from_url(&format!("mqtt://127.0.0.1:{port}")).unwrap())
            .wait(Some(Duration::from_secs(20)))
            .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::ConnectRefused, "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mapped_calls_convert_and_forward_cancellation() {
    let env = Env::embedded().await;
    let holder = store(&env, "map-holder").await;
    let waiter = store(&env, "map-waiter").await;
    let set = holder
        .set("map-k", "v", SetOptions::default())
        .map(|o| o.applied)
        .await
        .unwrap();
    assert!(set);
    let held = holder.lock("map-lock", LockOptions::default()).unwrap();
    held.try_acquire(Some(LEASE * 5)).await.unwrap().unwrap();
    let wanted = waiter.lock("map-lock", LockOptions::default()).unwrap();
    let mapped = wanted.acquire(Some(LEASE), None).map(|t| t.to_text());
    mapped.cancel();
    assert_eq!(mapped.await.unwrap_err().kind(), ErrorKind::Cancelled);
    assert!(held.release().await.unwrap());
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!wanted.is_held(), "the inner acquire was cancelled too");
    holder.close().await.unwrap();
    waiter.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_subscriptions_end_when_their_client_closes() {
    let env = Env::embedded().await;
    let store = store(&env, "status-close").await;
    let lock = store
        .lock("status-close-lock", LockOptions::default())
        .unwrap();
    let status = lock.watch_status();
    assert_eq!(
        status.next().await,
        Some(Event::Status(LockStatus::NotHeld))
    );
    store.close().await.unwrap();
    let end = tokio::time::timeout(Duration::from_secs(5), status.next()).await;
    assert_eq!(end.expect("ends promptly"), None);
    drop(lock);
}

#[test]
fn settings_from_pairs_take_either_casing_in_order() {
    let s = Settings::from_pairs(
        Some("mqtt://h:1883"),
        false,
        [
            ("requestTimeout", "2s"),
            ("keep_alive", "7"),
            ("observerCapacity", "3"),
        ],
    )
    .unwrap();
    assert_eq!(s.client.request_timeout, Duration::from_secs(2));
    assert_eq!(s.connection.keep_alive, Duration::from_secs(7));
    assert_eq!(s.client.observer_capacity, 3);
    let err = Settings::from_pairs(Some("mqtt://h"), true, [("port", "1")]).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidArgument, "{err}");
    let err = Settings::from_pairs(None, false, [("requestTimeoutMs", "5")]).unwrap_err();
    assert!(err.to_string().contains("request_timeout_ms"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn floors_defaults_and_core_adapters_hold_for_every_binding() {
    let env = Env::embedded().await;
    let store = store(&env, "policy").await;
    // An expiry or a lease under 1 ms is a unit mistake: refused, nothing sent.
    let options = SetOptions {
        expiry: Some(Duration::from_micros(500)),
        ..SetOptions::default()
    };
    let err = store.set("floor", "v", options).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidArgument, "{err}");
    assert!(
        err.to_string().contains("expiry must be at least 1ms"),
        "{err}"
    );
    assert!(
        store
            .get("floor", GetOptions::default())
            .await
            .unwrap()
            .is_none()
    );
    let lock = store.lock("floor-lock", LockOptions::default()).unwrap();
    let err = lock
        .try_acquire(Some(Duration::from_micros(10)))
        .await
        .unwrap_err();
    assert!(
        err.to_string().contains("lease must be at least 1ms"),
        "{err}"
    );
    // A lock's own default lease is checked when the lock is made.
    let tiny = LockOptions {
        lease: Some(Duration::from_micros(500)),
        ..LockOptions::default()
    };
    let err = store.lock("floor-lock", tiny).unwrap_err();
    assert!(
        err.to_string().contains("lease must be at least 1ms"),
        "{err}"
    );
    // No lease named: the core's default (or the lock's own).
    assert_eq!(lock.default_lease(), mqstate::lock::DEFAULT_LEASE);
    let own = LockOptions {
        lease: Some(Duration::from_secs(3)),
        ..LockOptions::default()
    };
    let lock = store.lock("floor-lock", own).unwrap();
    assert_eq!(lock.default_lease(), Duration::from_secs(3));
    lock.try_acquire(None).await.unwrap().expect("free");
    lock.release().await.unwrap();

    // The one blocking adapter: a decision that panics on its thread is a `callback` error.
    let decide = mqstate::bridge::blocking_decide(|_previous| panic!("the host crashed"));
    let err = lock
        .edit("floor-key", None, None, decide)
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Callback, "{err}");
    let decide = mqstate::bridge::blocking_decide(|_previous| Ok(Edit::Set("blocked".into())));
    let outcome = lock.edit("floor-key", None, None, decide).await.unwrap();
    assert_eq!(outcome.edit, Edit::Set("blocked".into()));

    // Next with a timeout: a timeout error, and the event that comes later is not lost.
    let sub = store
        .observe("within", ObserveOptions::default())
        .await
        .unwrap();
    let err = sub
        .next_within(Some(Duration::from_millis(20)))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Timeout, "{err}");
    assert!(err.to_string().contains("no event within"), "{err}");
    let set = store
        .set("within", "v", SetOptions::default())
        .await
        .unwrap();
    match sub.next_within(Some(Duration::from_secs(5))).await.unwrap() {
        Some(Event::Change(n)) => assert_eq!(n.version, set.version),
        other => panic!("expected the change, got {other:?}"),
    }
}
