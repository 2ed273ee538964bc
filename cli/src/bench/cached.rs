//! `mqstate bench --cache-compare N`: the same mix without and with the clients' cache, in
//! turns, and the ratio of the medians; with the cache, how many reads reached the store.

use mqstate::CacheStats;
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
        "cache    {} reads: {} from memory, {} reached the store ({share:.2} %, the first read of each key included); {} invalidations, {} evictions",
        reads, s.hits, s.misses, s.invalidations, s.evictions
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
