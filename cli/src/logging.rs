//! Log output for every subcommand: `tracing` lines on stderr, filtered by `-v` or
//! `RUST_LOG`.

use tracing_subscriber::EnvFilter;

/// Installs the subscriber: `info` by default (`warn` for `quiet` commands such as the
/// demo, whose output is their own), `debug` for mqstate crates with `-v` (one line per
/// request), `trace` everywhere with `-vv`. `RUST_LOG` overrides.
pub fn init(verbose: u8, quiet: bool) {
    let default = match verbose {
        0 if quiet => "warn",
        0 => "info",
        1 => "info,mqstate=debug,mqstate_server=debug,mqstate_cli=debug",
        _ => "trace",
    };
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(default));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .init();
}
