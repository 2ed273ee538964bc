//! The client's side of the cache ([`crate::cache`]): a read that hits answers at once; one
//! that misses registers the key (KEYNOTIFY, then GET) and fills its entry; the client's own
//! acknowledged writes update entries; evicted and retired keys give their registrations
//! back.

use std::time::Duration;

use bytes::Bytes;
use tracing::debug;

use super::Client;
use crate::cache::{Cache, CacheStats, Change};
use crate::codec::{Request, Response};
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

/// Whether a failed KEYNOTIFY was the store's refusal (the read can still be answered by a
/// GET), not a failure of the link.
fn refused(e: &Error) -> bool {
    matches!(
        e.kind(),
        ErrorKind::Store(_) | ErrorKind::Rpc(_) | ErrorKind::Malformed
    )
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
        let hit = cache.lookup(key, self.shared.link.borrow().view())?;
        Some(hit.value.map(|value| Versioned {
            value,
            version: hit.version,
        }))
    }

    /// A read that [`Client::get_cached`] did not answer: through the cache (register, GET,
    /// fill), or from the store.
    pub(crate) async fn get_missed(
        &self,
        key: &[u8],
        options: GetOptions,
    ) -> Result<Option<Versioned>, Error> {
        let timeout = options.timeout.unwrap_or(self.timeout);
        match self.cache_for(key) {
            Some(cache) if !options.bypass_cache => self.read_through(cache, key, timeout).await,
            Some(cache) => {
                // A read past the cache still tells it the store's state.
                let read = self.get_from_store(key, timeout).await?;
                cache.answered(key, || change_of(&read));
                self.release_evicted();
                Ok(read)
            }
            None => self.get_from_store(key, timeout).await,
        }
    }

    /// A miss: make the entry that collects changes, register the key, GET it, and keep the
    /// newer of the two if the connection lasted.
    async fn read_through(
        &self,
        cache: &Cache,
        key: &[u8],
        timeout: Duration,
    ) -> Result<Option<Versioned>, Error> {
        crate::rpc::check_timeout(timeout)?;
        let key = Bytes::copy_from_slice(key);
        let epoch = self.shared.link.borrow().connection;
        let ticket = cache.begin(&key, epoch);
        self.release_evicted();
        match self.register_cached(&key, timeout).await {
            Ok(Some(read)) => {
                cache.fill(
                    &key,
                    ticket,
                    epoch,
                    change_of(&read),
                    self.shared.link.borrow().view(),
                );
                self.release_evicted();
                Ok(read)
            }
            Ok(None) => {
                // The store refused the registration: answer from a GET, keep nothing.
                cache.abandon(&key, ticket);
                self.release_later(vec![key.clone()]);
                self.get_from_store(&key, timeout).await
            }
            Err(e) => {
                cache.abandon(&key, ticket);
                self.release_later(vec![key]);
                Err(e)
            }
        }
    }

    /// KEYNOTIFY then GET under the key's operation lock, so that an observer's STOP cannot
    /// fall between them: the key's state, or `None` when the store refused the KEYNOTIFY.
    async fn register_cached(
        &self,
        key: &Bytes,
        timeout: Duration,
    ) -> Result<Option<Option<Versioned>>, Error> {
        self.shared
            .subscribe(&self.shared.notification_filter, timeout)
            .await?;
        let _op = self.shared.observers.op_lock(key).lock().await;
        self.shared.observers.add_cached(key);
        match self.register(key, timeout).await {
            Ok(current) => {
                self.shared.observers.registered(key, current.clone());
                Ok(Some(
                    current.map(|(value, version)| Versioned { value, version }),
                ))
            }
            Err(e) if refused(&e) => {
                debug!(error = %e, key = %key.escape_ascii(), "the store refused a KEYNOTIFY: the key is not cached");
                Ok(None)
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
            self.release_evicted();
        }
    }

    /// This client's DEL or VDEL left `key` absent, as of `version`.
    pub(crate) fn cache_deleted(&self, key: &[u8], version: &Option<Hlc>) {
        if let Some(cache) = self.cache_for(key) {
            cache.answered(key, || deleted(version.clone()));
        }
    }

    /// Gives back the registrations of the keys the cache evicted.
    fn release_evicted(&self) {
        if let Some(cache) = &self.shared.cache {
            let keys = cache.take_evicted();
            if !keys.is_empty() {
                self.release_later(keys);
            }
        }
    }

    /// For each of `keys` the cache no longer holds: the registration is no longer the
    /// cache's, and a STOP goes once no observer needs it either (in the background).
    fn release_later(&self, keys: Vec<Bytes>) {
        let weak = self.downgrade();
        self.shared.runtime.spawn(async move {
            let Some(client) = weak.upgrade() else {
                return;
            };
            for key in keys {
                client.stop_if_unwanted(key, true).await;
            }
        });
    }

    /// A new connection (`epoch`) began: the cache's entries of earlier ones go, and so does
    /// the registry's record of their registrations (the store dropped them with the
    /// connection: no STOP).
    pub(crate) async fn retire_cached(&self, epoch: u64) {
        let Some(cache) = &self.shared.cache else {
            return;
        };
        for key in cache.retire(epoch) {
            self.stop_if_unwanted(key, false).await;
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
