//! Measures `LocalStore`: the time from `LocalStore::start` to a store that serves requests,
//! the time to a client's first answer, and the resident memory each running store adds.
//!
//! ```sh no-run: a measurement (a few seconds)
//! bench/run local-store 50
//! ```
//!
//! Prints the median and the 90th percentile of the start-up times over N stores started one
//! after the other (all kept running), and (Linux) the growth of the process's RSS divided
//! by N. Figures: `docs/benchmarks.md`, "LocalStore (issue 31)".

use std::time::{Duration, Instant};

use mqstate::{Client, ConnectionSettings, SetOptions};
use mqstate_server::testing::LocalStore;

/// The process's resident set size in KiB (Linux; `None` elsewhere).
fn rss_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let n: usize = std::env::args()
        .nth(1)
        .map(|a| a.parse())
        .transpose()?
        .unwrap_or(50);
    // Warm-up: the first store pays for the process's one-time set-up (TLS provider,
    // thread pool): measured apart.
    let started = Instant::now();
    let mut first = LocalStore::start().await?;
    let cold = started.elapsed();
    first.stop().await;

    let before = rss_kib();
    let mut stores = Vec::with_capacity(n);
    let mut ready = Vec::with_capacity(n);
    for _ in 0..n {
        let started = Instant::now();
        let store = LocalStore::start().await?;
        ready.push(started.elapsed());
        stores.push(store);
    }
    let after = rss_kib();

    // Time to a client's first answer: connect + SET on a fresh store.
    let mut answered = Vec::with_capacity(n.min(20));
    for _ in 0..n.min(20) {
        let started = Instant::now();
        let mut store = LocalStore::start().await?;
        let client = Client::connect(ConnectionSettings::from_url(&store.url())?).await?;
        client.set("k", "v", SetOptions::default()).await?;
        answered.push(started.elapsed());
        client.shutdown().await;
        store.stop().await;
    }

    ready.sort();
    answered.sort();
    println!(
        "stores: {n} (kept running), first store in the process: {:.2} ms",
        ms(cold)
    );
    println!(
        "start to ready: median {:.2} ms, p90 {:.2} ms, max {:.2} ms",
        ms(percentile(&ready, 0.5)),
        ms(percentile(&ready, 0.9)),
        ms(percentile(&ready, 1.0))
    );
    println!(
        "start + client connect + first SET answered: median {:.2} ms, p90 {:.2} ms",
        ms(percentile(&answered, 0.5)),
        ms(percentile(&answered, 0.9))
    );
    if let (Some(before), Some(after)) = (before, after) {
        println!(
            "RSS: {before} KiB before, {after} KiB with {n} stores: {:.0} KiB per store",
            (after.saturating_sub(before)) as f64 / n as f64
        );
    }
    for mut store in stores {
        store.stop().await;
    }
    Ok(())
}
