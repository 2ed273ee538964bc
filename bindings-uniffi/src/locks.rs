//! [`Lock`] and [`Election`]: leased locks with fenced edits, and leader elections, over the
//! core's [`LockHandle`] / [`ElectionHandle`]. Every wait is a cancellable call: cancelling
//! the coroutine of an `acquire` or a `campaign` cancels it in the core (the lock is then
//! never taken for nobody).

use std::sync::Arc;

use mqstate::ElectionOptions as CoreElectionOptions;
use mqstate::Error;
use mqstate::bridge::{ElectionHandle, LockHandle, blocking_decide};
use mqstate::lock::LockOptions as CoreLockOptions;

use crate::MqstateError;
use crate::call::settle;
use crate::subscription::Subscription;
use crate::telemetry::CallTrace;
use crate::values::{Edit, EditResult, Hlc, LockStatus, Seconds, Value, duration, value, version};

/// How a lock is set up (`client.lock(key, LockOptions(lease = …))`).
#[derive(Clone, Debug, Default, PartialEq, uniffi::Record)]
pub struct LockOptions {
    /// The lease of `acquire` / `tryAcquire` / `edit` when the call gives none (default: the
    /// core's default lease, 10 s).
    #[uniffi(default = None)]
    pub lease: Option<Seconds>,
    /// The holder id written as the lock's value; default the client id.
    #[uniffi(default = None)]
    pub holder: Option<String>,
    /// A session id: the holder id becomes `holder:session`.
    #[uniffi(default = None)]
    pub session_id: Option<String>,
    /// Renew the lease automatically this often after each successful acquire.
    #[uniffi(default = None)]
    pub auto_renew: Option<Seconds>,
}

impl LockOptions {
    pub(crate) fn to_core(&self) -> Result<CoreLockOptions, MqstateError> {
        Ok(CoreLockOptions {
            holder: self.holder.clone(),
            session_id: self.session_id.clone(),
            auto_renew: duration("auto_renew", self.auto_renew)?,
            lease: duration("lease", self.lease)?,
        })
    }
}

/// How a candidate is set up (`client.election(name, candidate, ElectionOptions(term = …))`).
#[derive(Clone, Debug, Default, PartialEq, uniffi::Record)]
pub struct ElectionOptions {
    /// The term of `campaign` / `tryCampaign` when the call gives none (default: the core's
    /// default lease, 10 s).
    #[uniffi(default = None)]
    pub term: Option<Seconds>,
    /// A session id: the holder id becomes `candidate:session`.
    #[uniffi(default = None)]
    pub session_id: Option<String>,
    /// How often the leader renews its term (default: a third of the term).
    #[uniffi(default = None)]
    pub renew_every: Option<Seconds>,
}

impl ElectionOptions {
    pub(crate) fn to_core(&self) -> Result<CoreElectionOptions, MqstateError> {
        Ok(CoreElectionOptions {
            term: duration("term", self.term)?,
            session_id: self.session_id.clone(),
            renew_every: duration("renew_every", self.renew_every)?,
        })
    }
}

/// A fenced edit's decision, implemented by the caller (the Kotlin layer's `edit { }`
/// lambda). Called on a library thread, once per attempt.
#[uniffi::export(callback_interface)]
pub trait EditFunction: Send + Sync {
    /// From the value read under the lock (none: missing) to what to write. An error ends
    /// the edit with the `callback` error.
    fn decide(&self, current: Option<Value>) -> Result<Edit, DecideError>;
}

/// Why an [`EditFunction`] gave no decision (Kotlin `DecideException`, Swift `DecideError`):
/// what it raised, as text. The edit then ends with the core's `callback` error; the Kotlin
/// layer keeps the exception itself and rethrows it from `edit`.
#[derive(Clone, Debug, PartialEq, Eq, uniffi::Error)]
pub enum DecideError {
    /// The function failed.
    Failed {
        /// What it raised, for people.
        reason: String,
    },
}

impl std::fmt::Display for DecideError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let DecideError::Failed { reason } = self;
        f.write_str(reason)
    }
}

impl std::error::Error for DecideError {}

/// The core's `callback` error, carrying what the function raised.
impl From<DecideError> for Error {
    fn from(e: DecideError) -> Error {
        Error::callback(e.to_string(), Arc::new(e))
    }
}

/// A callback that failed with something else than a `DecideError`.
impl From<uniffi::UnexpectedUniFFICallbackError> for DecideError {
    fn from(e: uniffi::UnexpectedUniFFICallbackError) -> DecideError {
        DecideError::Failed { reason: e.reason }
    }
}

/// A leased lock on one key.
#[derive(uniffi::Object)]
pub struct Lock {
    lock: LockHandle,
}

impl Lock {
    pub(crate) fn new(lock: LockHandle) -> Arc<Lock> {
        Arc::new(Lock { lock })
    }
}

