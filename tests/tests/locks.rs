//! Leased locks and fenced edits against mqstate-server behind mosquitto (and once behind
//! the embedded broker): mutual exclusion under contention, the fencing error for a stale
//! holder, expiry and hand-over, automatic renewal (kept for 10 leases; never started by a
//! failed acquire), holder streams filtered by key, and argument checks.

mod support;

use std::time::Duration;

use mqstate::codec::StoreErrorKind;
use mqstate::lock::{Edit, HolderChange, HolderWatch, Lock, LockOptions, LockStatus, LossReason};
use mqstate::{ErrorKind, SetOptions};
use support::{Env, eventually};
use tokio::time::Instant;

const WAIT: Duration = Duration::from_secs(10);

fn auto(period_ms: u64) -> LockOptions {
    LockOptions {
        auto_renew: Some(Duration::from_millis(period_ms)),
        ..LockOptions::default()
    }
}

/// 8 clients × 50 increments under `edit`: exactly 400, and an old token is refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn edit_is_mutually_exclusive_and_fences_stale_holders() {
    let env = Env::mosquitto().await;
    let lease = Duration::from_millis(1000);

    // A holder that writes once, then goes stale.
    let stale_client = env.client("stale").await;
    let stale = Lock::new(&stale_client, "counter/lock").unwrap();
    let old_token = stale.try_acquire(lease).await.unwrap().expect("free");
    let first = stale_client
        .set("counter", "0", stale.set_options().unwrap())
        .await
        .unwrap();
    assert!(first.applied);
    assert!(stale.release().await.unwrap());
    assert!(stale.set_options().is_err(), "no token once released");

    let mut tasks = Vec::new();
    for i in 0..8 {
        let client = env.client(&format!("editor{i}")).await;
        tasks.push(tokio::spawn(async move {
            let lock = Lock::new(&client, "counter/lock").unwrap();
            let mut retried = 0;
            for _ in 0..50 {
                let outcome = lock
                    .edit("counter", lease, Duration::from_secs(60), |current| {
                        let n: u64 = current
                            .map(|v| std::str::from_utf8(&v.value).unwrap().parse().unwrap())
                            .unwrap_or(0);
                        Edit::Set((n + 1).to_string().into())
                    })
                    .await
                    .expect("edit applied");
                assert!(outcome.version.is_some());
                retried += outcome.attempts - 1;
            }
            assert!(!lock.is_held(), "edit releases the lock");
            client.shutdown().await;
            retried
        }));
    }
    for task in tasks {
        task.await.unwrap();
    }
    let reader = env.client("reader").await;
    let value = reader
        .get("counter")
        .await
        .unwrap()
        .expect("counter exists");
    assert_eq!(&value.value[..], b"400");
    assert_eq!(
        Lock::new(&reader, "counter/lock")
            .unwrap()
            .holder()
            .await
            .unwrap(),
        None
    );

    // The stale holder writes with its old token: refused, the value stays.
    let stale_write = SetOptions {
        fencing_token: Some(old_token),
        ..SetOptions::default()
    };
    let err = stale_client
        .set("counter", "1", stale_write)
        .await
        .unwrap_err();
    assert_eq!(
        err.kind(),
        ErrorKind::Store(StoreErrorKind::FencingTokenLowerVersion)
    );
    let value = reader.get("counter").await.unwrap().unwrap();
    assert_eq!(&value.value[..], b"400");
}

