//! The `mqstate` command line: a redis-cli for the state store (`get`, `set`, `del`,
//! `vdel`, `keys`, `watch`, `lock`, `leader`, `ping`), the local state store (`serve`), a
//! walkthrough (`demo`), a load tool (`bench`), the settings table (`settings`) and shell
//! completions (`completions`).
//!
//! Exit codes: 0 ok, 1 key missing / condition not met, 2 usage, 3 store or RPC error
//! (including "no state store answered"), 4 connection failure. Errors are printed here,
//! with `Display`, so `RUST_BACKTRACE` never turns one into a backtrace. A closed stdout
//! (`| head`) ends any command quietly with exit 0.
//!
//! No flag is ignored: the connection and output flags are global (clap), so a command that
//! does not connect as a client (`serve`, `demo`, `bench`, `settings`, `completions`)
//! refuses the ones it does not use ([`refuse_unused_flags`]).

use std::io::Write;
use std::process::ExitCode;

use clap::parser::ValueSource;
use clap::{ArgMatches, CommandFactory, FromArgMatches, Parser, Subcommand};

/// `println!` that ends the process quietly when stdout is a closed pipe.
macro_rules! outln {
    () => {
        $crate::output::print_or_exit(&mut std::io::stdout(), format_args!("\n"))
    };
    ($($arg:tt)*) => {
        $crate::output::print_or_exit(&mut std::io::stdout(), format_args!("{}\n", format_args!($($arg)*)))
    };
}

mod bench;
mod conn;
mod demo;
mod failure;
mod http;
mod keys;
mod kv;
mod lock_cmd;
mod logging;
mod output;
mod serve;
mod shutdown;
mod watch;

use failure::{CliResult, Failure};

/// mimalloc, not the C library's malloc, for the whole process (issue 49): `serve` holds
/// long-lived sessions among the short-lived buffers of connections that come and go, and
/// under glibc's malloc the holes that 10,000 closed connections leave made every later
/// request slower (malloc_consolidate and unlink_chunk were a tenth of the store's time).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// mqstate: a client and a local emulator of the Azure IoT Operations MQTT5 state store.
#[derive(Debug, Parser)]
#[command(
    name = "mqstate",
    version,
    about,
    after_help = "Durations take their unit: 250ms, 1.5s, 2m (a bare number is refused).\n\
                  Exit codes: 0 ok, 1 key missing or condition not met, 2 usage, \
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
    Serve(Box<serve::ServeArgs>),
    /// Start an embedded state store and walk through the API (needs nothing installed).
    Demo(demo::DemoArgs),
    /// Load a state store: N clients x M outstanding requests of a SET/GET mix; ops/s and
    /// latency percentiles (--cache: through the clients' cache).
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
    if f.quiet {
        return;
    }
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

/// The global flags (connection and output) by clap id, as people type them.
const GLOBAL_FLAGS: [(&str, &str); 17] = [
    ("url", "--url"),
    ("env", "--env"),
    ("host", "--host"),
    ("port", "-p/--port"),
    ("tls", "--tls"),
    ("ca_file", "--ca-file"),
    ("cert_file", "--cert-file"),
    ("key_file", "--key-file"),
    ("username", "-u/--username"),
    ("password_file", "--password-file"),
    ("sat_file", "--sat-file"),
    ("client_id", "--client-id"),
    ("connect_timeout", "--connect-timeout"),
    ("timeout", "--timeout"),
    ("options", "-o/--option"),
    ("json", "--json"),
    ("raw", "--raw"),
];

/// Refuses the global flags given on the command line to a command that does not use them
/// (an environment variable such as `MQSTATE_URL` is not refused: it is not addressed to
/// one command). `own` are the ids the command defines itself or honours.
fn refuse_unused_flags(matches: &ArgMatches) -> CliResult<()> {
    let Some((name, sub)) = matches.subcommand() else {
        return Ok(());
    };
    let own: &[&str] = match name {
        "serve" => &["username", "ca_file", "password_file", "port"],
        "demo" | "bench" => &["url"],
        "settings" | "completions" => &[],
        _ => return Ok(()),
    };
    let given = |id: &str| sub.value_source(id) == Some(ValueSource::CommandLine);
    for (id, flag) in GLOBAL_FLAGS {
        if own.contains(&id) || !given(id) {
            continue;
        }
        let failure = Failure::usage(format!(
            "`mqstate {name}` does not take {flag}: it is a flag of the client commands \
             (get, set, keys, watch, …)"
        ));
        return Err(match (name, id) {
            ("serve", "url") => failure.hint(
                "to serve the store through an existing broker use `serve --broker URL`; \
                 to choose where the embedded broker listens use --listen PORT or HOST:PORT",
            ),
            ("serve", "host") => {
                failure.hint("the embedded broker listens where --listen HOST:PORT says")
            }
            ("serve", "tls" | "cert_file" | "key_file") => {
                failure.hint("the embedded broker listens with TLS given --tls-cert and --tls-key")
            }
            _ => failure,
        });
    }
    Ok(())
}

fn run(cli: Cli) -> CliResult {
    match cli.command {
        Command::Settings => {
            let mut text = String::new();
            for row in mqstate::SETTINGS {
                let env = row.env.map(|e| format!(" (${e})")).unwrap_or_default();
                text.push_str(&format!(
                    "{:<20} {:?}{env}: {}\n",
                    row.name, row.value, row.description
                ));
            }
            output::write_stdout(text.as_bytes())?;
            return Ok(failure::OK);
        }
        Command::Completions { shell } => {
            let mut script = Vec::new();
            clap_complete::generate(shell, &mut Cli::command(), "mqstate", &mut script);
            output::write_stdout(&script)?;
            return Ok(failure::OK);
        }
        _ => {}
    }
    let log_format = match &cli.command {
        Command::Serve(a) => a.log_format(),
        _ => logging::Format::Text,
    };
    logging::init(cli.verbose, logging::Mode::of(&cli.command), log_format);
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
            Command::Serve(a) => serve::serve(*a, cli.conn.port.as_deref()).await,
            Command::Demo(a) => demo::run(a).await.map(|()| 0).map_err(|e| from_anyhow(&e)),
            Command::Bench(a) => bench::run(a).await.map(|()| 0).map_err(|e| from_anyhow(&e)),
            Command::Settings | Command::Completions { .. } => Ok(failure::OK),
        }
    })
}

fn main() -> ExitCode {
    // clap prints usage errors itself (exit 2) and help/version (exit 0); never a backtrace.
    let matches = Cli::command().get_matches();
    let cli = Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit());
    match refuse_unused_flags(&matches).and_then(|()| run(cli)) {
        Ok(code) => ExitCode::from(code),
        Err(f) => {
            print_failure(&f);
            ExitCode::from(f.code)
        }
    }
}
