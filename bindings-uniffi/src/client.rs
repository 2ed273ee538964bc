//! [`Client`]: a connection to the state store. Every method converts its arguments, makes
//! one call into the core's binding layer ([`mqstate::bridge::ClientHandle`]) and maps the result
//! or the error; the asynchronous ones are Kotlin `suspend` functions (Swift `async`).

use std::sync::Arc;

use mqstate::bridge::{ClientHandle, Settings};
use mqstate::{SETTINGS, VdelOutcome};

use crate::MqstateError;
use crate::call::settle;
use crate::locks::{Election, ElectionOptions, Lock, LockOptions};
use crate::scan::{Pager, ScanOptions};
use crate::subscription::Subscription;
use crate::telemetry::{CallTrace, ServerAddress};
use crate::values::{
    CacheHit, CacheStats, DelOptions, GetOptions, LinkInfo, ObserveOptions, SetOptions, SetResult,
    Value, value, version,
};

/// One setting by name (`clientId` or `client_id`, as in [`settings_table`]) with its text
/// value: `Client.connect` takes a list of them, applied in order.
#[derive(Clone, Debug, PartialEq, Eq, uniffi::Record)]
pub struct Setting {
    /// The setting's name, snake_case or camelCase.
    pub name: String,
    /// Its value as text (durations: seconds, or with a unit: `"250ms"`, `"1.5s"`, `"2m"`).
    pub value: String,
}

/// Settings from a URL or the environment, then `named` on top, in order (the core's
/// [`Settings::from_pairs`]).
fn settings(
    url: Option<String>,
    from_env: bool,
    named: Vec<Setting>,
) -> Result<Settings, MqstateError> {
    let pairs = named.into_iter().map(|s| (s.name, s.value));
    Ok(Settings::from_pairs(url.as_deref(), from_env, pairs)?)
}

/// One row of the core's settings table.
#[derive(Clone, Debug, PartialEq, Eq, uniffi::Record)]
pub struct SettingInfo {
    /// The core's snake_case name (`clientId` is accepted for `client_id`).
    pub name: String,
    /// The Azure IoT Operations environment variable, if any.
    pub env: Option<String>,
    /// `text`, `path`, `bool`, `count` or `duration`.
    pub kind: String,
    /// One line for people.
    pub description: String,
}

/// Every setting `Client.connect` accepts by name (the core's `SETTINGS`). Durations are
/// seconds or carry a unit (`"250ms"`, `"1.5s"`, `"2m"`).
#[uniffi::export]
pub fn settings_table() -> Vec<SettingInfo> {
    SETTINGS
        .iter()
        .map(|s| SettingInfo {
            name: s.name.to_owned(),
            env: s.env.map(str::to_owned),
            kind: s.value.name().to_owned(),
            description: s.description.to_owned(),
        })
        .collect()
}

/// Checks settings without connecting: the error `connect` would give for them, if any.
#[uniffi::export(default(url = None, settings))]
pub fn check_settings(url: Option<String>, settings: Vec<Setting>) -> Result<(), MqstateError> {
    self::settings(url, false, settings).map(|_| ())
}

/// Connects to `url` (`mqtt://host:port`, `mqtts://…`; default `localhost:1883`) with
/// `settings` by name on top (`clientId`, `requestTimeout`, … as in `settingsTable()`).
/// (A function rather than a constructor of [`Client`]: uniffi's Kotlin renames miss the
/// return types of constructors, and Kotlin's idiomatic `Client` wraps this one.)
#[uniffi::export(default(url = None, settings))]
pub async fn connect(
    url: Option<String>,
    settings: Vec<Setting>,
) -> Result<Arc<Client>, MqstateError> {
    let s = self::settings(url, false, settings)?;
    let store = settle(ClientHandle::connect(s)).await?;
    Ok(Arc::new(Client {
        store,
        reader: Default::default(),
        traced: false,
    }))
}

/// Connects with the Azure IoT Operations environment variables (`AIO_BROKER_HOSTNAME` …),
/// `settings` by name on top.
#[uniffi::export(default(settings))]
pub async fn connect_from_env(settings: Vec<Setting>) -> Result<Arc<Client>, MqstateError> {
    let s = self::settings(None, true, settings)?;
    let store = settle(ClientHandle::connect(s)).await?;
    Ok(Arc::new(Client {
        store,
        reader: Default::default(),
        traced: false,
    }))
}

