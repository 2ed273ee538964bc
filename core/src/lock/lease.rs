//! The life of a lease in time: waiting for a lock held by someone else, and the
//! background task of a held lock.
//!
//! **Waiting** ([`Lock::acquire`](super::Lock::acquire)): try, and while someone else holds
//! the lock, sleep until the lock key's DELETE notification (a release or an expiry), pause
//! a little at random, and try again. The wait's deadline bounds the waiting, not the tries:
//! the first try is always made, and a try under way finishes (bounded by the client's
//! request timeout), so a zero (or tiny) wait is one try — never a try cut short, which
//! could leave the lock taken without the caller knowing. The key is observed *before* the retry that follows
//! the first failed try, so a release between the two cannot be missed. As a safety net (a
//! notification lost with a broken connection is resynchronised only after the
//! reconnection), the wait also retries after about one lease (at least 250 ms, at most 5 s).
//!
//! **Keeping** (one task per successful acquire, the previous one aborted first): automatic
//! renewal at a fixed period, or, without it, a watchdog that marks the lock expired when
//! its lease runs out. The task is aborted on release and on drop, and ends by itself at the
//! first failed renewal. It never retries a failed renewal and never loops without sleeping.
//!
//! **Primitives**: the one `SET key holder NEX PX lease` that acquires and renews, and the
//! status transitions (lost, expired) shared by the lock and its task.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use tokio::time::Instant;
use tracing::debug;

use super::{Inner, Lock, LockStatus, LossReason, jitter, whole_ms};
use crate::codec::{KeyEvent, SetCondition};
use crate::{Error, ErrorKind, Hlc, SetOptions};

/// How long to wait for a notification before trying again anyway.
fn fallback_interval(lease: Duration) -> Duration {
    lease.clamp(Duration::from_millis(250), Duration::from_secs(5))
}

impl Lock {
    /// Takes the lock for `lease`, waiting until `deadline` (`None`: without end).
    pub(crate) async fn acquire_until(
        &self,
        lease: Duration,
        deadline: Option<Instant>,
    ) -> Result<Hlc, Error> {
        let lease = whole_ms(lease)?;
        let started = Instant::now();
        let remaining = || deadline.map(|d| d.saturating_duration_since(Instant::now()));
        let timed_out = || {
            Error::new(
                ErrorKind::Timeout,
                format!(
                    "the lock {} was not acquired within {:?}: someone else holds it",
                    self.key().escape_ascii(),
                    started.elapsed()
                ),
            )
        };
        let out_of_time = || remaining().is_some_and(|r| r.is_zero());
        if let Some(token) = self.try_acquire(lease).await? {
            return Ok(token);
        }
        if out_of_time() {
            return Err(timed_out());
        }
        let mut observer = self.client().observe(self.key()).await?;
        loop {
            if out_of_time() {
                return Err(timed_out());
            }
            if let Some(token) = self.try_acquire(lease).await? {
                return Ok(token);
            }
            let mut wait = fallback_interval(lease);
            if let Some(r) = remaining() {
                wait = wait.min(r);
            }
            let deleted = async {
                loop {
                    match observer.recv().await {
                        Some(n) if n.event == KeyEvent::Delete => return true,
                        Some(_) => continue,
                        None => return false,
                    }
                }
            };
            match tokio::time::timeout(wait, deleted).await {
                Ok(false) => return Err(Error::new(ErrorKind::Closed, "the client was closed")),
                Ok(true) => jitter().await,
                Err(_) => {} // the fallback interval or the deadline
            }
        }
    }
}

/// Runs until the lock is no longer held: renews every `period`, or (`None`) only watches
/// the lease run out.
pub(super) async fn keep(inner: Arc<Inner>, period: Option<Duration>) {
    match period {
        Some(period) => renew_loop(&inner, period).await,
        None => watch_expiry(&inner).await,
    }
}

/// The end of the current lease, if held.
fn valid_until(inner: &Inner) -> Option<Instant> {
    match *inner.status.borrow() {
        LockStatus::Held { valid_until, .. } => Some(valid_until),
        _ => None,
    }
}

