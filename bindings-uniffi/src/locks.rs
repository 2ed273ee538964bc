//! [`Lock`] and [`Election`]: leased locks with fenced edits, and leader elections, over the
//! core's [`LockHandle`] / [`ElectionHandle`]. Every wait is a cancellable call: cancelling
//! the coroutine of an `acquire` or a `campaign` cancels it in the core (the lock is then
//! never taken for nobody).

use std::sync::Arc;
use std::time::Duration;

use mqstate::bridge::{Decide, ElectionHandle, LockHandle};
use mqstate::{Error, ErrorKind};

use crate::MqstateError;
use crate::call::settle;
use crate::subscription::Subscription;
use crate::values::{Edit, EditResult, Hlc, LockStatus, Value, value, version};

/// The lease (the term) when neither the options nor the call give one.
const DEFAULT_LEASE: Duration = Duration::from_secs(10);
/// How long an edit may take when the call does not say.
const DEFAULT_EDIT_TIMEOUT: Duration = Duration::from_secs(10);

/// How a lock is set up (`client.lock(key, LockOptions(lease = …))`).
#[derive(Clone, Debug, Default, PartialEq, Eq, uniffi::Record)]
pub struct LockOptions {
    /// The lease of `acquire` / `tryAcquire` when the call gives none (default 10 s).
    #[uniffi(default = None)]
    pub lease: Option<Duration>,
    /// The holder id written as the lock's value; default the client id.
    #[uniffi(default = None)]
    pub holder: Option<String>,
    /// A session id: the holder id becomes `holder:session`.
    #[uniffi(default = None)]
    pub session_id: Option<String>,
    /// Renew the lease automatically this often after each successful acquire.
    #[uniffi(default = None)]
    pub auto_renew: Option<Duration>,
}

/// How a candidate is set up (`client.election(name, candidate, ElectionOptions(term = …))`).
#[derive(Clone, Debug, Default, PartialEq, Eq, uniffi::Record)]
pub struct ElectionOptions {
    /// The term of `campaign` / `tryCampaign` when the call gives none (default 10 s).
    #[uniffi(default = None)]
    pub term: Option<Duration>,
    /// A session id: the holder id becomes `candidate:session`.
    #[uniffi(default = None)]
    pub session_id: Option<String>,
    /// How often the leader renews its term (default: a third of the term).
    #[uniffi(default = None)]
    pub renew_every: Option<Duration>,
}

/// A fenced edit's decision, implemented by the caller (the Kotlin layer's `edit { }`
/// lambda). Called on a library thread, once per attempt.
#[uniffi::export(callback_interface)]
pub trait EditFunction: Send + Sync {
    /// From the value read under the lock (none: missing) to what to write. An error ends
    /// the edit with the `callback` error.
    fn decide(&self, current: Option<Value>) -> Result<Edit, MqstateError>;
}

/// A leased lock on one key.
#[derive(uniffi::Object)]
pub struct Lock {
    lock: LockHandle,
    lease: Duration,
}

impl Lock {
    pub(crate) fn new(lock: LockHandle, lease: Option<Duration>) -> Arc<Lock> {
        Arc::new(Lock {
            lock,
            lease: lease.unwrap_or(DEFAULT_LEASE),
        })
    }
}

#[uniffi::export]
impl Lock {
    /// The lock key.
    pub fn key(&self) -> Vec<u8> {
        self.lock.key().to_vec()
    }

    /// The holder id this lock writes.
    pub fn holder_id(&self) -> String {
        self.lock.holder_id().to_owned()
    }

    /// Tries once: the fencing token, or none when someone else holds it.
    #[uniffi::method(default(lease = None))]
    pub async fn try_acquire(&self, lease: Option<Duration>) -> Result<Option<Hlc>, MqstateError> {
        let call = self.lock.try_acquire(Some(lease.unwrap_or(self.lease)));
        Ok(version(settle(call).await?))
    }

    /// Waits for the lock, up to `timeout` (none: until the coroutine is cancelled); the
    /// fencing token.
    #[uniffi::method(default(lease = None, timeout = None))]
    pub async fn acquire(
        &self,
        lease: Option<Duration>,
        timeout: Option<Duration>,
    ) -> Result<Hlc, MqstateError> {
        let call = self
            .lock
            .acquire(Some(lease.unwrap_or(self.lease)), timeout);
        Ok(settle(call).await?.into())
    }

    /// Renews the held lease: the new token, or none when no longer held.
    pub async fn renew(&self) -> Result<Option<Hlc>, MqstateError> {
        Ok(version(settle(self.lock.renew()).await?))
    }

    /// Releases the lock; `true` when our hold was deleted.
    pub async fn release(&self) -> Result<bool, MqstateError> {
        settle(self.lock.release()).await
    }

