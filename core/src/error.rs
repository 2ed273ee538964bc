//! The one error type of mqstate.
//!
//! Every fallible call in the core returns [`Error`]. Callers (and the Python, Node, C and
//! Kotlin bindings) branch on [`Error::kind`], never on the message text: the kind is
//! stable, the message is for humans. Errors sent by the state store service keep their
//! exact text in the message, so nothing the service said is lost.
//!
//! Every kind has one row in [`ERROR_TABLE`] (see [`table`]): its
//! stable string code, its stable number (the C status) and a one-line description, so
//! that four languages name and number errors identically.
//!
//! Structured extras travel with the error instead of being folded into the message:
//! [`RpcDetails`] for RPC failures, [`Error::may_have_applied`] for requests whose outcome
//! is unknown, and [`Error::callback_payload`] for an error raised by a user's callback,
//! which a binding hands back to its caller unchanged.

mod store_kind;
mod table;

use std::any::Any;
use std::borrow::Cow;
use std::fmt;
use std::sync::Arc;

pub use store_kind::StoreErrorKind;
pub use table::{ERROR_BASE_CLASS, ERROR_FAMILIES, ERROR_TABLE, ErrorInfo};

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
    /// (spec §2). The status is kept; [`Error::rpc_details`] has the rest.
    Rpc(u16),
    /// No response arrived within the request's timeout (or a wait ran out). When the
    /// request had been sent, [`Error::may_have_applied`] is `true`.
    Timeout,
    /// The connection (and with it the MQTT session) was lost while the request was in
    /// flight, or the client is not connected; the request may or may not have been applied.
    ConnectionLost,
    /// Connecting to the broker failed for another reason than the ones below (a bad
    /// address, a file that cannot be read, a protocol error …).
    Connect,
    /// The broker (or nothing) refused the connection: nobody listens on the port, or the
    /// broker is unavailable. Worth retrying later.
    ConnectRefused,
    /// The connection attempt did not finish in time. Worth retrying.
    ConnectTimeout,
    /// The broker refused the credentials (user name, password, SAT token, client id).
    /// Retrying will not help: fix the credentials.
    ConnectUnauthorized,
    /// The TLS handshake failed (untrusted certificate, wrong host name, missing client
    /// certificate). Fix the TLS settings.
    Tls,
    /// The broker says that nobody is subscribed to the state store's request topic (MQTT 5
    /// PUBACK reason 0x10, "no matching subscribers"): no state store serves this broker.
    /// The request was sent again for [`NO_STORE_WINDOW`](crate::vocabulary::NO_STORE_WINDOW)
    /// first, and was never delivered, so it was not applied. Worth retrying once a store runs.
    NoStore,
    /// The client (or the object) was shut down or dropped.
    Closed,
    /// A lock or leadership operation needs the lock to be held, and it is not.
    NotHeld,
    /// The call was cancelled by its caller before it completed.
    Cancelled,
    /// The operation is not supported here (for example a blocking wait on a thread of the
    /// runtime that must complete it).
    Unsupported,
    /// A user-supplied callback failed; [`Error::callback_payload`] holds what it raised.
    Callback,
}

impl ErrorKind {
    /// A stable, lower-case identifier for this kind, shared by every language binding
    /// (Python exception attribute `code`, JavaScript `err.code`, C status names).
    pub fn code(self) -> &'static str {
        self.info().code
    }

    /// The stable number of this kind (the C status value).
    pub fn number(self) -> u32 {
        self.info().number
    }

    /// This kind's row of [`ERROR_TABLE`].
    pub fn info(self) -> &'static ErrorInfo {
        let probe = match self {
            ErrorKind::Rpc(_) => ErrorKind::Rpc(0),
            other => other,
        };
        ERROR_TABLE
            .iter()
            .find(|row| row.kind == probe)
            .expect("every error kind has a row in ERROR_TABLE")
    }

    /// The kind whose stable code is `code` (`rpc_error` gives `Rpc(0)`).
    pub fn from_code(code: &str) -> Option<ErrorKind> {
        ERROR_TABLE.iter().find(|r| r.code == code).map(|r| r.kind)
    }

    /// Every kind (with `Rpc(0)` standing for every RPC status), in table order: the list
    /// the bindings build their tables from.
    pub fn all() -> impl Iterator<Item = ErrorKind> {
        ERROR_TABLE.iter().map(|row| row.kind)
    }

    /// Whether this is one of the connection-failure kinds (`connect_*`, `tls`).
    pub fn is_connect(self) -> bool {
        matches!(
            self,
            ErrorKind::Connect
                | ErrorKind::ConnectRefused
                | ErrorKind::ConnectTimeout
                | ErrorKind::ConnectUnauthorized
                | ErrorKind::Tls
        )
    }

    /// Whether the same call may succeed if simply tried again later (timeouts, lost or
    /// refused connections, quota, RPC 503); `false` for errors that need a change first.
    pub fn is_retryable(self) -> bool {
        matches!(
            self,
            ErrorKind::Timeout
                | ErrorKind::ConnectionLost
                | ErrorKind::NoStore
                | ErrorKind::ConnectRefused
                | ErrorKind::ConnectTimeout
                | ErrorKind::Rpc(503)
                | ErrorKind::Store(StoreErrorKind::TimestampSkew)
        )
    }
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.code())
    }
}

