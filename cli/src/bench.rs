//! `mqstate bench`: a closed-loop load generator against a state store. N clients each keep
//! M requests outstanding for a duration, with a chosen mix of SET and GET over a set of
//! keys; prints ops/s, latency percentiles and the client's CPU per request, with a progress
//! line every second. With `--cache` the clients read through their cache and it prints how
//! many reads reached the store.
//!
//! The load itself is the library's ([`mqstate_cli::load::mix`]); the project's own
//! measuring modes (idle clients, a baseline store, raw pairs, memory, SCAN) are the
//! benchmark crate's `client-bench` (`bench/run list`).

use mqstate_cli::load::mix::{Mix, cache_line};

/// Arguments of `mqstate bench`.
#[derive(Debug, clap::Args)]
pub struct BenchArgs {
    /// The load: store, connections, depth, duration, mix, values and keys.
    #[command(flatten)]
    pub mix: Mix,
    /// The clients read through their cache (`cache=true`, room for every key): repeated
    /// GETs answer from memory, kept fresh by notifications. Prints how many reads reached
    /// the store.
    #[arg(long)]
    pub cache: bool,
}

/// Runs the benchmark.
pub async fn run(args: BenchArgs) -> anyhow::Result<()> {
    let BenchArgs { mix, cache } = args;
    mix.check()?;
    outln!("{mix}");
    let (result, stats) = mix.run(&mix.url, cache, &[]).await?;
    outln!("{:<8} {result}", if cache { "cached" } else { "mqstate" });
    if let Some(s) = stats {
        outln!("{}", cache_line(&s));
    }
    Ok(())
}
