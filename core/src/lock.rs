//! Leased locks with fencing tokens (spec §6), the building block of [`edit`](Lock::edit)
//! and of [leader election](crate::election).
//!
//! The recipe: acquire or renew = `SET lockKey holderId NEX PX leaseMs`. `+OK` means the
//! lock is held and the response version is the **fencing token** to pass (`__ft`) on every
//! write to the keys the lock protects; `:-1` means someone else holds it. Release =
//! `VDEL lockKey holderId`. The holder id is the client id, or `clientId:sessionId` when a
//! session id is given (interoperable with the Go and .NET SDKs).
//!
//! Guarantees of this implementation:
//! - automatic renewal (see [`LockOptions::auto_renew`]) starts **only** after a successful
//!   acquire, renews at its period (never faster, never in a tight loop), stops at the first
//!   failed renewal (the status turns [`LockStatus::Lost`] at once) and stops when the lock
//!   is released or dropped;
//! - [`Lock::acquire`] waits on the lock key's DELETE notifications (release or expiry) with
//!   a small random delay before retrying, so waiters do not stampede;
//! - the lock believes it holds the lease only until `send time + lease`, which is never
//!   later than the service's own expiry, so [`Lock::is_held`] errs on the safe side.
//!
//! Dropping a [`Lock`] stops its renewal but does not delete the lock key: the lease runs out
//! on its own. Call [`Lock::release`] to hand the lock over at once.
//!
//! ```no_run
//! # async fn demo(client: mqstate::Client) -> mqstate::Result<()> {
//! use std::time::Duration;
//! use mqstate::lock::{Lock, LockOptions};
//!
//! let options = LockOptions { auto_renew: Some(Duration::from_secs(3)), ..LockOptions::default() };
//! let lock = Lock::with_options(&client, "orders/lock", options)?;
//! let token = lock.acquire(Duration::from_secs(10), Duration::from_secs(30)).await?;
//! client.set("orders/next", "42", lock.set_options()?).await?; // fenced with `token`
//! lock.release().await?;
//! # let _ = token; Ok(()) }
//! ```

mod edit;
mod holder;
mod lease;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio::time::Instant;

use crate::{Client, DelOptions, Error, Hlc, SetOptions, VdelOutcome};

pub use edit::{Edit, EditOutcome};

/// The lease a lock (or an election's term) gets when the caller names none, in every
/// language.
pub const DEFAULT_LEASE: Duration = Duration::from_secs(10);

/// How long an `edit` may wait for its lock when the caller names no timeout, in every
/// language.
pub const DEFAULT_EDIT_TIMEOUT: Duration = Duration::from_secs(10);

/// The shortest lease (or term) a caller may ask for: anything shorter expires before
/// its first write could reach the store, so it is refused as a mistake (a unit mixed up,
/// milliseconds for seconds).
pub const MIN_LEASE: Duration = Duration::from_millis(1);
pub use holder::{HolderChange, HolderWatch};

/// How a [`Lock`] is set up.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LockOptions {
    /// The holder id written as the lock's value; default the client id.
    pub holder: Option<String>,
    /// A session id: the holder id becomes `holder:session`, so that several sessions of
    /// one client (or of one candidate) are told apart.
    pub session_id: Option<String>,
    /// Renew the lease automatically this often after each successful acquire. Must be
    /// shorter than the lease (checked at acquire time); `None` (default) renews only when
    /// [`Lock::renew`] is called.
    pub auto_renew: Option<Duration>,
    /// The lease (or an election's term) of calls through the binding layer that name none;
    /// `None`: [`DEFAULT_LEASE`].
    pub lease: Option<Duration>,
}

impl LockOptions {
    /// The lease of a call that names none: [`LockOptions::lease`], else [`DEFAULT_LEASE`].
    pub fn default_lease(&self) -> Duration {
        self.lease.unwrap_or(DEFAULT_LEASE)
    }
}

/// Where a lock stands, as this lock object knows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LockStatus {
    /// Never acquired, or released.
    NotHeld,
    /// Held: writes to protected keys use `token`, valid until `valid_until` unless renewed.
    Held {
        /// The fencing token (the version of the last successful acquire or renewal).
        token: Hlc,
        /// The lease in whole milliseconds.
        lease: Duration,
        /// Send time of the last successful acquire or renewal plus the lease: never later
        /// than the service's expiry of the lock key.
        valid_until: Instant,
    },
    /// Was held, and no longer is.
    Lost(LossReason),
}

