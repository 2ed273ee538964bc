//! `client-bench idle --idle-clients N`: the load with no idle clients, then while N idle
//! clients exist (each with the two subscriptions of an mqstate client: [`crate::idle`]), and
//! for online ones again after they leave; with `--baseline-url`, in turns against a second
//! store given none ([`crate::side_by_side`]).

use std::time::Duration;

use mqstate::ConnectionSettings;
use mqstate_cli::load::RunResult;
use mqstate_cli::load::mix::Mix;

use crate::idle::{IdleClients, IdleMode};
use crate::{rss_kib, side_by_side};

/// Arguments of `client-bench idle`.
#[derive(Debug, clap::Args)]
pub struct IdleArgs {
    /// The load, as `mqstate bench` takes it.
    #[command(flatten)]
    pub mix: Mix,
    /// Idle clients to hold during the second measurement.
    #[arg(long, value_name = "N")]
    pub idle_clients: usize,
    /// How the idle clients stay: `online` (connected), `abandoned` (disconnected with
    /// DISCONNECT, their sessions left in the broker for an hour) or `vanished` (their
    /// connections closed without DISCONNECT, sessions left for an hour).
    #[arg(long, value_enum, default_value = "online")]
    pub idle_mode: IdleMode,
    /// Also report the CPU time per request of this process (the store at --url, then the
    /// one at --baseline-url) over each measured window, and its memory per idle client;
    /// repeatable.
    #[arg(long = "watch-pid", value_name = "PID")]
    pub watch_pids: Vec<u32>,
    /// A second store, with no idle clients, measured in turns with the one at --url (which
    /// gets them), `--rounds` times each: the machine's drift between runs falls on both
    /// alike. Give `--watch-pid` the --url store's pid, then this one's.
    #[arg(long, value_name = "URL")]
    pub baseline_url: Option<String>,
    /// With --baseline-url: runs on each store, in turns; the ratios are the medians of the
    /// rounds' ratios.
    #[arg(long, default_value_t = 5, requires = "baseline_url")]
    pub rounds: usize,
}

impl IdleArgs {
    /// One run of the load against the store at `url`.
    pub async fn run_at(&self, url: &str) -> anyhow::Result<RunResult> {
        Ok(self.mix.run(url, false, &self.watch_pids).await?.0)
    }
}

/// Runs `client-bench idle`.
pub async fn run(args: IdleArgs) -> anyhow::Result<()> {
    args.mix.check()?;
    println!("{}", args.mix);
    match &args.baseline_url {
        Some(baseline) => side_by_side::run(&args, baseline).await,
        None => alone(&args).await,
    }
}

/// The load with no idle clients, then with them (and, for online ones, after they leave),
/// side by side in one run; with `--watch-pid`, the watched processes' memory per idle
/// client.
async fn alone(args: &IdleArgs) -> anyhow::Result<()> {
    let n = args.idle_clients;
    let url = &args.mix.url;
    let settings = ConnectionSettings::from_url(url)?;
    let rss = || -> Vec<u64> { args.watch_pids.iter().map(|p| rss_kib(Some(*p))).collect() };
    let before = args.run_at(url).await?;
    let rss_before = rss();
    let prefix = format!("mqstate-bench-idle-{}", std::process::id());
    let idle =
        IdleClients::start(&settings.host, settings.port, &prefix, n, args.idle_mode).await?;
    // Let the broker settle (sessions stored, disconnects processed) before measuring.
    tokio::time::sleep(Duration::from_secs(1)).await;
    let rss_idle = rss();
    let during = args.run_at(url).await?;
    let label = args.idle_mode.label();
    println!("no idle clients       {before}");
    println!("{n} {label:<9} idle {during}");
    let (ops, p50) = speed_ratios(&before, &during);
    println!(
        "ratio                 {ops:.2}x the ops/s, {p50:.2}x the p50 with {n} {label} idle clients"
    );
    if let Some(line) = relative_cost(&before, &during) {
        println!("{line}");
    }
    for ((pid, b), i) in args.watch_pids.iter().zip(&rss_before).zip(&rss_idle) {
        println!(
            "memory of {pid}: {b} KiB before, {i} KiB with the idle clients ({:.1} KiB per idle client)",
            i.saturating_sub(*b) as f64 / idle.count.max(1) as f64
        );
    }
    if args.idle_mode == IdleMode::Online {
        idle.close();
        tokio::time::sleep(Duration::from_secs(1)).await;
        let after = args.run_at(url).await?;
        println!("after they left       {after}");
    }
    Ok(())
}

/// The ops/s and the p50 of `after` over those of `before`.
pub fn speed_ratios(before: &RunResult, after: &RunResult) -> (f64, f64) {
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
pub fn cost_factors(
    before: &RunResult,
    b: usize,
    after: &RunResult,
    a: usize,
) -> Option<(f64, f64)> {
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
