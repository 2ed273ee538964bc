//! Locks and elections for bindings: [`LockHandle`] and [`ElectionHandle`], cloneable
//! wrappers whose every wait is a cancellable [`Call`], whose status and holder streams are
//! [`Subscription`]s, and whose decision callbacks are asynchronous and fallible ([`Decide`],
//! [`Lead`]): an error a user's callback raises comes back unchanged.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;

use super::{Call, ClientHandle, Event, Subscription};
use crate::Versioned;
use crate::election::Election;
use crate::error::{Error, ErrorKind};
use crate::hlc::Hlc;
use crate::lock::{Edit, EditOutcome, Lock, LockOptions, LockStatus};
use crate::telemetry::CallTrace;

/// A boxed future, as callbacks from other languages return them.
pub type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;

/// A fenced edit's decision: from the value read under the lock to what to write. Called
/// once per attempt; an `Err` ends the edit and is returned unchanged.
pub type Decide = Arc<dyn Fn(Option<Versioned>) -> BoxFuture<Result<Edit, Error>> + Send + Sync>;

/// Work done as leader, given the leader's fencing token; an `Err` is returned unchanged.
pub type Lead = Arc<dyn Fn(Hlc) -> BoxFuture<Result<(), Error>> + Send + Sync>;

/// A [`Decide`] from a blocking decision function (a call into another language that may
/// take its time or its interpreter's lock): each attempt runs `decide` on a blocking
/// thread, never on a runtime worker. What `decide` returns comes back unchanged; if its
/// thread fails (a panic), the edit ends with [`ErrorKind::Callback`] — the same in every
/// language.
pub fn blocking_decide(
    decide: impl Fn(Option<Versioned>) -> Result<Edit, Error> + Send + Sync + 'static,
) -> Decide {
    let decide = Arc::new(decide);
    Arc::new(move |previous| {
        let decide = Arc::clone(&decide);
        Box::pin(async move {
            tokio::task::spawn_blocking(move || decide(previous))
                .await
                .unwrap_or_else(|e| {
                    Err(Error::new(
                        ErrorKind::Callback,
                        format!("the edit callback failed on its thread: {e}"),
                    ))
                })
        })
    })
}

/// A subscription of a lock's own status: the current one first, then each change; it
/// ends when the lock is dropped or its client closes.
fn status_subscription(store: &ClientHandle, lock: &Lock) -> Subscription {
    let mut rx = lock.watch_status();
    // The link's receiver, not a client handle: it does not keep the connection open.
    let mut link = store.client().shared.link.subscribe();
    let capacity = store.client().shared.observers.capacity();
    Subscription::start(store.client().runtime(), capacity, |queue| async move {
        let closed = async move {
            let _ = link.wait_for(|l| l.closed).await;
        };
        tokio::pin!(closed);
        loop {
            let status = rx.borrow_and_update().clone();
            queue.push(Event::Status(status));
            tokio::select! {
                changed = rx.changed() => if changed.is_err() { return },
                () = &mut closed => return,
            }
        }
    })
}

/// A subscription of a lock key's holder: the current one first, then each change.
fn holder_subscription(store: &ClientHandle, lock: Arc<Lock>) -> Call<Subscription> {
    let runtime = store.client().runtime().clone();
    let capacity = store.client().shared.observers.capacity();
    store.call(async move {
        let mut watch = lock.watch_holder().await?;
        Ok(Subscription::start(
            &runtime,
            capacity,
            |queue| async move {
                while let Some(change) = watch.recv().await {
                    queue.push(Event::Holder(change));
                }
            },
        ))
    })
}

/// A leased lock on one key (see [`Lock`]). Clones share the lock (and its renewal).
///
/// Every `lease` / `timeout` argument is optional: `None` is the lock's own default lease
/// ([`LockOptions::lease`], else [`DEFAULT_LEASE`](crate::lock::DEFAULT_LEASE)) and, for an
/// edit, [`DEFAULT_EDIT_TIMEOUT`](crate::lock::DEFAULT_EDIT_TIMEOUT): no binding writes a
/// default of its own.
#[derive(Clone, Debug)]
pub struct LockHandle {
    store: ClientHandle,
    lock: Arc<Lock>,
    lease: Duration,
}

