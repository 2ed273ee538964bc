//! The one table of error kinds: kind ↔ stable string code ↔ stable number ↔ description.
//!
//! Every binding builds its error surface from this table: Python picks the exception class
//! by `code`, JavaScript sets `err.code`, C returns `number` as its status (the C header's
//! enum is tied to this table by a test), Kotlin carries `code` in its error enum.
//!
//! Numbers are part of the C ABI: allocated once, never renumbered. Kinds that are not store
//! errors take 1–99, the store error kinds take 100–112 in
//! [`StoreErrorKind::ALL`](crate::codec::StoreErrorKind::ALL) order; 200 and up are left to
//! conditions only a binding knows (a C buffer too small, a caught panic).

use super::ErrorKind;
use super::StoreErrorKind;

/// One row of [`ERROR_TABLE`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ErrorInfo {
    /// The kind (`Rpc(0)` stands for every RPC status).
    pub kind: ErrorKind,
    /// The stable snake_case code shared by every language.
    pub code: &'static str,
    /// The stable number (the C status).
    pub number: u32,
    /// One line for people.
    pub description: &'static str,
    /// The error class every language with classes names this code by (Python, Node,
    /// Kotlin), in one spelling: chosen once so that code catching by class ports.
    pub class_name: &'static str,
    /// The class it derives from: [`ERROR_BASE_CLASS`] or one of the [`ERROR_FAMILIES`].
    pub parent: &'static str,
}

/// The class every mqstate error derives from, in every language with classes.
pub const ERROR_BASE_CLASS: &str = "MqstateError";

/// The family classes between [`ERROR_BASE_CLASS`] and the classes of the codes (each derives
/// from `ERROR_BASE_CLASS`): the store's refusals, clock limits, failed connections.
pub const ERROR_FAMILIES: [&str; 3] = ["StoreError", "ClockError", "ConnectError"];

const fn row(
    kind: ErrorKind,
    code: &'static str,
    number: u32,
    class: (&'static str, &'static str),
    description: &'static str,
) -> ErrorInfo {
    ErrorInfo {
        kind,
        code,
        number,
        description,
        class_name: class.0,
        parent: class.1,
    }
}

const fn store(
    kind: StoreErrorKind,
    code: &'static str,
    number: u32,
    class: &'static str,
) -> ErrorInfo {
    row(
        ErrorKind::Store(kind),
        code,
        number,
        (class, "StoreError"),
        "the state store refused the request (the message is the service's exact text)",
    )
}

