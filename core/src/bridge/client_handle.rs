//! [`ClientHandle`]: the binding layer's cloneable handle on one client (one connection to
//! the state store), and [`Settings`], the
//! connection and client settings set by name.

use bytes::Bytes;
use tokio::runtime::Handle;

use super::lock::{ElectionHandle, LockHandle};
use super::runtime::{self, shared_handle};
use super::{Call, Event, Pager, Subscription};
use crate::codec::Verb;
use crate::error::{Error, ErrorKind};
use crate::lock::LockOptions;
use crate::settings::{parse_count, parse_duration, setting_info};
use crate::telemetry::{CallObservers, Measured};
use crate::{
    Client, ClientOptions, ConnectionSettings, DelOptions, GetOptions, LinkInfo, ObserveOptions,
    ScanOptions, SetOptions, SetOutcome, VdelOutcome, Versioned,
};

/// Everything needed to connect: the connection settings and the client options, each
/// settable by its name in [`SETTINGS`](crate::SETTINGS).
#[derive(Clone, Debug, Default)]
pub struct Settings {
    /// How to reach the broker.
    pub connection: ConnectionSettings,
    /// Client behaviour (request timeout, observer capacity, response topic).
    pub client: ClientOptions,
}

impl Settings {
    /// Defaults (`localhost:1883`).
    pub fn new() -> Settings {
        Settings::default()
    }

    /// From a `mqtt://` / `mqtts://` URL (query items are setting names).
    pub fn from_url(url: &str) -> Result<Settings, Error> {
        Ok(Settings {
            connection: ConnectionSettings::from_url(url)?,
            client: ClientOptions::default(),
        })
    }

    /// From the Azure IoT Operations environment variables.
    pub fn from_env() -> Result<Settings, Error> {
        Ok(Settings {
            connection: ConnectionSettings::from_env()?,
            client: ClientOptions::default(),
        })
    }

    /// Settings from a URL (or the environment, or the defaults), then each `(name, value)`
    /// pair on top, in order: what every binding's connect takes.
    pub fn from_pairs<N: AsRef<str>, V: AsRef<str>>(
        url: Option<&str>,
        from_env: bool,
        pairs: impl IntoIterator<Item = (N, V)>,
    ) -> Result<Settings, Error> {
        let mut settings = match (url, from_env) {
            (Some(_), true) => {
                return Err(Error::invalid_argument(
                    "give a URL or the environment, not both",
                ));
            }
            (Some(url), false) => Settings::from_url(url)?,
            (None, true) => Settings::from_env()?,
            (None, false) => Settings::new(),
        };
        for (name, value) in pairs {
            settings.set(name.as_ref(), value.as_ref())?;
        }
        Ok(settings)
    }

    /// Sets the setting `name` (snake_case as in [`SETTINGS`](crate::SETTINGS), or its
    /// camelCase) from its text `value` (the same names, parsing and messages in every
    /// language).
    pub fn set(&mut self, name: &str, value: &str) -> Result<(), Error> {
        let name = crate::vocabulary::snake_case(name);
        let name = name.as_str();
        let info = setting_info(name)?;
        if !info.client_side {
            return self.connection.set(name, value);
        }
        match name {
            "request_timeout" => {
                let t = parse_duration(name, value)?;
                if t.is_zero() {
                    return Err(Error::invalid_argument("request_timeout must be positive"));
                }
                self.client.request_timeout = t;
            }
            "observer_capacity" => {
                let n: usize = parse_count(name, value)?;
                if n == 0 {
                    return Err(Error::invalid_argument(
                        "observer_capacity must be positive",
                    ));
                }
                self.client.observer_capacity = n;
            }
            "response_topic" => {
                crate::topics::check_response_topic(value)?;
                self.client.response_topic = Some(value.to_owned());
            }
            "cache" => {
                let on = crate::settings::parse_bool(name, value)?;
                self.client.cache = on.then(|| self.client.cache.take().unwrap_or_default());
            }
            "cache_keys" => {
                self.cache().keys = crate::cache::parse_cache_keys(value)?;
            }
            "cache_max_entries" | "cache_max_bytes" => {
                let n: usize = parse_count(name, value)?;
                if n == 0 {
                    return Err(Error::invalid_argument(format!("{name} must be positive")));
                }
                if name == "cache_max_entries" {
                    self.cache().max_entries = n;
                } else {
                    self.cache().max_bytes = n;
                }
            }
            "cache_max_staleness" => {
                self.cache().max_staleness = parse_duration(name, value)?;
            }
            "cache_freshness" => {
                self.cache().freshness = parse_duration(name, value)?;
            }
            _ => unreachable!("every client row of SETTINGS is handled"),
        }
        Ok(())
    }
}

impl Settings {
    /// The cache's options, turning the cache on: every `cache_…` setting does.
    fn cache(&mut self) -> &mut crate::CacheOptions {
        self.client.cache.get_or_insert_default()
    }
}

