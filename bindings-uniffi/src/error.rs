//! The one error of the Kotlin and Swift bindings: [`MqstateError`] (Kotlin
//! `MqstateException`, Swift `MqstateError`), one variant per family of the core's
//! [`ErrorKind`], every variant carrying the stable `code` of
//! [`ERROR_TABLE`](mqstate::ERROR_TABLE), the message, and whether a sent request may have
//! been applied. Programs branch on `code` (or on the variant), never on the text.

use std::fmt;

use mqstate::{ERROR_TABLE, Error, ErrorKind};

/// Why an mqstate call failed. Every variant has the same fields; the variant is the family
/// of the stable `code`.
#[derive(Clone, Debug, PartialEq, Eq, uniffi::Error)]
pub enum MqstateError {
    /// `invalid_argument`: an argument the protocol cannot carry; nothing was sent.
    InvalidArgument {
        /// The stable code (`mqstate::ERROR_TABLE`).
        code: String,
        /// What went wrong, for people.
        detail: String,
        /// Whether a request was sent and may have been applied.
        may_have_applied: bool,
    },
    /// `malformed`: bytes from the wire do not follow the protocol.
    Malformed {
        /// The stable code.
        code: String,
        /// What went wrong, for people.
        detail: String,
        /// Whether a request was sent and may have been applied.
        may_have_applied: bool,
    },
    /// `clock_drift`, `clock_overflow`: the hybrid logical clock refused to move.
    Clock {
        /// The stable code.
        code: String,
        /// What went wrong, for people.
        detail: String,
        /// Whether a request was sent and may have been applied.
        may_have_applied: bool,
    },
    /// A store error (`fencing_token_required`, `timestamp_skew`, … `unknown_store_error`):
    /// `detail` is the service's exact text.
    Store {
        /// The stable code.
        code: String,
        /// The service's exact text.
        detail: String,
        /// Whether a request was sent and may have been applied.
        may_have_applied: bool,
    },
    /// `rpc_error`: the service's RPC layer refused the request.
    Rpc {
        /// The stable code.
        code: String,
        /// The status and its details.
        detail: String,
        /// Whether a request was sent and may have been applied.
        may_have_applied: bool,
    },
    /// `timeout`: no answer in time; check `may_have_applied` before retrying a write.
    Timeout {
        /// The stable code.
        code: String,
        /// What went wrong, for people.
        detail: String,
        /// Whether a request was sent and may have been applied.
        may_have_applied: bool,
    },
    /// `connection_lost`: the connection went down with the request in flight, or is down.
    ConnectionLost {
        /// The stable code.
        code: String,
        /// What went wrong, for people.
        detail: String,
        /// Whether a request was sent and may have been applied.
        may_have_applied: bool,
    },
    /// `connect_failed`, `connect_refused`, `connect_timeout`, `connect_unauthorized`, `tls`.
    Connect {
        /// The stable code.
        code: String,
        /// What went wrong, for people.
        detail: String,
        /// Whether a request was sent and may have been applied.
        may_have_applied: bool,
    },
    /// `closed`: the client (or the object) was closed.
    Closed {
        /// The stable code.
        code: String,
        /// What went wrong, for people.
        detail: String,
        /// Whether a request was sent and may have been applied.
        may_have_applied: bool,
    },
    /// `not_held`: the lock (or leadership) is not held.
    NotHeld {
        /// The stable code.
        code: String,
        /// What went wrong, for people.
        detail: String,
        /// Whether a request was sent and may have been applied.
        may_have_applied: bool,
    },
    /// `cancelled`: the call was cancelled before it completed.
    Cancelled {
        /// The stable code.
        code: String,
        /// What went wrong, for people.
        detail: String,
        /// Whether a request was sent and may have been applied.
        may_have_applied: bool,
    },
    /// `callback`: a callback (an edit function) failed.
    Callback {
        /// The stable code.
        code: String,
        /// What went wrong, for people.
        detail: String,
        /// Whether a request was sent and may have been applied.
        may_have_applied: bool,
    },
    /// `unsupported`, and any code a later core adds.
    Other {
        /// The stable code.
        code: String,
        /// What went wrong, for people.
        detail: String,
        /// Whether a request was sent and may have been applied.
        may_have_applied: bool,
    },
}

impl MqstateError {
    /// The stable code.
    pub fn code(&self) -> &str {
        self.parts().0
    }

    /// The message.
    pub fn detail(&self) -> &str {
        self.parts().1
    }

    fn parts(&self) -> (&str, &str, bool) {
        use MqstateError as E;
        match self {
            E::InvalidArgument {
                code,
                detail,
                may_have_applied,
            }
            | E::Malformed {
                code,
                detail,
                may_have_applied,
            }
            | E::Clock {
                code,
                detail,
                may_have_applied,
            }
            | E::Store {
                code,
                detail,
                may_have_applied,
            }
            | E::Rpc {
                code,
                detail,
                may_have_applied,
            }
            | E::Timeout {
                code,
                detail,
                may_have_applied,
            }
            | E::ConnectionLost {
                code,
                detail,
                may_have_applied,
            }
            | E::Connect {
                code,
                detail,
                may_have_applied,
            }
            | E::Closed {
                code,
                detail,
                may_have_applied,
            }
            | E::NotHeld {
                code,
                detail,
                may_have_applied,
            }
            | E::Cancelled {
                code,
                detail,
                may_have_applied,
            }
            | E::Callback {
                code,
                detail,
                may_have_applied,
            }
            | E::Other {
                code,
                detail,
                may_have_applied,
            } => (code, detail, *may_have_applied),
        }
    }
}

impl fmt::Display for MqstateError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (code, detail, _) = self.parts();
        write!(f, "{code}: {detail}")
    }
}

impl std::error::Error for MqstateError {}

impl From<Error> for MqstateError {
    fn from(e: Error) -> MqstateError {
        let code = e.code().to_owned();
        let detail = e.message().to_owned();
        let may_have_applied = e.may_have_applied();
        let kind = e.kind();
        macro_rules! make {
            ($variant:ident) => {
                MqstateError::$variant {
                    code,
                    detail,
                    may_have_applied,
                }
            };
        }
        match kind {
            ErrorKind::InvalidArgument => make!(InvalidArgument),
            ErrorKind::Malformed => make!(Malformed),
            ErrorKind::ClockDrift | ErrorKind::ClockOverflow => make!(Clock),
            ErrorKind::Store(_) => make!(Store),
            ErrorKind::Rpc(_) => make!(Rpc),
            ErrorKind::Timeout => make!(Timeout),
            ErrorKind::ConnectionLost => make!(ConnectionLost),
            k if k.is_connect() => make!(Connect),
            ErrorKind::Closed => make!(Closed),
            ErrorKind::NotHeld => make!(NotHeld),
            ErrorKind::Cancelled => make!(Cancelled),
            ErrorKind::Callback => make!(Callback),
            _ => make!(Other),
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
        }
        let e = MqstateError::from(Error::new(ErrorKind::Timeout, "t").with_may_have_applied());
        assert!(matches!(
            e,
            MqstateError::Timeout {
                may_have_applied: true,
                ..
            }
        ));
        assert!(matches!(
            MqstateError::from(Error::new(ErrorKind::Tls, "x")),
            MqstateError::Connect { .. }
        ));
    }

    #[test]
    fn the_table_is_whole() {
        assert_eq!(error_table().len(), ERROR_TABLE.len());
    }
}