/// A holder that does not renew loses the lock after its lease; a waiter then gets it, and
/// not before.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unrenewed_lease_expires_and_a_waiter_takes_over() {
    let env = Env::mosquitto().await;
    let lease = Duration::from_millis(500);
    let (a_client, b_client) = (env.client("a").await, env.client("b").await);
    let a = Lock::new(&a_client, "expiry/lock").unwrap();
    let b = Lock::new(&b_client, "expiry/lock").unwrap();

    let before_a = Instant::now();
    let a_token = a.try_acquire(lease).await.unwrap().expect("free");
    assert!(a.is_held());
    assert_eq!(a.holder().await.unwrap().as_deref(), Some(a.holder_id()));
    assert_eq!(b.try_acquire(lease).await.unwrap(), None, "held by a");
    assert_eq!(b.status(), LockStatus::NotHeld);

    let b_token = b.acquire(lease, lease + WAIT).await.expect("b takes over");
    assert!(
        before_a.elapsed() >= lease,
        "b got the lock before a's lease could have run out"
    );
    assert!(b_token > a_token, "fencing tokens increase");
    assert!(!a.is_held());
    assert_eq!(a.lost().await, Some(LossReason::Expired));
    assert_eq!(
        a.renew().await.unwrap(),
        None,
        "an expired lock is not renewed"
    );
    assert_eq!(b.holder().await.unwrap().as_deref(), Some(b.holder_id()));
    assert!(
        !a.release().await.unwrap(),
        "a's release does not free b's lock"
    );
    assert!(b.is_held());
    assert!(b.release().await.unwrap());
}

/// Automatic renewal keeps the lock for 10 leases with fresh tokens; release stops it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn auto_renew_keeps_the_lock_for_ten_leases() {
    let env = Env::mosquitto().await;
    let lease = Duration::from_millis(600);
    let (a_client, b_client) = (env.client("a").await, env.client("b").await);
    let a = Lock::with_options(&a_client, "renew/lock", auto(150)).unwrap();
    let b = Lock::new(&b_client, "renew/lock").unwrap();
    let first = a.try_acquire(lease).await.unwrap().expect("free");
    assert!(a.is_renewing());

    let end = Instant::now() + lease * 10;
    while Instant::now() < end {
        assert_eq!(b.try_acquire(lease).await.unwrap(), None, "a keeps it");
        assert!(a.is_held(), "status: {:?}", a.status());
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert!(a.renewals() >= 1);
    let latest = a.fencing_token().expect("held");
    assert!(latest > first, "each renewal gives a newer token");
    assert_eq!(a.holder().await.unwrap().as_deref(), Some(a.holder_id()));

    assert!(a.release().await.unwrap());
    assert!(!a.is_renewing());
    let renewals = a.renewals();
    let long = Duration::from_secs(30);
    assert!(b.try_acquire(long).await.unwrap().is_some(), "released");
    tokio::time::sleep(Duration::from_millis(600)).await;
    assert_eq!(a.renewals(), renewals, "no renewal after release");
    assert_eq!(b.holder().await.unwrap().as_deref(), Some(b.holder_id()));
}

/// The official SDK's bug: a renewal task started by a failed acquire. Here it never starts.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_acquire_never_starts_renewal() {
    let env = Env::mosquitto().await;
    let lease = Duration::from_millis(400);
    let (a_client, b_client) = (env.client("a").await, env.client("b").await);
    let a = Lock::new(&a_client, "zombie/lock").unwrap();
    let b = Lock::with_options(&b_client, "zombie/lock", auto(100)).unwrap();
    a.try_acquire(Duration::from_secs(30))
        .await
        .unwrap()
        .expect("free");

    assert_eq!(b.try_acquire(lease).await.unwrap(), None);
    let err = b
        .acquire(lease, Duration::from_millis(300))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Timeout);
    assert!(!b.is_renewing());
    assert_eq!(b.status(), LockStatus::NotHeld);

    // Once the lock is free, a zombie renewal would take it: nobody must.
    assert!(a.release().await.unwrap());
    tokio::time::sleep(Duration::from_millis(800)).await;
    assert_eq!(b.renewals(), 0);
    assert_eq!(
        a.holder().await.unwrap(),
        None,
        "b's failed acquire renewed nothing"
    );
}

async fn next_change(watch: &mut HolderWatch) -> HolderChange {
    tokio::time::timeout(WAIT, watch.recv())
        .await
        .expect("a change within 10 s")
        .expect("open")
}