    /// The current holder id, or none when free.
    pub async fn holder(&self) -> Result<Option<String>, MqstateError> {
        settle(self.lock.holder()).await
    }

    /// The fencing token while held.
    pub fn fencing_token(&self) -> Option<Hlc> {
        version(self.lock.fencing_token())
    }

    /// Whether the lock is held now.
    pub fn is_held(&self) -> bool {
        self.lock.is_held()
    }

    /// The lock's status now.
    pub fn status(&self) -> LockStatus {
        self.lock.state().into()
    }

    /// Renew automatically this often from the next acquire on (none: never).
    pub fn set_auto_renew(&self, period: Option<Duration>) -> Result<(), MqstateError> {
        Ok(self.lock.set_auto_renew(period)?)
    }

    /// `Event.Status` events: the current status, then each change.
    pub fn watch_status(&self) -> Arc<Subscription> {
        Subscription::new(self.lock.watch_status())
    }

    /// `Event.Holder` events: the current holder, then each change.
    pub async fn watch_holder(&self) -> Result<Arc<Subscription>, MqstateError> {
        Ok(Subscription::new(settle(self.lock.watch_holder()).await?))
    }

    /// Edits `key` under this lock: acquires it, reads the key, asks `decide`, writes its
    /// answer fenced, releases; retried while a newer holder wrote meanwhile, up to
    /// `timeout` (default 10 s).
    #[uniffi::method(default(lease = None, timeout = None))]
    pub async fn edit(
        &self,
        key: Vec<u8>,
        decide: Box<dyn EditFunction>,
        lease: Option<Duration>,
        timeout: Option<Duration>,
    ) -> Result<EditResult, MqstateError> {
        let decide: Arc<dyn EditFunction> = Arc::from(decide);
        let decide: Decide = Arc::new(move |previous| {
            let decide = Arc::clone(&decide);
            Box::pin(async move {
                // A foreign call may block: not on a runtime worker.
                tokio::task::spawn_blocking(move || {
                    decide.decide(value(previous)).map_err(Error::from)
                })
                .await
                .unwrap_or_else(|e| Err(Error::new(ErrorKind::Callback, e.to_string())))
                .map(Into::into)
            })
        });
        let call = self.lock.edit(
            key,
            Some(lease.unwrap_or(self.lease)),
            Some(timeout.unwrap_or(DEFAULT_EDIT_TIMEOUT)),
            decide,
        );
        Ok(settle(call).await?.into())
    }
}

/// A candidate in one election.
#[derive(uniffi::Object)]
pub struct Election {
    election: ElectionHandle,
    term: Duration,
}

impl Election {
    pub(crate) fn new(election: ElectionHandle, term: Option<Duration>) -> Arc<Election> {
        Arc::new(Election {
            election,
            term: term.unwrap_or(DEFAULT_LEASE),
        })
    }
}

#[uniffi::export]
impl Election {
    /// This candidate's id.
    pub fn candidate_id(&self) -> String {
        self.election.candidate_id().to_owned()
    }

    /// Waits to become leader, up to `timeout` (none: until the coroutine is cancelled);
    /// the leader's fencing token. The term is then renewed until `resign()`.
    #[uniffi::method(default(term = None, timeout = None))]
    pub async fn campaign(
        &self,
        term: Option<Duration>,
        timeout: Option<Duration>,
    ) -> Result<Hlc, MqstateError> {
        let call = self
            .election
            .campaign(Some(term.unwrap_or(self.term)), timeout);
        Ok(settle(call).await?.into())
    }

    /// Becomes leader if nobody is; `true` when leader now.
    #[uniffi::method(default(term = None))]
    pub async fn try_campaign(&self, term: Option<Duration>) -> Result<bool, MqstateError> {
        settle(self.election.try_campaign(Some(term.unwrap_or(self.term)))).await
    }

    /// Steps down; `true` when this candidate led.
    pub async fn resign(&self) -> Result<bool, MqstateError> {
        settle(self.election.resign()).await
    }

    /// The current leader's id, or none.
    pub async fn leader(&self) -> Result<Option<String>, MqstateError> {
        settle(self.election.leader()).await
    }

    /// Whether this candidate leads now.
    pub fn is_leader(&self) -> bool {
        self.election.is_leader()
    }

    /// The leader's fencing token while this candidate leads.
    pub fn fencing_token(&self) -> Option<Hlc> {
        version(self.election.fencing_token())
    }

    /// `Event.Holder` events of the leadership: the current leader, then each change.
    pub async fn watch_leader(&self) -> Result<Arc<Subscription>, MqstateError> {
        Ok(Subscription::new(
            settle(self.election.watch_leader()).await?,
        ))
    }

    /// `Event.Status` events of this candidate's own leadership.
    pub fn watch_status(&self) -> Arc<Subscription> {
        Subscription::new(self.election.watch_status())
    }
}
