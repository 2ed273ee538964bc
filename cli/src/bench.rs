//! `mqstate bench`: a closed-loop load generator. N clients each keep M requests
//! outstanding for a duration, with a chosen mix of SET and GET; prints ops/s and latency
//! percentiles, a progress line every second, and with `--compare` alternates the mqstate
//! client against a raw rumqttc request/response pair (the physical limit of the broker).

use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use mqstate::cache::DEFAULT_CACHE_MAX_ENTRIES;
use mqstate::{CacheOptions, CacheStats, Client, ClientOptions, ConnectionSettings, SetOptions};

use crate::bench_raw::{RawPair, StoreEcho};

mod cached;
mod idle;
mod memory;
mod scan;
mod side_by_side;

use idle::{IdleClients, IdleMode};
use mqstate_cli::load::{Op, RunResult, drive};

/// Arguments of `mqstate bench`.
#[derive(Debug, clap::Args)]
pub struct BenchArgs {
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
    #[arg(long, default_value = "5s", value_parser = crate::conn::duration_arg, allow_hyphen_values = true)]
    pub duration: Duration,
    /// Unmeasured warm-up per run, with its unit: 500ms, 1s.
    #[arg(long, default_value = "1s", value_parser = crate::conn::duration_arg, allow_hyphen_values = true)]
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
    /// What to load: `mqstate` (the client and a state store), `raw` (a bare rumqttc
    /// request/response pair through the same broker, answering instantly) or `echo` (the
    /// client against an in-process responder that answers instantly: the client's own
    /// overhead; use a broker with no state store behind it).
    #[arg(long, default_value = "mqstate")]
    pub target: String,
    /// Alternate raw and mqstate runs this many times each and print both with the ratio.
    #[arg(long)]
    pub compare: Option<usize>,
    /// Give the raw pair the state store's full request envelope (spec §2 user properties,
    /// content type, expiry), to separate the protocol's cost from the client's.
    #[arg(long)]
    pub raw_full_envelope: bool,
    /// Instead of load: measure the client's resident memory idle and observing this many keys
    /// (with --cache: with this many keys of --value-size bytes in its cache; the keys stay in
    /// the store: use a fresh one).
    #[arg(long)]
    pub observe_keys: Option<usize>,
    /// Instead of load: fill the store with this many keys and time one full SCAN of them
    /// (keys/s, pages, peak memory of the client and, with --watch-pid, of the store). Use a
    /// fresh store: the keys stay.
    #[arg(long)]
    pub scan_keys: Option<usize>,
    /// Measure with no idle clients, then again while this many idle clients exist (each
    /// with the two subscriptions of an mqstate client), and print both with the ratio.
    #[arg(long, value_name = "N")]
    pub idle_clients: Option<usize>,
    /// How the idle clients stay: `online` (connected), `abandoned` (disconnected with
    /// DISCONNECT, their sessions left in the broker for an hour) or `vanished` (their
    /// connections closed without DISCONNECT, sessions left for an hour).
    #[arg(long, value_enum, default_value = "online")]
    pub idle_mode: IdleMode,
    /// Also report the CPU time per request of this process (e.g. the broker, the store)
    /// over each measured window; repeatable.
    #[arg(long = "watch-pid", value_name = "PID")]
    pub watch_pids: Vec<u32>,
    /// With --idle-clients: a second store, with no idle clients, measured in turns with the
    /// one at --url (which gets them), `--rounds` times each: the machine's drift between
    /// runs falls on both alike. Give `--watch-pid` the --url store's pid, then this one's.
    #[arg(long, value_name = "URL", requires = "idle_clients")]
    pub baseline_url: Option<String>,
    /// With --baseline-url: runs on each store, in turns; the ratios are the medians of the
    /// rounds' ratios.
    #[arg(long, default_value_t = 5, requires = "baseline_url")]
    pub rounds: usize,
    /// The clients read through their cache (`cache=true`, room for every key): repeated
    /// GETs answer from memory, kept fresh by notifications. Prints how many reads reached
    /// the store.
    #[arg(long)]
    pub cache: bool,
    /// Alternate runs without and with the cache this many times each and print both with
    /// the ratio (medians).
    #[arg(long, value_name = "ROUNDS")]
    pub cache_compare: Option<usize>,
    /// Instead of load: time how long another client's acknowledged SET takes to reach a
    /// cached reader (from the writer's acknowledgement to the first read of the new value
    /// from the reader's cache), this many SETs, one at a time; prints the percentiles.
    #[arg(long, value_name = "WRITES")]
    pub cache_visibility: Option<usize>,
}