/// The holder stream reports this lock's holder changes only: not other keys, not renewals.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn holder_changes_are_filtered_by_key() {
    let env = Env::mosquitto().await;
    let client = env.client("holder").await;
    let x = Lock::new(&client, "holder/x").unwrap();
    let y = Lock::new(&client, "holder/y").unwrap();
    let mut watch = x.watch_holder().await.unwrap();
    assert_eq!(next_change(&mut watch).await.holder, None, "free at first");

    let lease = Duration::from_secs(5);
    x.try_acquire(lease).await.unwrap().expect("free");
    let change = next_change(&mut watch).await;
    assert_eq!(change.holder.as_deref(), Some(x.holder_id()));
    assert!(change.version.is_some());
    y.try_acquire(lease).await.unwrap().expect("free");
    assert!(y.release().await.unwrap());
    for _ in 0..3 {
        assert!(x.renew().await.unwrap().is_some());
    }
    assert!(x.release().await.unwrap());
    let change = next_change(&mut watch).await;
    assert_eq!(
        change.holder, None,
        "the release comes next: no y, no renewal"
    );
    assert_eq!(watch.key(), b"holder/x");
}

/// Sessions, fenced option builders, argument checks; on the embedded broker.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn options_sessions_and_argument_checks() {
    let env = Env::embedded().await;
    let client = env.client("opts").await;
    let session = LockOptions {
        session_id: Some("s1".into()),
        ..LockOptions::default()
    };
    let s1 = Lock::with_options(&client, "opts/lock", session).unwrap();
    assert_eq!(s1.holder_id(), format!("{}:s1", client.client_id()));
    let plain = Lock::new(&client, "opts/lock").unwrap();
    assert_eq!(plain.holder_id(), client.client_id());

    let not_held = s1.set_options().unwrap_err();
    assert_eq!(not_held.kind(), ErrorKind::NotHeld);
    assert_eq!(s1.del_options().unwrap_err().kind(), ErrorKind::NotHeld);
    let zero = s1.try_acquire(Duration::ZERO).await.unwrap_err();
    assert_eq!(zero.kind(), ErrorKind::InvalidArgument);
    assert!(Lock::new(&client, "").is_err());
    let too_slow = Lock::with_options(&client, "opts/lock", auto(500)).unwrap();
    let err = too_slow
        .try_acquire(Duration::from_millis(500))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidArgument);
    assert_eq!(plain.holder().await.unwrap(), None, "nothing was sent");

    // Sub-millisecond leases round up; another session of the same client is refused.
    let token = s1
        .try_acquire(Duration::from_micros(900_500))
        .await
        .unwrap()
        .expect("free");
    match s1.status() {
        LockStatus::Held { lease, .. } => assert_eq!(lease, Duration::from_millis(901)),
        other => panic!("unexpected {other:?}"),
    }
    assert_eq!(
        plain.try_acquire(Duration::from_secs(1)).await.unwrap(),
        None
    );
    let set = s1.set_options().unwrap();
    assert_eq!(set.fencing_token.as_ref(), Some(&token));
    assert!(client.set("opts/data", "x", set).await.unwrap().applied);
    let del = s1.del_options().unwrap();
    assert_eq!(client.del("opts/data", del).await.unwrap(), 1);

    // Edits that set, keep and delete; each releases the lock.
    assert!(s1.release().await.unwrap());
    let lease = Duration::from_secs(1);
    let set = s1
        .edit("opts/data", lease, WAIT, |_| Edit::Set("v".into()))
        .await
        .unwrap();
    assert!(set.previous.is_none() && set.version.is_some());
    let kept = s1
        .edit("opts/data", lease, WAIT, |_| Edit::Keep)
        .await
        .unwrap();
    assert_eq!(&kept.previous.unwrap().value[..], b"v");
    let deleted = s1
        .edit("opts/data", lease, WAIT, |_| Edit::Delete)
        .await
        .unwrap();
    assert_eq!((deleted.edit, deleted.attempts), (Edit::Delete, 1));
    assert!(deleted.token > set.token);
    assert!(client.get("opts/data").await.unwrap().is_none());
    eventually(WAIT, || async {
        client.get("opts/lock").await.unwrap().is_none()
    })
    .await;
    client.shutdown().await;
}
