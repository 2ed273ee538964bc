//! Faults injected on demand (the `testing` feature's [`LocalStore`](crate::testing::LocalStore)
//! arms them): a pause of the request workers, store errors for the next requests, and a
//! notification path gone silent (notifications dropped unsent for a while).
//!
//! The state lives here, always compiled, so the serving path needs no feature gate: when
//! nothing is armed a request pays one relaxed atomic load for each (see
//! [`Faults::failure_for`] and [`Faults::wait_unpaused`]).

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use std::time::Duration;

use mqstate::codec::{StoreErrorKind, Verb};
use mqstate::{Error, ErrorKind};
use tokio::time::Instant;

/// The faults armed on one server.
#[derive(Debug, Default)]
pub(crate) struct Faults {
    /// Whether `paused_until` may be set (checked before the lock).
    pause_armed: AtomicBool,
    /// Requests wait until then.
    paused_until: Mutex<Option<Instant>>,
    /// Whether `failures` may hold something (checked before the lock).
    fail_armed: AtomicBool,
    /// The next requests to answer with a store error.
    failures: Mutex<Option<Failures>>,
    /// Requests held by a pause now (in [`Faults::wait_unpaused`]).
    held: AtomicUsize,
    /// Whether `muted_until` may be set (checked before the lock).
    mute_armed: AtomicBool,
    /// Notifications are dropped until then.
    muted_until: Mutex<Option<Instant>>,
    /// Notifications dropped by a mute so far.
    muted: AtomicUsize,
}

/// Counts one request held by a pause while it lives (also when its wait is cancelled).
struct Held<'a>(&'a AtomicUsize);

impl Drop for Held<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// `fail_next`: how many requests are still to fail, with which error, of which verb.
#[derive(Clone, Copy, Debug)]
struct Failures {
    left: usize,
    kind: StoreErrorKind,
    verb: Option<Verb>,
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|poison| poison.into_inner())
}

impl Faults {
    /// Requests wait until `until` (a later pause already armed is kept).
    pub(crate) fn pause_until(&self, until: Instant) {
        let mut paused = lock(&self.paused_until);
        if paused.is_none_or(|at| at < until) {
            *paused = Some(until);
        }
        self.pause_armed.store(true, Ordering::SeqCst);
    }

    /// How many requests a pause holds now (tests wait for one to be held before they act).
    #[cfg(feature = "testing")]
    pub(crate) fn held(&self) -> usize {
        self.held.load(Ordering::SeqCst)
    }

    /// Waits while a pause is armed; returns at once when none is.
    pub(crate) async fn wait_unpaused(&self) {
        if !self.pause_armed.load(Ordering::Relaxed) {
            return;
        }
        self.held.fetch_add(1, Ordering::SeqCst);
        let _held = Held(&self.held);
        while self.pause_armed.load(Ordering::SeqCst) {
            let until = {
                let mut paused = lock(&self.paused_until);
                match *paused {
                    Some(until) if until > Instant::now() => until,
                    _ => {
                        *paused = None;
                        self.pause_armed.store(false, Ordering::SeqCst);
                        return;
                    }
                }
            };
            tokio::time::sleep_until(until).await;
        }
    }

    /// Notifications are dropped, unsent, until `until` (a later end already armed is kept).
    #[cfg(feature = "testing")]
    pub(crate) fn mute_until(&self, until: Instant) {
        let mut muted = lock(&self.muted_until);
        if muted.is_none_or(|at| at < until) {
            *muted = Some(until);
        }
        self.mute_armed.store(true, Ordering::SeqCst);
    }

    /// Notifications dropped by a mute so far.
    #[cfg(feature = "testing")]
    pub(crate) fn muted(&self) -> usize {
        self.muted.load(Ordering::SeqCst)
    }

    /// Whether a notification sent now is to be dropped (counting it).
    pub(crate) fn drops_notification(&self) -> bool {
        if !self.mute_armed.load(Ordering::Relaxed) {
            return false;
        }
        let mut muted = lock(&self.muted_until);
        match *muted {
            Some(until) if until > Instant::now() => {
                self.muted.fetch_add(1, Ordering::SeqCst);
                true
            }
            _ => {
                *muted = None;
                self.mute_armed.store(false, Ordering::SeqCst);
                false
            }
        }
    }

    /// Answers the next `n` requests (of `verb` only, if given) with `kind`, replacing what
    /// was armed before; `n == 0` disarms.
    pub(crate) fn fail_next(&self, n: usize, kind: StoreErrorKind, verb: Option<Verb>) {
        let mut failures = lock(&self.failures);
        *failures = (n > 0).then_some(Failures {
            left: n,
            kind,
            verb,
        });
        self.fail_armed.store(n > 0, Ordering::SeqCst);
    }