/// One run against the state store through the mqstate client.
async fn run_mqstate(args: &BenchArgs) -> anyhow::Result<RunResult> {
    run_mqstate_at(args, &args.url).await
}

/// [`run_mqstate`] against the store at `url`.
async fn run_mqstate_at(args: &BenchArgs, url: &str) -> anyhow::Result<RunResult> {
    Ok(run_clients(args, url, args.cache).await?.0)
}

/// One run against the store at `url`, the clients with their cache on when `cache`; with
/// it, the clients' summed cache counters over the run (its warm-up included).
async fn run_clients(
    args: &BenchArgs,
    url: &str,
    cache: bool,
) -> anyhow::Result<(RunResult, Option<CacheStats>)> {
    let settings = ConnectionSettings::from_url(url)?;
    let options = ClientOptions {
        cache: cache.then(|| CacheOptions {
            max_entries: args.keys.max(DEFAULT_CACHE_MAX_ENTRIES),
            ..CacheOptions::default()
        }),
        ..ClientOptions::default()
    };
    let mut clients = Vec::new();
    for _ in 0..args.clients {
        clients.push(
            Client::connect_with(settings.clone(), options.clone())
                .await
                .context("connecting")?,
        );
    }
    let value = Arc::new(vec![b'v'; args.value_size]);
    let keys: Arc<Vec<String>> = Arc::new(
        (0..args.keys.max(1))
            .map(|k| format!("bench/{k}"))
            .collect(),
    );
    let persist = args.persist;
    // The first fill: every connection SETs its share of the keys, one at a time each.
    let mut fill = tokio::task::JoinSet::new();
    for (c, client) in clients.iter().enumerate() {
        let (client, keys, value) = (client.clone(), keys.clone(), value.clone());
        let stride = args.clients.max(1);
        fill.spawn(async move {
            let options = SetOptions {
                persist,
                ..SetOptions::default()
            };
            for key in keys.iter().skip(c).step_by(stride) {
                client.set(key, &value[..], options.clone()).await?;
            }
            Ok::<_, mqstate::Error>(())
        });
    }
    while let Some(filled) = fill.join_next().await {
        filled.context("filling the keys")??;
    }
    let set_percent = u64::from(args.set_percent.min(100));
    let clients = Arc::new(clients);
    let counted = clients.clone();
    let op: Op = Arc::new(move |i| {
        let (clients, keys, value) = (clients.clone(), keys.clone(), value.clone());
        Box::pin(async move {
            let client = &clients[(i as usize) % clients.len()];
            let key = &keys[(i as usize / clients.len()) % keys.len()];
            if (i.wrapping_mul(2_654_435_761) >> 7) % 100 < set_percent {
                let options = SetOptions {
                    persist,
                    ..SetOptions::default()
                };
                client.set(key, &value[..], options).await.is_ok()
            } else {
                client.get(key).await.is_ok()
            }
        })
    });
    let result = drive(
        "mqstate",
        args.clients * args.depth,
        args.warmup,
        args.duration,
        op,
        &args.watch_pids,
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

/// One run of the mqstate client against an instant in-process responder.
async fn run_echo(args: &BenchArgs) -> anyhow::Result<RunResult> {
    let settings = ConnectionSettings::from_url(&args.url)?;
    let _echo = StoreEcho::start(&settings.host, settings.port).await?;
    run_mqstate(args).await
}

/// One run of the raw rumqttc request/response pair.
async fn run_raw(args: &BenchArgs) -> anyhow::Result<RunResult> {
    let settings = ConnectionSettings::from_url(&args.url)?;
    let mut pairs = Vec::new();
    for n in 0..args.clients {
        pairs.push(RawPair::start(&settings.host, settings.port, n, args.raw_full_envelope).await?);
    }
    let pairs = Arc::new(pairs);
    let payload = bytes::Bytes::from(vec![b'v'; args.value_size]);
    let op: Op = Arc::new(move |i| {
        let (pairs, payload) = (pairs.clone(), payload.clone());
        Box::pin(async move { pairs[(i as usize) % pairs.len()].request(payload).await })
    });
    Ok(drive(
        "raw",
        args.clients * args.depth,
        args.warmup,
        args.duration,
        op,
        &args.watch_pids,
    )
    .await)
}

/// Resident set size of this process, in KiB.
fn rss_kib() -> u64 {
    rss_kib_of("self")
}

/// Resident set size of a process, in KiB (0 when it cannot be read).
fn rss_kib_of(pid: &str) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1).and_then(|v| v.parse().ok()))
        })
        .unwrap_or(0)
}

