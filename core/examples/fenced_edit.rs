//! Fenced edits: four workers increment one counter 25 times each under a lock; every write
//! carries the lock's fencing token, so the total is exact. Then a stale token is refused.
//!
//! ```sh
//! mqstate serve &                                   # a local state store on :1883
//! cargo run -p mqstate --example fenced_edit -- mqtt://localhost:1883
//! ```

use std::time::Duration;

use mqstate::lock::{Edit, Lock};
use mqstate::{Client, ConnectionSettings, SetOptions};

const WORKERS: usize = 4;
const INCREMENTS: u64 = 25;

fn parse(value: Option<&mqstate::Versioned>) -> u64 {
    value
        .and_then(|v| std::str::from_utf8(&v.value).ok()?.parse().ok())
        .unwrap_or(0)
}

#[tokio::main]
async fn main() -> Result<(), mqstate::Error> {
    let url = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "mqtt://localhost:1883".into());
    let settings = ConnectionSettings::from_url(&url)?;
    let lease = Duration::from_secs(2);

    // Start from zero: take the lock once and write 0 with its token.
    let setup = Client::connect(settings.clone()).await?;
    println!("connected to {url}");
    let lock = Lock::new(&setup, "example/counter-lock")?;
    let start = lock
        .edit("example/counter", lease, Duration::from_secs(10), |_| {
            Edit::Set("0".into())
        })
        .await?;
    println!(
        "reset example/counter to 0 with fencing token {}",
        start.token
    );

    let mut workers = Vec::new();
    for w in 0..WORKERS {
        let client = Client::connect(settings.clone()).await?;
        workers.push(tokio::spawn(async move {
            let lock = Lock::new(&client, "example/counter-lock")?;
            let mut retries = 0;
            for _ in 0..INCREMENTS {
                let outcome = lock
                    .edit("example/counter", lease, Duration::from_secs(60), |v| {
                        Edit::Set((parse(v) + 1).to_string().into())
                    })
                    .await?;
                retries += outcome.attempts - 1;
            }
            println!(
                "worker {w} ({}) done, {retries} retried attempts",
                client.client_id()
            );
            client.shutdown().await;
            Ok::<_, mqstate::Error>(())
        }));
    }
    for worker in workers {
        worker.await.expect("the worker ran")?;
    }
    let total = parse(setup.get("example/counter").await?.as_ref());
    println!(
        "\nexample/counter = {total} (expected {})",
        WORKERS as u64 * INCREMENTS
    );

    // The token from the reset is long outdated: the service refuses it.
    let stale = SetOptions {
        fencing_token: Some(start.token),
        ..SetOptions::default()
    };
    match setup.set("example/counter", "-1", stale).await {
        Err(e) => println!(
            "a write with the stale token -> {} ({})",
            e.kind(),
            e.message()
        ),
        Ok(o) => println!(
            "a write with the stale token -> unexpectedly applied={}",
            o.applied
        ),
    }
    setup.shutdown().await;
    Ok(())
}
