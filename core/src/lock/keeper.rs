//! The background task of a held lock: automatic renewal at a fixed period, or, without it,
//! a watchdog that marks the lock expired when its lease runs out.
//!
//! One task runs per successful acquire (the previous one is aborted first); it is aborted
//! on release and on drop, and it ends by itself at the first failed renewal. It never
//! retries a failed renewal and never loops without sleeping.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use tokio::time::Instant;
use tracing::debug;

use super::{Inner, LockStatus, LossReason};

/// Runs until the lock is no longer held: renews every `period`, or (`None`) only watches
/// the lease run out.
pub(super) async fn run(inner: Arc<Inner>, period: Option<Duration>) {
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
