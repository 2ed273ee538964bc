//! What the client-side cache's freshness lease costs, and the hit rate it leaves, against a
//! store in this process (`LocalStore`, its embedded broker on loopback):
//!
//! ```sh no-run: a measurement (about 40 s)
//! bench/run cache-lease [SECONDS]
//! ```
//!
//! One cached client (`cache_freshness` 1 s, the default) over 1,000 hot keys of 16 bytes:
//!
//! - **idle:** connected, cache full and warm, nothing read for SECONDS (default 10): the
//!   requests the lease sends (renewals), per second;
//! - **reading:** `get` of the keys in turn, one at a time, for SECONDS: renewals per second
//!   and the hit rate;
//! - **95 % reads:** the same client reads (95 %) and writes (5 %) random keys, while a
//!   second client writes the same keys at 200 SETs per second (its changes reach the reader
//!   by notification): the hit rate, renewals per second, and the lease's misses and failures.
//!
//! The store's requests are the client's own (each renewal is one SET of the canary key, plus
//! one KEYNOTIFY of it per connection). Figures: `docs/benchmarks.md`, "The freshness lease".

use std::time::{Duration, Instant};

use mqstate::{CacheOptions, CacheStats, Client, ClientOptions, ConnectionSettings, SetOptions};
use mqstate_server::testing::LocalStore;

const KEYS: usize = 1000;

fn key(i: usize) -> String {
    format!("hot/{i:04}")
}

fn stats(client: &Client) -> CacheStats {
    client.cache_stats().expect("the cache is on")
}

/// A small deterministic generator (xorshift): the mix is the same from run to run.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

fn line(what: &str, before: &CacheStats, after: &CacheStats, elapsed: Duration, reads: u64) {
    let secs = elapsed.as_secs_f64();
    let hits = after.hits - before.hits;
    let misses = after.misses - before.misses;
    let rate = if hits + misses == 0 {
        0.0
    } else {
        100.0 * hits as f64 / (hits + misses) as f64
    };
    println!(
        "{what:<12} {secs:>5.1} s: {reads:>9} reads ({:>9.0}/s), hit rate {rate:6.2} % ({hits} hits, {misses} misses, {} of them while the lease did not hold); lease: {:.2} renewals/s ({} renewals, {} expiries, {} failures)",
        reads as f64 / secs,
        after.lease_misses - before.lease_misses,
        (after.lease_renewals - before.lease_renewals) as f64 / secs,
        after.lease_renewals - before.lease_renewals,
        after.lease_expiries - before.lease_expiries,
        after.lease_failures - before.lease_failures,
    );
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let seconds: f64 = std::env::args()
        .nth(1)
        .map(|a| a.parse())
        .transpose()?
        .unwrap_or(10.0);
    let window = Duration::from_secs_f64(seconds);
    let mut store = LocalStore::start().await?;
    let settings = ConnectionSettings::from_url(&store.url())?;
    let options = ClientOptions {
        cache: Some(CacheOptions::default()),
        ..ClientOptions::default()
    };
    let reader = Client::connect_with(settings.clone(), options).await?;
    let writer = Client::connect(settings).await?;
    let value = "0123456789abcdef";
    for i in 0..KEYS {
        writer.set(key(i), value, SetOptions::default()).await?;
    }
    // Warm: every key read once, and read again until a read is answered from memory (the
    // lease proven).
    for i in 0..KEYS {
        reader.get(key(i)).await?;
    }
    while {
        let before = stats(&reader).hits;
        reader.get(key(0)).await?;
        stats(&reader).hits == before
    } {
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    println!(
        "cache-lease: {KEYS} keys of {} bytes, cache_freshness {:?}, {seconds} s per phase",
        value.len(),
        CacheOptions::default().freshness
    );

    // Idle: nothing read.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let before = stats(&reader);
    let started = Instant::now();
    tokio::time::sleep(window).await;
    line("idle", &before, &stats(&reader), started.elapsed(), 0);

    // Reading, one at a time.
    let before = stats(&reader);
    let started = Instant::now();
    let mut reads = 0u64;
    while started.elapsed() < window {
        reader.get(key(reads as usize % KEYS)).await?;
        reads += 1;
    }
    line(
        "reading",
        &before,
        &stats(&reader),
        started.elapsed(),
        reads,
    );

    // 95 % reads, 5 % own writes, another client writing 200 SETs/s.
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let other = {
        let (writer, stop) = (writer.clone(), stop.clone());
        tokio::spawn(async move {
            let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
            let mut tick = tokio::time::interval(Duration::from_millis(5));
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                tick.tick().await;
                let k = key(rng.next() as usize % KEYS);
                let _ = writer
                    .set(k, "written-by-other", SetOptions::default())
                    .await;
            }
        })
    };
    let mut rng = Rng(0x2545_f491_4f6c_dd1d);
    let before = stats(&reader);
    let started = Instant::now();
    let mut reads = 0u64;
    while started.elapsed() < window {
        let k = key(rng.next() as usize % KEYS);
        if rng.next() % 100 < 5 {
            reader.set(k, value, SetOptions::default()).await?;
        } else {
            reader.get(k).await?;
            reads += 1;
        }
    }
    line(
        "95 % reads",
        &before,
        &stats(&reader),
        started.elapsed(),
        reads,
    );
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    other.await?;
    reader.shutdown().await;
    writer.shutdown().await;
    store.stop().await;
    Ok(())
}
