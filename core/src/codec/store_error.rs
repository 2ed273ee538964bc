//! The store errors of spec §4 as a response carries them: a kind
//! ([`StoreErrorKind`], with the twelve exact texts) and the
//! text. Unknown texts are kept verbatim: the service may add new ones.

use std::borrow::Cow;
use std::fmt;

use crate::error::{Error, ErrorKind, StoreErrorKind};

/// A store error as carried in a response: its kind and the exact text.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct StoreError {
    kind: StoreErrorKind,
    text: Cow<'static, str>,
}

impl StoreError {
    /// The error of a known kind, with the service's exact text.
    ///
    /// # Panics
    /// Never; `Unknown` gets the text `unknown error` (use [`StoreError::from_text`] to
    /// carry a real text).
    pub fn new(kind: StoreErrorKind) -> StoreError {
        StoreError {
            kind,
            text: Cow::Borrowed(kind.text().unwrap_or("unknown error")),
        }
    }

    /// Classifies a text received after `-ERR `. Known texts get their kind; any other is
    /// `Unknown` and kept (invalid UTF-8 is replaced, CR and LF cannot occur in it).
    pub fn from_text(text: &[u8]) -> StoreError {
        let kind = StoreErrorKind::from_text(text);
        let text = match kind.text() {
            Some(known) => Cow::Borrowed(known),
            None => Cow::Owned(String::from_utf8_lossy(text).into_owned()),
        };
        StoreError { kind, text }
    }

    /// An error with a text of the caller's; the kind is found from the text. CR and LF,
    /// which a response line cannot hold, become spaces; an empty text, which the protocol
    /// cannot carry, becomes `unknown error`.
    pub fn other(text: &str) -> StoreError {
        if text.is_empty() {
            return StoreError::from_text(b"unknown error");
        }
        let clean: String = text
            .chars()
            .map(|c| if c == '\r' || c == '\n' { ' ' } else { c })
            .collect();
        StoreError::from_text(clean.as_bytes())
    }

    /// The kind.
    pub fn kind(&self) -> StoreErrorKind {
        self.kind
    }

    /// The exact text.
    pub fn text(&self) -> &str {
        &self.text
    }
}

impl fmt::Display for StoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl std::error::Error for StoreError {}

impl From<StoreError> for Error {
    fn from(e: StoreError) -> Error {
        Error::new(ErrorKind::Store(e.kind), e.text)
    }
}

impl From<StoreErrorKind> for StoreError {
    fn from(kind: StoreErrorKind) -> StoreError {
        StoreError::new(kind)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn other_texts_are_kept_and_cleaned() {
        let e = StoreError::other("a\r\nb");
        assert_eq!(e.kind(), StoreErrorKind::Unknown);
        assert_eq!(e.text(), "a  b");
        assert_eq!(
            StoreError::other("syntax error").kind(),
            StoreErrorKind::SyntaxError
        );
    }
}
