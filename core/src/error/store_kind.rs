//! The kinds of the store errors of spec §4 and the twelve exact texts the service sends
//! after `-ERR` (the codec's [`StoreError`](crate::codec::StoreError) carries one with its
//! text). Part of the error vocabulary: [`ErrorKind::Store`](super::ErrorKind::Store) holds
//! one.

use std::fmt;

/// The kind of a store error (`-ERR <text>` in a response payload).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum StoreErrorKind {
    /// `__ts` is more than the maximum drift ahead of the service clock.
    TimestampSkew,
    /// The key is fenced and the request carries no `__ft`.
    FencingTokenRequired,
    /// `__ft` is more than the maximum drift ahead of the service clock.
    FencingTokenSkew,
    /// `__ft` is older than the token protecting the key.
    FencingTokenLowerVersion,
    /// The key quota is reached.
    QuotaExceeded,
    /// The payload is not a well-formed request.
    SyntaxError,
    /// Authorization failed.
    NotAuthorized,
    /// The verb is not recognised.
    UnknownCommand,
    /// The argument count is wrong for the verb.
    WrongNumberOfArguments,
    /// A SET without `__ts`.
    TimestampMissing,
    /// `__ts` or `__ft` does not parse as a hybrid logical clock.
    TimestampMalformed,
    /// The key is empty.
    KeyLengthZero,
    /// A text this version of mqstate does not know; the text is kept.
    Unknown,
}

/// Every known kind with its exact service text, in spec order.
const TEXTS: [(StoreErrorKind, &str); 12] = [
    (
        StoreErrorKind::TimestampSkew,
        "the request timestamp is too far in the future; ensure that the client and broker system clocks are synchronized",
    ),
    (
        StoreErrorKind::FencingTokenRequired,
        "a fencing token is required for this request",
    ),
    (
        StoreErrorKind::FencingTokenSkew,
        "the request fencing token timestamp is too far in the future; ensure that the client and broker system clocks are synchronized",
    ),
    (
        StoreErrorKind::FencingTokenLowerVersion,
        "the request fencing token is a lower version than the fencing token protecting the resource",
    ),
    (StoreErrorKind::QuotaExceeded, "the quota has been exceeded"),
    (StoreErrorKind::SyntaxError, "syntax error"),
    (StoreErrorKind::NotAuthorized, "not authorized"),
    (StoreErrorKind::UnknownCommand, "unknown command"),
    (
        StoreErrorKind::WrongNumberOfArguments,
        "wrong number of arguments",
    ),
    (StoreErrorKind::TimestampMissing, "missing timestamp"),
    (StoreErrorKind::TimestampMalformed, "malformed timestamp"),
    (StoreErrorKind::KeyLengthZero, "the key length is zero"),
];

impl StoreErrorKind {
    /// Every kind, `Unknown` last.
    pub const ALL: [StoreErrorKind; 13] = [
        StoreErrorKind::TimestampSkew,
        StoreErrorKind::FencingTokenRequired,
        StoreErrorKind::FencingTokenSkew,
        StoreErrorKind::FencingTokenLowerVersion,
        StoreErrorKind::QuotaExceeded,
        StoreErrorKind::SyntaxError,
        StoreErrorKind::NotAuthorized,
        StoreErrorKind::UnknownCommand,
        StoreErrorKind::WrongNumberOfArguments,
        StoreErrorKind::TimestampMissing,
        StoreErrorKind::TimestampMalformed,
        StoreErrorKind::KeyLengthZero,
        StoreErrorKind::Unknown,
    ];

    /// The kind whose exact service text is `text`, or `Unknown`.
    pub fn from_text(text: &[u8]) -> StoreErrorKind {
        TEXTS
            .iter()
            .find(|(_, t)| t.as_bytes() == text)
            .map_or(StoreErrorKind::Unknown, |(kind, _)| *kind)
    }

    /// The exact text the service sends for this kind; `None` for `Unknown`.
    pub fn text(self) -> Option<&'static str> {
        TEXTS.iter().find(|(k, _)| *k == self).map(|(_, t)| *t)
    }

    /// The stable snake_case name of this kind: the same as its error code
    /// ([`ErrorKind::code`](crate::ErrorKind::code)), so every kind has one name only. (The
    /// shared conformance vectors spell [`StoreErrorKind::Unknown`] `unknown`;
    /// [`StoreErrorKind::from_name`] accepts that spelling too.)
    pub fn as_str(self) -> &'static str {
        match self {
            StoreErrorKind::TimestampSkew => "timestamp_skew",
            StoreErrorKind::FencingTokenRequired => "fencing_token_required",
            StoreErrorKind::FencingTokenSkew => "fencing_token_skew",
            StoreErrorKind::FencingTokenLowerVersion => "fencing_token_lower_version",
            StoreErrorKind::QuotaExceeded => "quota_exceeded",
            StoreErrorKind::SyntaxError => "syntax_error",
            StoreErrorKind::NotAuthorized => "not_authorized",
            StoreErrorKind::UnknownCommand => "unknown_command",
            StoreErrorKind::WrongNumberOfArguments => "wrong_number_of_arguments",
            StoreErrorKind::TimestampMissing => "timestamp_missing",
            StoreErrorKind::TimestampMalformed => "timestamp_malformed",
            StoreErrorKind::KeyLengthZero => "key_length_zero",
            StoreErrorKind::Unknown => "unknown_store_error",
        }
    }

    /// The kind named `name` by [`StoreErrorKind::as_str`] (or `unknown`, the conformance
    /// vectors' spelling of [`StoreErrorKind::Unknown`]).
    pub fn from_name(name: &str) -> Option<StoreErrorKind> {
        if name == "unknown" {
            return Some(StoreErrorKind::Unknown);
        }
        StoreErrorKind::ALL.into_iter().find(|k| k.as_str() == name)
    }
}

impl fmt::Display for StoreErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_known_text_round_trips() {
        for kind in StoreErrorKind::ALL {
            assert_eq!(StoreErrorKind::from_name(kind.as_str()), Some(kind));
            if let Some(text) = kind.text() {
                assert_eq!(StoreErrorKind::from_text(text.as_bytes()), kind);
            }
        }
        assert_eq!(StoreErrorKind::Unknown.text(), None);
    }
}
