//! Waiting for a lock: try, and while someone else holds it, sleep until the lock key's
//! DELETE notification (a release or an expiry), pause a little at random, and try again.
//!
//! The key is observed *before* the retry that follows the first failed try, so a release
//! that happens between the two cannot be missed. As a safety net (a notification lost with
//! a broken connection is resynchronised, but only after the reconnection), the wait also
//! retries after a fallback interval of about one lease (at least 250 ms, at most 5 s).

use std::time::Duration;

use tokio::time::Instant;

use super::{Lock, jitter, whole_ms};
use crate::codec::KeyEvent;
use crate::{Error, ErrorKind, Hlc};

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
        if let Some(token) = self.try_acquire_within(lease, remaining()).await? {
            return Ok(token);
        }
        let mut observer = self.client().observe(self.key()).await?;
        loop {
            if remaining().is_some_and(|r| r.is_zero()) {
                return Err(timed_out());
            }
            if let Some(token) = self.try_acquire_within(lease, remaining()).await? {
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