impl LockStatus {
    /// The status's name in every language: `not_held`, `held` or `lost` (the vocabulary's
    /// [`LOCK_STATES`](crate::vocabulary::LOCK_STATES)).
    pub fn as_str(&self) -> &'static str {
        match self {
            LockStatus::NotHeld => "not_held",
            LockStatus::Held { .. } => "held",
            LockStatus::Lost(_) => "lost",
        }
    }
}

/// Why a held lock was lost.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LossReason {
    /// The lease ran out without a renewal.
    Expired,
    /// A renewal found another holder.
    TakenOver,
    /// A renewal failed (timeout, lost connection …): the lock is given up at once, although
    /// the service may still hold it for us until the lease runs out.
    RenewalFailed(Error),
}

impl LossReason {
    /// The reason's name in every language: `expired`, `taken_over` or `renewal_failed` (the
    /// vocabulary's [`LOSS_REASONS`](crate::vocabulary::LOSS_REASONS)).
    pub fn as_str(&self) -> &'static str {
        match self {
            LossReason::Expired => "expired",
            LossReason::TakenOver => "taken_over",
            LossReason::RenewalFailed(_) => "renewal_failed",
        }
    }

    /// The renewal's error, for `renewal_failed`.
    pub fn error(&self) -> Option<&Error> {
        match self {
            LossReason::RenewalFailed(e) => Some(e),
            _ => None,
        }
    }
}

/// A leased lock on one key for one holder id. Not `Clone`: one object owns the renewal.
pub struct Lock {
    inner: Arc<Inner>,
}

/// The state shared with the renewal task.
struct Inner {
    client: Client,
    key: Bytes,
    holder: String,
    auto_renew: Mutex<Option<Duration>>,
    status: watch::Sender<LockStatus>,
    renewals: AtomicU64,
    /// An election's candidate (its holds count as leader changes too).
    election: bool,
    /// The background task of the current hold, and whether it renews.
    keeper: Mutex<Option<(JoinHandle<()>, bool)>>,
    /// Serialises acquire, renew and release of this object.
    op: tokio::sync::Mutex<()>,
}

impl std::fmt::Debug for Lock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Lock")
            .field("key", &self.inner.key)
            .field("holder", &self.inner.holder)
            .field("status", &*self.inner.status.borrow())
            .finish()
    }
}

/// Rounds a lease up to whole milliseconds; zero is refused.
fn whole_ms(lease: Duration) -> Result<Duration, Error> {
    crate::client::whole_millis("lease", lease, MIN_LEASE).map(Duration::from_millis)
}

/// A short random pause (1–30 ms) so that waiters woken together do not retry together.
pub(crate) async fn jitter() {
    let ms = rand::random_range(1..=30u64);
    tokio::time::sleep(Duration::from_millis(ms)).await;
}

impl Lock {
    /// A lock on `key` held as this client's id.
    pub fn new(client: &Client, key: impl AsRef<[u8]>) -> Result<Lock, Error> {
        Lock::with_options(client, key, LockOptions::default())
    }

    /// A lock on `key` with `options` (holder id, session id, automatic renewal).
    pub fn with_options(
        client: &Client,
        key: impl AsRef<[u8]>,
        options: LockOptions,
    ) -> Result<Lock, Error> {
        let key = Bytes::copy_from_slice(key.as_ref());
        if key.is_empty() {
            return Err(Error::invalid_argument("the lock key must not be empty"));
        }
        let mut holder = options
            .holder
            .unwrap_or_else(|| client.client_id().to_owned());
        if let Some(session) = options.session_id {
            holder = format!("{holder}:{session}");
        }
        if holder.is_empty() {
            return Err(Error::invalid_argument("the holder id must not be empty"));
        }
        if options.auto_renew.is_some_and(|p| p.is_zero()) {
            return Err(Error::invalid_argument(
                "the renewal period must be positive",
            ));
        }
        if let Some(lease) = options.lease {
            whole_ms(lease)?;
        }
        Ok(Lock {
            inner: Arc::new(Inner {
                client: client.clone(),
                key,
                holder,
                auto_renew: Mutex::new(options.auto_renew),
                status: watch::Sender::new(LockStatus::NotHeld),
                renewals: AtomicU64::new(0),
                election: false,
                keeper: Mutex::new(None),
                op: tokio::sync::Mutex::new(()),
            }),
        })
    }