impl LockHandle {
    pub(crate) fn new(
        store: ClientHandle,
        key: &[u8],
        options: LockOptions,
    ) -> Result<Self, Error> {
        let lease = options.default_lease();
        let lock = Arc::new(Lock::with_options(store.client(), key, options)?);
        Ok(LockHandle { store, lock, lease })
    }

    /// The same lock, its calls traced by `trace` (see [`ClientHandle::traced`]): the
    /// requests each call makes (SET, VDEL, KEYNOTIFY, GET) carry its trace context and note
    /// what they met in it. A binding makes one per lock operation its span covers; the
    /// automatic renewal an acquire starts is not traced.
    pub fn traced(&self, trace: Arc<CallTrace>) -> LockHandle {
        LockHandle {
            store: self.store.traced(trace),
            ..self.clone()
        }
    }

    /// The lease of calls that name none.
    pub fn default_lease(&self) -> Duration {
        self.lease
    }

    fn call<T: Send + 'static>(
        &self,
        work: impl FnOnce(Arc<Lock>) -> BoxFuture<Result<T, Error>>,
    ) -> Call<T> {
        self.store.call(work(Arc::clone(&self.lock)))
    }

    /// The lock key.
    pub fn key(&self) -> &Bytes {
        self.lock.key()
    }

    /// The holder id this lock writes.
    pub fn holder_id(&self) -> &str {
        self.lock.holder_id()
    }

    /// Tries once: the fencing token, or `None` when someone else holds it.
    pub fn try_acquire(&self, lease: Option<Duration>) -> Call<Option<Hlc>> {
        let lease = lease.unwrap_or(self.lease);
        self.call(|lock| Box::pin(async move { lock.try_acquire(lease).await }))
    }

    /// Waits for the lock up to `timeout` (`None`: without end; cancel the call to stop).
    pub fn acquire(&self, lease: Option<Duration>, timeout: Option<Duration>) -> Call<Hlc> {
        let lease = lease.unwrap_or(self.lease);
        self.call(|lock| {
            Box::pin(async move {
                let deadline = timeout.map(|t| tokio::time::Instant::now() + t);
                lock.acquire_until(lease, deadline).await
            })
        })
    }

    /// Renews the held lease: the new token, or `None` when no longer held.
    pub fn renew(&self) -> Call<Option<Hlc>> {
        self.call(|lock| Box::pin(async move { lock.renew().await }))
    }

    /// Releases the lock; `true` when our hold was deleted.
    pub fn release(&self) -> Call<bool> {
        self.call(|lock| Box::pin(async move { lock.release().await }))
    }

    /// The current holder id, or `None` when free.
    pub fn holder(&self) -> Call<Option<String>> {
        self.call(|lock| Box::pin(async move { lock.holder().await }))
    }

    /// The fencing token while held.
    pub fn fencing_token(&self) -> Option<Hlc> {
        self.lock.fencing_token()
    }

    /// Whether the lock is held now.
    pub fn is_held(&self) -> bool {
        self.lock.is_held()
    }

    /// The lock's status now.
    pub fn status(&self) -> LockStatus {
        self.lock.status()
    }

    /// Sets the automatic renewal period (from the next acquire on).
    pub fn set_auto_renew(&self, period: Option<Duration>) -> Result<(), Error> {
        self.lock.set_auto_renew(period)
    }

    /// [`Event::Status`] events: the current status, then each change.
    pub fn watch_status(&self) -> Subscription {
        status_subscription(&self.store, &self.lock)
    }

    /// [`Event::Holder`] events: the current holder, then each change.
    pub fn watch_holder(&self) -> Call<Subscription> {
        holder_subscription(&self.store, Arc::clone(&self.lock))
    }

    /// Fenced edit of `key` under this lock (see [`Lock::edit_with`]); `timeout` `None` is
    /// [`DEFAULT_EDIT_TIMEOUT`](crate::lock::DEFAULT_EDIT_TIMEOUT).
    pub fn edit(
        &self,
        key: impl Into<Bytes>,
        lease: Option<Duration>,
        timeout: Option<Duration>,
        decide: Decide,
    ) -> Call<EditOutcome> {
        let key = key.into();
        let lease = lease.unwrap_or(self.lease);
        let timeout = timeout.unwrap_or(crate::lock::DEFAULT_EDIT_TIMEOUT);
        self.call(|lock| {
            Box::pin(async move {
                lock.edit_with(key, lease, timeout, |previous| decide(previous))
                    .await
            })
        })
    }
}