    /// The store error to answer the request `payload` with instead of serving it, if a
    /// `fail_next` applies to it (counting it).
    pub(crate) fn failure_for(&self, payload: &bytes::Bytes) -> Option<StoreErrorKind> {
        if !self.fail_armed.load(Ordering::Relaxed) {
            return None;
        }
        let mut failures = lock(&self.failures);
        let armed = failures.as_mut()?;
        if let Some(verb) = armed.verb {
            let theirs = mqstate::codec::Request::decode(payload)
                .ok()
                .map(|r| r.verb());
            if theirs != Some(verb) {
                return None;
            }
        }
        let kind = armed.kind;
        armed.left -= 1;
        if armed.left == 0 {
            *failures = None;
            self.fail_armed.store(false, Ordering::SeqCst);
        }
        Some(kind)
    }
}

/// When a timed fault (`what`) that lasts `duration` from now ends: at least 1 ms, and not
/// past what the clock can hold.
pub(crate) fn fault_end(what: &str, duration: Duration) -> Result<Instant, Error> {
    if duration < Duration::from_millis(1) {
        return Err(Error::invalid_argument(format!(
            "{what}: the duration must be at least 1 ms (got {duration:?})"
        )));
    }
    Instant::now()
        .checked_add(duration)
        .ok_or_else(|| Error::invalid_argument(format!("{what}: the duration is too long")))
}

/// The store error whose code is `code` (what `fail_next` may inject).
pub(crate) fn store_error_kind(code: &str) -> Result<StoreErrorKind, Error> {
    match ErrorKind::from_code(code) {
        Some(ErrorKind::Store(kind)) if kind != StoreErrorKind::Unknown => Ok(kind),
        _ => {
            let known: Vec<&str> = StoreErrorKind::ALL
                .into_iter()
                .filter(|k| *k != StoreErrorKind::Unknown)
                .map(StoreErrorKind::as_str)
                .collect();
            Err(Error::invalid_argument(format!(
                "fail_next: {code:?} is not the code of a state store error; one of: {}",
                known.join(", ")
            )))
        }
    }
}

/// The verb named `command` (any case).
pub(crate) fn verb(command: &str) -> Result<Verb, Error> {
    Verb::from_wire(command.to_ascii_uppercase().as_bytes()).ok_or_else(|| {
        Error::invalid_argument(format!(
            "fail_next: {command:?} is not a command; one of: SET, GET, DEL, VDEL, KEYNOTIFY, SCAN"
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_state_store_error_codes_can_be_injected() {
        assert_eq!(
            store_error_kind("fencing_token_lower_version").unwrap(),
            StoreErrorKind::FencingTokenLowerVersion
        );
        for code in [
            "timeout",
            "connection_lost",
            "unknown_store_error",
            "nope",
            "",
        ] {
            let e = store_error_kind(code).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{code}");
            assert!(e.message().contains("quota_exceeded"), "{}", e.message());
        }
        assert_eq!(verb("set").unwrap(), Verb::Set);
        assert_eq!(verb("KEYNOTIFY").unwrap(), Verb::KeyNotify);
        assert_eq!(verb("PUT").unwrap_err().kind(), ErrorKind::InvalidArgument);
    }

    fn get() -> bytes::Bytes {
        mqstate::codec::Request::Get { key: &b"k"[..] }.encode()
    }

    fn set() -> bytes::Bytes {
        mqstate::codec::Request::Set {
            key: &b"k"[..],
            value: &b"v"[..],
            condition: mqstate::codec::SetCondition::Always,
            expiry_ms: None,
        }
        .encode()
    }

    #[test]
    fn fail_next_counts_only_requests_of_its_verb() {
        let faults = Faults::default();
        assert_eq!(faults.failure_for(&set()), None, "nothing armed");
        faults.fail_next(2, StoreErrorKind::QuotaExceeded, Some(Verb::Set));
        assert_eq!(faults.failure_for(&get()), None);
        assert_eq!(
            faults.failure_for(&set()),
            Some(StoreErrorKind::QuotaExceeded)
        );
        assert_eq!(faults.failure_for(&get()), None);
        assert_eq!(
            faults.failure_for(&set()),
            Some(StoreErrorKind::QuotaExceeded)
        );
        assert_eq!(faults.failure_for(&set()), None, "two only");
        faults.fail_next(1, StoreErrorKind::NotAuthorized, None);
        assert_eq!(
            faults.failure_for(&get()),
            Some(StoreErrorKind::NotAuthorized)
        );
        assert_eq!(faults.failure_for(&get()), None);
    }

    #[tokio::test]
    async fn a_pause_holds_until_its_end() {
        let faults = Faults::default();
        faults.wait_unpaused().await;
        let end = Instant::now() + std::time::Duration::from_millis(50);
        faults.pause_until(end);
        faults.wait_unpaused().await;
        assert!(Instant::now() >= end, "released before the pause ended");
        assert!(!faults.pause_armed.load(Ordering::SeqCst), "disarmed after");
    }
}