/// The load with no idle clients, then with `n` of them (and, for online ones, after they
/// leave), side by side in one run; with `--watch-pid`, the watched processes' memory per
/// idle client.
async fn with_idle_clients(args: &BenchArgs, n: usize) -> anyhow::Result<()> {
    let settings = ConnectionSettings::from_url(&args.url)?;
    let rss = || -> Vec<u64> {
        args.watch_pids
            .iter()
            .map(|p| rss_kib_of(&p.to_string()))
            .collect()
    };
    let before = run_mqstate(args).await?;
    let rss_before = rss();
    let prefix = format!("mqstate-bench-idle-{}", std::process::id());
    let idle =
        IdleClients::start(&settings.host, settings.port, &prefix, n, args.idle_mode).await?;
    // Let the broker settle (sessions stored, disconnects processed) before measuring.
    tokio::time::sleep(Duration::from_secs(1)).await;
    let rss_idle = rss();
    let during = run_mqstate(args).await?;
    let label = args.idle_mode.label();
    outln!("no idle clients       {before}");
    outln!("{n} {label:<9} idle {during}");
    let (ops, p50) = speed_ratios(&before, &during);
    outln!(
        "ratio                 {ops:.2}x the ops/s, {p50:.2}x the p50 with {n} {label} idle clients"
    );
    if let Some(line) = relative_cost(&before, &during) {
        outln!("{line}");
    }
    for ((pid, b), i) in args.watch_pids.iter().zip(&rss_before).zip(&rss_idle) {
        outln!(
            "memory of {pid}: {b} KiB before, {i} KiB with the idle clients ({:.1} KiB per idle client)",
            i.saturating_sub(*b) as f64 / idle.count.max(1) as f64
        );
    }
    if args.idle_mode == IdleMode::Online {
        idle.close();
        tokio::time::sleep(Duration::from_secs(1)).await;
        let after = run_mqstate(args).await?;
        outln!("after they left       {after}");
    }
    Ok(())
}

/// The ops/s and the p50 of `after` over those of `before`.
fn speed_ratios(before: &RunResult, after: &RunResult) -> (f64, f64) {
    (
        after.ops_per_sec / before.ops_per_sec.max(f64::MIN_POSITIVE),
        f64::from(after.p50_us) / f64::from(before.p50_us.max(1)),
    )
}

/// The first watched process's CPU per request over the bench's own, in `after` against
/// `before`, as the line `per request …`; `None` without a watched process or /proc.
///
/// The ops/s of two runs a few seconds apart compare the machine as much as the store: on a
/// shared 2-core host both processes' CPU per request moved together by up to 40 % between
/// such runs (the store's 233 → 326 µs while the bench's went 117 → 163: 0.73x the ops/s,
/// the same cost). The bench does the same work per request in both runs, so its own CPU per
/// request measures the machine's speed; the store's over it is what the store's state (its
/// idle clients, its sessions) can change. CPU time is the processes' own: a busy machine
/// that gives them less of its cores changes their ops/s, not this.
fn relative_cost(before: &RunResult, after: &RunResult) -> Option<String> {
    let (store, own) = cost_factors(before, 1, after, 1)?;
    Some(format!(
        "per request           the store's CPU {store:.2}x, the bench's own {own:.2}x: the store's cost {:.2}x of the bench's",
        store / own
    ))
}

