//! `client-bench scan --keys N`: fills a store with N keys, then times one full SCAN of
//! them through the pager (keys/s, pages, the client's peak memory and the store's, when
//! its pid is given with `--watch-pid`).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use mqstate::{Client, ConnectionSettings, SetOptions};

use crate::status_kib;

/// Arguments of `client-bench scan`.
#[derive(Debug, clap::Args)]
pub struct ScanArgs {
    /// The broker, with mqstate-server (or the real service) behind it.
    #[arg(long, default_value = "mqtt://127.0.0.1:1883")]
    pub url: String,
    /// Keys to fill, then scan (they stay: use a fresh store).
    #[arg(long)]
    pub keys: usize,
    /// Value size in bytes.
    #[arg(long, default_value_t = 16)]
    pub value_size: usize,
    /// The store's pid: its memory before and after the fill, and its peak.
    #[arg(long = "watch-pid", value_name = "PID")]
    pub watch_pid: Option<u32>,
}

/// SETs kept in flight while filling.
const FILL_IN_FLIGHT: usize = 256;

fn mib(kib: u64) -> f64 {
    kib as f64 / 1024.0
}

/// Fills `n` keys `scan/0000000`… with `value_size`-byte values, FILL_IN_FLIGHT at a time.
async fn fill(client: &Client, n: usize, value_size: usize) -> anyhow::Result<Duration> {
    let started = Instant::now();
    let next = Arc::new(AtomicU64::new(0));
    let value = Arc::new(vec![b'v'; value_size]);
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..FILL_IN_FLIGHT.min(n.max(1)) {
        let (client, next, value) = (client.clone(), Arc::clone(&next), Arc::clone(&value));
        tasks.spawn(async move {
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= n as u64 {
                    return Ok::<_, mqstate::Error>(());
                }
                client
                    .set(format!("scan/{i:07}"), &value[..], SetOptions::default())
                    .await?;
            }
        });
    }
    let mut last = Instant::now();
    loop {
        tokio::select! {
            joined = tasks.join_next() => match joined {
                Some(done) => done??,
                None => break,
            },
            () = tokio::time::sleep(Duration::from_secs(1)) => {}
        }
        if last.elapsed() >= Duration::from_secs(1) {
            last = Instant::now();
            let done = next.load(Ordering::Relaxed).min(n as u64);
            eprint!("\r  filling: {done:>8} of {n} keys");
        }
    }
    eprintln!(
        "\r  filled {n} keys in {:.1?}              ",
        started.elapsed()
    );
    Ok(started.elapsed())
}

/// Runs `client-bench scan`.
pub async fn run(args: ScanArgs) -> anyhow::Result<()> {
    let n = args.keys;
    let client = Client::connect(ConnectionSettings::from_url(&args.url)?).await?;
    let store_pid = args.watch_pid;
    let store_before = store_pid.map(|p| status_kib(Some(p), "VmRSS:"));
    let fill_time = fill(&client, n, args.value_size).await?;
    let store_filled = store_pid.map(|p| status_kib(Some(p), "VmRSS:"));
    let client_before = status_kib(None, "VmRSS:");
    let started = Instant::now();
    let mut pages = client.scan("scan/*")?;
    let (mut keys, mut page_count, mut empty_pages) = (0u64, 0u64, 0u64);
    let mut peak = client_before;
    let mut last = Instant::now();
    while let Some(page) = pages.next_page().await? {
        page_count += 1;
        if page.is_empty() {
            empty_pages += 1;
        }
        keys += page.len() as u64;
        if page_count % 64 == 0 {
            peak = peak.max(status_kib(None, "VmRSS:"));
        }
        if last.elapsed() >= Duration::from_secs(1) {
            last = Instant::now();
            eprint!("\r  scanning: {keys:>8} keys, {page_count} pages");
        }
    }
    let elapsed = started.elapsed();
    eprintln!();
    peak = peak.max(status_kib(None, "VmRSS:"));
    let store_peak = store_pid.map(|p| status_kib(Some(p), "VmHWM:"));
    println!(
        "filled {n} keys ({}-byte values) in {:.1} s ({:.0} SET/s)",
        args.value_size,
        fill_time.as_secs_f64(),
        n as f64 / fill_time.as_secs_f64()
    );
    println!(
        "scanned {keys} keys in {:.2} s: {:.0} keys/s, {page_count} pages ({empty_pages} empty), {:.0} µs per page",
        elapsed.as_secs_f64(),
        keys as f64 / elapsed.as_secs_f64(),
        elapsed.as_micros() as f64 / page_count.max(1) as f64
    );
    println!(
        "client RSS during the scan: {:.1} MiB at the start, {:.1} MiB at most (+{:.1} MiB)",
        mib(client_before),
        mib(peak),
        mib(peak.saturating_sub(client_before))
    );
    if let (Some(before), Some(filled), Some(peak)) = (store_before, store_filled, store_peak) {
        println!(
            "store RSS: {:.1} MiB before the fill, {:.1} MiB filled ({:.0} B per key), peak {:.1} MiB",
            mib(before),
            mib(filled),
            filled.saturating_sub(before) as f64 * 1024.0 / n.max(1) as f64,
            mib(peak)
        );
    }
    anyhow::ensure!(keys == n as u64, "the scan returned {keys} keys, want {n}");
    client.shutdown().await;
    Ok(())
}
