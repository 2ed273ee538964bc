//! `client-bench memory`: the client's memory observing keys (`--keys N`) and with keys in its
//! cache (`--cache --keys N`).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use anyhow::Context;
use bytes::Bytes;
use mqstate::{CacheOptions, Client, ClientOptions, ConnectionSettings, SetOptions};

use crate::rss_kib;

/// Arguments of `client-bench memory`.
#[derive(Debug, clap::Args)]
pub struct MemoryArgs {
    /// The broker, with mqstate-server (or the real service) behind it.
    #[arg(long, default_value = "mqtt://127.0.0.1:1883")]
    pub url: String,
    /// Keys to observe (with --cache: to hold in the client's cache; the keys stay in the
    /// store: use a fresh one).
    #[arg(long)]
    pub keys: usize,
    /// Measure the cache instead: the client's memory with --keys keys of --value-size bytes
    /// in its cache.
    #[arg(long)]
    pub cache: bool,
    /// With --cache: value size in bytes.
    #[arg(long, default_value_t = 16, requires = "cache")]
    pub value_size: usize,
}

/// Runs `client-bench memory`.
pub async fn run(args: MemoryArgs) -> anyhow::Result<()> {
    anyhow::ensure!(args.keys >= 1, "--keys must be at least 1");
    if args.cache {
        cached(&args, args.keys).await
    } else {
        observed(&args, args.keys).await
    }
}

/// Tasks at a time of [`for_every_key`].
const TASKS: usize = 256;

/// Runs `each(client, k)` for every `k` in `0..n`, [`TASKS`] tasks at a time over one client,
/// with a progress line on stderr every second.
async fn for_every_key<F, Fut>(client: &Client, n: usize, what: &str, each: F) -> anyhow::Result<()>
where
    F: Fn(Client, usize) -> Fut + Clone + Send + 'static,
    Fut: Future<Output = Result<(), mqstate::Error>> + Send,
{
    let done = Arc::new(AtomicUsize::new(0));
    let mut tasks = tokio::task::JoinSet::new();
    let chunk = n.div_ceil(TASKS).max(1);
    for start in (0..n).step_by(chunk) {
        let (client, each, done) = (client.clone(), each.clone(), Arc::clone(&done));
        tasks.spawn(async move {
            for k in start..(start + chunk).min(n) {
                each(client.clone(), k).await?;
                done.fetch_add(1, Ordering::Relaxed);
            }
            Ok::<_, mqstate::Error>(())
        });
    }
    let mut last = Instant::now();
    while let Some(joined) = tasks.join_next().await {
        joined??;
        if last.elapsed() >= Duration::from_secs(1) {
            last = Instant::now();
            eprint!("\r  {what} {:>7} of {n} keys", done.load(Ordering::Relaxed));
        }
    }
    eprintln!();
    Ok(())
}

/// `client-bench memory --keys N`: client memory idle and with `n` observed keys.
async fn observed(args: &MemoryArgs, n: usize) -> anyhow::Result<()> {
    let before = rss_kib(None);
    let client = Client::connect(ConnectionSettings::from_url(&args.url)?).await?;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let idle = rss_kib(None);
    let started = Instant::now();
    // Every observer goes straight into one vector sized up front: per-task vectors, grown
    // and then freed, would leave ~150 B per key of freed heap in the RSS being measured.
    let observers = Arc::new(std::sync::Mutex::new(Vec::with_capacity(n)));
    let kept = Arc::clone(&observers);
    for_every_key(&client, n, "observing", move |client, k| {
        let kept = Arc::clone(&kept);
        async move {
            let observer = client.observe(format!("observed/{k}")).await?;
            kept.lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(observer);
            Ok(())
        }
    })
    .await?;
    let observing = rss_kib(None);
    println!("process RSS before connecting      {:>8} KiB", before);
    println!(
        "client connected, idle             {:>8} KiB (+{} KiB)",
        idle,
        idle.saturating_sub(before)
    );
    println!(
        "observing {n} keys                {:>8} KiB (+{} KiB, {:.0} bytes/key; registered in {:.1?})",
        observing,
        observing.saturating_sub(idle),
        observing.saturating_sub(idle) as f64 * 1024.0 / n as f64,
        started.elapsed()
    );
    drop(observers);
    client.shutdown().await;
    Ok(())
}

/// `client-bench memory --cache --keys N`: the client's resident memory with `n` keys of
/// `--value-size` bytes in its cache, per entry and beyond the key and value bytes the cache
/// counts (its map, its LRU order and each key's notification registration). Fills the store
/// first (`cached-memory/K`; the keys stay: use a fresh store).
async fn cached(args: &MemoryArgs, n: usize) -> anyhow::Result<()> {
    let settings = ConnectionSettings::from_url(&args.url)?;
    let value = Bytes::from(vec![b'v'; args.value_size]);
    let writer = Client::connect(settings.clone()).await?;
    for_every_key(&writer, n, "writing", move |c, k| {
        let value = value.clone();
        async move {
            c.set(format!("cached-memory/{k}"), value, SetOptions::default())
                .await
                .map(drop)
        }
    })
    .await?;
    writer.shutdown().await;
    let before = rss_kib(None);
    let options = ClientOptions {
        cache: Some(CacheOptions {
            max_entries: n,
            max_bytes: usize::MAX,
            ..CacheOptions::default()
        }),
        ..ClientOptions::default()
    };
    let client = Client::connect_with(settings, options).await?;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let idle = rss_kib(None);
    let started = Instant::now();
    for_every_key(&client, n, "caching", |c, k| async move {
        c.get(format!("cached-memory/{k}")).await.map(drop)
    })
    .await?;
    let full = rss_kib(None);
    let stats = client.cache_stats().context("the cache is on")?;
    anyhow::ensure!(
        stats.entries == n as u64,
        "{} of {n} keys cached: {stats:?}",
        stats.entries
    );
    let grown = full.saturating_sub(idle) as f64 * 1024.0;
    println!("process RSS before connecting      {before:>8} KiB");
    println!(
        "client connected, cache empty      {idle:>8} KiB (+{} KiB)",
        idle.saturating_sub(before)
    );
    println!(
        "{n} keys cached                {full:>8} KiB (+{} KiB, {:.0} bytes per entry; read in {:.1?})",
        full.saturating_sub(idle),
        grown / n as f64,
        started.elapsed()
    );
    println!(
        "beyond the key and value           {:>8.0} bytes per entry ({} bytes of keys and values counted by the cache, {:.0} per entry)",
        (grown - stats.bytes as f64) / n as f64,
        stats.bytes,
        stats.bytes as f64 / n as f64
    );
    client.shutdown().await;
    Ok(())
}
