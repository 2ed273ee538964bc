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
use crate::codec::StoreErrorKind;

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
}

const fn row(
    kind: ErrorKind,
    code: &'static str,
    number: u32,
    description: &'static str,
) -> ErrorInfo {
    ErrorInfo {
        kind,
        code,
        number,
        description,
    }
}

const fn store(kind: StoreErrorKind, code: &'static str, number: u32) -> ErrorInfo {
    row(
        ErrorKind::Store(kind),
        code,
        number,
        "the state store refused the request (the message is the service's exact text)",
    )
}

/// Every error kind of mqstate, in number order.
#[rustfmt::skip]
pub const ERROR_TABLE: [ErrorInfo; 30] = {
    use ErrorKind as K;
    use StoreErrorKind as S;
    [
        row(K::InvalidArgument, "invalid_argument", 1, "an argument the protocol cannot carry; nothing was sent"),
        row(K::Malformed, "malformed", 2, "bytes from the wire do not follow the protocol"),
        row(K::ClockDrift, "clock_drift", 3, "a clock would move too far ahead of the local time"),
        row(K::ClockOverflow, "clock_overflow", 4, "a clock counter would overflow"),
        row(K::Rpc(0), "rpc_error", 5, "the service's RPC layer refused the request (see the status and details)"),
        row(K::Timeout, "timeout", 6, "no answer in time; a sent request may have been applied"),
        row(K::ConnectionLost, "connection_lost", 7, "the connection was lost or is not up; a sent request may have been applied"),
        row(K::Connect, "connect_failed", 8, "connecting to the broker failed"),
        row(K::Closed, "closed", 9, "the client or the object is closed"),
        row(K::NotHeld, "not_held", 10, "the lock (or leadership) is not held"),
        row(K::Cancelled, "cancelled", 11, "the call was cancelled by its caller"),
        row(K::Unsupported, "unsupported", 12, "the operation is not supported here"),
        row(K::Callback, "callback", 13, "a user callback failed; its own error is attached"),
        row(K::ConnectRefused, "connect_refused", 14, "the connection was refused; retry later"),
        row(K::ConnectTimeout, "connect_timeout", 15, "the connection attempt timed out; retry later"),
        row(K::ConnectUnauthorized, "connect_unauthorized", 16, "the broker refused the credentials; fix them"),
        row(K::Tls, "tls", 17, "the TLS handshake failed; fix the TLS settings"),
        store(S::TimestampSkew, "timestamp_skew", 100),
        store(S::FencingTokenRequired, "fencing_token_required", 101),
        store(S::FencingTokenSkew, "fencing_token_skew", 102),
        store(S::FencingTokenLowerVersion, "fencing_token_lower_version", 103),
        store(S::QuotaExceeded, "quota_exceeded", 104),
        store(S::SyntaxError, "syntax_error", 105),
        store(S::NotAuthorized, "not_authorized", 106),
        store(S::UnknownCommand, "unknown_command", 107),
        store(S::WrongNumberOfArguments, "wrong_number_of_arguments", 108),
        store(S::TimestampMissing, "timestamp_missing", 109),
        store(S::TimestampMalformed, "timestamp_malformed", 110),
        store(S::KeyLengthZero, "key_length_zero", 111),
        row(K::Store(S::Unknown), "unknown_store_error", 112, "a store error text this version does not know (the text is kept)"),
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