    /// A lock for an election's candidate: its holds count as leader changes too.
    pub(crate) fn for_election(
        client: &Client,
        key: impl AsRef<[u8]>,
        options: LockOptions,
    ) -> Result<Lock, Error> {
        let mut lock = Lock::with_options(client, key, options)?;
        if let Some(inner) = Arc::get_mut(&mut lock.inner) {
            inner.election = true;
        }
        Ok(lock)
    }

    /// The lock key.
    pub fn key(&self) -> &Bytes {
        &self.inner.key
    }

    /// The holder id this lock writes (`clientId` or `clientId:sessionId`).
    pub fn holder_id(&self) -> &str {
        &self.inner.holder
    }

    /// The client the lock uses.
    pub fn client(&self) -> &Client {
        &self.inner.client
    }

    /// Changes the automatic renewal period; takes effect at the next acquire.
    pub fn set_auto_renew(&self, period: Option<Duration>) -> Result<(), Error> {
        if period.is_some_and(|p| p.is_zero()) {
            return Err(Error::invalid_argument(
                "the renewal period must be positive",
            ));
        }
        *self
            .inner
            .auto_renew
            .lock()
            .unwrap_or_else(|e| e.into_inner()) = period;
        Ok(())
    }

    /// The current status; a held lease past its `valid_until` reads as expired.
    pub fn status(&self) -> LockStatus {
        self.inner.expire_if_due();
        self.inner.status.borrow().clone()
    }

    /// A receiver of status changes (acquired, renewed with a new token, lost, released).
    pub fn watch_status(&self) -> watch::Receiver<LockStatus> {
        self.inner.status.subscribe()
    }

    /// Whether the lock is held now: acquired, not lost or released, lease not run out.
    pub fn is_held(&self) -> bool {
        matches!(self.status(), LockStatus::Held { .. })
    }

    /// The current fencing token while the lock is held.
    pub fn fencing_token(&self) -> Option<Hlc> {
        match self.status() {
            LockStatus::Held { token, .. } => Some(token),
            _ => None,
        }
    }

    /// Waits until the held lock is lost and says why; `None` once it is released or not
    /// held. Returns at once if it is already lost.
    pub async fn lost(&self) -> Option<LossReason> {
        let mut rx = self.inner.status.subscribe();
        loop {
            let current = rx.borrow_and_update().clone();
            match current {
                LockStatus::Lost(reason) => return Some(reason),
                LockStatus::NotHeld => return None,
                LockStatus::Held { .. } => {}
            }
            rx.changed().await.ok()?;
        }
    }

    /// Renewals the automatic renewal task has attempted so far (successful or not).
    pub fn renewals(&self) -> u64 {
        self.inner.renewals.load(Ordering::SeqCst)
    }

    /// Whether an automatic renewal task is running now.
    pub fn is_renewing(&self) -> bool {
        let keeper = self.inner.keeper.lock().unwrap_or_else(|e| e.into_inner());
        keeper
            .as_ref()
            .is_some_and(|(task, renews)| *renews && !task.is_finished())
    }

    /// Options for a SET fenced with the current token; fails with
    /// [`ErrorKind::NotHeld`](crate::ErrorKind::NotHeld) when not held.
    pub fn set_options(&self) -> Result<SetOptions, Error> {
        Ok(SetOptions {
            fencing_token: Some(self.require_token()?),
            ..SetOptions::default()
        })
    }

    /// Options for a DEL or VDEL fenced with the current token; fails with
    /// [`ErrorKind::NotHeld`](crate::ErrorKind::NotHeld) when not held.
    pub fn del_options(&self) -> Result<DelOptions, Error> {
        Ok(DelOptions {
            fencing_token: Some(self.require_token()?),
            ..DelOptions::default()
        })
    }

    fn require_token(&self) -> Result<Hlc, Error> {
        self.fencing_token().ok_or_else(|| {
            Error::new(
                crate::ErrorKind::NotHeld,
                format!("the lock {} is not held", self.inner.key.escape_ascii()),
            )
        })
    }

