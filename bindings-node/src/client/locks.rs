//! `NativeLock` and `NativeElection`: the core's lock and election handles. Every wait is
//! a cancellable Promise; the fenced edit's decision is a JS function called on the JS
//! thread through a threadsafe function.
//!
//! The edit function the JS layer passes wraps the user's one and never rejects: it
//! resolves to a [`RawDecision`]; when the user's function threw or rejected, the JS layer
//! keeps that value under an id, and the decision carries the id. The core then ends the
//! edit with a `callback` error whose payload is the id ([`CallbackId`](crate::error::CallbackId)),
//! and the JS layer rethrows the very value it kept.

use std::sync::Arc;

use mqstate::bridge::{Decide, ElectionHandle, LockHandle};
use mqstate::{Error, ErrorKind};
use napi::Status;
use napi::bindgen_prelude::{Buffer, Env, Object, Promise, Unknown};
use napi::threadsafe_function::ThreadsafeFunction;
use napi_derive::napi;

use super::convert::{RawDecision, RawEditResult, RawValue, bytes, millis};
use napi::bindgen_prelude::ClassInstance;

use super::pending::{CancelHandle, promise};
use super::subscription::NativeSubscription;
use crate::hlc::Hlc;
use crate::telemetry::NativeCallTrace;

/// The JS decision function: `(previous) => Promise<RawDecision>`.
type DecideFn =
    ThreadsafeFunction<Option<RawValue>, Promise<RawDecision>, Option<RawValue>, Status, false>;

/// The edit function could not be called, or its Promise not read: the kind every
/// binding gives a failed callback.
fn lost(e: napi::Error) -> Error {
    Error::new(
        ErrorKind::Callback,
        format!("the edit function could not be called: {e}"),
    )
}

/// The core's decision callback over the JS one.
fn decide(f: DecideFn) -> Decide {
    let f = Arc::new(f);
    Arc::new(move |previous| {
        let f = Arc::clone(&f);
        Box::pin(async move {
            let decision = f.call_async_catch(previous.map(RawValue::from)).await;
            decision.map_err(lost)?.await.map_err(lost)?.into_edit()
        })
    })
}

/// A leased lock.
#[napi]
pub struct NativeLock {
    lock: LockHandle,
}

impl From<LockHandle> for NativeLock {
    fn from(lock: LockHandle) -> Self {
        NativeLock { lock }
    }
}

#[napi]
impl NativeLock {
    /// The same lock, its calls traced by `trace` (see `callTrace`): the requests the core
    /// makes for each call carry its trace context.
    #[napi]
    pub fn traced(&self, trace: &NativeCallTrace) -> NativeLock {
        NativeLock {
            lock: self.lock.traced(trace.trace()),
        }
    }

    /// The lock key.
    #[napi(getter)]
    pub fn key(&self) -> Buffer {
        Buffer::from(self.lock.key().to_vec())
    }

    /// The holder id this lock writes.
    #[napi(getter)]
    pub fn holder_id(&self) -> String {
        self.lock.holder_id().to_owned()
    }

    /// Tries once: the fencing token, or `null` when someone else holds it. `lease`
    /// absent: the lock's.
    #[napi(ts_return_type = "Promise<hlc.Hlc | null>")]
    pub fn try_acquire<'env>(
        &self,
        env: &'env Env,
        lease: Option<Unknown>,
        cancel: Option<ClassInstance<CancelHandle>>,
    ) -> napi::Result<Object<'env>> {
        let call = self.lock.try_acquire(millis(env, lease, "leaseMs")?);
        promise(env, call, cancel, |t| t.map(Hlc::from))
    }

    /// Waits for the lock, up to `timeout` (absent: without end). `lease` absent: the
    /// lock's.
    #[napi(ts_return_type = "Promise<hlc.Hlc>")]
    pub fn acquire<'env>(
        &self,
        env: &'env Env,
        lease: Option<Unknown>,
        timeout: Option<Unknown>,
        cancel: Option<ClassInstance<CancelHandle>>,
    ) -> napi::Result<Object<'env>> {
        let lease = millis(env, lease, "leaseMs")?;
        let call = self.lock.acquire(lease, millis(env, timeout, "timeoutMs")?);
        promise(env, call, cancel, Hlc::from)
    }

    /// Renews the held lease: the new token, or `null` when no longer held.
    #[napi(ts_return_type = "Promise<hlc.Hlc | null>")]
    pub fn renew<'env>(
        &self,
        env: &'env Env,
        cancel: Option<ClassInstance<CancelHandle>>,
    ) -> napi::Result<Object<'env>> {
        promise(env, self.lock.renew(), cancel, |t| t.map(Hlc::from))
    }

    /// Releases the lock; `true` when our hold was deleted.
    #[napi(ts_return_type = "Promise<boolean>")]
    pub fn release<'env>(
        &self,
        env: &'env Env,
        cancel: Option<ClassInstance<CancelHandle>>,
    ) -> napi::Result<Object<'env>> {
        promise(env, self.lock.release(), cancel, |b| b)
    }

    /// The current holder id, or `null` when free.
    #[napi(ts_return_type = "Promise<string | null>")]
    pub fn holder<'env>(
        &self,
        env: &'env Env,
        cancel: Option<ClassInstance<CancelHandle>>,
    ) -> napi::Result<Object<'env>> {
        promise(env, self.lock.holder(), cancel, |h| h)
    }

    /// The fencing token while held.
    #[napi(getter, ts_return_type = "hlc.Hlc | null")]
    pub fn fencing_token(&self) -> Option<Hlc> {
        self.lock.fencing_token().map(Hlc::from)
    }

    /// Whether the lock is held now.
    #[napi(getter)]
    pub fn is_held(&self) -> bool {
        self.lock.is_held()
    }

    /// Sets the automatic renewal period in milliseconds (`null`: none), from the next
    /// acquire on.
    #[napi]
    pub fn set_auto_renew(&self, env: &Env, period: Option<Unknown>) -> napi::Result<()> {
        let period = millis(env, period, "periodMs")?;
        self.lock
            .set_auto_renew(period)
            .map_err(|e| crate::error::to_js(env, &e))
    }

    /// Holder events: the current holder, then each change.
    #[napi(ts_return_type = "Promise<NativeSubscription>")]
    pub fn watch_holder<'env>(
        &self,
        env: &'env Env,
        cancel: Option<ClassInstance<CancelHandle>>,
    ) -> napi::Result<Object<'env>> {
        promise(
            env,
            self.lock.watch_holder(),
            cancel,
            NativeSubscription::from,
        )
    }

    /// Status events: the current status, then each change.
    #[napi]
    pub fn watch_status(&self) -> NativeSubscription {
        NativeSubscription::from(self.lock.watch_status())
    }

    /// Fenced edit of `key` under this lock; `decide` is the JS layer's decision wrapper.
    /// `lease` absent: the lock's; `timeout` absent: the core's edit timeout.
    #[napi(
        ts_args_type = "key: Buffer | Uint8Array | string, decide: (previous: RawValue | null) => Promise<RawDecision>, lease?: number | undefined | null, timeout?: number | undefined | null, cancel?: CancelHandle | undefined | null",
        ts_return_type = "Promise<RawEditResult>"
    )]
    pub fn edit<'env>(
        &self,
        env: &'env Env,
        key: Unknown,
        decide_fn: DecideFn,
        lease: Option<Unknown>,
        timeout: Option<Unknown>,
        cancel: Option<ClassInstance<CancelHandle>>,
    ) -> napi::Result<Object<'env>> {
        let lease = millis(env, lease, "leaseMs")?;
        let timeout = millis(env, timeout, "timeoutMs")?;
        let call = self
            .lock
            .edit(bytes(env, key, "key")?, lease, timeout, decide(decide_fn));
        promise(env, call, cancel, RawEditResult::from)
    }
}

