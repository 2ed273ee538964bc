//! The `mqstate` command line: a redis-cli for the state store (`get`, `set`, `del`,
//! `vdel`, `keys`, `watch`, `lock`, `leader`, `ping`), the local state store (`serve`), a
//! walkthrough (`demo`), a load tool (`bench`) and shell completions.
//!
//! Exit codes: 0 ok, 1 key missing / condition not met, 2 usage, 3 store or RPC error
//! (including "no state store answered"), 4 connection failure. Errors are printed here,
//! with `Display`, so `RUST_BACKTRACE` never turns one into a backtrace.

use std::io::Write;
use std::process::ExitCode;

use clap::{CommandFactory, Parser, Subcommand};

mod bench;
mod bench_raw;
mod conn;
mod demo;
mod failure;
mod keys;
mod kv;
mod lock_cmd;
mod logging;
mod output;
mod serve;
mod watch;

use failure::{CliResult, Failure};

/// mqstate: a client and a local emulator of the Azure IoT Operations MQTT5 state store.
#[derive(Debug, Parser)]
#[command(
    name = "mqstate",
    version,
    about,
    after_help = "Exit codes: 0 ok, 1 key missing or condition not met, 2 usage, \
                  3 store or RPC error (or no state store answered), 4 connection failure.\n\
                  Try: mqstate serve & mqstate set hello world && mqstate get hello"
)]
struct Cli {
    /// More log output: -v for one line per request, -vv for everything.
    #[arg(short, long, action = clap::ArgAction::Count, global = true)]
    verbose: u8,
    #[command(flatten)]
    conn: conn::ConnArgs,
    #[command(flatten)]
    output: output::OutputArgs,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Read a key: prints its value (exit 1 when missing).
    Get(kv::GetArgs),
    /// Write a key from an argument, --file or stdin (exit 1 when --nx / --nex fail).
    Set(kv::SetArgs),
    /// Delete a key (exit 1 when it did not exist).
    Del(kv::DelArgs),
    /// Delete a key only if it holds VALUE (exit 1 otherwise).
    Vdel(kv::VdelArgs),
    /// List the keys matching a glob pattern, one per line (like redis-cli --scan --pattern).
    Keys(keys::KeysArgs),
    /// Print every change of the keys as it happens, until Ctrl-C.
    Watch(watch::WatchArgs),
    /// Run a command while holding a lock (renewed), release it after; exits with the
    /// command's code.
    Lock(lock_cmd::LockArgs),
    /// Print the current leader of an election (or follow its changes).
    Leader(watch::LeaderArgs),
    /// Check that a state store answers: round trip times and what it reports.
    Ping(kv::PingArgs),
    /// Run a local state store (with an embedded MQTT5 broker unless --broker is given).
    Serve(serve::ServeArgs),
    /// Start an embedded state store and walk through the API (needs nothing installed).
    Demo(demo::DemoArgs),
    /// Load a state store: N clients x M outstanding requests; ops/s and latency percentiles.
    Bench(bench::BenchArgs),
    /// List every connection setting the -o NAME=VALUE flag (and --env) accepts.
    Settings,
    /// Print a shell completion script: mqstate completions bash > ~/.local/share/bash-completion/completions/mqstate
    Completions {
        /// The shell.
        shell: clap_complete::Shell,
    },
}

fn print_failure(f: &Failure) {
    let colour = output::stderr_colour();
    let (red, bold, reset) = if colour {
        ("\x1b[31m", "\x1b[1m", "\x1b[0m")
    } else {
        ("", "", "")
    };
    let mut err = std::io::stderr().lock();
    let _ = writeln!(err, "{bold}{red}mqstate: error:{reset} {}", f.message);
    if let Some(hint) = &f.hint {
        let _ = writeln!(err, "  hint: {hint}");
    }
}

/// The failure of a `serve` / `demo` / `bench` run: the whole cause chain on one line.
fn from_anyhow(e: &anyhow::Error) -> Failure {
    let connect = e.chain().any(|c| {
        c.downcast_ref::<mqstate::Error>()
            .is_some_and(|m| m.kind().is_connect())
    });
    let code = if connect {
        failure::CONNECT
    } else {
        failure::STORE
    };
    Failure::new(code, format!("{e:#}"))
}

fn run(cli: Cli) -> CliResult {
    match cli.command {
        Command::Settings => {
            for row in mqstate::SETTINGS {
                let env = row.env.map(|e| format!(" (${e})")).unwrap_or_default();
                println!("{:<20} {:?}{env}: {}", row.name, row.value, row.description);
            }
            return Ok(failure::OK);
        }
        Command::Completions { shell } => {
            clap_complete::generate(
                shell,
                &mut Cli::command(),
                "mqstate",
                &mut std::io::stdout(),
            );
            return Ok(failure::OK);
        }
        _ => {}
    }
    logging::init(cli.verbose, logging::Mode::of(&cli.command));
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| Failure::new(failure::STORE, format!("could not start the runtime: {e}")))?;
    let format = cli.output.format();
    let target = || cli.conn.target();
    runtime.block_on(async {
        match cli.command {
            Command::Get(a) => kv::get(&target()?, format, a).await,
            Command::Set(a) => kv::set(&target()?, format, a).await,
            Command::Del(a) => kv::del(&target()?, format, a).await,
            Command::Vdel(a) => kv::vdel(&target()?, format, a).await,
            Command::Keys(a) => keys::keys(&target()?, format, a).await,
            Command::Ping(a) => kv::ping(&target()?, format, a).await,
            Command::Watch(a) => watch::watch(&target()?, format, a).await,
            Command::Leader(a) => watch::leader(&target()?, format, a).await,
            Command::Lock(a) => lock_cmd::lock(&target()?, a).await,
            Command::Serve(a) => serve::run(a).await.map(|()| 0).map_err(|e| from_anyhow(&e)),
            Command::Demo(a) => demo::run(a).await.map(|()| 0).map_err(|e| from_anyhow(&e)),
            Command::Bench(a) => bench::run(a).await.map(|()| 0).map_err(|e| from_anyhow(&e)),
            Command::Settings | Command::Completions { .. } => Ok(failure::OK),
        }
    })
}

fn main() -> ExitCode {
    // clap prints usage errors itself (exit 2) and help/version (exit 0); never a backtrace.
    let cli = Cli::parse();
    match run(cli) {
        Ok(code) => ExitCode::from(code),
        Err(f) => {
            print_failure(&f);
            ExitCode::from(f.code)
        }
    }
}