/// Every error kind of mqstate, in number order.
#[rustfmt::skip]
pub const ERROR_TABLE: [ErrorInfo; 31] = {
    use ErrorKind as K;
    use StoreErrorKind as S;
    [
        row(K::InvalidArgument, "invalid_argument", 1, ("InvalidArgumentError", "MqstateError"), "an argument the protocol cannot carry; nothing was sent"),
        row(K::Malformed, "malformed", 2, ("MalformedError", "MqstateError"), "bytes from the wire do not follow the protocol"),
        row(K::ClockDrift, "clock_drift", 3, ("ClockDriftError", "ClockError"), "a clock would move too far ahead of the local time"),
        row(K::ClockOverflow, "clock_overflow", 4, ("ClockOverflowError", "ClockError"), "a clock counter would overflow"),
        row(K::Rpc(0), "rpc_error", 5, ("RpcError", "MqstateError"), "the service's RPC layer refused the request (see the status and details)"),
        row(K::Timeout, "timeout", 6, ("MqstateTimeoutError", "MqstateError"), "no answer in time; a sent request may have been applied"),
        row(K::ConnectionLost, "connection_lost", 7, ("ConnectionLostError", "MqstateError"), "the connection was lost or is not up; a sent request may have been applied"),
        row(K::Connect, "connect_failed", 8, ("ConnectFailedError", "ConnectError"), "connecting to the broker failed"),
        row(K::Closed, "closed", 9, ("ClosedError", "MqstateError"), "the client or the object is closed"),
        row(K::NotHeld, "not_held", 10, ("NotHeldError", "MqstateError"), "the lock (or leadership) is not held"),
        row(K::Cancelled, "cancelled", 11, ("CallCancelledError", "MqstateError"), "the call was cancelled by its caller"),
        row(K::Unsupported, "unsupported", 12, ("UnsupportedError", "MqstateError"), "the operation is not supported here"),
        row(K::Callback, "callback", 13, ("CallbackError", "MqstateError"), "a user callback failed; its own error is attached"),
        row(K::ConnectRefused, "connect_refused", 14, ("ConnectRefusedError", "ConnectError"), "the connection was refused; retry later"),
        row(K::ConnectTimeout, "connect_timeout", 15, ("ConnectTimeoutError", "ConnectError"), "the connection attempt timed out; retry later"),
        row(K::ConnectUnauthorized, "connect_unauthorized", 16, ("ConnectUnauthorizedError", "ConnectError"), "the broker refused the credentials; fix them"),
        row(K::Tls, "tls", 17, ("TlsError", "ConnectError"), "the TLS handshake failed; fix the TLS settings"),
        row(K::NoStore, "no_store", 18, ("NoStoreError", "MqstateError"), "the broker says no state store is subscribed to the request topic; the request was not applied"),
        store(S::TimestampSkew, "timestamp_skew", 100, "TimestampSkewError"),
        store(S::FencingTokenRequired, "fencing_token_required", 101, "FencingTokenRequiredError"),
        store(S::FencingTokenSkew, "fencing_token_skew", 102, "FencingTokenSkewError"),
        store(S::FencingTokenLowerVersion, "fencing_token_lower_version", 103, "FencingTokenLowerVersionError"),
        store(S::QuotaExceeded, "quota_exceeded", 104, "QuotaExceededError"),
        store(S::SyntaxError, "syntax_error", 105, "StoreSyntaxError"),
        store(S::NotAuthorized, "not_authorized", 106, "NotAuthorizedError"),
        store(S::UnknownCommand, "unknown_command", 107, "UnknownCommandError"),
        store(S::WrongNumberOfArguments, "wrong_number_of_arguments", 108, "WrongNumberOfArgumentsError"),
        store(S::TimestampMissing, "timestamp_missing", 109, "TimestampMissingError"),
        store(S::TimestampMalformed, "timestamp_malformed", 110, "TimestampMalformedError"),
        store(S::KeyLengthZero, "key_length_zero", 111, "KeyLengthZeroError"),
        row(K::Store(S::Unknown), "unknown_store_error", 112, ("UnknownStoreError", "StoreError"), "a store error text this version does not know (the text is kept)"),
    ]
};

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn codes_and_numbers_are_unique_and_store_kinds_follow_core_order() {
        let codes: HashSet<_> = ERROR_TABLE.iter().map(|r| r.code).collect();
        let numbers: HashSet<_> = ERROR_TABLE.iter().map(|r| r.number).collect();
        assert_eq!(codes.len(), ERROR_TABLE.len());
        assert_eq!(numbers.len(), ERROR_TABLE.len());
        for (i, kind) in StoreErrorKind::ALL.into_iter().enumerate() {
            assert_eq!(ErrorKind::Store(kind).number(), 100 + i as u32);
        }
        assert!(ERROR_TABLE.windows(2).all(|w| w[0].number < w[1].number));
    }

    #[test]
    fn class_names_are_unique_and_derive_from_the_base_or_a_family() {
        let names: HashSet<_> = ERROR_TABLE.iter().map(|r| r.class_name).collect();
        assert_eq!(names.len(), ERROR_TABLE.len());
        for row in ERROR_TABLE {
            assert!(row.class_name.ends_with("Error"), "{}", row.class_name);
            assert!(
                !ERROR_FAMILIES.contains(&row.class_name) && row.class_name != ERROR_BASE_CLASS
            );
            assert!(row.parent == ERROR_BASE_CLASS || ERROR_FAMILIES.contains(&row.parent));
            let store = matches!(row.kind, ErrorKind::Store(_));
            assert_eq!(store, row.parent == "StoreError", "{}", row.code);
            assert_eq!(
                row.kind.is_connect(),
                row.parent == "ConnectError",
                "{}",
                row.code
            );
        }
    }

    #[test]
    fn every_kind_round_trips_through_its_code() {
        for row in ERROR_TABLE {
            assert_eq!(ErrorKind::from_code(row.code), Some(row.kind));
            assert_eq!(row.kind.code(), row.code);
            assert!(!row.description.is_empty());
        }
        assert_eq!(ErrorKind::Rpc(503).code(), "rpc_error");
        assert_eq!(ErrorKind::Rpc(503).number(), 5);
        // Store kinds have one name: their code.
        for kind in StoreErrorKind::ALL {
            assert_eq!(ErrorKind::Store(kind).code(), kind.as_str());
        }
    }
}