/// The details of an RPC failure (a response `__stat` other than 200/204), as the response
/// gave them (spec §2).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RpcDetails {
    /// `__stat`.
    pub status: u16,
    /// `__stMsg`.
    pub status_message: Option<String>,
    /// `__propName`: the property the request got wrong.
    pub property_name: Option<String>,
    /// `__propVal`: its value.
    pub property_value: Option<String>,
    /// `__apErr: true`.
    pub application_error: bool,
    /// `__supProtMajVer`: the protocol major versions the service supports.
    pub supported_major_versions: Option<String>,
    /// `__requestProtVer`: the protocol version the service read from the request.
    pub request_protocol_version: Option<String>,
}

/// What a user's callback raised, kept opaque so that a binding gets its own object back
/// (a Python exception, a JavaScript value id, a C status) and re-raises it unchanged.
pub type CallbackPayload = Arc<dyn Any + Send + Sync>;

#[derive(Clone, Default)]
struct Extra {
    rpc: Option<RpcDetails>,
    may_have_applied: bool,
    payload: Option<CallbackPayload>,
}

/// The error of every fallible mqstate call: a [`ErrorKind`] plus a human-readable message
/// and, where there are any, structured details.
#[derive(Clone)]
pub struct Error {
    kind: ErrorKind,
    message: Cow<'static, str>,
    extra: Option<Box<Extra>>,
}

impl Error {
    /// Builds an error of `kind` with a message.
    pub fn new(kind: ErrorKind, message: impl Into<Cow<'static, str>>) -> Self {
        Error {
            kind,
            message: message.into(),
            extra: None,
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

    /// Shorthand for an [`ErrorKind::Cancelled`] error.
    pub fn cancelled() -> Self {
        Error::new(ErrorKind::Cancelled, "the call was cancelled")
    }

    /// An [`ErrorKind::Rpc`] error with its details; the message summarises them.
    pub fn rpc(details: RpcDetails) -> Self {
        let mut message = format!("request failed with status {}", details.status);
        if let Some(text) = &details.status_message {
            message.push_str(": ");
            message.push_str(text);
        }
        if let Some(name) = &details.property_name {
            message.push_str(&format!(" (property {name}"));
            if let Some(value) = &details.property_value {
                message.push_str(&format!(" = {value:?}"));
            }
            message.push(')');
        }
        let mut e = Error::new(ErrorKind::Rpc(details.status), message);
        e.extra_mut().rpc = Some(details);
        e
    }

    /// An [`ErrorKind::Callback`] error carrying what the user's callback raised.
    pub fn callback(message: impl Into<Cow<'static, str>>, payload: CallbackPayload) -> Self {
        let mut e = Error::new(ErrorKind::Callback, message);
        e.extra_mut().payload = Some(payload);
        e
    }

    fn extra_mut(&mut self) -> &mut Extra {
        self.extra.get_or_insert_with(Box::default)
    }

    /// Marks the error as one that happened after the request was sent: the service may
    /// have applied it.
    pub fn with_may_have_applied(mut self) -> Self {
        self.extra_mut().may_have_applied = true;
        self
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

    /// The stable code of the kind (shorthand for `kind().code()`).
    pub fn code(&self) -> &'static str {
        self.kind.code()
    }

    /// The details of an RPC failure.
    pub fn rpc_details(&self) -> Option<&RpcDetails> {
        self.extra.as_ref()?.rpc.as_ref()
    }

    /// `true` when the request had been sent before the error (a timeout waiting for the
    /// response, a connection lost in flight): the service may have applied it. Check
    /// before retrying a write that is not idempotent.
    pub fn may_have_applied(&self) -> bool {
        self.extra.as_ref().is_some_and(|x| x.may_have_applied)
    }

    /// What a user's callback raised, for [`ErrorKind::Callback`].
    pub fn callback_payload(&self) -> Option<&CallbackPayload> {
        self.extra.as_ref()?.payload.as_ref()
    }
}

impl PartialEq for Error {
    fn eq(&self, other: &Self) -> bool {
        self.kind == other.kind
            && self.message == other.message
            && self.rpc_details() == other.rpc_details()
            && self.may_have_applied() == other.may_have_applied()
    }
}

impl Eq for Error {}

impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct("Error");
        d.field("kind", &self.kind).field("message", &self.message);
        if let Some(rpc) = self.rpc_details() {
            d.field("rpc", rpc);
        }
        if self.may_have_applied() {
            d.field("may_have_applied", &true);
        }
        if self.callback_payload().is_some() {
            d.field("callback_payload", &"…");
        }
        d.finish()
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
