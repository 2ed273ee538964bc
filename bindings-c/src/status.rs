//! The status every C function returns, its fixed numbering, the thread-local last error
//! message, and the panic boundary that wraps every `extern "C"` body.
//!
//! The numbers are part of the ABI and come from the core's one error table
//! (`mqstate::ERROR_TABLE`): kinds that are not store errors take 1–99, the thirteen store
//! error kinds take 100–112 in [`StoreErrorKind::ALL`] order, and conditions that only the C
//! layer knows take 200 and up. The enum must be literal for cbindgen; a test ties every
//! variant to its row of the core table.

use std::borrow::Cow;
use std::cell::RefCell;
use std::ffi::c_char;
use std::panic::{AssertUnwindSafe, catch_unwind};

mod family;

pub use family::{mqstate_status_family, mqstate_status_family_of};

use mqstate::codec::{StoreError, StoreErrorKind};
use mqstate::{Error, ErrorKind};

/// The result of every fallible mqstate C function. `MQSTATE_STATUS_OK` (0) is success; any
/// other value is an error whose message `mqstate_last_error_message` copies out. The numbers
/// are stable: new kinds get new numbers, existing ones never change.
///
/// `mqstate_status_name` gives each status the same snake_case name as the core's error kind
/// (`ErrorKind::code()`), shared by every mqstate binding.
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum mqstate_status {
    /// Success.
    Ok = 0,
    /// `invalid_argument`: an argument the protocol cannot carry; nothing was sent (a NULL
    /// pointer, text that is not UTF-8, an empty key, an unknown enum value …).
    InvalidArgument = 1,
    /// `malformed`: bytes from the wire do not follow the protocol (payload, topic,
    /// timestamp, hex).
    Malformed = 2,
    /// `clock_drift` (clock family): a clock would move too far ahead of the local time.
    ClockDrift = 3,
    /// `clock_overflow` (clock family): a clock counter would overflow.
    ClockOverflow = 4,
    /// `rpc_error`: the service's RPC layer refused the request (see the status and
    /// details: `mqstate_error_rpc_status`).
    RpcError = 5,
    /// `timeout`: no answer in time; a sent request may have been applied
    /// (`mqstate_error_may_have_applied`).
    Timeout = 6,
    /// `connection_lost`: the connection was lost or is not up; a sent request may have been
    /// applied.
    ConnectionLost = 7,
    /// `connect_failed` (connect family): connecting to the broker failed.
    ConnectFailed = 8,
    /// `closed`: the client or the object is closed.
    Closed = 9,
    /// `not_held`: the lock (or leadership) is not held.
    NotHeld = 10,
    /// `cancelled`: the call was cancelled by its caller.
    Cancelled = 11,
    /// `unsupported`: the operation is not supported here.
    Unsupported = 12,
    /// `callback`: a user callback failed; its own error is attached
    /// (`mqstate_error_callback_status`).
    Callback = 13,
    /// `connect_refused` (connect family): the connection was refused; retry later.
    ConnectRefused = 14,
    /// `connect_timeout` (connect family): the connection attempt timed out; retry later.
    ConnectTimeout = 15,
    /// `connect_unauthorized` (connect family): the broker refused the credentials; fix them.
    ConnectUnauthorized = 16,
    /// `tls` (connect family): the TLS handshake failed; fix the TLS settings.
    Tls = 17,
    /// `no_store`: the broker says no state store is subscribed to the request topic (the
    /// request was sent again for 2 s first, the core's no-store window); it was not applied.
    /// Worth retrying once a state store runs.
    NoStore = 18,
    /// `timestamp_skew` (store family): the state store refused the request (the message
    /// is the service's exact text), as for every store error.
    TimestampSkew = 100,
    /// `fencing_token_required` (store family).
    FencingTokenRequired = 101,
    /// `fencing_token_skew` (store family).
    FencingTokenSkew = 102,
    /// `fencing_token_lower_version` (store family).
    FencingTokenLowerVersion = 103,
    /// `quota_exceeded` (store family).
    QuotaExceeded = 104,
    /// `syntax_error` (store family).
    SyntaxError = 105,
    /// `not_authorized` (store family).
    NotAuthorized = 106,
    /// `unknown_command` (store family).
    UnknownCommand = 107,
    /// `wrong_number_of_arguments` (store family).
    WrongNumberOfArguments = 108,
    /// `timestamp_missing` (store family).
    TimestampMissing = 109,
    /// `timestamp_malformed` (store family).
    TimestampMalformed = 110,
    /// `key_length_zero` (store family).
    KeyLengthZero = 111,
    /// `unknown_store_error` (store family): a store error text this version does not know
    /// (the text is kept).
    UnknownStoreError = 112,
    /// `buffer_too_small` (C only): a caller's buffer cannot hold the result; the needed
    /// length was reported through the length out-parameter.
    BufferTooSmall = 200,
    /// `internal` (C only): an error kind this build of the C layer has no number for (a
    /// bug).
    Internal = 254,
    /// `panic` (C only): the library panicked; the panic was caught at the boundary (a bug).
    Panic = 255,
}

