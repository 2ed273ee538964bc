//! What a command's failure means to the shell: one exit code per class of failure and a
//! message that names the cause. Errors are printed by `main` with `Display` (never
//! `Debug`, never a backtrace, whatever `RUST_BACKTRACE` says).

use std::fmt;

use mqstate::{Error, ErrorKind};

/// The command did what was asked.
pub const OK: u8 = 0;
/// The key is missing or a condition (NX, NEX, VDEL's value, a lock's holder) was not met.
pub const NOT_MET: u8 = 1;
/// The command line was wrong (clap exits with 2 on its own usage errors too).
pub const USAGE: u8 = 2;
/// The state store or its RPC layer refused or did not answer the request.
pub const STORE: u8 = 3;
/// The broker could not be reached (refused, timed out, bad credentials, TLS).
pub const CONNECT: u8 = 4;

/// A failed command: its exit code, a one-line message and optional hints.
#[derive(Debug)]
pub struct Failure {
    /// The process exit code.
    pub code: u8,
    /// What went wrong (first line).
    pub message: String,
    /// What to try next (printed below the message).
    pub hint: Option<String>,
    /// Nothing is printed: the reader of stdout went away ([`Failure::output_closed`]).
    pub quiet: bool,
}

impl Failure {
    /// A failure with `code` and `message`.
    pub fn new(code: u8, message: impl Into<String>) -> Failure {
        Failure {
            code,
            message: message.into(),
            hint: None,
            quiet: false,
        }
    }

    /// Stdout was closed by its reader (`mqstate keys '*' | head`): the command ends
    /// quietly, with exit code 0, as when it had printed everything.
    pub fn output_closed() -> Failure {
        Failure {
            quiet: true,
            ..Failure::new(OK, "")
        }
    }

    /// A usage error (exit code 2).
    pub fn usage(message: impl Into<String>) -> Failure {
        Failure::new(USAGE, message)
    }

    /// Adds a hint.
    pub fn hint(mut self, hint: impl Into<String>) -> Failure {
        self.hint = Some(hint.into());
        self
    }

    /// Classifies an error of the core for the broker at `target` (a URL for messages).
    pub fn from_core(e: &Error, target: &str) -> Failure {
        let kind = e.kind();
        match kind {
            ErrorKind::ConnectRefused => Failure::new(
                CONNECT,
                format!("connection to {target} refused: {}", e.message()),
            )
            .hint("is a broker or `mqstate serve` listening there? (--url, --host, --port)"),
            ErrorKind::ConnectTimeout => Failure::new(
                CONNECT,
                format!("connection to {target} timed out: {}", e.message()),
            )
            .hint("check the host and port, or raise --connect-timeout"),
            ErrorKind::ConnectUnauthorized => Failure::new(
                CONNECT,
                format!("the broker at {target} refused the credentials: {}", e.message()),
            )
            .hint("check --username / --password-file / --sat-file / --client-id"),
            ErrorKind::Tls => Failure::new(
                CONNECT,
                format!("TLS with {target} failed: {}", e.message()),
            )
            .hint("check --ca-file (the broker's CA), --cert-file / --key-file, and the host name"),
            _ if kind.is_connect() => Failure::new(
                CONNECT,
                format!("could not connect to {target}: {}", e.message()),
            ),
            ErrorKind::ConnectionLost => Failure::new(
                CONNECT,
                format!("the connection to {target} was lost: {}", e.message()),
            ),
            ErrorKind::NoStore => Failure::new(
                STORE,
                format!(
                    "no state store serves the broker at {target}: {} [{}]",
                    e.message(),
                    e.code()
                ),
            )
            .hint(
                "start `mqstate serve` (or `mqstate serve --broker URL` in front of this broker, \
                 or the Azure IoT Operations state store)",
            ),
            // The core's message says what the broker said of the request: routed to nobody,
            // passed on, or not acknowledged yet (a short timeout is not a missing store).
            ErrorKind::Timeout => Failure::new(
                STORE,
                format!("no answer from the state store at {target}: {}", e.message()),
            )
            .hint(
                "--timeout waits longer; is `mqstate serve` running (or `mqstate serve --broker URL` \
                 in front of this broker, or the Azure IoT Operations state store)?",
            ),
            ErrorKind::InvalidArgument => Failure::usage(e.to_string()),
            ErrorKind::Store(_) | ErrorKind::Rpc(_) => {
                Failure::new(STORE, format!("{e} [{}]", e.code()))
            }
            _ => Failure::new(STORE, format!("{e} [{}]", e.code())),
        }
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

/// Shorthand for command results.
pub type CliResult<T = u8> = Result<T, Failure>;