/// The store's CPU per request in `after` over `before` (the watched process at index `a` of
/// `after`'s list, `b` of `before`'s: 1 for the first watched one, 0 being the bench), and the
/// bench's own; `None` where either was not measured.
fn cost_factors(before: &RunResult, b: usize, after: &RunResult, a: usize) -> Option<(f64, f64)> {
    let per_op = |r: &RunResult, i: usize| r.cpu_us_per_op.get(i).map(|(_, us)| *us);
    let (store_b, store_a) = (per_op(before, b)?, per_op(after, a)?);
    let (own_b, own_a) = (per_op(before, 0)?, per_op(after, 0)?);
    if [store_b, store_a, own_b, own_a]
        .iter()
        .any(|v| !v.is_finite() || *v <= 0.0)
    {
        return None;
    }
    Some((store_a / store_b, own_a / own_b))
}

/// Runs the benchmark.
pub async fn run(args: BenchArgs) -> anyhow::Result<()> {
    anyhow::ensure!(
        args.clients >= 1 && args.depth >= 1,
        "--clients and --depth must be at least 1"
    );
    if let Some(n) = args.observe_keys {
        if args.cache {
            return memory::cached(&args, n).await;
        }
        return memory::observed(&args, n).await;
    }
    if let Some(n) = args.cache_visibility {
        return cached::visibility(&args, n).await;
    }
    if let Some(n) = args.scan_keys {
        return scan::run(&args, n).await;
    }
    outln!(
        "{} client(s) x {} outstanding, {}% SET, {}-byte values, {:?} per run",
        args.clients,
        args.depth,
        args.set_percent,
        args.value_size,
        args.duration
    );
    if let Some(rounds) = args.cache_compare {
        return cached::compare(&args, rounds).await;
    }
    if args.cache && args.compare.is_none() && args.idle_clients.is_none() {
        anyhow::ensure!(
            args.target == "mqstate",
            "--cache measures the mqstate target"
        );
        let (result, stats) = run_clients(&args, &args.url, true).await?;
        outln!("cached   {result}");
        if let Some(s) = stats {
            outln!("{}", cached::store_reads(&s));
        }
        return Ok(());
    }
    if let Some(n) = args.idle_clients {
        anyhow::ensure!(
            args.compare.is_none() && args.target == "mqstate",
            "--idle-clients measures the mqstate target alone: drop --compare and --target"
        );
        if let Some(baseline) = &args.baseline_url {
            return side_by_side::run(&args, n, baseline).await;
        }
        return with_idle_clients(&args, n).await;
    }
    match args.compare {
        None => {
            let result = match args.target.as_str() {
                "raw" => run_raw(&args).await?,
                "mqstate" => run_mqstate(&args).await?,
                "echo" => run_echo(&args).await?,
                other => anyhow::bail!("--target must be mqstate, raw or echo, not {other:?}"),
            };
            outln!("{:<8} {result}", args.target);
        }
        Some(rounds) => {
            let (mut raw, mut ours) = (Vec::new(), Vec::new());
            for round in 1..=rounds.max(1) {
                errln!("round {round}");
                raw.push(run_raw(&args).await?);
                ours.push(match args.target.as_str() {
                    "echo" => run_echo(&args).await?,
                    _ => run_mqstate(&args).await?,
                });
            }
            let median = |mut v: Vec<RunResult>| {
                v.sort_by(|a, b| a.ops_per_sec.total_cmp(&b.ops_per_sec));
                v[v.len() / 2].clone()
            };
            let (raw, ours) = (median(raw), median(ours));
            outln!("raw      {raw}");
            outln!("{:<8} {ours}", args.target);
            outln!(
                "ratio    {:.2}x of raw throughput (median of {rounds} alternating runs)",
                ours.ops_per_sec / raw.ops_per_sec
            );
        }
    }
    Ok(())
}
