//! `mqstate bench --cache-compare N`: the same mix without and with the clients' cache, in
//! turns, and the ratio of the medians; with the cache, how many reads reached the store.
//! `--cache-visibility N`: how soon another client's write reaches a cached reader.

use std::time::{Duration, Instant};

use anyhow::Context;
use bytes::Bytes;
use mqstate::{CacheOptions, CacheStats, Client, ClientOptions, ConnectionSettings, SetOptions};
use mqstate_cli::load::RunResult;

use super::{BenchArgs, run_clients};

/// Reads answered from memory against reads that reached the store (misses), in one line.
pub(super) fn store_reads(s: &CacheStats) -> String {
    let reads = s.hits + s.misses;
    let share = if reads == 0 {
        0.0
    } else {
        100.0 * s.misses as f64 / reads as f64
    };
    format!(
        "cache    {} reads: {} from memory, {} reached the store ({share:.2} %, the first read of each key included; {} while the lease did not hold); {} invalidations, {} evictions; lease: {} renewals, {} expiries, {} failures",
        reads,
        s.hits,
        s.misses,
        s.lease_misses,
        s.invalidations,
        s.evictions,
        s.lease_renewals,
        s.lease_expiries,
        s.lease_failures
    )
}

fn median(mut runs: Vec<RunResult>) -> RunResult {
    runs.sort_by(|a, b| a.ops_per_sec.total_cmp(&b.ops_per_sec));
    runs[runs.len() / 2].clone()
}

/// Alternates uncached and cached runs `rounds` times each; prints the medians and ratios.
pub(super) async fn compare(args: &BenchArgs, rounds: usize) -> anyhow::Result<()> {
    anyhow::ensure!(
        args.target == "mqstate" && args.compare.is_none() && args.idle_clients.is_none(),
        "--cache-compare measures the mqstate target alone: drop --target, --compare and --idle-clients"
    );
    let (mut plain, mut cached, mut last) = (Vec::new(), Vec::new(), None);
    for round in 1..=rounds.max(1) {
        errln!("round {round}");
        plain.push(run_clients(args, &args.url, false).await?.0);
        let (run, stats) = run_clients(args, &args.url, true).await?;
        cached.push(run);
        last = stats;
    }
    let (plain, cached) = (median(plain), median(cached));
    outln!("uncached {plain}");
    outln!("cached   {cached}");
    outln!(
        "ratio    {:.1}x the ops/s with the cache (median of {rounds} alternating runs)",
        cached.ops_per_sec / plain.ops_per_sec
    );
    if let Some(s) = last {
        outln!("{}", store_reads(&s));
    }
    Ok(())
}

/// `mqstate bench --cache-visibility N`: N SETs of one key, one at a time, by a writer; a
/// second client (cache on) reads the key from its cache in a loop until it sees each new
/// value. Prints the percentiles of the time from the writer's acknowledgement to that first
/// read (the notification's way through the store and the broker, and the reader's update),
/// and how many reads reached the store (1: the first, which cached the key).
pub(super) async fn visibility(args: &BenchArgs, n: usize) -> anyhow::Result<()> {
    anyhow::ensure!(n >= 1, "--cache-visibility must be at least 1");
    let settings = ConnectionSettings::from_url(&args.url)?;
    let key = format!("cache-visibility/{}", std::process::id());
    let writer = Client::connect(settings.clone()).await?;
    let options = ClientOptions {
        cache: Some(CacheOptions::default()),
        ..ClientOptions::default()
    };
    let reader = Client::connect_with(settings, options).await?;
    writer.set(&key, b"0", SetOptions::default()).await?;
    let read = |want: Bytes| {
        let (reader, key) = (reader.clone(), key.clone());
        async move {
            loop {
                match reader.get(&key).await? {
                    Some(v) if v.value == want => return Ok::<_, mqstate::Error>(()),
                    _ => tokio::task::yield_now().await,
                }
            }
        }
    };
    read(Bytes::from_static(b"0")).await?;
    let bound = Duration::from_secs(10);
    let mut delays = Vec::with_capacity(n);
    for i in 1..=n {
        let value = Bytes::from(i.to_string());
        writer.set(&key, &value, SetOptions::default()).await?;
        let acked = Instant::now();
        tokio::time::timeout(bound, read(value))
            .await
            .with_context(|| {
                format!("SET {i} did not reach the reader's cache within {bound:?}")
            })??;
        delays.push(acked.elapsed());
        if i % 100 == 0 {
            errout!("\r  {i:>6} of {n} SETs");
        }
    }
    errln!();
    delays.sort();
    let at = |q: f64| delays[((delays.len() - 1) as f64 * q).round() as usize];
    outln!(
        "visible after   p50 {:?}   p90 {:?}   p99 {:?}   max {:?}   ({n} SETs, from the writer's acknowledgement to the reader's first cached read of the value)",
        at(0.5),
        at(0.9),
        at(0.99),
        at(1.0)
    );
    if let Some(s) = reader.cache_stats() {
        outln!("{}", store_reads(&s));
    }
    writer.del(&key, Default::default()).await?;
    writer.shutdown().await;
    reader.shutdown().await;
    Ok(())
}
