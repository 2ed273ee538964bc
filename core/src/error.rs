//! The one error type of mqstate.
//!
//! Every fallible call in the core returns [`Error`]. Callers (and the Python, Node and C
//! bindings) branch on [`Error::kind`], never on the message text: the kind is stable, the
//! message is for humans. Errors sent by the state store service keep their exact text in
//! the message, so nothing the service said is lost.

use std::borrow::Cow;
use std::fmt;

use crate::codec::StoreErrorKind;

/// What went wrong, in a form a program can branch on.
///
/// The list grows as mqstate grows; match it with a wildcard arm.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// The caller passed a value the protocol cannot carry (an empty key, a zero expiry, a
    /// forbidden response topic, a node id containing `:` …). Nothing was sent.
    InvalidArgument,
    /// Bytes received from the wire (a payload, a topic, a timestamp) do not follow the
    /// protocol. The message says where the input went wrong.
    Malformed,
    /// A hybrid logical clock would move further ahead of the local time than the maximum
    /// drift allows (spec §5.3).
    ClockDrift,
    /// A hybrid logical clock's counter would overflow (spec §5.3: never wraps).
    ClockOverflow,
    /// The state store service answered with a store error (`-ERR …`, spec §4). The
    /// message is the service's exact text.
    Store(StoreErrorKind),
    /// The RPC layer refused the request: a response `__stat` other than 200/204
    /// (spec §2). The status is kept; the message is `__stMsg`.
    Rpc(u16),
    /// No response arrived within the request's timeout (or a wait ran out).
    Timeout,
    /// The connection (and with it the MQTT session) was lost while the request was in
    /// flight, or the client is not connected; the request may or may not have been applied.
    ConnectionLost,
    /// Connecting to the broker failed (refused, TLS, authentication, bad address).
    Connect,
    /// The client (or the object) was shut down or dropped.
    Closed,
}

impl ErrorKind {
    /// A stable, lower-case identifier for this kind, shared by every language binding
    /// (Python exception attribute `code`, JavaScript `err.code`, C enum names).
    pub fn code(self) -> &'static str {
        match self {
            ErrorKind::InvalidArgument => "invalid_argument",
            ErrorKind::Malformed => "malformed",
            ErrorKind::ClockDrift => "clock_drift",
            ErrorKind::ClockOverflow => "clock_overflow",
            ErrorKind::Store(StoreErrorKind::Unknown) => "unknown_store_error",
            ErrorKind::Store(kind) => kind.as_str(),
            ErrorKind::Rpc(_) => "rpc_error",
            ErrorKind::Timeout => "timeout",
            ErrorKind::ConnectionLost => "connection_lost",
            ErrorKind::Connect => "connect_failed",
            ErrorKind::Closed => "closed",
        }
    }
}

impl ErrorKind {
    /// Every kind except `Rpc`, whose status varies (its code is `rpc_error`): the list the
    /// bindings build their tables from.
    pub fn all() -> impl Iterator<Item = ErrorKind> {
        [
            ErrorKind::InvalidArgument,
            ErrorKind::Malformed,
            ErrorKind::ClockDrift,
            ErrorKind::ClockOverflow,
            ErrorKind::Timeout,
            ErrorKind::ConnectionLost,
            ErrorKind::Connect,
            ErrorKind::Closed,
        ]
        .into_iter()
        .chain(StoreErrorKind::ALL.into_iter().map(ErrorKind::Store))
    }
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.code())
    }
}

/// The error of every fallible mqstate call: a [`ErrorKind`] plus a human-readable message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Error {
    kind: ErrorKind,
    message: Cow<'static, str>,
}

impl Error {
    /// Builds an error of `kind` with a message.
    pub fn new(kind: ErrorKind, message: impl Into<Cow<'static, str>>) -> Self {
        Error {
            kind,
            message: message.into(),
        }
    }

    /// Shorthand for an [`ErrorKind::InvalidArgument`] error.
    pub fn invalid_argument(message: impl Into<Cow<'static, str>>) -> Self {
        Error::new(ErrorKind::InvalidArgument, message)
    }

    /// Shorthand for an [`ErrorKind::Malformed`] error.
    pub fn malformed(message: impl Into<Cow<'static, str>>) -> Self {
        Error::new(ErrorKind::Malformed, message)
    }

    /// What went wrong, for programs.
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }

    /// What went wrong, for people. For [`ErrorKind::Store`] this is the service's exact
    /// error text.
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.kind {
            ErrorKind::Store(_) => write!(f, "state store error: {}", self.message),
            _ => f.write_str(&self.message),
        }
    }
}

impl std::error::Error for Error {}

/// The result type of mqstate.
pub type Result<T, E = Error> = std::result::Result<T, E>;