/// A candidate in an election.
#[napi]
pub struct NativeElection {
    election: ElectionHandle,
}

impl From<ElectionHandle> for NativeElection {
    fn from(election: ElectionHandle) -> Self {
        NativeElection { election }
    }
}

#[napi]
impl NativeElection {
    /// The same candidate, its calls traced by `trace` (see `NativeLock.traced`).
    #[napi]
    pub fn traced(&self, trace: &NativeCallTrace) -> NativeElection {
        NativeElection {
            election: self.election.traced(trace.trace()),
        }
    }

    /// The candidate id.
    #[napi(getter)]
    pub fn candidate_id(&self) -> String {
        self.election.candidate_id().to_owned()
    }

    /// Waits to become leader for `term` (absent: the election's), up to `timeout`
    /// (absent: without end); the leader's fencing token.
    #[napi(ts_return_type = "Promise<hlc.Hlc>")]
    pub fn campaign<'env>(
        &self,
        env: &'env Env,
        term: Option<Unknown>,
        timeout: Option<Unknown>,
        cancel: Option<ClassInstance<CancelHandle>>,
    ) -> napi::Result<Object<'env>> {
        let term = millis(env, term, "termMs")?;
        let call = self
            .election
            .campaign(term, millis(env, timeout, "timeoutMs")?);
        promise(env, call, cancel, Hlc::from)
    }

    /// Becomes leader if nobody is; `true` when leader now. `term` absent: the election's.
    #[napi(ts_return_type = "Promise<boolean>")]
    pub fn try_campaign<'env>(
        &self,
        env: &'env Env,
        term: Option<Unknown>,
        cancel: Option<ClassInstance<CancelHandle>>,
    ) -> napi::Result<Object<'env>> {
        let call = self.election.try_campaign(millis(env, term, "termMs")?);
        promise(env, call, cancel, |b| b)
    }

    /// Steps down; `true` when this candidate led.
    #[napi(ts_return_type = "Promise<boolean>")]
    pub fn resign<'env>(
        &self,
        env: &'env Env,
        cancel: Option<ClassInstance<CancelHandle>>,
    ) -> napi::Result<Object<'env>> {
        promise(env, self.election.resign(), cancel, |b| b)
    }

    /// The current leader, or `null`.
    #[napi(ts_return_type = "Promise<string | null>")]
    pub fn leader<'env>(
        &self,
        env: &'env Env,
        cancel: Option<ClassInstance<CancelHandle>>,
    ) -> napi::Result<Object<'env>> {
        promise(env, self.election.leader(), cancel, |l| l)
    }

    /// Whether this candidate leads now.
    #[napi(getter)]
    pub fn is_leader(&self) -> bool {
        self.election.is_leader()
    }

    /// The leader's fencing token while this candidate leads.
    #[napi(getter, ts_return_type = "hlc.Hlc | null")]
    pub fn fencing_token(&self) -> Option<Hlc> {
        self.election.fencing_token().map(Hlc::from)
    }

    /// Leadership events: the current leader, then each change.
    #[napi(ts_return_type = "Promise<NativeSubscription>")]
    pub fn watch_leader<'env>(
        &self,
        env: &'env Env,
        cancel: Option<ClassInstance<CancelHandle>>,
    ) -> napi::Result<Object<'env>> {
        promise(
            env,
            self.election.watch_leader(),
            cancel,
            NativeSubscription::from,
        )
    }

    /// This candidate's own status events.
    #[napi]
    pub fn watch_status(&self) -> NativeSubscription {
        NativeSubscription::from(self.election.watch_status())
    }
}
