//! The one error of the Kotlin and Swift bindings' raw layer: [`MqstateError`] (Kotlin
//! `NativeException`, Swift `MqstateError`), one variant carrying the stable `code` of
//! [`ERROR_TABLE`](mqstate::ERROR_TABLE), the message, and whether a sent request may have
//! been applied. Programs branch on `code` (in Kotlin: on the class of the code, which the
//! idiomatic layer throws), never on the text.

use std::fmt;

#[cfg(test)]
use mqstate::ErrorKind;
use mqstate::{ERROR_TABLE, Error};

/// Why an mqstate call failed: the stable `code` of the core's [`ERROR_TABLE`], the message,
/// and whether a request was sent and may have been applied.
///
/// One variant: what a code means, and which class names it, is the table's. The Kotlin layer
/// throws the class of the code (`Errors.kt`, generated from the same table); Swift matches
/// `.Failed` and reads `code`.
#[derive(Clone, Debug, PartialEq, Eq, uniffi::Error)]
pub enum MqstateError {
    /// Every failure, named by its code.
    Failed {
        /// The stable snake_case code (`mqstate::ERROR_TABLE`: `timeout`, `not_held`, …).
        code: String,
        /// What went wrong, for people (a store error: the service's exact text).
        detail: String,
        /// Whether a request was sent and may have been applied.
        may_have_applied: bool,
    },
}

impl MqstateError {
    /// The stable code.
    pub fn code(&self) -> &str {
        let MqstateError::Failed { code, .. } = self;
        code
    }

    /// The message.
    pub fn detail(&self) -> &str {
        let MqstateError::Failed { detail, .. } = self;
        detail
    }

    /// Whether a request was sent and may have been applied.
    pub fn may_have_applied(&self) -> bool {
        let MqstateError::Failed {
            may_have_applied, ..
        } = self;
        *may_have_applied
    }
}

impl fmt::Display for MqstateError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.code(), self.detail())
    }
}

impl std::error::Error for MqstateError {}

impl From<Error> for MqstateError {
    fn from(e: Error) -> MqstateError {
        MqstateError::Failed {
            code: e.code().to_owned(),
            detail: e.message().to_owned(),
            may_have_applied: e.may_have_applied(),
        }
    }
}

/// One row of the core's error table.
#[derive(Clone, Debug, PartialEq, Eq, uniffi::Record)]
pub struct ErrorInfo {
    /// The stable snake_case code (`MqstateException.code`).
    pub code: String,
    /// The stable number (the C status).
    pub number: u32,
    /// One line for people.
    pub description: String,
}

/// Every error code of mqstate, in number order (the core's `ERROR_TABLE`).
#[uniffi::export]
pub fn error_table() -> Vec<ErrorInfo> {
    ERROR_TABLE
        .iter()
        .map(|row| ErrorInfo {
            code: row.code.to_owned(),
            number: row.number,
            description: row.description.to_owned(),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_keeps_its_code_and_text() {
        for row in ERROR_TABLE {
            let e = MqstateError::from(Error::new(row.kind, "text"));
            assert_eq!(e.code(), row.code);
            assert_eq!(e.detail(), "text");
            assert!(!e.may_have_applied());
            assert_eq!(e.to_string(), format!("{}: text", row.code));
        }
        let e = MqstateError::from(Error::new(ErrorKind::Timeout, "t").with_may_have_applied());
        assert!(e.may_have_applied());
    }

    #[test]
    fn the_table_is_whole() {
        assert_eq!(error_table().len(), ERROR_TABLE.len());
    }
}