/// A connection to the state store. Closing it (`closeAndWait()` in Kotlin, `close()` in
/// Swift, or dropping the last reference: Kotlin's `close()` / `use {}`) closes the
/// connection for every lock and subscription made from it.
#[derive(uniffi::Object)]
pub struct Client {
    store: ClientHandle,
    /// Its id for [`crate::fast_get`] once asked for ([`Client::cache_reader`]); 0: none.
    reader: std::sync::OnceLock<u64>,
    /// Made by [`Client::traced`] for one call: the connection is the original's, which
    /// dropping this one does not close.
    traced: bool,
}

/// A client whose calls carry a trace context, and the trace of what they met.
#[derive(uniffi::Record)]
pub struct TracedClient {
    /// The same connection, its requests carrying the trace context.
    pub client: Arc<Client>,
    /// What its calls met on the way.
    pub trace: Arc<CallTrace>,
}

impl Drop for Client {
    fn drop(&mut self) {
        if let Some(&id) = self.reader.get() {
            crate::fast_get::forget(id);
        }
        // Starts the close on the store's runtime (dropping the call does not cancel it);
        // nobody waits for it. A traced client is a view of another's connection.
        if !self.traced {
            drop(self.store.close());
        }
    }
}

#[uniffi::export]
impl Client {
    /// The MQTT client id.
    pub fn client_id(&self) -> String {
        self.store.client_id().to_owned()
    }

    /// Whether the connection is up now.
    pub fn is_connected(&self) -> bool {
        self.store.link_info().connected
    }

    /// The connection's history.
    pub fn link_info(&self) -> LinkInfo {
        self.store.link_info().into()
    }

    /// The values of the core's metrics of sources `link`, `client` and `cache` now, by
    /// name (`mqstate::Client::metric_values`; the cache's only with a cache).
    pub fn metric_values(&self) -> std::collections::HashMap<String, u64> {
        self.store
            .client()
            .metric_values()
            .into_iter()
            .map(|(name, value)| (name.to_owned(), value))
            .collect()
    }

    /// Requests sent and not yet answered.
    pub fn pending_requests(&self) -> u64 {
        self.store.client().pending_requests() as u64
    }

    /// The broker's host and port (a call's `server.address` and `server.port`).
    pub fn server(&self) -> ServerAddress {
        let (host, port) = self.store.client().server();
        ServerAddress {
            host: host.to_owned(),
            port,
        }
    }

    /// The same connection with its calls traced, for one call under an OpenTelemetry span:
    /// its requests carry `traceparent` (and `tracestate`, if any) as MQTT5 user properties,
    /// checked here (`invalid_argument` for a value that is not W3C's; none: no context,
    /// the events alone), and the trace collects what they met (`takeEvents()`). Dropping
    /// the traced client leaves the connection open.
    #[uniffi::method(default(tracestate = None))]
    pub fn traced(
        &self,
        traceparent: Option<String>,
        tracestate: Option<String>,
    ) -> Result<TracedClient, MqstateError> {
        let (core, trace) = CallTrace::checked(traceparent, tracestate)?;
        Ok(TracedClient {
            client: Arc::new(Client {
                store: self.store.traced(core),
                reader: Default::default(),
                traced: true,
            }),
            trace,
        })
    }

    /// The client-side cache's counters now, or none when the client has no cache (the
    /// `cache` setting, or any other `cache_…` setting, turns it on).
    pub fn cache_stats(&self) -> Option<CacheStats> {
        self.store.cache_stats().map(CacheStats::from)
    }

    /// Sets `key` to `value`.
    #[uniffi::method(default(options))]
    pub async fn set(
        &self,
        key: Vec<u8>,
        value: Vec<u8>,
        options: SetOptions,
    ) -> Result<SetResult, MqstateError> {
        let outcome = settle(self.store.set(key, value, options.to_core()?)).await?;
        Ok(SetResult {
            applied: outcome.applied,
            version: version(outcome.version),
        })
    }

    /// The key's value and version, or none when it does not exist (from the client-side
    /// cache when it is on and holds the key fresh; `bypass_cache` reads the store).
    #[uniffi::method(default(options))]
    pub async fn get(
        &self,
        key: Vec<u8>,
        options: GetOptions,
    ) -> Result<Option<Value>, MqstateError> {
        Ok(value(
            settle(self.store.get(key, options.to_core()?)).await?,
        ))
    }