    /// Tries once to take the lock for `lease` (whole milliseconds, rounded up). Returns the
    /// fencing token, or `None` when someone else holds it. Starts automatic renewal (if
    /// configured) only when it succeeds.
    pub async fn try_acquire(&self, lease: Duration) -> Result<Option<Hlc>, Error> {
        let lease = whole_ms(lease)?;
        let period = *self
            .inner
            .auto_renew
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        if period.is_some_and(|p| p >= lease) {
            return Err(Error::invalid_argument(format!(
                "the renewal period {period:?} must be shorter than the lease {lease:?}"
            )));
        }
        let _op = self.inner.op.lock().await;
        match self.inner.take(lease, None).await? {
            Some((token, valid_until)) => {
                self.inner.stop_keeper();
                self.inner.set_status(LockStatus::Held {
                    token: token.clone(),
                    lease,
                    valid_until,
                });
                let task = self
                    .inner
                    .client
                    .runtime()
                    .spawn(lease::keep(Arc::clone(&self.inner), period));
                *self.inner.keeper.lock().unwrap_or_else(|e| e.into_inner()) =
                    Some((task, period.is_some()));
                Ok(Some(token))
            }
            None => {
                self.inner.lose_if_held(LossReason::TakenOver);
                Ok(None)
            }
        }
    }

    /// Takes the lock for `lease`, waiting up to `timeout` for its holder to release it or
    /// for its lease to run out; fails with [`ErrorKind::Timeout`](crate::ErrorKind::Timeout)
    /// when the time is up. The first try is always made, so `Duration::ZERO` is "do not
    /// wait": one try, then the timeout error if someone else holds the lock.
    pub async fn acquire(&self, lease: Duration, timeout: Duration) -> Result<Hlc, Error> {
        self.acquire_until(lease, Some(Instant::now() + timeout))
            .await
    }

    /// Renews the held lease (a new fencing token, a new `valid_until`). `None` when the
    /// lock is not held any more (never acquired, released, expired or taken over).
    pub async fn renew(&self) -> Result<Option<Hlc>, Error> {
        let _op = self.inner.op.lock().await;
        self.inner.renew_once(None).await
    }

    /// Releases the lock: stops renewal and deletes the lock key if it still holds our
    /// holder id (VDEL). `true` when our hold was deleted.
    pub async fn release(&self) -> Result<bool, Error> {
        self.inner.stop_keeper();
        let _op = self.inner.op.lock().await;
        self.inner.set_status(LockStatus::NotHeld);
        let outcome = self
            .inner
            .client
            .vdel(&self.inner.key, &self.inner.holder, DelOptions::default())
            .await?;
        Ok(outcome == VdelOutcome::Deleted)
    }

    /// The current holder id of the lock key (whoever holds it), or `None` when free.
    pub async fn holder(&self) -> Result<Option<String>, Error> {
        // Past the cache: who holds a lock is the store's answer, never a cached one.
        let got = self
            .inner
            .client
            .get_with(&self.inner.key, crate::GetOptions::past_cache())
            .await?;
        Ok(got.map(|v| String::from_utf8_lossy(&v.value).into_owned()))
    }

    /// A stream of the lock's holder: first the current holder, then each change (renewals
    /// by the same holder are not changes). Only this lock's key is reported.
    pub async fn watch_holder(&self) -> Result<HolderWatch, Error> {
        HolderWatch::start(&self.inner.client, &self.inner.key).await
    }
}

impl Drop for Lock {
    fn drop(&mut self) {
        self.inner.stop_keeper();
        // A hold nobody can release any more is no longer counted as held by this client
        // (its status stays as it was, for whoever still watches it).
        if matches!(*self.inner.status.borrow(), LockStatus::Held { .. }) {
            let released = crate::telemetry::LockChange::Released;
            self.inner
                .client
                .counters()
                .lock_changed(released, self.inner.election);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vocabulary::{LOCK_STATES, LOSS_REASONS};

    #[test]
    fn status_and_reason_names_are_the_vocabulary() {
        let held = LockStatus::Held {
            token: Hlc::new(1, 0, "n").unwrap(),
            lease: Duration::from_secs(1),
            valid_until: Instant::now(),
        };
        let reasons = [
            LossReason::Expired,
            LossReason::TakenOver,
            LossReason::RenewalFailed(Error::new(crate::ErrorKind::Timeout, "t")),
        ];
        let states = [
            LockStatus::NotHeld,
            held,
            LockStatus::Lost(LossReason::Expired),
        ];
        assert_eq!(states.map(|s| s.as_str()), LOCK_STATES);
        assert_eq!(reasons.clone().map(|r| r.as_str()), LOSS_REASONS);
        assert_eq!(reasons.map(|r| r.error().is_some()), [false, false, true]);
    }
}
