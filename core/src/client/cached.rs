//! The client's side of the cache ([`crate::cache`]): a read that hits answers at once; one
//! that misses registers the key (KEYNOTIFY, then GET) and fills its entry, and concurrent
//! misses of one key wait for that one fetch; a read while the lease does not hold goes to
//! the store; the lease is renewed in the background (KEYNOTIFY of the canary once per
//! connection, then a SET of it); the client's own acknowledged writes update entries; every
//! key the cache lets go gives its registration back through [`Client::release_later`].

use std::time::Duration;

use bytes::Bytes;
use tracing::debug;

use super::Client;
use crate::cache::{CANARY_EXPIRY, Cache, CacheStats, Change, Flight, Lookup, Renewal};
use crate::codec::{Request, Response, SetCondition};
use crate::error::{Error, ErrorKind};
use crate::hlc::Hlc;
use crate::{GetOptions, Versioned};

/// What a read answered, as the cache keeps it.
fn change_of(read: &Option<Versioned>) -> Change {
    match read {
        Some(v) => Change {
            value: Some(v.value.clone()),
            version: v.version.clone(),
        },
        None => Change {
            value: None,
            version: None,
        },
    }
}

/// A deletion acknowledged with `version`.
fn deleted(version: Option<Hlc>) -> Change {
    Change {
        value: None,
        version,
    }
}

fn answer(change: Change) -> Option<Versioned> {
    change.value.map(|value| Versioned {
        value,
        version: change.version,
    })
}

/// Whether a failed KEYNOTIFY was the store's refusal (the read can still be answered by a
/// GET), not a failure of the link.
fn refused(e: &Error) -> bool {
    matches!(
        e.kind(),
        ErrorKind::Store(_) | ErrorKind::Rpc(_) | ErrorKind::Malformed
    )
}

/// What registering a key for the cache came to.
enum Registered {
    /// KEYNOTIFY accepted; the GET right after it read this.
    Read(Option<Versioned>),
    /// The store refused the KEYNOTIFY.
    Refused,
    /// The cache let the key go before its registration began: nothing was sent.
    Gone,
}

impl Client {
    /// The cache, when it is on and covers `key`.
    fn cache_for(&self, key: &[u8]) -> Option<&Cache> {
        self.shared.cache.as_ref().filter(|c| c.covers(key))
    }

    /// The cache's counters, or `None` when the client has no cache.
    pub fn cache_stats(&self) -> Option<CacheStats> {
        self.shared.cache.as_ref().map(Cache::stats)
    }

    /// The cache's answer to a read of `key` now, if it has one: a hit needs no task (what
    /// the bindings answer at once). `None`: go on with [`Client::get_missed`].
    pub(crate) fn get_cached(&self, key: &[u8], options: &GetOptions) -> Option<Option<Versioned>> {
        if options.bypass_cache {
            return None;
        }
        let cache = self.cache_for(key)?;
        let (found, renewal) = cache.lookup(key, self.shared.link.borrow().view());
        if let Some(renewal) = renewal {
            self.renew_later(renewal);
        }
        match found {
            Lookup::Hit(hit) => Some(answer(hit)),
            Lookup::Lapsed | Lookup::Miss => None,
        }
    }

    /// A read that [`Client::get_cached`] did not answer: through the cache (register, GET,
    /// fill), or from the store.
    pub(crate) async fn get_missed(
        &self,
        key: &[u8],
        options: GetOptions,
    ) -> Result<Option<Versioned>, Error> {
        let timeout = options.timeout.unwrap_or(self.timeout);
        let Some(cache) = self.cache_for(key) else {
            return self.get_from_store(key, timeout).await;
        };
        let link = self.shared.link.borrow().view();
        if options.bypass_cache
            || cache.current(key, link)
            || cache.is_refused(key, link.connection)
        {
            // Past the cache (asked to; the lease does not hold now; or the store refused the
            // key's registration): what the store answers still tells the cache.
            return self.get_past(cache, key, timeout).await;
        }
        self.read_through(cache, key, timeout).await
    }

    /// GET from the store; the answer updates the key's entry, if it has one.
    async fn get_past(
        &self,
        cache: &Cache,
        key: &[u8],
        timeout: Duration,
    ) -> Result<Option<Versioned>, Error> {
        let read = self.get_from_store(key, timeout).await?;
        if self.untrusted(&read) {
            cache.distrust(key);
        } else {
            cache.answered(key, || change_of(&read));
        }
        self.release_removed();
        Ok(read)
    }

    /// Whether `read` carries a version the client's clock refuses (far in the future): the
    /// cache keeps nothing of it.
    fn untrusted(&self, read: &Option<Versioned>) -> bool {
        read.as_ref()
            .and_then(|v| v.version.as_ref())
            .is_some_and(|v| self.clock().receive(v).is_err())
    }