/// A lock whose calls carry a trace context, and the trace of what they met.
#[derive(uniffi::Record)]
pub struct TracedLock {
    /// The same lock, its calls' requests carrying the context.
    pub lock: Arc<Lock>,
    /// What its calls met on the way.
    pub trace: Arc<CallTrace>,
}

/// A candidate whose calls carry a trace context, and the trace of what they met.
#[derive(uniffi::Record)]
pub struct TracedElection {
    /// The same candidate, its calls' requests carrying the context.
    pub election: Arc<Election>,
    /// What its calls met on the way.
    pub trace: Arc<CallTrace>,
}

#[uniffi::export]
impl Lock {
    /// The same lock with its calls traced, for one operation under an OpenTelemetry span
    /// (as `Client.traced`): the requests the core makes for it carry the context.
    #[uniffi::method(default(tracestate = None))]
    pub fn traced(
        &self,
        traceparent: Option<String>,
        tracestate: Option<String>,
    ) -> Result<TracedLock, MqstateError> {
        let (core, trace) = CallTrace::checked(traceparent, tracestate)?;
        Ok(TracedLock {
            lock: Lock::new(self.lock.traced(core)),
            trace,
        })
    }

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
    pub async fn try_acquire(&self, lease: Option<Seconds>) -> Result<Option<Hlc>, MqstateError> {
        let call = self.lock.try_acquire(duration("lease", lease)?);
        Ok(version(settle(call).await?))
    }

    /// Waits for the lock, up to `timeout` (none: until the coroutine is cancelled); the
    /// fencing token.
    #[uniffi::method(default(lease = None, timeout = None))]
    pub async fn acquire(
        &self,
        lease: Option<Seconds>,
        timeout: Option<Seconds>,
    ) -> Result<Hlc, MqstateError> {
        let call = self
            .lock
            .acquire(duration("lease", lease)?, duration("timeout", timeout)?);
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
        self.lock.status().into()
    }

    /// Renew automatically this often from the next acquire on (none: never).
    pub fn set_auto_renew(&self, period: Option<Seconds>) -> Result<(), MqstateError> {
        Ok(self.lock.set_auto_renew(duration("auto_renew", period)?)?)
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
    /// `timeout` (default: the core's edit timeout, 10 s). `decide` runs on a blocking
    /// thread of the library, once per attempt.
    #[uniffi::method(default(lease = None, timeout = None))]
    pub async fn edit(
        &self,
        key: Vec<u8>,
        decide: Box<dyn EditFunction>,
        lease: Option<Seconds>,
        timeout: Option<Seconds>,
    ) -> Result<EditResult, MqstateError> {
        let decide = blocking_decide(move |previous| {
            decide
                .decide(value(previous))
                .map(Into::into)
                .map_err(Error::from)
        });
        let (lease, timeout) = (duration("lease", lease)?, duration("timeout", timeout)?);
        let call = self.lock.edit(key, lease, timeout, decide);
        Ok(settle(call).await?.into())
    }
}

/// A candidate in one election.
#[derive(uniffi::Object)]
pub struct Election {
    election: ElectionHandle,
}

impl Election {
    pub(crate) fn new(election: ElectionHandle) -> Arc<Election> {
        Arc::new(Election { election })
    }
}

#[uniffi::export]
impl Election {
    /// The same candidate with its calls traced (as [`Lock::traced`]).
    #[uniffi::method(default(tracestate = None))]
    pub fn traced(
        &self,
        traceparent: Option<String>,
        tracestate: Option<String>,
    ) -> Result<TracedElection, MqstateError> {
        let (core, trace) = CallTrace::checked(traceparent, tracestate)?;
        Ok(TracedElection {
            election: Election::new(self.election.traced(core)),
            trace,
        })
    }

    /// This candidate's id.
    pub fn candidate_id(&self) -> String {
        self.election.candidate_id().to_owned()
    }

    /// Waits to become leader, up to `timeout` (none: until the coroutine is cancelled);
    /// the leader's fencing token. The term is then renewed until `resign()`.
    #[uniffi::method(default(term = None, timeout = None))]
    pub async fn campaign(
        &self,
        term: Option<Seconds>,
        timeout: Option<Seconds>,
    ) -> Result<Hlc, MqstateError> {
        let call = self
            .election
            .campaign(duration("term", term)?, duration("timeout", timeout)?);
        Ok(settle(call).await?.into())
    }

    /// Becomes leader if nobody is; `true` when leader now.
    #[uniffi::method(default(term = None))]
    pub async fn try_campaign(&self, term: Option<Seconds>) -> Result<bool, MqstateError> {
        settle(self.election.try_campaign(duration("term", term)?)).await
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_decision_is_the_callback_error() {
        let core = Error::from(DecideError::Failed {
            reason: "boom".into(),
        });
        assert_eq!(core.kind(), mqstate::ErrorKind::Callback);
        assert_eq!(MqstateError::from(core).detail(), "boom");
    }
}
