//! The public state store API: [`Client`] with `set`, `get`, `del`, `vdel`, `observe` and
//! `scan`.
//!
//! The request/response exchange itself lives in [`rpc`](crate::rpc) and the
//! resynchronisation of observed keys after a reconnection in [`observe`](crate::observe).
//!
//! ```no_run
//! # async fn demo() -> mqstate::Result<()> {
//! use mqstate::{Client, ConnectionSettings, SetOptions};
//!
//! let client = Client::connect(ConnectionSettings::new("localhost", 1883)).await?;
//! let set = client.set("greeting", "hello", SetOptions::default()).await?;
//! assert!(set.applied);
//! let got = client.get("greeting").await?.expect("just set");
//! assert_eq!(&got.value[..], b"hello");
//! client.shutdown().await;
//! # Ok(()) }
//! ```

mod cached;
mod observer;
mod options;
mod request;
mod resync;
mod scan;

use std::num::NonZeroU64;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use bytes::Bytes;
use tokio::runtime::Handle;
use tokio::task::JoinHandle;

use crate::codec::{Request, Response};
use crate::connection::options::{mqtt_options, off_loop};
use crate::connection::{self, Shared};
use crate::error::{Error, ErrorKind};
use crate::hlc::{Clock, Hlc};
use crate::settings::ConnectionSettings;
use crate::telemetry::CallTrace;
use crate::topics;

pub use observer::Observer;
pub use options::{
    ClientOptions, DEFAULT_OBSERVER_CAPACITY, DEFAULT_REQUEST_TIMEOUT, DelOptions, GetOptions,
    LinkInfo, MIN_EXPIRY, ObserveOptions, SetOptions, SetOutcome, VdelOutcome, Versioned,
    whole_millis,
};
pub use scan::{KeyStream, ScanOptions, Scanner};

/// Random bytes from the operating system, for identities: a thread's own generator is
/// copied by `fork()`, so that a child (or two) would draw what its parent draws — the
/// same client id, the same clock node — on the thread that forked, which with the
/// library's runtime driven by its callers may be the thread that connects.
fn os_random<const N: usize>() -> [u8; N] {
    use rand::TryRngCore;
    let mut bytes = [0u8; N];
    if rand::rngs::OsRng.try_fill_bytes(&mut bytes).is_err() {
        bytes = rand::random();
    }
    bytes
}

/// The one clock of this process.
fn process_clock() -> Clock {
    static CLOCK: OnceLock<Clock> = OnceLock::new();
    CLOCK
        .get_or_init(|| {
            let node: [u8; 8] = os_random();
            Clock::new(&format!("mqstate-{}", topics::hex_encode(&node)))
                .expect("a hex node id is valid")
        })
        .clone()
}

/// What every handle of one connection (client clone or observer) shares; the connection
/// closes when the last one is dropped.
pub(crate) struct Core {
    shared: Arc<Shared>,
    clock: Clock,
    /// The client's default request timeout.
    timeout: Duration,
    task: std::sync::Mutex<Option<JoinHandle<()>>>,
}

impl Drop for Core {
    fn drop(&mut self) {
        self.shared.close();
    }
}

/// A connection to the state store. Cheap to clone; clones share the connection, which
/// closes when the last clone and the last [`Observer`] are dropped or on
/// [`Client::shutdown`].
///
/// Every background task of the client (the event loop, the resynchronisation of observed
/// keys, lock renewal, the STOP sent when an observer is dropped) runs on the runtime that
/// was current when the client connected, so dropping a handle on any thread — one of that
/// runtime, another runtime's, or a plain thread — still does its work on the wire.
#[derive(Clone)]
pub struct Client {
    pub(crate) shared: Arc<Shared>,
    pub(crate) core: Arc<Core>,
    pub(crate) timeout: Duration,
    /// The trace of the calls made through this handle ([`Client::traced`]).
    pub(crate) trace: Option<Arc<CallTrace>>,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("client_id", &self.shared.client_id)
            .field("connected", &self.is_connected())
            .finish()
    }
}

/// The connection failure to report when the first attempt did not succeed.
fn connect_failure(last: Option<Error>) -> Error {
    match last {
        Some(e) if e.kind().is_connect() => e,
        Some(e) => Error::new(ErrorKind::Connect, e.message().to_owned()),
        None => Error::new(ErrorKind::Connect, "the connection closed before it was up"),
    }
}

impl Client {
    /// Connects with default [`ClientOptions`]. Fails with a connection error kind
    /// ([`ErrorKind::is_connect`]) if the first connection attempt fails; later
    /// disconnections are repaired in the background.
    pub async fn connect(settings: ConnectionSettings) -> Result<Client, Error> {
        Client::connect_with(settings, ClientOptions::default()).await
    }