/// A candidate in one election (see [`Election`]). A `term` of `None` is the election's own
/// default ([`LockOptions::lease`], else [`DEFAULT_LEASE`](crate::lock::DEFAULT_LEASE)).
#[derive(Clone, Debug)]
pub struct ElectionHandle {
    store: ClientHandle,
    election: Arc<Election>,
    term: Duration,
}

impl ElectionHandle {
    pub(crate) fn new(
        store: ClientHandle,
        name: &[u8],
        candidate: String,
        mut options: LockOptions,
    ) -> Result<Self, Error> {
        options.holder = Some(candidate);
        let term = options.default_lease();
        let election = Arc::new(Election::with_options(store.client(), name, options)?);
        Ok(ElectionHandle {
            store,
            election,
            term,
        })
    }

    /// The same candidate, its calls traced by `trace` (see [`LockHandle::traced`]).
    pub fn traced(&self, trace: Arc<CallTrace>) -> ElectionHandle {
        ElectionHandle {
            store: self.store.traced(trace),
            ..self.clone()
        }
    }

    /// The term of calls that name none.
    pub fn default_term(&self) -> Duration {
        self.term
    }

    fn call<T: Send + 'static>(
        &self,
        work: impl FnOnce(Arc<Election>) -> BoxFuture<Result<T, Error>>,
    ) -> Call<T> {
        self.store.call(work(Arc::clone(&self.election)))
    }

    /// The candidate id.
    pub fn candidate_id(&self) -> &str {
        self.election.candidate_id()
    }

    /// Waits to become leader for `term`, up to `timeout` (`None`: without end; cancel the
    /// call to stop); the leader's fencing token.
    pub fn campaign(&self, term: Option<Duration>, timeout: Option<Duration>) -> Call<Hlc> {
        let term = term.unwrap_or(self.term);
        self.call(|e| {
            Box::pin(async move {
                match timeout {
                    Some(t) => e.campaign_for(term, t).await,
                    None => e.campaign(term).await,
                }
            })
        })
    }

    /// Becomes leader if nobody is; `true` when leader now.
    pub fn try_campaign(&self, term: Option<Duration>) -> Call<bool> {
        let term = term.unwrap_or(self.term);
        self.call(|e| Box::pin(async move { e.try_campaign(term).await }))
    }

    /// Steps down; `true` when this candidate led.
    pub fn resign(&self) -> Call<bool> {
        self.call(|e| Box::pin(async move { e.resign().await }))
    }

    /// The current leader, or `None`.
    pub fn leader(&self) -> Call<Option<String>> {
        self.call(|e| Box::pin(async move { e.leader().await }))
    }

    /// Whether this candidate leads now.
    pub fn is_leader(&self) -> bool {
        self.election.is_leader()
    }

    /// The leader's fencing token while this candidate leads.
    pub fn fencing_token(&self) -> Option<Hlc> {
        self.election.fencing_token()
    }

    /// [`Event::Holder`] events of the leadership: the current leader, then each change.
    pub fn watch_leader(&self) -> Call<Subscription> {
        match Lock::new(self.store.client(), self.election.name()) {
            Ok(lock) => holder_subscription(&self.store, Arc::new(lock)),
            Err(e) => Call::ready(Err(e)),
        }
    }

    /// [`Event::Status`] events of this candidate's own leadership.
    pub fn watch_status(&self) -> Subscription {
        status_subscription(&self.store, self.election.lock())
    }

    /// Campaigns (up to `timeout`), runs `work` as leader with the fencing token, then
    /// resigns, whatever `work` returned; an error from `work` comes back unchanged.
    pub fn lead(&self, term: Option<Duration>, timeout: Option<Duration>, work: Lead) -> Call<()> {
        let term = term.unwrap_or(self.term);
        self.call(|e| {
            Box::pin(async move {
                let token = match timeout {
                    Some(t) => e.campaign_for(term, t).await?,
                    None => e.campaign(term).await?,
                };
                let outcome = work(token).await;
                let resigned = e.resign().await;
                outcome?;
                resigned.map(|_| ())
            })
        })
    }
}
