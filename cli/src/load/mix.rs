//! The mqstate client's load, as `mqstate bench` runs it: [`Mix::clients`] connections, the
//! keys filled once, then a mix of SETs and GETs kept [`Mix::depth`] deep on each connection
//! by the driver ([`super::drive`]). Public for the benchmark crate's `client-bench`, which
//! runs the same load in the project's own modes (idle clients, a second store, raw pairs).

use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use mqstate::cache::DEFAULT_CACHE_MAX_ENTRIES;
use mqstate::{CacheOptions, CacheStats, Client, ClientOptions, ConnectionSettings, SetOptions};

use super::{Op, RunResult, drive};

/// A duration with its unit (`500ms`, `5s`, `2m`), as every duration of the command line.
fn duration_arg(text: &str) -> Result<Duration, String> {
    mqstate::parse_duration_with_unit(text).map_err(|e| e.message().to_owned())
}

/// What one load run does: the flags of `mqstate bench` (and of `client-bench load`).
#[derive(Clone, Debug, clap::Args)]
pub struct Mix {
    /// The broker, with mqstate-server (or the real service) behind it.
    #[arg(long, default_value = "mqtt://127.0.0.1:1883")]
    pub url: String,
    /// Connections.
    #[arg(long, default_value_t = 1)]
    pub clients: usize,
    /// Requests kept outstanding per connection.
    #[arg(long, default_value_t = 1)]
    pub depth: usize,
    /// Measured time per run, with its unit: 500ms, 5s, 2m.
    #[arg(long, default_value = "5s", value_parser = duration_arg, allow_hyphen_values = true)]
    pub duration: Duration,
    /// Unmeasured warm-up per run, with its unit: 500ms, 1s.
    #[arg(long, default_value = "1s", value_parser = duration_arg, allow_hyphen_values = true)]
    pub warmup: Duration,
    /// Percentage of SETs (the rest are GETs).
    #[arg(long, default_value_t = 50)]
    pub set_percent: u8,
    /// SETs (the first fill of the keys too) ask to be persisted (aio-persistence: true):
    /// with `serve --data-dir`, each is journaled (and fsynced, per `serve --fsync`) before
    /// it is answered.
    #[arg(long)]
    pub persist: bool,
    /// Value size in bytes.
    #[arg(long, default_value_t = 16)]
    pub value_size: usize,
    /// Distinct keys.
    #[arg(long, default_value_t = 1000)]
    pub keys: usize,
}

impl Mix {
    /// Refuses a mix with no connection or no request in flight.
    pub fn check(&self) -> anyhow::Result<()> {
        anyhow::ensure!(
            self.clients >= 1 && self.depth >= 1,
            "--clients and --depth must be at least 1"
        );
        Ok(())
    }

    /// One run against the store at `url`, the clients with their cache on when `cache`,
    /// measuring the CPU of `watch` too; with the cache, the clients' summed cache counters
    /// over the run (its warm-up included).
    pub async fn run(
        &self,
        url: &str,
        cache: bool,
        watch: &[u32],
    ) -> anyhow::Result<(RunResult, Option<CacheStats>)> {
        let settings = ConnectionSettings::from_url(url)?;
        let options = ClientOptions {
            cache: cache.then(|| CacheOptions {
                max_entries: self.keys.max(DEFAULT_CACHE_MAX_ENTRIES),
                ..CacheOptions::default()
            }),
            ..ClientOptions::default()
        };
        let mut clients = Vec::new();
        for _ in 0..self.clients {
            clients.push(
                Client::connect_with(settings.clone(), options.clone())
                    .await
                    .context("connecting")?,
            );
        }
        let value = Arc::new(vec![b'v'; self.value_size]);
        let keys: Arc<Vec<String>> = Arc::new(
            (0..self.keys.max(1))
                .map(|k| format!("bench/{k}"))
                .collect(),
        );
        let set_options = SetOptions {
            persist: self.persist,
            ..SetOptions::default()
        };
        // The first fill: every connection SETs its share of the keys, one at a time each.
        let mut fill = tokio::task::JoinSet::new();
        for (c, client) in clients.iter().enumerate() {
            let (client, keys, value) = (client.clone(), keys.clone(), value.clone());
            let (stride, options) = (self.clients.max(1), set_options.clone());
            fill.spawn(async move {
                for key in keys.iter().skip(c).step_by(stride) {
                    client.set(key, &value[..], options.clone()).await?;
                }
                Ok::<_, mqstate::Error>(())
            });
        }
        while let Some(filled) = fill.join_next().await {
            filled.context("filling the keys")??;
        }
        let set_percent = u64::from(self.set_percent.min(100));
        let clients = Arc::new(clients);
        let counted = clients.clone();
        let op: Op = Arc::new(move |i| {
            let (clients, keys, value) = (clients.clone(), keys.clone(), value.clone());
            let options = set_options.clone();
            Box::pin(async move {
                let client = &clients[(i as usize) % clients.len()];
                let key = &keys[(i as usize / clients.len()) % keys.len()];
                if (i.wrapping_mul(2_654_435_761) >> 7) % 100 < set_percent {
                    client.set(key, &value[..], options).await.is_ok()
                } else {
                    client.get(key).await.is_ok()
                }
            })
        });
        let result = drive(
            "mqstate",
            self.clients * self.depth,
            self.warmup,
            self.duration,
            op,
            watch,
        )
        .await;
        let stats = cache.then(|| {
            counted
                .iter()
                .filter_map(Client::cache_stats)
                .sum::<CacheStats>()
        });
        Ok((result, stats))
    }
}

impl std::fmt::Display for Mix {
    /// The run's shape in one line: `1 client(s) x 64 outstanding, 50% SET, …`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} client(s) x {} outstanding, {}% SET, {}-byte values, {:?} per run",
            self.clients, self.depth, self.set_percent, self.value_size, self.duration
        )
    }
}

/// Reads answered from memory against reads that reached the store (misses), and the
/// lease's counters, in one line: what the clients' cache gave over a run.
pub fn cache_line(s: &CacheStats) -> String {
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