    /// Connects with `options`. Must be called within a tokio runtime, which then runs the
    /// client's background tasks until the client closes.
    pub async fn connect_with(
        settings: ConnectionSettings,
        options: ClientOptions,
    ) -> Result<Client, Error> {
        settings.validate()?;
        let runtime = Handle::current();
        let client_id = settings.client_id.clone().unwrap_or_else(|| {
            let id: [u8; 6] = os_random();
            format!("mqstate-{}", topics::hex_encode(&id))
        });
        let response_topic = options
            .response_topic
            .clone()
            .unwrap_or_else(|| topics::response_topic(&client_id));
        topics::check_response_topic(&response_topic)?;
        crate::rpc::check_timeout(options.request_timeout)?;
        if let Some(cache) = &options.cache {
            cache.validate()?;
        }
        let connect_timeout = settings.connect_timeout;
        let mqtt = {
            let (settings, client_id) = (settings.clone(), client_id.clone());
            off_loop(move || mqtt_options(&settings, &client_id)).await?
        };
        let cache = options
            .cache
            .clone()
            .map(|cache| crate::cache::Cache::new(cache, &client_id));
        let (shared, eventloop) = Shared::new(
            settings,
            mqtt,
            client_id,
            response_topic,
            options.observer_capacity,
            cache,
            runtime.clone(),
        );
        let clock = options.clock.unwrap_or_else(process_clock);
        shared.observers.set_clock(clock.clone());
        let task = runtime.spawn(connection::run(Arc::clone(&shared), eventloop));
        let core = Arc::new(Core {
            shared: Arc::clone(&shared),
            clock,
            timeout: options.request_timeout,
            task: std::sync::Mutex::new(Some(task)),
        });
        let client = Client::from_core(&core);
        // The first attempt decides: connected and subscribed, or a clear error.
        let mut link = client.shared.link.subscribe();
        let outcome = tokio::time::timeout(
            connect_timeout + Duration::from_secs(1),
            link.wait_for(|l| l.closed || l.last_error.is_some() || l.ready),
        )
        .await;
        let failure = match outcome.map(|r| r.map(|l| (l.ready, l.last_error.clone()))) {
            Ok(Ok((true, _))) => None,
            Ok(Ok((false, last))) => Some(connect_failure(last)),
            Ok(Err(_)) => Some(connect_failure(None)),
            Err(_) => Some(Error::new(
                ErrorKind::ConnectTimeout,
                format!("no connection within {connect_timeout:?}"),
            )),
        };
        if let Some(e) = failure {
            client.shutdown().await;
            return Err(e);
        }
        runtime.spawn(resync::resync_on_reconnect(client.downgrade()));
        Ok(client)
    }

    /// A handle of the connection `core`, with its default timeout.
    pub(crate) fn from_core(core: &Arc<Core>) -> Client {
        Client {
            shared: Arc::clone(&core.shared),
            core: Arc::clone(core),
            timeout: core.timeout,
            trace: None,
        }
    }

    /// A handle that does not keep the connection open.
    pub(crate) fn downgrade(&self) -> WeakClient {
        WeakClient {
            shared: Arc::downgrade(&self.shared),
            core: Arc::downgrade(&self.core),
            timeout: self.timeout,
        }
    }

    /// The runtime the client's background tasks run on.
    pub fn runtime(&self) -> &Handle {
        &self.shared.runtime
    }

    /// The MQTT client id.
    pub fn client_id(&self) -> &str {
        &self.shared.client_id
    }

    /// Whether the client is connected to the broker now.
    pub fn is_connected(&self) -> bool {
        self.shared.link.borrow().connected
    }

    /// Whether the client was closed (by [`Client::shutdown`] or the drop of every handle).
    pub fn is_closed(&self) -> bool {
        self.shared.link.borrow().closed
    }

    /// A snapshot of the connection's history (a diagnostic).
    pub fn link_info(&self) -> LinkInfo {
        let l = self.shared.link.borrow();
        LinkInfo {
            connected: l.connected,
            connections: l.connection,
            sessions: l.session,
            broker_max_packet_size: l.broker_max_packet,
        }
    }

    /// Requests sent and waiting for their response now (a diagnostic: it returns to zero
    /// when every request has completed, failed or been abandoned).
    pub fn pending_requests(&self) -> usize {
        self.shared.pending.len()
    }

    /// The clock that stamps this client's requests.
    pub fn clock(&self) -> &Clock {
        &self.core.clock
    }