/// Every status, in numeric order (for tables and tests).
pub(crate) const ALL_STATUSES: [mqstate_status; 35] = {
    use mqstate_status::*;
    [
        Ok,
        InvalidArgument,
        Malformed,
        ClockDrift,
        ClockOverflow,
        RpcError,
        Timeout,
        ConnectionLost,
        ConnectFailed,
        Closed,
        NotHeld,
        Cancelled,
        Unsupported,
        Callback,
        ConnectRefused,
        ConnectTimeout,
        ConnectUnauthorized,
        Tls,
        NoStore,
        TimestampSkew,
        FencingTokenRequired,
        FencingTokenSkew,
        FencingTokenLowerVersion,
        QuotaExceeded,
        SyntaxError,
        NotAuthorized,
        UnknownCommand,
        WrongNumberOfArguments,
        TimestampMissing,
        TimestampMalformed,
        KeyLengthZero,
        UnknownStoreError,
        BufferTooSmall,
        Internal,
        Panic,
    ]
};

impl mqstate_status {
    /// The status of a store error kind.
    pub(crate) fn of_store(kind: StoreErrorKind) -> mqstate_status {
        use mqstate_status as S;
        match kind {
            StoreErrorKind::TimestampSkew => S::TimestampSkew,
            StoreErrorKind::FencingTokenRequired => S::FencingTokenRequired,
            StoreErrorKind::FencingTokenSkew => S::FencingTokenSkew,
            StoreErrorKind::FencingTokenLowerVersion => S::FencingTokenLowerVersion,
            StoreErrorKind::QuotaExceeded => S::QuotaExceeded,
            StoreErrorKind::SyntaxError => S::SyntaxError,
            StoreErrorKind::NotAuthorized => S::NotAuthorized,
            StoreErrorKind::UnknownCommand => S::UnknownCommand,
            StoreErrorKind::WrongNumberOfArguments => S::WrongNumberOfArguments,
            StoreErrorKind::TimestampMissing => S::TimestampMissing,
            StoreErrorKind::TimestampMalformed => S::TimestampMalformed,
            StoreErrorKind::KeyLengthZero => S::KeyLengthZero,
            StoreErrorKind::Unknown => S::UnknownStoreError,
            _ => S::Internal,
        }
    }

    /// The status of a core error kind: the variant whose number is the kind's number in
    /// the core's table.
    pub(crate) fn of_kind(kind: ErrorKind) -> mqstate_status {
        let number = kind.number();
        ALL_STATUSES
            .into_iter()
            .find(|s| *s as u32 == number)
            .unwrap_or(mqstate_status::Internal)
    }

    /// The stable name: the core's `ErrorKind::code()` for core kinds, `ok` for success,
    /// and the C layer's own names for the rest. NUL-terminated for C.
    pub(crate) fn name(self) -> &'static str {
        use mqstate_status as S;
        match self {
            S::Ok => "ok\0",
            S::InvalidArgument => "invalid_argument\0",
            S::Malformed => "malformed\0",
            S::ClockDrift => "clock_drift\0",
            S::ClockOverflow => "clock_overflow\0",
            S::RpcError => "rpc_error\0",
            S::Timeout => "timeout\0",
            S::ConnectionLost => "connection_lost\0",
            S::ConnectFailed => "connect_failed\0",
            S::Closed => "closed\0",
            S::NotHeld => "not_held\0",
            S::Cancelled => "cancelled\0",
            S::Unsupported => "unsupported\0",
            S::Callback => "callback\0",
            S::ConnectRefused => "connect_refused\0",
            S::ConnectTimeout => "connect_timeout\0",
            S::ConnectUnauthorized => "connect_unauthorized\0",
            S::Tls => "tls\0",
            S::NoStore => "no_store\0",
            S::TimestampSkew => "timestamp_skew\0",
            S::FencingTokenRequired => "fencing_token_required\0",
            S::FencingTokenSkew => "fencing_token_skew\0",
            S::FencingTokenLowerVersion => "fencing_token_lower_version\0",
            S::QuotaExceeded => "quota_exceeded\0",
            S::SyntaxError => "syntax_error\0",
            S::NotAuthorized => "not_authorized\0",
            S::UnknownCommand => "unknown_command\0",
            S::WrongNumberOfArguments => "wrong_number_of_arguments\0",
            S::TimestampMissing => "timestamp_missing\0",
            S::TimestampMalformed => "timestamp_malformed\0",
            S::KeyLengthZero => "key_length_zero\0",
            S::UnknownStoreError => "unknown_store_error\0",
            S::BufferTooSmall => "buffer_too_small\0",
            S::Internal => "internal\0",
            S::Panic => "panic\0",
        }
    }
}

