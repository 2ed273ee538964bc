//! Quickstart: set, get, conditional set, delete, against a state store.
//!
//! ```sh
//! mqstate serve &                                   # a local state store on :1883
//! cargo run -p mqstate --example quickstart -- mqtt://localhost:1883
//! ```

use std::time::Duration;

use mqstate::codec::SetCondition;
use mqstate::{Client, ConnectionSettings, DelOptions, SetOptions, VdelOutcome};

#[tokio::main]
async fn main() -> Result<(), mqstate::Error> {
    let url = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "mqtt://localhost:1883".into());
    let client = Client::connect(ConnectionSettings::from_url(&url)?).await?;
    println!("connected to {url} as {}", client.client_id());

    let set = client
        .set("quickstart/greeting", "hello", SetOptions::default())
        .await?;
    println!(
        "SET greeting=hello      -> applied={} version={:?}",
        set.applied,
        set.version.map(|v| v.to_string())
    );

    if let Some(got) = client.get("quickstart/greeting").await? {
        println!(
            "GET greeting            -> {:?}",
            String::from_utf8_lossy(&got.value)
        );
    }

    let only_if_absent = SetOptions {
        condition: SetCondition::NotExists,
        ..SetOptions::default()
    };
    let nx = client
        .set("quickstart/greeting", "bonjour", only_if_absent)
        .await?;
    println!(
        "SET NX greeting=bonjour -> applied={} (the key exists)",
        nx.applied
    );

    let expiring = SetOptions {
        expiry: Some(Duration::from_secs(30)),
        ..SetOptions::default()
    };
    client.set("quickstart/session", "token", expiring).await?;
    println!("SET session PX 30000    -> expires in 30 s");

    let vdel = client
        .vdel("quickstart/greeting", "goodbye", DelOptions::default())
        .await?;
    println!("VDEL greeting=goodbye   -> {vdel:?}");
    assert_eq!(vdel, VdelOutcome::ValueMismatch);
    let n = client
        .del("quickstart/greeting", DelOptions::default())
        .await?;
    println!("DEL greeting            -> {n} deleted");

    match client.get("quickstart/nothing-here").await? {
        None => println!("GET nothing-here        -> (none)"),
        Some(v) => println!("GET nothing-here        -> {:?}", v.value),
    }
    client.shutdown().await;
    Ok(())
}