/// A connection to the state store for bindings: cloneable, `Send + Sync + 'static`, every
/// method one call into the core returning a [`Call`].
#[derive(Clone, Debug)]
pub struct ClientHandle {
    client: Client,
    /// The process generation it was connected in (see [`runtime::generation`]).
    generation: u64,
    /// Who is told of each completed SET, GET, DEL and VDEL (shared by every clone).
    observers: CallObservers,
}

impl ClientHandle {
    /// Connects on the library's own runtime (for callers that have none).
    pub fn connect(settings: Settings) -> Call<ClientHandle> {
        ClientHandle::connect_on(settings, &shared_handle())
    }

    /// Connects on `runtime`, which will run every task of this store.
    pub fn connect_on(settings: Settings, runtime: &Handle) -> Call<ClientHandle> {
        Call::spawn(runtime, async move {
            let client = Client::connect_with(settings.connection, settings.client).await?;
            Ok(ClientHandle::from_client(client))
        })
    }

    /// Wraps a connected Rust client.
    pub fn from_client(client: Client) -> ClientHandle {
        ClientHandle {
            client,
            generation: runtime::generation(),
            observers: CallObservers::default(),
        }
    }

    /// The Rust client underneath.
    pub fn client(&self) -> &Client {
        &self.client
    }

    /// The same store, its calls traced by `trace` ([`Client::traced`]): a binding makes one
    /// for the call its OpenTelemetry span covers, then reads the trace's events.
    pub fn traced(&self, trace: std::sync::Arc<crate::telemetry::CallTrace>) -> ClientHandle {
        ClientHandle {
            client: self.client.traced(trace),
            generation: self.generation,
            observers: self.observers.clone(),
        }
    }

    /// The observer of this client's calls (every clone's, traced ones included): set one
    /// and each SET, GET, DEL and VDEL, a cache hit included, is reported once when it ends
    /// ([`CallRecord`](crate::telemetry::CallRecord): operation, duration, error, cache hit,
    /// trace context). For a binding with no OpenTelemetry API of its own (C).
    pub fn call_observers(&self) -> &CallObservers {
        &self.observers
    }

    /// `work`, a request of `verb`, measured for the observer if one is set.
    fn measured<T, F>(&self, verb: Verb, work: F) -> Call<T>
    where
        T: Send + 'static,
        F: std::future::Future<Output = Result<T, Error>> + Send + 'static,
    {
        self.run(self.start_measuring(verb), work)
    }

    /// The observer's measure of a call of `verb` starting now, if one is set.
    fn start_measuring(&self, verb: Verb) -> Option<Measured> {
        self.observers.start(verb.as_str(), self.trace_context())
    }

    /// `work` as a call, reported to the observer when it ends if it is `measured`.
    fn run<T, F>(&self, measured: Option<Measured>, work: F) -> Call<T>
    where
        T: Send + 'static,
        F: std::future::Future<Output = Result<T, Error>> + Send + 'static,
    {
        match measured {
            None => self.call(work),
            Some(measured) => self.call_measured(measured, work),
        }
    }

    /// `work`, reported to the observer when it ends (or is refused at once).
    fn call_measured<T, F>(&self, measured: Measured, work: F) -> Call<T>
    where
        T: Send + 'static,
        F: std::future::Future<Output = Result<T, Error>> + Send + 'static,
    {
        if let Err(e) = self.usable() {
            measured.end(Some(&e), false);
            return Call::ready(Err(e));
        }
        self.call(async move {
            let got = work.await;
            measured.end(got.as_ref().err(), false);
            got
        })
    }

    /// The trace context this handle's requests carry, if any.
    fn trace_context(&self) -> Option<&crate::telemetry::TraceContext> {
        self.client.trace.as_ref().and_then(|t| t.context())
    }

    /// Refuses a store connected before a `fork()` (its runtime's threads are in the parent).
    pub(crate) fn usable(&self) -> Result<(), Error> {
        if self.generation != runtime::generation() {
            return Err(Error::new(
                ErrorKind::Unsupported,
                "this client was connected before fork(): connect again in the child",
            ));
        }
        Ok(())
    }

    /// Starts `work` as a call on this store's runtime (refused after a fork).
    pub(crate) fn call<T, F>(&self, work: F) -> Call<T>
    where
        T: Send + 'static,
        F: std::future::Future<Output = Result<T, Error>> + Send + 'static,
    {
        match (self.usable(), &self.client.trace) {
            (Ok(()), None) => Call::spawn(self.client.runtime(), work),
            // Every request of a traced handle's call carries its trace, those made by a
            // lock, an election or a pager through their own client too.
            (Ok(()), Some(trace)) => Call::spawn(
                self.client.runtime(),
                crate::telemetry::CallTrace::scope(std::sync::Arc::clone(trace), work),
            ),
            (Err(e), _) => Call::ready(Err(e)),
        }
    }

