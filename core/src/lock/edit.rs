//! The fenced edit: acquire the lock, read the protected key, let the caller decide its new
//! value, write it with the fencing token, release — retried until the write is applied or
//! the time is up.
//!
//! What is retried: a write refused because a newer holder has written the key since
//! (`FencingTokenLowerVersion`), and a lease that ran out before the write. What is not: an
//! ambiguous failure of the write itself (timeout, lost connection), because the write may
//! have been applied and repeating a read-modify-write could apply it twice; that error is
//! returned as is.

use std::future::Future;
use std::time::Duration;

use bytes::Bytes;
use tokio::time::Instant;
use tracing::debug;

use super::{Lock, jitter};
use crate::codec::StoreErrorKind;
use crate::{DelOptions, Error, ErrorKind, Hlc, SetOptions, Versioned};

/// What a fenced edit writes, as decided by the caller from the key's current value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Edit {
    /// Set the protected key to this value.
    Set(Bytes),
    /// Delete the protected key.
    Delete,
    /// Leave it as it is (nothing is written).
    Keep,
}

/// The outcome of [`Lock::edit`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EditOutcome {
    /// The protected key as it was read under the lock (the edit's input).
    pub previous: Option<Versioned>,
    /// What was written.
    pub edit: Edit,
    /// The protected key's new version after a [`Edit::Set`].
    pub version: Option<Hlc>,
    /// The fencing token the write carried.
    pub token: Hlc,
    /// Attempts made (1 when nothing had to be retried).
    pub attempts: u32,
}

/// One attempt's result: done, or worth another try.
enum Attempt {
    Done(EditOutcome),
    Retry(&'static str),
}

impl Lock {
    /// Edits `protected_key` under this lock: acquires it for `lease` (waiting as
    /// [`Lock::acquire`] does), reads the key, calls `decide` with what it read, writes the
    /// result fenced with the lock's token, and releases the lock. Retried until applied;
    /// fails with [`ErrorKind::Timeout`] once `timeout` has passed.
    ///
    /// `decide` may be called more than once (once per attempt), always with the value read
    /// in that attempt. The lock is released after every attempt, even a failed one.
    pub async fn edit<F>(
        &self,
        protected_key: impl AsRef<[u8]>,
        lease: Duration,
        timeout: Duration,
        mut decide: F,
    ) -> Result<EditOutcome, Error>
    where
        F: FnMut(Option<&Versioned>) -> Edit,
    {
        self.edit_with(protected_key, lease, timeout, |previous| {
            std::future::ready(Ok(decide(previous.as_ref())))
        })
        .await
    }

    /// [`Lock::edit`] with an asynchronous, fallible `decide` (what bindings use: a Python
    /// coroutine, a JavaScript async function, a C callback that may fail). An error from
    /// `decide` ends the edit at once (the lock is released, nothing is written) and is
    /// returned unchanged, so a binding's own error object comes back to its caller.
    pub async fn edit_with<F, Fut>(
        &self,
        protected_key: impl AsRef<[u8]>,
        lease: Duration,
        timeout: Duration,
        mut decide: F,
    ) -> Result<EditOutcome, Error>
    where
        F: FnMut(Option<Versioned>) -> Fut,
        Fut: Future<Output = Result<Edit, Error>>,
    {
        crate::rpc::check_timeout(timeout)?;
        let key = protected_key.as_ref();
        let deadline = Instant::now() + timeout;
        let mut attempts = 0;
        loop {
            attempts += 1;
            let token = self.acquire_until(lease, Some(deadline)).await?;
            let attempt = self.edit_once(key, token, deadline, &mut decide).await;
            if let Err(e) = self.release().await {
                debug!(error = %e, "releasing the lock after an edit failed; it will expire");
            }
            match attempt? {
                Attempt::Done(mut outcome) => {
                    outcome.attempts = attempts;
                    return Ok(outcome);
                }
                Attempt::Retry(why) => {
                    debug!(attempts, why, "retrying a fenced edit");
                    if Instant::now() >= deadline {
                        return Err(Error::new(
                            ErrorKind::Timeout,
                            format!("the edit was not applied within {timeout:?}: {why}"),
                        ));
                    }
                    jitter().await;
                }
            }
        }
    }

    /// Read, decide, write once with `token`.
    async fn edit_once<F, Fut>(
        &self,
        key: &[u8],
        token: Hlc,
        deadline: Instant,
        decide: &mut F,
    ) -> Result<Attempt, Error>
    where
        F: FnMut(Option<Versioned>) -> Fut,
        Fut: Future<Output = Result<Edit, Error>>,
    {
        // Past the cache: the decision is fenced, so it must see the store's state, never a
        // cached one (a stale read here would let a newer token overwrite another holder's
        // acknowledged edit).
        let previous = self
            .client()
            .get_with(key, crate::GetOptions::past_cache())
            .await?;
        let edit = decide(previous.clone()).await?;
        if !self.is_held() {
            return Ok(Attempt::Retry("the lease ran out before the write"));
        }
        let timeout = Some(deadline.saturating_duration_since(Instant::now()))
            .filter(|t| !t.is_zero())
            .ok_or_else(|| Error::new(ErrorKind::Timeout, "no time left for the edit's write"))?;
        let written = match &edit {
            Edit::Set(value) => {
                let options = SetOptions {
                    fencing_token: Some(token.clone()),
                    timeout: Some(timeout),
                    ..SetOptions::default()
                };
                self.client()
                    .set(key, value, options)
                    .await
                    .map(|o| o.version)
            }
            Edit::Delete => {
                let options = DelOptions {
                    fencing_token: Some(token.clone()),
                    timeout: Some(timeout),
                };
                self.client().del(key, options).await.map(|_| None)
            }
            Edit::Keep => Ok(None),
        };
        match written {
            Ok(version) => Ok(Attempt::Done(EditOutcome {
                previous,
                edit,
                version,
                token,
                attempts: 0,
            })),
            Err(e) if e.kind() == ErrorKind::Store(StoreErrorKind::FencingTokenLowerVersion) => {
                Ok(Attempt::Retry("a newer lock holder wrote the key"))
            }
            Err(e) => Err(e),
        }
    }
}
