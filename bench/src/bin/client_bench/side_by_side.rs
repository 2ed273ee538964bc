//! `client-bench idle --idle-clients N --baseline-url URL`: two stores of the same build, one
//! given the idle clients (`--url`) and one left without (`--baseline-url`), measured in
//! turns. Two runs of one store seconds apart compare the machine as much as the store (on a
//! shared host its speed moved by up to 40 % between them); runs in turns, with the ratio of
//! each round and their median, put the same drift on both sides.

use std::time::Duration;

use mqstate::ConnectionSettings;
use mqstate_cli::load::RunResult;

use crate::idle::IdleClients;
use crate::rss_kib;
use crate::with_idle::{IdleArgs, cost_factors, speed_ratios};

/// The median of `values` (the upper one of an even count); `None` when empty.
fn median(mut values: Vec<f64>) -> Option<f64> {
    values.retain(|v| v.is_finite());
    values.sort_by(f64::total_cmp);
    values.get(values.len() / 2).copied()
}

/// One round's ratios: ops/s and p50 of the store with the idle clients over the baseline's,
/// and (with both stores' pids watched) the store's CPU per request over the baseline's,
/// each relative to the bench's own in the same run.
fn round_ratios(with: &RunResult, baseline: &RunResult) -> (f64, f64, Option<f64>) {
    let (ops, p50) = speed_ratios(baseline, with);
    // `--watch-pid WITH --watch-pid BASELINE`: index 1 is the store at --url, 2 the baseline.
    let cost = cost_factors(baseline, 2, with, 1).map(|(store, own)| store / own);
    (ops, p50, cost)
}

/// Runs the side-by-side measurement.
pub async fn run(args: &IdleArgs, baseline: &str) -> anyhow::Result<()> {
    let (n, url) = (args.idle_clients, &args.mix.url);
    anyhow::ensure!(args.rounds >= 1, "--rounds must be at least 1");
    anyhow::ensure!(
        baseline != url,
        "--baseline-url must be another store than --url: the idle clients would be in both"
    );
    let settings = ConnectionSettings::from_url(url)?;
    let rss = |pid: Option<&u32>| pid.map(|p| rss_kib(Some(*p)));
    let rss_before = rss(args.watch_pids.first());
    let prefix = format!("mqstate-bench-idle-{}", std::process::id());
    let idle =
        IdleClients::start(&settings.host, settings.port, &prefix, n, args.idle_mode).await?;
    // Let the broker settle (sessions stored, disconnects processed) before measuring.
    tokio::time::sleep(Duration::from_secs(1)).await;
    let rss_idle = rss(args.watch_pids.first());
    let label = args.idle_mode.label();
    let (mut ops, mut p50s, mut costs) = (Vec::new(), Vec::new(), Vec::new());
    for round in 1..=args.rounds {
        let base = args.run_at(baseline).await?;
        let with = args.run_at(url).await?;
        let (o, p, c) = round_ratios(&with, &base);
        println!("round {round}: no idle clients  {base}");
        println!("round {round}: {n} {label:<9} {with}");
        match c {
            Some(c) => println!(
                "round {round}: {o:.2}x the ops/s, {p:.2}x the p50, the store's cost {c:.2}x"
            ),
            None => println!("round {round}: {o:.2}x the ops/s, {p:.2}x the p50"),
        }
        ops.push(o);
        p50s.push(p);
        costs.extend(c);
    }
    let (o, p) = (
        median(ops).unwrap_or(f64::NAN),
        median(p50s).unwrap_or(f64::NAN),
    );
    println!(
        "ratio                 {o:.2}x the ops/s, {p:.2}x the p50 with {n} {label} idle clients (medians of {} rounds in turns with a store without)",
        args.rounds
    );
    if let Some(c) = median(costs) {
        println!(
            "per request           the store's cost {c:.2}x the baseline store's, each relative to the bench's own (median)"
        );
    }
    if let (Some(pid), Some(b), Some(i)) = (args.watch_pids.first(), rss_before, rss_idle) {
        println!(
            "memory of {pid}: {b} KiB before, {i} KiB with the idle clients ({:.1} KiB per idle client)",
            i.saturating_sub(b) as f64 / idle.count.max(1) as f64
        );
    }
    drop(idle);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn result(ops: f64, p50: u32, cpu: &[(&str, f64)]) -> RunResult {
        RunResult {
            ops_per_sec: ops,
            p50_us: p50,
            p90_us: p50,
            p99_us: p50,
            errors: 0,
            cpu_us_per_op: cpu.iter().map(|(w, us)| ((*w).to_owned(), *us)).collect(),
            threads: Vec::new(),
        }
    }

    #[test]
    fn the_median_takes_the_middle_and_skips_what_is_not_a_number() {
        assert_eq!(median(vec![3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(vec![4.0, 1.0, 3.0, 2.0]), Some(3.0));
        assert_eq!(median(vec![f64::NAN, 1.0]), Some(1.0));
        assert_eq!(median(Vec::new()), None);
    }

    #[test]
    fn a_round_compares_the_store_with_the_baseline_at_the_machines_speed() {
        // The machine 20 % slower in the store's run: the bench's own CPU per request 1.2x,
        // the store's 1.2x: the same cost.
        let base = result(1000.0, 100, &[("self", 100.0), ("1", 999.0), ("2", 200.0)]);
        let with = result(800.0, 125, &[("self", 120.0), ("1", 240.0), ("2", 999.0)]);
        let (ops, p50, cost) = round_ratios(&with, &base);
        assert!((ops - 0.8).abs() < 1e-9);
        assert!((p50 - 1.25).abs() < 1e-9);
        assert!((cost.unwrap() - 1.0).abs() < 1e-9);
        // The store 50 % dearer per request at the same speed.
        let with = result(700.0, 140, &[("self", 100.0), ("1", 300.0), ("2", 999.0)]);
        assert!((round_ratios(&with, &base).2.unwrap() - 1.5).abs() < 1e-9);
        // Only one store watched: no cost.
        let base = result(1000.0, 100, &[("self", 100.0), ("1", 200.0)]);
        let with = result(1000.0, 100, &[("self", 100.0), ("1", 200.0)]);
        assert_eq!(round_ratios(&with, &base).2, None);
    }
}