    /// A miss: the first read of the key fetches it (make the entry that collects changes,
    /// register the key, GET it, keep the newer of the two if the connection and the lease
    /// lasted); concurrent reads of it wait for that fetch.
    async fn read_through(
        &self,
        cache: &Cache,
        key: &[u8],
        timeout: Duration,
    ) -> Result<Option<Versioned>, Error> {
        crate::rpc::check_timeout(timeout)?;
        let started = tokio::time::Instant::now();
        let key = Bytes::copy_from_slice(key);
        let _lead = match cache.flight(&key) {
            Flight::Lead(guard) => guard,
            Flight::Follow(mut done) => {
                // Ends when the fetch is over (its guard dropped), whatever its outcome.
                let _ = tokio::time::timeout(timeout, done.changed()).await;
                if let Some(hit) = cache.peek(&key, self.shared.link.borrow().view()) {
                    return Ok(answer(hit));
                }
                let left = timeout.saturating_sub(started.elapsed());
                if left < Duration::from_millis(1) {
                    return Err(Error::new(
                        ErrorKind::Timeout,
                        format!(
                            "no response to GET within {timeout:?}: another read of the key was still fetching it"
                        ),
                    ));
                }
                return self.get_past(cache, &key, left).await;
            }
        };
        let ticket = cache.begin(&key, self.shared.link.borrow().view());
        self.release_removed();
        let outcome = self.register_cached(cache, &key, timeout).await;
        let read = match outcome {
            Ok(Registered::Read(read)) if self.untrusted(&read) => {
                cache.abandon(&key, ticket);
                Ok(read)
            }
            Ok(Registered::Read(read)) => {
                cache.fill(
                    &key,
                    ticket,
                    change_of(&read),
                    self.shared.link.borrow().view(),
                );
                self.await_lease(cache, started + timeout).await;
                Ok(read)
            }
            Ok(Registered::Refused) => {
                // Answer from a GET, keep nothing, and do not ask again on this connection.
                cache.abandon(&key, ticket);
                cache.refused(&key, self.shared.link.borrow().connection);
                self.release_removed();
                let left = timeout
                    .saturating_sub(started.elapsed())
                    .max(Duration::from_millis(1));
                return self.get_from_store(&key, left).await;
            }
            Ok(Registered::Gone) => {
                cache.abandon(&key, ticket);
                self.release_removed();
                let left = timeout
                    .saturating_sub(started.elapsed())
                    .max(Duration::from_millis(1));
                return self.get_from_store(&key, left).await;
            }
            Err(e) => {
                cache.abandon(&key, ticket);
                Err(e)
            }
        };
        self.release_removed();
        read
    }

    /// A read that has just filled an entry waits (until `deadline` at most) for the lease's
    /// renewal on its way, if entries cannot answer until it is proven: the next read of the
    /// key is then a hit, not a trip to the store. The renewal was sent when this read began,
    /// so it usually arrives with the read's own answer.
    async fn await_lease(&self, cache: &Cache, deadline: tokio::time::Instant) {
        loop {
            let link = self.shared.link.borrow().view();
            let Some((by, mut settled)) = cache.proving(link) else {
                return;
            };
            let until = deadline.min(tokio::time::Instant::from_std(by));
            if tokio::time::timeout_at(until, settled.changed())
                .await
                .is_err()
            {
                return;
            }
        }
    }

    /// KEYNOTIFY then GET under the key's operation lock, so that an observer's STOP (or the
    /// release of an entry evicted meanwhile) cannot fall between them.
    async fn register_cached(
        &self,
        cache: &Cache,
        key: &Bytes,
        timeout: Duration,
    ) -> Result<Registered, Error> {
        self.shared
            .subscribe(&self.shared.notification_filter, timeout)
            .await?;
        let _op = self.shared.observers.op_lock(key).lock().await;
        if !cache.holds(key) {
            // Evicted before its registration began: the registry must not record it (its
            // release already ran, or runs after this lock with nothing to give back).
            return Ok(Registered::Gone);
        }
        self.shared.observers.add_cached(key);
        match self.register(key, timeout).await {
            Ok(current) => {
                self.shared.observers.registered(key, current.clone());
                Ok(Registered::Read(
                    current.map(|(value, version)| Versioned { value, version }),
                ))
            }
            Err(e) if refused(&e) => {
                debug!(error = %e, key = %key.escape_ascii(), "the store refused a KEYNOTIFY: the key is not cached");
                Ok(Registered::Refused)
            }
            Err(e) => Err(e),
        }
    }

    /// GET from the store, past the cache.
    pub(crate) async fn get_from_store(
        &self,
        key: &[u8],
        timeout: Duration,
    ) -> Result<Option<Versioned>, Error> {
        let reply = self
            .request(Request::Get { key }, None, false, timeout)
            .await?;
        match reply.response {
            Response::Value(value) => Ok(Some(Versioned {
                value,
                version: reply.version,
            })),
            _ => Ok(None),
        }
    }