async fn renew_loop(inner: &Inner, period: Duration) {
    loop {
        tokio::time::sleep(period).await;
        let _op = inner.op.lock().await;
        inner.expire_if_due();
        let Some(until) = valid_until(inner) else {
            return;
        };
        inner.renewals.fetch_add(1, Ordering::SeqCst);
        // A renewal that cannot finish before the lease ends is a failed one.
        let remaining = until.saturating_duration_since(Instant::now());
        match inner.renew_once(Some(remaining)).await {
            Ok(Some(token)) => debug!(key = %inner.key.escape_ascii(), %token, "lock renewed"),
            Ok(None) => {
                debug!(key = %inner.key.escape_ascii(), "lock renewal found another holder");
                return;
            }
            Err(e) => {
                debug!(key = %inner.key.escape_ascii(), error = %e, "lock renewal failed");
                inner.lose_if_held(LossReason::RenewalFailed(e));
                return;
            }
        }
    }
}

async fn watch_expiry(inner: &Inner) {
    while let Some(until) = valid_until(inner) {
        tokio::time::sleep_until(until).await;
        inner.expire_if_due();
    }
}

impl Inner {
    /// One `SET key holder NEX PX lease`: the token and the validity end, or `None`.
    pub(super) async fn take(
        &self,
        lease: Duration,
        timeout: Option<Duration>,
    ) -> Result<Option<(Hlc, Instant)>, Error> {
        let sent = Instant::now();
        let options = SetOptions {
            condition: SetCondition::NotExistsOrEqual,
            expiry: Some(lease),
            timeout,
            ..SetOptions::default()
        };
        let outcome = self.client.set(&self.key, &self.holder, options).await?;
        if !outcome.applied {
            return Ok(None);
        }
        let token = outcome
            .version
            .ok_or_else(|| Error::malformed("the lock's SET response carries no version"))?;
        Ok(Some((token, sent + lease)))
    }

    /// Renews if held (the caller holds `op`). `timeout` bounds the request.
    pub(super) async fn renew_once(&self, timeout: Option<Duration>) -> Result<Option<Hlc>, Error> {
        self.expire_if_due();
        let LockStatus::Held { lease, .. } = *self.status.borrow() else {
            return Ok(None);
        };
        match self.take(lease, timeout).await? {
            Some((token, valid_until)) => {
                self.set_status(LockStatus::Held {
                    token: token.clone(),
                    lease,
                    valid_until,
                });
                Ok(Some(token))
            }
            None => {
                self.lose_if_held(LossReason::TakenOver);
                Ok(None)
            }
        }
    }

    /// Sets the status (counted: [`Inner::change_status`]).
    pub(super) fn set_status(&self, new: LockStatus) {
        self.change_status(|s| {
            *s = new;
            true
        });
    }

    /// Changes the status with `f` (which says whether it changed it), and counts what the
    /// change was in the client's counters: acquired, renewed, lost or released.
    pub(super) fn change_status(&self, f: impl FnOnce(&mut LockStatus) -> bool) {
        use crate::telemetry::LockChange;
        let mut change = None;
        self.status.send_if_modified(|s| {
            let was = matches!(s, LockStatus::Held { .. });
            if !f(s) {
                return false;
            }
            change = match (was, &*s) {
                (false, LockStatus::Held { .. }) => Some(LockChange::Acquired),
                (true, LockStatus::Held { .. }) => Some(LockChange::Renewed),
                (true, LockStatus::Lost(_)) => Some(LockChange::Lost),
                (true, LockStatus::NotHeld) => Some(LockChange::Released),
                (false, _) => None,
            };
            true
        });
        if let Some(change) = change {
            self.client.counters().lock_changed(change, self.election);
        }
    }

    /// Marks a held lock lost.
    pub(super) fn lose_if_held(&self, reason: LossReason) {
        self.change_status(|s| {
            let held = matches!(s, LockStatus::Held { .. });
            if held {
                *s = LockStatus::Lost(reason);
            }
            held
        });
    }

    /// Marks a held lock whose lease ran out as expired.
    pub(super) fn expire_if_due(&self) {
        self.change_status(|s| match s {
            LockStatus::Held { valid_until, .. } if *valid_until <= Instant::now() => {
                *s = LockStatus::Lost(LossReason::Expired);
                true
            }
            _ => false,
        });
    }

    /// Stops the renewal / expiry task.
    pub(super) fn stop_keeper(&self) {
        let task = self.keeper.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some((task, _)) = task {
            task.abort();
        }
    }
}