/// An error on its way out of an `extern "C"` function: the status, the message, and the
/// core error it came from (for `mqstate_error_last`).
#[derive(Debug)]
pub(crate) struct Failure {
    pub(crate) status: mqstate_status,
    pub(crate) message: Cow<'static, str>,
    pub(crate) error: Option<Box<Error>>,
}

impl Failure {
    /// An `invalid_argument` failure.
    pub(crate) fn invalid(message: impl Into<Cow<'static, str>>) -> Failure {
        Failure::new(mqstate_status::InvalidArgument, message)
    }

    /// A failure of `status`.
    pub(crate) fn new(status: mqstate_status, message: impl Into<Cow<'static, str>>) -> Failure {
        Failure {
            status,
            message: message.into(),
            error: None,
        }
    }
}

impl From<Error> for Failure {
    fn from(e: Error) -> Failure {
        Failure {
            status: mqstate_status::of_kind(e.kind()),
            message: Cow::Owned(e.message().to_owned()),
            error: Some(Box::new(e)),
        }
    }
}

impl From<StoreError> for Failure {
    fn from(e: StoreError) -> Failure {
        Failure::from(Error::from(e))
    }
}

/// What a body inside the boundary returns.
pub(crate) type FfiResult = Result<(), Failure>;

/// The last error of a thread: what `mqstate_last_error_message` copies out and
/// `mqstate_error_last` captures.
#[derive(Default)]
pub(crate) struct LastError {
    pub(crate) status: u32,
    pub(crate) message: String,
    pub(crate) error: Option<Box<Error>>,
}

thread_local! {
    static LAST_ERROR: RefCell<LastError> = RefCell::new(LastError::default());
}

fn set_last_error(status: mqstate_status, message: &str, error: Option<Box<Error>>) {
    LAST_ERROR.with(|last| {
        let mut last = last.borrow_mut();
        last.status = status as u32;
        last.message.clear();
        last.message.push_str(message);
        last.error = error;
    });
}

/// Runs `f` with this thread's last error.
pub(crate) fn with_last_error<R>(f: impl FnOnce(&LastError) -> R) -> R {
    LAST_ERROR.with(|last| f(&last.borrow()))
}

/// Runs one `extern "C"` body: catches any panic (returning `MQSTATE_STATUS_PANIC`), records
/// the message of a failure in the thread-local last error, and clears it on success.
pub(crate) fn boundary(body: impl FnOnce() -> FfiResult) -> mqstate_status {
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(Ok(())) => {
            set_last_error(mqstate_status::Ok, "", None);
            mqstate_status::Ok
        }
        Ok(Err(failure)) => {
            set_last_error(failure.status, &failure.message, failure.error);
            failure.status
        }
        Err(payload) => {
            let what = payload
                .downcast_ref::<&str>()
                .map(|s| (*s).to_owned())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic payload".to_owned());
            set_last_error(
                mqstate_status::Panic,
                &format!("mqstate panicked (a bug): {what}"),
                None,
            );
            mqstate_status::Panic
        }
    }
}

/// The name of `status`, e.g. `"malformed"`, as a static NUL-terminated string; for store
/// errors the kind (`"syntax_error"`, `"unknown_store_error"` …); `"ok"` for 0. A number that
/// is no status gives `"unknown_status"`. Never NULL; the caller must not free it.
#[unsafe(no_mangle)]
pub extern "C" fn mqstate_status_name(status: u32) -> *const c_char {
    let name = ALL_STATUSES
        .into_iter()
        .find(|s| *s as u32 == status)
        .map_or("unknown_status\0", mqstate_status::name);
    name.as_ptr().cast()
}

