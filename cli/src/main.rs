//! The `mqstate` command line. Each subcommand lives in its own module; `serve` runs the
//! local state store (embedded broker by default).

use clap::{Parser, Subcommand};

mod bench;
mod bench_raw;
mod demo;
mod logging;
mod serve;

/// mqstate: a client and a local emulator of the Azure IoT Operations MQTT5 state store.
#[derive(Debug, Parser)]
#[command(name = "mqstate", version, about)]
struct Cli {
    /// More log output: -v for one line per request, -vv for everything.
    #[arg(short, long, action = clap::ArgAction::Count, global = true)]
    verbose: u8,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run a local state store (with an embedded MQTT5 broker unless --broker is given).
    Serve(serve::ServeArgs),
    /// Start an embedded state store and walk through the API (needs nothing installed).
    Demo(demo::DemoArgs),
    /// Load a state store: N clients x M outstanding requests; ops/s and latency percentiles.
    Bench(bench::BenchArgs),
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    let quiet = matches!(cli.command, Command::Demo(_) | Command::Bench(_));
    logging::init(cli.verbose, quiet);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    match cli.command {
        Command::Serve(args) => runtime.block_on(serve::run(args)),
        Command::Demo(args) => runtime.block_on(demo::run(args)),
        Command::Bench(args) => runtime.block_on(bench::run(args)),
    }
}