    /// The client's default request timeout.
    pub fn request_timeout(&self) -> Duration {
        self.timeout
    }

    /// The same connection with another default request timeout.
    pub fn with_timeout(&self, timeout: Duration) -> Client {
        Client {
            timeout,
            ..self.clone()
        }
    }

    /// This connection's counters (notifications, locks, elections): what the metrics of
    /// source `client` report ([`Client::metric_values`]).
    pub fn counters(&self) -> &crate::telemetry::ClientCounters {
        &self.shared.observers.counters
    }

    /// The value of every metric whose source is not `call`
    /// ([`telemetry::METRICS`](crate::telemetry::METRICS)), by name, read now: what a
    /// binding's observable instruments report (the cache's only when it has one).
    pub fn metric_values(&self) -> Vec<(&'static str, u64)> {
        let link = self.link_info();
        let mut out = vec![
            (
                "db.client.operation.pending_requests",
                self.pending_requests() as u64,
            ),
            ("mqstate.connection.up", u64::from(link.connected)),
            ("mqstate.connection.connects", link.connections),
            ("mqstate.connection.sessions", link.sessions),
        ];
        out.extend(self.counters().values());
        if let Some(stats) = self.cache_stats() {
            let names = crate::telemetry::METRICS
                .iter()
                .filter(|m| m.source == "cache")
                .map(|m| m.name);
            out.extend(
                names
                    .zip(stats.pairs())
                    .map(|(name, (_, value))| (name, value)),
            );
        }
        out
    }

    /// The broker's host and port, as the settings name them (`server.address` and
    /// `server.port` of the calls' telemetry).
    pub fn server(&self) -> (&str, u16) {
        (&self.shared.settings.host, self.shared.settings.port)
    }

    /// The same connection, its calls traced by `trace`: each request carries its trace
    /// context (the MQTT5 user properties `traceparent` and `tracestate`, so that a store that
    /// records them links its side into the caller's trace), and notes what it met (resent,
    /// waited for the connection, refused) in it. For the bindings, which make one per call
    /// their OpenTelemetry span covers.
    pub fn traced(&self, trace: Arc<CallTrace>) -> Client {
        Client {
            trace: Some(trace),
            ..self.clone()
        }
    }

    /// Sets `key` to `value`.
    pub async fn set(
        &self,
        key: impl AsRef<[u8]>,
        value: impl AsRef<[u8]>,
        options: SetOptions,
    ) -> Result<SetOutcome, Error> {
        let expiry_ms = match options.expiry {
            None => None,
            Some(d) => NonZeroU64::new(whole_millis("expiry", d, MIN_EXPIRY)?),
        };
        let request = Request::Set {
            key: key.as_ref(),
            value: value.as_ref(),
            condition: options.condition,
            expiry_ms,
        };
        let timeout = options.timeout.unwrap_or(self.timeout);
        let reply = self
            .request(
                request,
                options.fencing_token.as_ref(),
                options.persist,
                timeout,
            )
            .await?;
        match reply.response {
            Response::Ok => {
                self.cache_set(key.as_ref(), value.as_ref(), &reply.version);
                Ok(SetOutcome {
                    applied: true,
                    version: reply.version,
                })
            }
            _ => Ok(SetOutcome {
                applied: false,
                version: None,
            }),
        }
    }

    /// Reads `key`: its value and version, or `None`.
    pub async fn get(&self, key: impl AsRef<[u8]>) -> Result<Option<Versioned>, Error> {
        self.get_with(key, GetOptions::default()).await
    }

    /// Reads `key` with options (a per-call timeout; past the cache). With the client's
    /// cache on ([`ClientOptions::cache`]) a read of a cached key answers from memory when it
    /// can; [`cache`](crate::cache) says what it may return.
    pub async fn get_with(
        &self,
        key: impl AsRef<[u8]>,
        options: GetOptions,
    ) -> Result<Option<Versioned>, Error> {
        let key = key.as_ref();
        match self.get_cached(key, &options) {
            Some(hit) => {
                // A hit is ready at once: take a unit of tokio's cooperative budget, so that a
                // loop of hits yields now and then instead of starving the tasks beside it
                // (the client's own connection among them).
                tokio::task::consume_budget().await;
                Ok(hit)
            }
            None => self.get_missed(key, options).await,
        }
    }

