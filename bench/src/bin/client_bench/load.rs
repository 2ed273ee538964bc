//! `client-bench load`: the load of `mqstate bench`, with the watched processes' CPU per
//! request (`--watch-pid`), against the broker's own limit (`--target raw`: a bare rumqttc
//! request/response pair through the same broker; `--compare N` alternates it with the
//! client) or the client's own overhead (`--target echo`: an instant in-process responder),
//! or with and without the clients' cache in turns (`--cache-compare N`).

use std::future::Future;
use std::sync::Arc;

use mqstate::{CacheStats, ConnectionSettings};
use mqstate_cli::load::mix::{Mix, cache_line};
use mqstate_cli::load::{Op, RunResult, drive};

use crate::cached;
use crate::raw::{RawPair, StoreEcho};

/// Arguments of `client-bench load`.
#[derive(Debug, clap::Args)]
pub struct LoadArgs {
    /// The load, as `mqstate bench` takes it.
    #[command(flatten)]
    pub mix: Mix,
    /// Also report the CPU time per request of this process (e.g. the broker, the store)
    /// over each measured window; repeatable.
    #[arg(long = "watch-pid", value_name = "PID")]
    pub watch_pids: Vec<u32>,
    /// What to load: `mqstate` (the client and a state store), `raw` (a bare rumqttc
    /// request/response pair through the same broker, answering instantly) or `echo` (the
    /// client against an in-process responder that answers instantly: the client's own
    /// overhead; use a broker with no state store behind it).
    #[arg(long, default_value = "mqstate")]
    pub target: String,
    /// Alternate raw and mqstate (or echo) runs this many times each and print both with the
    /// ratio (medians).
    #[arg(long, value_name = "ROUNDS")]
    pub compare: Option<usize>,
    /// Give the raw pair the state store's full request envelope (spec §2 user properties,
    /// content type, expiry), to separate the protocol's cost from the client's.
    #[arg(long)]
    pub raw_full_envelope: bool,
    /// The clients read through their cache, as `mqstate bench --cache`.
    #[arg(long)]
    pub cache: bool,
    /// Alternate runs without and with the cache this many times each and print both with
    /// the ratio (medians).
    #[arg(long, value_name = "ROUNDS", conflicts_with_all = ["cache", "compare"])]
    pub cache_compare: Option<usize>,
}

/// The run with the median throughput of `runs` (its latencies and CPU come with it).
fn median(mut runs: Vec<RunResult>) -> RunResult {
    runs.sort_by(|a, b| a.ops_per_sec.total_cmp(&b.ops_per_sec));
    runs[runs.len() / 2].clone()
}

/// Runs `first` then `second`, `rounds` times each in turns (the machine's drift falls on
/// both alike): the median run of each, and the cache counters of `second`'s last run.
pub async fn alternate<F, S>(
    rounds: usize,
    mut first: impl FnMut() -> F,
    mut second: impl FnMut() -> S,
) -> anyhow::Result<(RunResult, RunResult, Option<CacheStats>)>
where
    F: Future<Output = anyhow::Result<RunResult>>,
    S: Future<Output = anyhow::Result<(RunResult, Option<CacheStats>)>>,
{
    let (mut a, mut b, mut last) = (Vec::new(), Vec::new(), None);
    for round in 1..=rounds.max(1) {
        eprintln!("round {round}");
        a.push(first().await?);
        let (run, stats) = second().await?;
        b.push(run);
        last = stats;
    }
    Ok((median(a), median(b), last))
}

/// One run of the mqstate client (through its cache with `--cache`, then with the clients'
/// cache counters).
async fn run_mqstate(args: &LoadArgs) -> anyhow::Result<(RunResult, Option<CacheStats>)> {
    args.mix
        .run(&args.mix.url, args.cache, &args.watch_pids)
        .await
}

/// One run of the mqstate client against an instant in-process responder.
async fn run_echo(args: &LoadArgs) -> anyhow::Result<(RunResult, Option<CacheStats>)> {
    let settings = ConnectionSettings::from_url(&args.mix.url)?;
    let _echo = StoreEcho::start(&settings.host, settings.port).await?;
    run_mqstate(args).await
}

/// One run of the raw rumqttc request/response pair.
async fn run_raw(args: &LoadArgs) -> anyhow::Result<RunResult> {
    let mix = &args.mix;
    let settings = ConnectionSettings::from_url(&mix.url)?;
    let mut pairs = Vec::new();
    for n in 0..mix.clients {
        pairs.push(RawPair::start(&settings.host, settings.port, n, args.raw_full_envelope).await?);
    }
    let pairs = Arc::new(pairs);
    let payload = bytes::Bytes::from(vec![b'v'; mix.value_size]);
    let op: Op = Arc::new(move |i| {
        let (pairs, payload) = (pairs.clone(), payload.clone());
        Box::pin(async move { pairs[(i as usize) % pairs.len()].request(payload).await })
    });
    Ok(drive(
        "raw",
        mix.clients * mix.depth,
        mix.warmup,
        mix.duration,
        op,
        &args.watch_pids,
    )
    .await)
}

/// One run of `--target`, with the clients' cache counters when they read through it.
async fn run_target(args: &LoadArgs) -> anyhow::Result<(RunResult, Option<CacheStats>)> {
    match args.target.as_str() {
        "raw" => Ok((run_raw(args).await?, None)),
        "mqstate" => run_mqstate(args).await,
        "echo" => run_echo(args).await,
        other => anyhow::bail!("--target must be mqstate, raw or echo, not {other:?}"),
    }
}

/// Runs `client-bench load`.
pub async fn run(args: LoadArgs) -> anyhow::Result<()> {
    args.mix.check()?;
    anyhow::ensure!(
        !args.cache || args.target == "mqstate",
        "--cache measures the mqstate target"
    );
    println!("{}", args.mix);
    if let Some(rounds) = args.cache_compare {
        anyhow::ensure!(
            args.target == "mqstate",
            "--cache-compare measures the mqstate target alone: drop --target"
        );
        return cached::compare(&args, rounds).await;
    }
    let label = if args.cache { "cached" } else { &args.target };
    let stats = match args.compare {
        None => {
            let (result, stats) = run_target(&args).await?;
            println!("{label:<8} {result}");
            stats
        }
        Some(rounds) => {
            anyhow::ensure!(
                args.target != "raw",
                "--compare alternates raw runs with --target mqstate or echo"
            );
            let (raw, ours, last) =
                alternate(rounds, || run_raw(&args), || run_target(&args)).await?;
            println!("raw      {raw}");
            println!("{label:<8} {ours}");
            println!(
                "ratio    {:.2}x of raw throughput (median of {rounds} alternating runs)",
                ours.ops_per_sec / raw.ops_per_sec
            );
            last
        }
    };
    if let Some(s) = stats {
        println!("{}", cache_line(&s));
    }
    Ok(())
}
