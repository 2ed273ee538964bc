//! `client-bench load --cache-compare N`: the same mix without and with the clients' cache,
//! in turns, and the ratio of the medians; with the cache, how many reads reached the store.
//! `client-bench cache-visibility --writes N`: how soon another client's write reaches a
//! cached reader.

use std::time::{Duration, Instant};

use anyhow::Context;
use bytes::Bytes;
use mqstate::{CacheOptions, Client, ClientOptions, ConnectionSettings, SetOptions};
use mqstate_cli::load::mix::cache_line;

use crate::load::{LoadArgs, alternate};

/// Arguments of `client-bench cache-visibility`.
#[derive(Debug, clap::Args)]
pub struct VisibilityArgs {
    /// The broker, with mqstate-server (or the real service) behind it.
    #[arg(long, default_value = "mqtt://127.0.0.1:1883")]
    pub url: String,
    /// SETs to time, one at a time.
    #[arg(long, default_value_t = 2000)]
    pub writes: usize,
}

/// Alternates uncached and cached runs `rounds` times each; prints the medians and ratios.
pub async fn compare(args: &LoadArgs, rounds: usize) -> anyhow::Result<()> {
    let (mix, watch) = (&args.mix, &args.watch_pids);
    let (plain, cached, last) = alternate(
        rounds,
        || async { Ok(mix.run(&mix.url, false, watch).await?.0) },
        || mix.run(&mix.url, true, watch),
    )
    .await?;
    println!("uncached {plain}");
    println!("cached   {cached}");
    println!(
        "ratio    {:.1}x the ops/s with the cache (median of {rounds} alternating runs)",
        cached.ops_per_sec / plain.ops_per_sec
    );
    if let Some(s) = last {
        println!("{}", cache_line(&s));
    }
    Ok(())
}

/// `client-bench cache-visibility --writes N`: N SETs of one key, one at a time, by a writer; a
/// second client (cache on) reads the key from its cache in a loop until it sees each new
/// value. Prints the percentiles of the time from the writer's acknowledgement to that first
/// read (the notification's way through the store and the broker, and the reader's update),
/// and how many reads reached the store (1: the first, which cached the key).
pub async fn visibility(args: VisibilityArgs) -> anyhow::Result<()> {
    let n = args.writes;
    anyhow::ensure!(n >= 1, "--writes must be at least 1");
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
            eprint!("\r  {i:>6} of {n} SETs");
        }
    }
    eprintln!();
    delays.sort();
    let at = |q: f64| delays[((delays.len() - 1) as f64 * q).round() as usize];
    println!(
        "visible after   p50 {:?}   p90 {:?}   p99 {:?}   max {:?}   ({n} SETs, from the writer's acknowledgement to the reader's first cached read of the value)",
        at(0.5),
        at(0.9),
        at(0.99),
        at(1.0)
    );
    if let Some(s) = reader.cache_stats() {
        println!("{}", cache_line(&s));
    }
    writer.del(&key, Default::default()).await?;
    writer.shutdown().await;
    reader.shutdown().await;
    Ok(())
}