    /// Deletes `key`; returns the number of keys deleted (0 or 1).
    pub async fn del(&self, key: impl AsRef<[u8]>, options: DelOptions) -> Result<u64, Error> {
        let timeout = options.timeout.unwrap_or(self.timeout);
        let reply = self
            .request(
                Request::Del { key: key.as_ref() },
                options.fencing_token.as_ref(),
                false,
                timeout,
            )
            .await?;
        match reply.response {
            Response::Count(n) => {
                self.cache_deleted(key.as_ref(), &reply.version);
                Ok(n)
            }
            _ => Ok(0),
        }
    }

    /// Deletes `key` only if it holds `value`.
    pub async fn vdel(
        &self,
        key: impl AsRef<[u8]>,
        value: impl AsRef<[u8]>,
        options: DelOptions,
    ) -> Result<VdelOutcome, Error> {
        let timeout = options.timeout.unwrap_or(self.timeout);
        let request = Request::VDel {
            key: key.as_ref(),
            value: value.as_ref(),
        };
        let reply = self
            .request(request, options.fencing_token.as_ref(), false, timeout)
            .await?;
        let outcome = match reply.response {
            Response::Count(0) => VdelOutcome::NotFound,
            Response::Count(_) => VdelOutcome::Deleted,
            _ => VdelOutcome::ValueMismatch,
        };
        if outcome != VdelOutcome::ValueMismatch {
            self.cache_deleted(key.as_ref(), &reply.version);
        }
        Ok(outcome)
    }

    /// Observes `key`: a stream of its changes. The notification subscription is in place
    /// (SUBACK received) before the KEYNOTIFY is sent.
    pub async fn observe(&self, key: impl AsRef<[u8]>) -> Result<Observer, Error> {
        self.observe_with(key, ObserveOptions::default()).await
    }

    /// [`Client::observe`] with options (a timeout for the registration). If the
    /// registration fails after its KEYNOTIFY may have been applied, a STOP is sent, so a
    /// failed observe leaves no registration behind.
    pub async fn observe_with(
        &self,
        key: impl AsRef<[u8]>,
        options: ObserveOptions,
    ) -> Result<Observer, Error> {
        let key = Bytes::copy_from_slice(key.as_ref());
        if key.is_empty() {
            return Err(Error::invalid_argument("the key must not be empty"));
        }
        let timeout = options.timeout.unwrap_or(self.timeout);
        crate::rpc::check_timeout(timeout)?;
        self.shared
            .subscribe(&self.shared.notification_filter, timeout)
            .await?;
        let _op = self.shared.observers.op_lock(&key).lock().await;
        let (entry, id, needs_keynotify) = self.shared.observers.add(&key);
        let observer = Observer::new(entry, id, self);
        if needs_keynotify {
            // On failure the observer's drop removes it again (and sends STOP if owed).
            let current = self.register(&key, timeout).await?;
            self.shared.observers.registered(&key, current);
        }
        Ok(observer)
    }

    /// KEYNOTIFY, then GET: the key's state right after registration. Once the KEYNOTIFY
    /// has been sent, the registry owes a STOP whatever happens next.
    pub(crate) async fn register(
        &self,
        key: &Bytes,
        timeout: Duration,
    ) -> Result<Option<(Bytes, Option<Hlc>)>, Error> {
        let notify = Request::KeyNotify {
            key: &key[..],
            stop: false,
        };
        self.shared.observers.stop_owed(key);
        self.request(notify, None, false, timeout).await?;
        let current = self.get_from_store(key, timeout).await?;
        Ok(current.map(|v| (v.value, v.version)))
    }

    /// Sends STOP for `key` in the background (on the client's runtime, whatever thread
    /// calls this) once its last observer is gone.
    pub(crate) fn stop_observing_later(&self, key: Bytes) {
        let weak = self.downgrade();
        self.shared.runtime.spawn(async move {
            if let Some(client) = weak.upgrade() {
                client.stop_if_unwanted(key, true).await;
            }
        });
    }

    /// Closes the connection (sending DISCONNECT) and waits for its task to end. Requests
    /// still waiting fail with [`ErrorKind::Closed`]; observers' streams end.
    pub async fn shutdown(&self) {
        self.shared.close();
        let task = self
            .core
            .task
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        if let Some(task) = task {
            let _ = task.await;
        }
    }
}

/// A client handle that does not keep the connection open (for background tasks).
pub(crate) struct WeakClient {
    pub(crate) shared: std::sync::Weak<Shared>,
    core: std::sync::Weak<Core>,
    timeout: Duration,
}

impl WeakClient {
    /// A full client while some handle still holds the connection open.
    pub(crate) fn upgrade(&self) -> Option<Client> {
        let core = self.core.upgrade()?;
        Some(Client {
            shared: Arc::clone(&core.shared),
            core,
            timeout: self.timeout,
            trace: None,
        })
    }
}