    /// This client's SET of `key` to `value` was applied with `version`.
    pub(crate) fn cache_set(&self, key: &[u8], value: &[u8], version: &Option<Hlc>) {
        if let Some(cache) = self.cache_for(key) {
            cache.answered(key, || Change {
                value: Some(Bytes::copy_from_slice(value)),
                version: version.clone(),
            });
            self.release_removed();
        }
    }

    /// This client's DEL or VDEL left `key` absent, as of `version`.
    pub(crate) fn cache_deleted(&self, key: &[u8], version: &Option<Hlc>) {
        if let Some(cache) = self.cache_for(key) {
            cache.answered(key, || deleted(version.clone()));
            self.release_removed();
        }
    }

    /// Sends the lease's renewal in the background: KEYNOTIFY of the canary when it is not
    /// registered on this connection, then a SET of it to the renewal's number (its
    /// notification is the proof). A failure fails the lease at once.
    fn renew_later(&self, renewal: Renewal) {
        let weak = self.downgrade();
        self.shared.runtime.spawn(async move {
            let Some(client) = weak.upgrade() else {
                return;
            };
            let Some(cache) = client.shared.cache.as_ref() else {
                return;
            };
            if let Err(e) = client.renew(cache, renewal).await {
                debug!(error = %e, seq = renewal.seq, "the cache's lease renewal failed");
                cache.renewal_failed(renewal.seq);
            }
        });
    }

    async fn renew(&self, cache: &Cache, renewal: Renewal) -> Result<(), Error> {
        // Past the bound the renewal has failed anyway; a request needs at least 1 ms.
        let timeout = cache.freshness().max(Duration::from_millis(1));
        let canary = cache.canary().clone();
        if renewal.register {
            self.shared
                .subscribe(&self.shared.notification_filter, timeout)
                .await?;
            let notify = Request::KeyNotify {
                key: &canary[..],
                stop: false,
            };
            self.request(notify, None, false, timeout).await?;
            cache.canary_registered(renewal.connection);
        }
        let value = renewal.seq.to_string();
        let set = Request::Set {
            key: &canary[..],
            value: value.as_bytes(),
            condition: SetCondition::Always,
            expiry_ms: std::num::NonZeroU64::new(CANARY_EXPIRY.as_millis() as u64),
        };
        self.request(set, None, false, timeout).await?;
        Ok(())
    }

    /// Gives back the registrations of the keys the cache let go.
    fn release_removed(&self) {
        if let Some(cache) = &self.shared.cache {
            let keys = cache.take_released();
            if !keys.is_empty() {
                self.release_later(keys, true);
            }
        }
    }

    /// For each of `keys` the cache no longer holds: the registration is no longer the
    /// cache's, and (with `stop`) a STOP goes once no observer needs it either, in the
    /// background. The one path by which the cache gives a registration back.
    fn release_later(&self, keys: Vec<Bytes>, stop: bool) {
        let weak = self.downgrade();
        self.shared.runtime.spawn(async move {
            let Some(client) = weak.upgrade() else {
                return;
            };
            for key in keys {
                client.stop_if_unwanted(key, stop).await;
            }
        });
    }

    /// A new connection (`connection`) began: the cache's entries of earlier ones go, and
    /// so does the registry's record of their registrations. When the MQTT session was kept
    /// (`session_kept`) the store may have kept them too, so a STOP is sent for each key no
    /// observer needs; otherwise the store dropped them with the session.
    pub(crate) async fn retire_cached(&self, connection: u64, session_kept: bool) {
        let Some(cache) = &self.shared.cache else {
            return;
        };
        let keys = cache.retire(connection);
        if !keys.is_empty() {
            self.release_later(keys, session_kept);
        }
    }

    /// Under the key's operation lock: if the cache does not hold `key` (a read may have
    /// taken it again meanwhile) and no observer wants it, forgets its registration, sending
    /// STOP when `stop` and one is owed.
    pub(crate) async fn stop_if_unwanted(&self, key: Bytes, stop: bool) {
        let _op = self.shared.observers.op_lock(&key).lock().await;
        if self.shared.cache.as_ref().is_some_and(|c| c.holds(&key)) {
            return;
        }
        self.shared.observers.drop_cached(&key);
        if self.shared.observers.forget_if_unobserved(&key) && stop && self.is_connected() {
            let request = Request::KeyNotify {
                key: &key[..],
                stop: true,
            };
            if let Err(e) = self.request(request, None, false, self.timeout).await {
                debug!(error = %e, "KEYNOTIFY STOP failed");
            }
        }
    }
}