/// Copies the message of the last error on the calling thread into `buf` (`len` bytes,
/// always NUL-terminated when `len > 0`, truncated if needed) and returns the message length
/// without the NUL, so `len` must exceed the return value for the whole message. `buf` may be
/// NULL when `len` is 0 (to ask for the length). A successful call clears the message.
///
/// # Safety
/// `buf` must be NULL or point to `len` writable bytes.
#[unsafe(no_mangle)]
#[expect(
    clippy::not_unsafe_ptr_arg_deref,
    reason = "a C function: its pointers are as its # Safety section says (lib.rs)"
)]
pub extern "C" fn mqstate_last_error_message(buf: *mut c_char, len: usize) -> usize {
    let copy = |last: &String| {
        if !buf.is_null() && len > 0 {
            let n = last.len().min(len - 1);
            // SAFETY: the caller promises `len` writable bytes at `buf`; `n + 1 <= len`.
            unsafe {
                std::ptr::copy_nonoverlapping(last.as_ptr(), buf.cast::<u8>(), n);
                *buf.add(n) = 0;
            }
        }
        last.len()
    };
    catch_unwind(AssertUnwindSafe(|| {
        LAST_ERROR.with(|last| copy(&last.borrow().message))
    }))
    .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::CStr;

    fn name_of(status: u32) -> &'static str {
        // SAFETY: mqstate_status_name returns a static NUL-terminated string.
        unsafe { CStr::from_ptr(mqstate_status_name(status)) }
            .to_str()
            .unwrap()
    }

    #[test]
    fn every_core_kind_has_its_own_status_named_like_the_core() {
        let mut seen = std::collections::HashSet::new();
        for kind in ErrorKind::all().chain([ErrorKind::Rpc(500)]) {
            let status = mqstate_status::of_kind(kind);
            assert_ne!(status, mqstate_status::Internal, "{kind:?}");
            assert_eq!(name_of(status as u32), kind.code(), "{kind:?}");
            seen.insert(status as u32);
        }
        assert_eq!(seen.len(), ErrorKind::all().count());
    }

    #[test]
    fn every_status_below_200_is_a_row_of_the_core_table() {
        for status in ALL_STATUSES {
            let n = status as u32;
            if n == 0 || n >= 200 {
                continue;
            }
            let row = mqstate::ERROR_TABLE
                .iter()
                .find(|r| r.number == n)
                .unwrap_or_else(|| panic!("status {n} has no row in the core table"));
            assert_eq!(name_of(n), row.code);
        }
        assert_eq!(
            ALL_STATUSES
                .iter()
                .filter(|s| (1..200).contains(&(**s as u32)))
                .count(),
            mqstate::ERROR_TABLE.len()
        );
    }

    #[test]
    fn store_kinds_are_numbered_100_up_in_core_order() {
        for (i, kind) in StoreErrorKind::ALL.into_iter().enumerate() {
            assert_eq!(mqstate_status::of_store(kind) as usize, 100 + i);
        }
    }

    #[test]
    fn numbers_are_fixed() {
        let numbers: Vec<u32> = ALL_STATUSES.iter().map(|s| *s as u32).collect();
        let mut want: Vec<u32> = (0..=18).chain(100..=112).collect();
        want.extend([200, 254, 255]);
        assert_eq!(numbers, want);
        assert_eq!(name_of(9999), "unknown_status");
    }

    #[test]
    fn panics_are_caught_and_reported() {
        let status = boundary(|| panic!("boom"));
        assert_eq!(status, mqstate_status::Panic);
        let mut buf = [0 as c_char; 64];
        let n = mqstate_last_error_message(buf.as_mut_ptr(), buf.len());
        // SAFETY: the function NUL-terminates within the buffer.
        let text = unsafe { CStr::from_ptr(buf.as_ptr()) }.to_str().unwrap();
        assert!(text.ends_with("boom"), "{text}");
        assert_eq!(n, text.len());
        assert_eq!(boundary(|| Ok(())), mqstate_status::Ok);
        let empty = mqstate_last_error_message(std::ptr::null_mut(), 0);
        assert_eq!(empty, 0);
    }
}