    /// The client-side cache's answer to a GET of `key` now, with no call at all: a hit, or
    /// none when the read must go to the store (a miss, no cache, a closed client). The
    /// Kotlin layer asks this first and then [`Self::get_after_miss`]: a hit costs no
    /// coroutine suspension.
    pub fn get_cached(&self, key: Vec<u8>) -> Option<CacheHit> {
        self.store
            .get_cached(&key, &mqstate::GetOptions::default())
            .map(|hit| CacheHit { value: value(hit) })
    }

    /// The id under which `mqstate_uniffi_cache_get` (a plain C function: a hit with no
    /// uniffi call, see the crate's `fast_get` module) reads this client's cache; 0 when the
    /// client has no cache. The same id for every call; forgotten when the client is dropped.
    pub fn cache_reader(&self) -> u64 {
        if self.store.cache_stats().is_none() {
            return 0;
        }
        *self
            .reader
            .get_or_init(|| crate::fast_get::reader_of(&self.store))
    }

    /// GET for a caller that asked [`Self::get_cached`] first and missed, or that bypasses
    /// the cache: the read goes to the store without a second look at the cache (which
    /// would count a second miss).
    #[uniffi::method(default(options))]
    pub async fn get_after_miss(
        &self,
        key: Vec<u8>,
        options: GetOptions,
    ) -> Result<Option<Value>, MqstateError> {
        Ok(value(
            settle(self.store.get_after_miss(key, options.to_core()?)).await?,
        ))
    }

    /// Deletes the key: the number of keys deleted (0 or 1).
    #[uniffi::method(default(options))]
    pub async fn delete(&self, key: Vec<u8>, options: DelOptions) -> Result<u64, MqstateError> {
        settle(self.store.del(key, options.to_core()?)).await
    }

    /// Deletes the key only if it holds `value`.
    #[uniffi::method(default(options))]
    pub async fn vdel(
        &self,
        key: Vec<u8>,
        value: Vec<u8>,
        options: DelOptions,
    ) -> Result<VdelOutcome, MqstateError> {
        settle(self.store.vdel(key, value, options.to_core()?)).await
    }

    /// Observes the key: a subscription of its changes, registered when this returns.
    #[uniffi::method(default(options))]
    pub async fn observe(
        &self,
        key: Vec<u8>,
        options: ObserveOptions,
    ) -> Result<Arc<Subscription>, MqstateError> {
        let sub = settle(self.store.observe(key, options.to_core()?)).await?;
        Ok(Subscription::new(sub))
    }

    /// Lists the keys matching the glob `pattern` (`*`, `?`, `[abc]`, `[a-z]`, `[^a]`, `\`
    /// escapes; byte-wise), a page at a time: a pager that sends nothing until its first
    /// `nextPage()`. An empty pattern fails with `invalid_argument`.
    #[uniffi::method(default(options))]
    pub fn scan(&self, pattern: Vec<u8>, options: ScanOptions) -> Result<Arc<Pager>, MqstateError> {
        Ok(Pager::new(self.store.scan(pattern, options.to_core()?)?))
    }

    /// A leased lock on `key`.
    #[uniffi::method(default(options))]
    pub fn lock(&self, key: Vec<u8>, options: LockOptions) -> Result<Arc<Lock>, MqstateError> {
        Ok(Lock::new(self.store.lock(key, options.to_core()?)?))
    }

    /// Candidate `candidate` in the election `name`.
    #[uniffi::method(default(options))]
    pub fn election(
        &self,
        name: Vec<u8>,
        candidate: String,
        options: ElectionOptions,
    ) -> Result<Arc<Election>, MqstateError> {
        let handle = self.store.election(name, candidate, options.to_core()?)?;
        Ok(Election::new(handle))
    }

    /// Closes the connection (for every lock and subscription made from it) and waits until
    /// it has ended; later calls fail with `closed`. Idempotent.
    pub async fn close(&self) -> Result<(), MqstateError> {
        settle(self.store.close()).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn named(pairs: &[(&str, &str)]) -> Vec<Setting> {
        pairs
            .iter()
            .map(|(name, value)| Setting {
                name: name.to_string(),
                value: value.to_string(),
            })
            .collect()
    }

    #[test]
    fn settings_are_checked_by_the_core() {
        assert!(check_settings(None, named(&[("keepAlive", "30"), ("clean_start", "1")])).is_ok());
        let e = check_settings(None, named(&[("keepAlive", "soon")])).unwrap_err();
        assert_eq!(e.code(), "invalid_argument");
        let e = check_settings(None, named(&[("noSuchSetting", "1")])).unwrap_err();
        assert_eq!(e.code(), "invalid_argument");
        assert_eq!(settings_table().len(), SETTINGS.len());
    }
}
