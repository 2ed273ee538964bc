//! How much memory an idle connected client takes: a minimal process that connects, waits
//! a second and prints its resident set size (Linux), before and after connecting.
//!
//! ```text
//! mqstate serve &                       # or any broker with a state store behind it
//! bench/run idle-rss mqtt://127.0.0.1:1883
//! ```

use std::time::Duration;

use mqstate::{Client, ConnectionSettings};

fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        })
        .unwrap_or(0)
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let url = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "mqtt://127.0.0.1:1883".to_owned());
    let before = rss_kib();
    let client = Client::connect(ConnectionSettings::from_url(&url)?).await?;
    tokio::time::sleep(Duration::from_secs(1)).await;
    let idle = rss_kib();
    println!("process RSS before connecting {before} KiB, connected and idle {idle} KiB");
    client.shutdown().await;
    Ok(())
}
