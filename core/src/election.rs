//! Leader election (spec §6): the lock recipe with "leader" naming. The election name is
//! the lock key, the candidate id is the holder value, and the leader keeps its term alive
//! by automatic renewal.
//!
//! - [`Election::campaign`] waits to become leader (woken by the key's DELETE notification
//!   when the leader resigns or its term runs out);
//! - [`Election::is_leader`] turns false **at once** when a renewal fails or finds another
//!   leader, and when the term runs out without renewal, never later than the service's own
//!   expiry;
//! - [`Election::watch_leader`] streams leadership changes of this election only.
//!
//! ```no_run
//! # async fn demo(client: mqstate::Client) -> mqstate::Result<()> {
//! use std::time::Duration;
//! use mqstate::election::Election;
//!
//! let election = Election::new(&client, "pump-controller", "edge-node-a")?;
//! election.campaign(Duration::from_secs(5)).await?;
//! while election.is_leader() {
//!     // act as leader; fence writes with election.lock().set_options()?
//! #   break;
//! }
//! election.resign().await?;
//! # Ok(()) }
//! ```

use std::time::Duration;

use tokio::sync::watch;
use tokio::time::Instant;

use crate::lock::{HolderWatch, Lock, LockOptions, LockStatus, LossReason};
use crate::{Client, Error, Hlc};

/// How a candidate is set up, in the words every binding uses (`term`, `session_id`,
/// `renew_every`); [`Store::election`](crate::bridge::Store::election) turns them into the
/// lock's options (the term is the lease, the renewal period the lock's automatic renewal).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ElectionOptions {
    /// The term of campaigns that name none; `None`: [`DEFAULT_LEASE`](crate::lock::DEFAULT_LEASE).
    pub term: Option<Duration>,
    /// A session id: the candidate id becomes `candidate:session`.
    pub session_id: Option<String>,
    /// How often the leader renews its term; `None`: a third of the term.
    pub renew_every: Option<Duration>,
}

impl From<ElectionOptions> for LockOptions {
    fn from(options: ElectionOptions) -> LockOptions {
        LockOptions {
            holder: None, // the candidate id
            session_id: options.session_id,
            auto_renew: options.renew_every,
            lease: options.term,
        }
    }
}

/// A candidate in one election.
#[derive(Debug)]
pub struct Election {
    lock: Lock,
    renew_every: Option<Duration>,
}

/// The default renewal period: a third of the term, so that two renewals may fail to arrive
/// in time before the term runs out.
fn default_period(term: Duration) -> Duration {
    (term / 3).max(Duration::from_millis(1))
}

impl Election {
    /// Candidate `candidate_id` in the election `name` (the lock key).
    pub fn new(
        client: &Client,
        name: impl AsRef<[u8]>,
        candidate_id: impl Into<String>,
    ) -> Result<Election, Error> {
        let options = LockOptions {
            holder: Some(candidate_id.into()),
            ..LockOptions::default()
        };
        Ok(Election {
            lock: Lock::for_election(client, name, options)?,
            renew_every: None,
        })
    }

    /// Candidate with full lock options (e.g. the client id plus a session id as the
    /// candidate id). `options.auto_renew` is the renewal period of every term; `None`
    /// means a third of the term.
    pub fn with_options(
        client: &Client,
        name: impl AsRef<[u8]>,
        options: LockOptions,
    ) -> Result<Election, Error> {
        let renew_every = options.auto_renew;
        Ok(Election {
            lock: Lock::for_election(client, name, options)?,
            renew_every,
        })
    }

    /// The election name (the lock key).
    pub fn name(&self) -> &[u8] {
        self.lock.key()
    }

    /// This candidate's id.
    pub fn candidate_id(&self) -> &str {
        self.lock.holder_id()
    }

    /// The underlying lock (for fenced writes: [`Lock::set_options`], [`Lock::del_options`]).
    pub fn lock(&self) -> &Lock {
        &self.lock
    }

    fn prepare(&self, term: Duration) -> Result<(), Error> {
        self.lock.set_auto_renew(Some(
            self.renew_every.unwrap_or_else(|| default_period(term)),
        ))
    }

    /// Becomes leader for `term` if nobody is; `true` when this candidate is leader now.
    /// The term is then renewed automatically until [`Election::resign`], a failed renewal,
    /// or the drop of this object.
    pub async fn try_campaign(&self, term: Duration) -> Result<bool, Error> {
        self.prepare(term)?;
        Ok(self.lock.try_acquire(term).await?.is_some())
    }

    /// Waits without end to become leader for `term`; returns the leader's fencing token.
    pub async fn campaign(&self, term: Duration) -> Result<Hlc, Error> {
        self.prepare(term)?;
        self.lock.acquire_until(term, None).await
    }

    /// Waits up to `timeout` to become leader; fails with
    /// [`ErrorKind::Timeout`](crate::ErrorKind::Timeout) when someone else stays leader.
    pub async fn campaign_for(&self, term: Duration, timeout: Duration) -> Result<Hlc, Error> {
        self.prepare(term)?;
        self.lock
            .acquire_until(term, Some(Instant::now() + timeout))
            .await
    }

    /// Steps down: stops renewal and frees the election if this candidate leads it; `true`
    /// when it did lead. Waiting candidates are woken by the DELETE notification.
    pub async fn resign(&self) -> Result<bool, Error> {
        self.lock.release().await
    }

    /// The current leader's id, or `None` when there is none.
    pub async fn leader(&self) -> Result<Option<String>, Error> {
        self.lock.holder().await
    }

    /// Whether this candidate is leader now, as far as it can know: elected, not resigned,
    /// no renewal failed, term not run out.
    pub fn is_leader(&self) -> bool {
        self.lock.is_held()
    }

    /// The leader's fencing token while this candidate leads.
    pub fn fencing_token(&self) -> Option<Hlc> {
        self.lock.fencing_token()
    }

    /// Waits until this candidate's leadership is lost and says why; `None` once it has
    /// resigned (or never led).
    pub async fn lost(&self) -> Option<LossReason> {
        self.lock.lost().await
    }

    /// This candidate's own status changes (elected, renewed, lost, resigned).
    pub fn watch_status(&self) -> watch::Receiver<LockStatus> {
        self.lock.watch_status()
    }

    /// A stream of leadership changes of this election: first the current leader, then
    /// each new leader or vacancy (renewals are not changes).
    pub async fn watch_leader(&self) -> Result<HolderWatch, Error> {
        self.lock.watch_holder().await
    }

    /// Automatic renewals attempted so far (a diagnostic).
    pub fn renewals(&self) -> u64 {
        self.lock.renewals()
    }
}
