//! Log output for every subcommand: `tracing` lines on stderr, filtered by `-v` or
//! `RUST_LOG`, coloured only on a terminal (and not with `NO_COLOR`).

use tracing_subscriber::EnvFilter;

/// How chatty a command is by default.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// `serve`: its own start-up and shutdown lines; the embedded broker's chatter only
    /// with `-v`.
    Serve,
    /// Commands whose output is their own (client commands, demo, bench): warnings only.
    Quiet,
}

impl Mode {
    /// The mode of a command.
    pub fn of(command: &crate::Command) -> Mode {
        match command {
            crate::Command::Serve(_) => Mode::Serve,
            _ => Mode::Quiet,
        }
    }
}

/// How log lines are written (`mqstate serve --log-format`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// One human-readable line per event: time, level, target, message, fields.
    #[default]
    Text,
    /// One JSON object per line, for log collectors: `timestamp`, `level`, `target`,
    /// `message` and the event's fields at the top level, the current span as `span` and
    /// every open span as `spans`.
    Json,
}

/// Installs the subscriber: `warn` by default (plus mqstate's own `info` lines for
/// `serve`), `debug` for mqstate crates with `-v` (one line per request, and the broker's
/// `info`), `trace` everywhere with `-vv`. `RUST_LOG` overrides.
pub fn init(verbose: u8, mode: Mode, format: Format) {
    let default = match verbose {
        0 if mode == Mode::Quiet => "warn",
        // The binary's own modules log as `mqstate::<module>`; the store's start/stop lines
        // come from `mqstate_server::server`; the embedded broker (`mqstate_server::embedded`,
        // `mqtt5`) stays quiet.
        0 => "warn,mqstate::serve=info,mqstate_server::server=info",
        1 => "info,mqstate=debug,mqstate_server=debug",
        _ => "trace",
    };
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(default));
    if format == Format::Json {
        tracing_subscriber::fmt()
            .json()
            .flatten_event(true)
            .with_env_filter(filter)
            .with_writer(std::io::stderr)
            .log_internal_errors(false)
            .init();
        return;
    }
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(crate::output::stderr_colour())
        // A closed stderr (`2>&1 | head`) must not end the process: tracing-subscriber
        // would report the failed write with `eprintln!`, which panics on that stderr.
        .log_internal_errors(false)
        .init();
}
