//! `client-bench`: the project's own measurements of the mqstate client and of a store under
//! its load, the modes that `mqstate bench` (the users' load tool) does not carry. Each
//! subcommand runs against a store at `--url` (a fresh `mqstate serve` unless it says
//! otherwise); `bench/run` starts them by name (`bench/run list`):
//!
//! ```text
//! client-bench load [LOAD] [--watch-pid PID]... [--cache | --cache-compare N]
//!                   [--target mqstate|raw|echo] [--raw-full-envelope] [--compare N]
//! client-bench idle [LOAD] --idle-clients N [--idle-mode online|abandoned|vanished]
//!                   [--watch-pid PID]... [--baseline-url URL [--rounds R]]
//! client-bench memory --url URL --keys N [--cache --value-size B]
//! client-bench scan --url URL --keys N [--value-size B] [--watch-pid PID]
//! client-bench cache-visibility --url URL --writes N
//! ```
//!
//! LOAD is the flags of `mqstate bench` (`--url`, `--clients`, `--depth`, `--duration`,
//! `--warmup`, `--set-percent`, `--persist`, `--value-size`, `--keys`): the same load, run by
//! the same code (`mqstate_cli::load::mix`). `--watch-pid` adds the CPU time per request of
//! the watched processes (the store, the broker) to each result line.

use clap::{Parser, Subcommand};

mod cached;
mod idle;
mod load;
mod memory;
mod raw;
mod scan;
mod side_by_side;
mod with_idle;

/// The project's measurements of the mqstate client and store (`bench/run list`).
#[derive(Debug, Parser)]
#[command(name = "client-bench")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// The load of `mqstate bench`, with the watched processes' CPU per request; against a
    /// raw rumqttc pair or an instant responder (`--target`, `--compare`), or with and
    /// without the clients' cache in turns (`--cache-compare`).
    Load(load::LoadArgs),
    /// The load with no idle clients, then with N of them (online, or gone with their
    /// sessions kept), or in turns against a second store without them (`--baseline-url`).
    Idle(with_idle::IdleArgs),
    /// The client's resident memory idle and observing N keys, or with N keys in its cache.
    Memory(memory::MemoryArgs),
    /// Fills the store with N keys, then times one full SCAN of them (keys/s, pages, memory).
    Scan(scan::ScanArgs),
    /// How long another client's acknowledged SET takes to reach a cached reader.
    CacheVisibility(cached::VisibilityArgs),
}

/// A `/proc/<pid>/status` field in KiB (`VmRSS:`, `VmHWM:`) of `pid`, or of this process for
/// `None`; 0 when it cannot be read.
fn status_kib(pid: Option<u32>, field: &str) -> u64 {
    let path = pid.map_or_else(
        || "/proc/self/status".to_owned(),
        |p| format!("/proc/{p}/status"),
    );
    std::fs::read_to_string(path)
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with(field))
                .and_then(|l| l.split_whitespace().nth(1).and_then(|v| v.parse().ok()))
        })
        .unwrap_or(0)
}

/// The resident set size of `pid` (this process for `None`), in KiB; 0 when unreadable.
fn rss_kib(pid: Option<u32>) -> u64 {
    status_kib(pid, "VmRSS:")
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    match Cli::parse().command {
        Command::Load(args) => load::run(args).await,
        Command::Idle(args) => with_idle::run(args).await,
        Command::Memory(args) => memory::run(args).await,
        Command::Scan(args) => scan::run(args).await,
        Command::CacheVisibility(args) => cached::visibility(args).await,
    }
}
