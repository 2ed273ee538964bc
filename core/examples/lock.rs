//! Leased locks: two clients compete for one lock; the holder renews automatically, writes a
//! protected key with its fencing token and releases; the waiter is woken by the release.
//!
//! ```sh
//! mqstate serve &                                   # a local state store on :1883
//! cargo run -p mqstate --example lock -- mqtt://localhost:1883
//! ```

use std::time::Duration;

use mqstate::lock::{Lock, LockOptions};
use mqstate::{Client, ConnectionSettings};

#[tokio::main]
async fn main() -> Result<(), mqstate::Error> {
    let url = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "mqtt://localhost:1883".into());
    let settings = ConnectionSettings::from_url(&url)?;
    let alice = Client::connect(settings.clone()).await?;
    let bob = Client::connect(settings).await?;
    println!(
        "connected to {url} as {} and {}",
        alice.client_id(),
        bob.client_id()
    );

    let lease = Duration::from_millis(1500);
    let renewing = LockOptions {
        session_id: Some("worker".into()),
        auto_renew: Some(Duration::from_millis(500)),
        ..LockOptions::default()
    };
    let a = Lock::with_options(&alice, "example/lock", renewing)?;
    let b = Lock::new(&bob, "example/lock")?;
    println!("alice's holder id: {}", a.holder_id());
    println!("bob's holder id  : {}\n", b.holder_id());

    let token = a
        .try_acquire(lease)
        .await?
        .expect("the example lock is free");
    println!("alice  try_acquire (lease {lease:?}) -> held, fencing token {token}");
    match b.try_acquire(lease).await? {
        None => println!("bob    try_acquire              -> held by someone else"),
        Some(_) => println!("bob    try_acquire              -> unexpectedly acquired"),
    }
    println!(
        "holder of example/lock          -> {:?}",
        b.holder().await?.unwrap_or_default()
    );

    let mut changes = b.watch_holder().await?;
    let waiter = tokio::spawn(async move {
        let token = b.acquire(lease, Duration::from_secs(30)).await;
        (b, token)
    });

    tokio::time::sleep(lease * 2).await;
    println!(
        "\nafter {:?} (2 leases): alice still holds it: {} ({} automatic renewals, token now {})",
        lease * 2,
        a.is_held(),
        a.renewals(),
        a.fencing_token().map(|t| t.to_string()).unwrap_or_default()
    );
    let set = alice
        .set("example/protected", "written by alice", a.set_options()?)
        .await?;
    println!(
        "alice  SET example/protected with __ft -> applied={}",
        set.applied
    );

    println!("alice  release                  -> {}", a.release().await?);
    let (b, token) = waiter.await.expect("the waiter ran");
    println!(
        "bob    acquire (was waiting)    -> held, fencing token {}",
        token?
    );
    while let Ok(Some(change)) =
        tokio::time::timeout(Duration::from_millis(300), changes.recv()).await
    {
        println!("  holder change seen by bob: {:?}", change.holder);
    }
    let set = bob
        .set("example/protected", "written by bob", b.set_options()?)
        .await?;
    println!(
        "bob    SET example/protected with __ft -> applied={}",
        set.applied
    );
    println!("bob    release                  -> {}", b.release().await?);

    drop(changes);
    alice.shutdown().await;
    bob.shutdown().await;
    Ok(())
}