    /// SET.
    pub fn set(
        &self,
        key: impl Into<Bytes>,
        value: impl Into<Bytes>,
        options: SetOptions,
    ) -> Call<SetOutcome> {
        let (client, key, value) = (self.client.clone(), key.into(), value.into());
        self.measured(
            Verb::Set,
            async move { client.set(key, value, options).await },
        )
    }

    /// GET: the value and its version, or `None`. A hit of the client's cache is answered
    /// at once, with no task.
    pub fn get(&self, key: impl Into<Bytes>, options: GetOptions) -> Call<Option<Versioned>> {
        let key = key.into();
        let measured = self.start_measuring(Verb::Get);
        if let Some(hit) = self.get_cached(&key, &options) {
            if let Some(m) = measured {
                m.end(None, true);
            }
            return Call::ready(Ok(hit));
        }
        let client = self.client.clone();
        self.run(
            measured,
            async move { client.get_missed(&key, options).await },
        )
    }

    /// GET, for a binding that asked [`ClientHandle::get_cached`] first and missed (or
    /// bypasses the cache): the read goes on without a second look (which would count a
    /// second miss).
    pub fn get_after_miss(
        &self,
        key: impl Into<Bytes>,
        options: GetOptions,
    ) -> Call<Option<Versioned>> {
        let (client, key) = (self.client.clone(), key.into());
        self.measured(
            Verb::Get,
            async move { client.get_missed(&key, options).await },
        )
    }

    /// The client's cache's answer to a GET of `key` now, with no call at all: `Some` on a
    /// hit (the value, or `None` for a key cached as missing), `None` when the read must go
    /// on with [`ClientHandle::get`] (a miss, no cache, `bypass_cache`). A binding whose
    /// calls cost a future or an event-loop turn answers hits with this first.
    pub fn get_cached(&self, key: &[u8], options: &GetOptions) -> Option<Option<Versioned>> {
        self.usable().ok()?;
        self.client.get_cached(key, options)
    }

    /// The client's cache's counters, or `None` when it has no cache.
    pub fn cache_stats(&self) -> Option<crate::CacheStats> {
        self.client.cache_stats()
    }

    /// DEL: the number of keys deleted (0 or 1).
    pub fn del(&self, key: impl Into<Bytes>, options: DelOptions) -> Call<u64> {
        let (client, key) = (self.client.clone(), key.into());
        self.measured(Verb::Del, async move { client.del(key, options).await })
    }

    /// VDEL: delete only if the key holds `value`.
    pub fn vdel(
        &self,
        key: impl Into<Bytes>,
        value: impl Into<Bytes>,
        options: DelOptions,
    ) -> Call<VdelOutcome> {
        let (client, key, value) = (self.client.clone(), key.into(), value.into());
        self.measured(
            Verb::VDel,
            async move { client.vdel(key, value, options).await },
        )
    }

    /// Observes a key: a subscription of [`Event::Change`] (and connection events). It is
    /// registered (SUBACK, KEYNOTIFY, GET) when the call completes.
    pub fn observe(&self, key: impl Into<Bytes>, options: ObserveOptions) -> Call<Subscription> {
        let (client, key) = (self.client.clone(), key.into());
        let capacity = self.client.shared.observers.capacity();
        self.call(async move {
            let mut observer = client.observe_with(key, options).await?;
            Ok(Subscription::start(
                client.runtime(),
                capacity,
                |queue| async move {
                    while let Some(event) = observer.recv_event().await {
                        queue.push(Event::from(event));
                    }
                },
            ))
        })
    }

    /// SCAN: a pager over the keys matching the glob `pattern` (an empty pattern is an
    /// invalid argument). Nothing is sent before the first page is asked for.
    pub fn scan(&self, pattern: impl Into<Bytes>, options: ScanOptions) -> Result<Pager, Error> {
        Pager::new(self, pattern.into(), options)
    }

    /// A leased lock on `key`.
    pub fn lock(&self, key: impl AsRef<[u8]>, options: LockOptions) -> Result<LockHandle, Error> {
        LockHandle::new(self.clone(), key.as_ref(), options)
    }

    /// Candidate `candidate` in the election `name`; `options` is an
    /// [`ElectionOptions`](crate::ElectionOptions) (or the lock's own options).
    pub fn election(
        &self,
        name: impl AsRef<[u8]>,
        candidate: impl Into<String>,
        options: impl Into<LockOptions>,
    ) -> Result<ElectionHandle, Error> {
        ElectionHandle::new(
            self.clone(),
            name.as_ref(),
            candidate.into(),
            options.into(),
        )
    }

    /// A snapshot of the connection's history.
    pub fn link_info(&self) -> LinkInfo {
        self.client.link_info()
    }

    /// The MQTT client id.
    pub fn client_id(&self) -> &str {
        self.client.client_id()
    }

    /// Closes the connection for every clone (idempotent); completes when the connection
    /// task has ended.
    pub fn close(&self) -> Call<()> {
        let client = self.client.clone();
        self.call(async move {
            client.shutdown().await;
            Ok(())
        })
    }
}
