//! The public state store API: [`Client`] with `set`, `get`, `del`, `vdel` and `observe`.
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

use std::num::NonZeroU64;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use bytes::Bytes;
use rumqttc::v5::mqttbytes::QoS;
use tokio::task::JoinHandle;
use tracing::{debug, warn};

use crate::codec::{Request, Response, SetCondition};
use crate::connection::{self, Shared};
use crate::error::{Error, ErrorKind};
use crate::hlc::{Clock, Hlc};
use crate::observe::Observer;
use crate::rpc::{self, Envelope, PendingGuard, Reply};
use crate::settings::ConnectionSettings;
use crate::topics;

/// The default time a request waits for its response.
pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(10);
/// The default number of notifications buffered per observer.
pub const DEFAULT_OBSERVER_CAPACITY: usize = 1024;

/// Client-side behaviour beyond the connection.
#[derive(Clone, Debug)]
pub struct ClientOptions {
    /// How long a request waits for its response (and for a connection), unless the call
    /// says otherwise. Sub-second values are fine.
    pub request_timeout: Duration,
    /// The response topic; default `clients/{clientId}/services/statestore/…/response`.
    pub response_topic: Option<String>,
    /// Notifications buffered per observer before the oldest are discarded.
    pub observer_capacity: usize,
    /// The clock for `__ts`; default one clock shared by every client of the process
    /// (spec §5.3).
    pub clock: Option<Clock>,
}

impl Default for ClientOptions {
    fn default() -> Self {
        ClientOptions {
            request_timeout: DEFAULT_REQUEST_TIMEOUT,
            response_topic: None,
            observer_capacity: DEFAULT_OBSERVER_CAPACITY,
            clock: None,
        }
    }
}

/// Options of a SET.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SetOptions {
    /// `NX` / `NEX`.
    pub condition: SetCondition,
    /// Expire the key this long after the SET (rounded up to whole milliseconds).
    pub expiry: Option<Duration>,
    /// Write with this fencing token (`__ft`).
    pub fencing_token: Option<Hlc>,
    /// Ask the service to persist the value to disk (`aio-persistence`).
    pub persist: bool,
    /// This call's timeout instead of the client's.
    pub timeout: Option<Duration>,
}

/// Options of a DEL or VDEL.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DelOptions {
    /// Delete with this fencing token (`__ft`).
    pub fencing_token: Option<Hlc>,
    /// This call's timeout instead of the client's.
    pub timeout: Option<Duration>,
}

/// The outcome of a SET.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SetOutcome {
    /// `false` when the NX / NEX condition failed.
    pub applied: bool,
    /// The key's new version when applied (also the fencing token of a lock).
    pub version: Option<Hlc>,
}

/// A value with its version.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Versioned {
    /// The value.
    pub value: Bytes,
    /// Its version.
    pub version: Option<Hlc>,
}

/// What [`Client::link_info`] reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LinkInfo {
    /// Connected now.
    pub connected: bool,
    /// Connections made so far (CONNACKs received).
    pub connections: u64,
    /// MQTT sessions begun so far: a reconnection that resumed the session does not count.
    pub sessions: u64,
    /// The largest packet the broker accepts.
    pub broker_max_packet_size: u32,
}

/// The outcome of a VDEL.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum VdelOutcome {
    /// The key held the value and was deleted.
    Deleted,
    /// There was no such key.
    NotFound,
    /// The key holds another value; nothing was deleted.
    ValueMismatch,
}

/// The one clock of this process.
fn process_clock() -> Clock {
    static CLOCK: OnceLock<Clock> = OnceLock::new();
    CLOCK
        .get_or_init(|| {
            let node: [u8; 8] = rand::random();
            Clock::new(&format!("mqstate-{}", topics::hex_encode(&node)))
                .expect("a hex node id is valid")
        })
        .clone()
}

/// Closes the connection when the last handle (client clone or observer) is dropped.
struct CloseOnDrop(Arc<Shared>);

impl Drop for CloseOnDrop {
    fn drop(&mut self) {
        self.0.close();
    }
}

/// A connection to the state store. Cheap to clone; clones share the connection, which
/// closes when the last clone and the last [`Observer`] are dropped or on
/// [`Client::shutdown`].
#[derive(Clone)]
pub struct Client {
    pub(crate) shared: Arc<Shared>,
    clock: Clock,
    timeout: Duration,
    guard: Arc<CloseOnDrop>,
    task: Arc<std::sync::Mutex<Option<JoinHandle<()>>>>,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("client_id", &self.shared.client_id)
            .field("connected", &self.is_connected())
            .finish()
    }
}

impl Client {
    /// Connects with default [`ClientOptions`]. Fails with [`ErrorKind::Connect`] if the
    /// first connection attempt fails; later disconnections are repaired in the background.
    pub async fn connect(settings: ConnectionSettings) -> Result<Client, Error> {
        Client::connect_with(settings, ClientOptions::default()).await
    }

    /// Connects with `options`. Must be called within a tokio runtime.
    pub async fn connect_with(
        settings: ConnectionSettings,
        options: ClientOptions,
    ) -> Result<Client, Error> {
        settings.validate()?;
        let client_id = settings.client_id.clone().unwrap_or_else(|| {
            let id: [u8; 6] = rand::random();
            format!("mqstate-{}", topics::hex_encode(&id))
        });
        let response_topic = options
            .response_topic
            .clone()
            .unwrap_or_else(|| topics::response_topic(&client_id));
        topics::check_response_topic(&response_topic)?;
        let connect_timeout = settings.connect_timeout;
        let (shared, eventloop) = Shared::new(
            settings,
            client_id,
            response_topic,
            options.observer_capacity,
        )?;
        let clock = options.clock.unwrap_or_else(process_clock);
        shared.observers.set_clock(clock.clone());
        let task = tokio::spawn(connection::run(Arc::clone(&shared), eventloop));
        let client = Client {
            guard: Arc::new(CloseOnDrop(Arc::clone(&shared))),
            shared,
            clock,
            timeout: options.request_timeout,
            task: Arc::new(std::sync::Mutex::new(Some(task))),
        };
        // The first attempt decides: connected and subscribed, or a clear error.
        let mut link = client.shared.link.subscribe();
        let outcome = tokio::time::timeout(
            connect_timeout + Duration::from_secs(1),
            link.wait_for(|l| l.closed || l.last_error.is_some() || l.ready),
        )
        .await;
        let failure = match outcome {
            Ok(Ok(l)) if l.ready => None,
            Ok(Ok(l)) => Some(
                l.last_error
                    .clone()
                    .unwrap_or_else(|| Error::new(ErrorKind::Closed, "closed")),
            ),
            Ok(Err(_)) => Some(Error::new(ErrorKind::Closed, "the connection task stopped")),
            Err(_) => Some(Error::new(
                ErrorKind::Timeout,
                format!("no connection within {connect_timeout:?}"),
            )),
        };
        if let Some(e) = failure {
            client.shutdown().await;
            return Err(Error::new(ErrorKind::Connect, e.message().to_owned()));
        }
        tokio::spawn(resync_on_reconnect(client.downgrade()));
        Ok(client)
    }

    /// A handle that does not keep the connection open.
    fn downgrade(&self) -> WeakClient {
        WeakClient {
            shared: Arc::downgrade(&self.shared),
            guard: Arc::downgrade(&self.guard),
            clock: self.clock.clone(),
            timeout: self.timeout,
            task: Arc::clone(&self.task),
        }
    }

    /// The MQTT client id.
    pub fn client_id(&self) -> &str {
        &self.shared.client_id
    }

    /// Whether the client is connected to the broker now.
    pub fn is_connected(&self) -> bool {
        self.shared.link.borrow().connected
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
        &self.clock
    }

    /// The same connection with another default request timeout.
    pub fn with_timeout(&self, timeout: Duration) -> Client {
        Client {
            timeout,
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
            Some(d) if d.is_zero() => {
                return Err(Error::invalid_argument("the expiry must be positive"));
            }
            Some(d) => {
                let ms = d.as_nanos().div_ceil(1_000_000);
                Some(NonZeroU64::new(u64::try_from(ms).unwrap_or(u64::MAX)).expect("positive"))
            }
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
            Response::Ok => Ok(SetOutcome {
                applied: true,
                version: reply.version,
            }),
            _ => Ok(SetOutcome {
                applied: false,
                version: None,
            }),
        }
    }

    /// Reads `key`: its value and version, or `None`.
    pub async fn get(&self, key: impl AsRef<[u8]>) -> Result<Option<Versioned>, Error> {
        let reply = self
            .request(
                Request::Get { key: key.as_ref() },
                None,
                false,
                self.timeout,
            )
            .await?;
        match reply.response {
            Response::Value(value) => Ok(Some(Versioned {
                value,
                version: reply.version,
            })),
            _ => Ok(None),
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
            Response::Count(n) => Ok(n),
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
        Ok(match reply.response {
            Response::Count(0) => VdelOutcome::NotFound,
            Response::Count(_) => VdelOutcome::Deleted,
            _ => VdelOutcome::ValueMismatch,
        })
    }

    /// Observes `key`: a stream of its changes. The notification subscription is in place
    /// (SUBACK received) before the KEYNOTIFY is sent.
    pub async fn observe(&self, key: impl AsRef<[u8]>) -> Result<Observer, Error> {
        let key = Bytes::copy_from_slice(key.as_ref());
        if key.is_empty() {
            return Err(Error::invalid_argument("the key must not be empty"));
        }
        self.shared
            .subscribe(&self.shared.notification_filter, self.timeout)
            .await?;
        let _op = self.shared.observers.op_lock(&key).lock().await;
        let (queue, needs_keynotify) = self.shared.observers.add(&key);
        let observer = Observer {
            key: key.clone(),
            queue,
            client: self.clone(),
        };
        if needs_keynotify {
            // On failure the observer's drop removes it again.
            let current = self.register(&key).await?;
            self.shared.observers.registered(&key, current);
        }
        Ok(observer)
    }

    /// KEYNOTIFY, then GET: the key's state right after registration.
    async fn register(&self, key: &Bytes) -> Result<Option<(Bytes, Option<Hlc>)>, Error> {
        let notify = Request::KeyNotify {
            key: &key[..],
            stop: false,
        };
        self.request(notify, None, false, self.timeout).await?;
        Ok(self.get(key).await?.map(|v| (v.value, v.version)))
    }

    /// Sends STOP for `key` in the background once its last observer is gone.
    pub(crate) fn stop_observing_later(&self, key: Bytes) {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let weak = self.downgrade();
        runtime.spawn(async move {
            let Some(client) = weak.upgrade_shared() else {
                return;
            };
            let _op = client.shared.observers.op_lock(&key).lock().await;
            if client.shared.observers.forget_if_unobserved(&key) && client.is_connected() {
                let stop = Request::KeyNotify {
                    key: &key[..],
                    stop: true,
                };
                if let Err(e) = client.request(stop, None, false, client.timeout).await {
                    debug!(error = %e, "KEYNOTIFY STOP failed");
                }
            }
        });
    }

    /// Closes the connection (sending DISCONNECT) and waits for its task to end. Requests
    /// still waiting fail with [`ErrorKind::Closed`]; observers' streams end.
    pub async fn shutdown(&self) {
        self.shared.close();
        let task = self.task.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(task) = task {
            let _ = task.await;
        }
    }

    /// One request/response exchange: wait for the connection, stamp, send, wait, read.
    pub(crate) async fn request(
        &self,
        request: Request<&[u8]>,
        fencing_token: Option<&Hlc>,
        persist: bool,
        timeout: Duration,
    ) -> Result<Reply, Error> {
        request.validate()?;
        let shared = &self.shared;
        let deadline = tokio::time::Instant::now() + timeout;
        let session = shared.ready(timeout).await?;
        let timestamp = self.clock.tick()?;
        let correlation = rpc::new_correlation_id();
        let properties = Envelope {
            client_id: &shared.client_id,
            response_topic: &shared.response_topic,
            correlation,
            timestamp: &timestamp,
            fencing_token,
            persist,
            timeout,
        }
        .properties();
        let payload = request.encode();
        let size = rpc::packet_size(&properties, topics::REQUEST_TOPIC.len(), payload.len());
        let max = shared.link.borrow().broker_max_packet as usize;
        if size > max {
            return Err(Error::invalid_argument(format!(
                "the request would be a {size}-byte packet; the broker accepts at most {max} bytes"
            )));
        }
        let rx = shared.pending.insert(correlation, session);
        let _guard = PendingGuard {
            map: &shared.pending,
            id: correlation,
        };
        let mqtt = shared.mqtt();
        let publish = mqtt.publish_bytes_with_properties(
            topics::REQUEST_TOPIC,
            QoS::AtLeastOnce,
            false,
            payload,
            properties,
        );
        // Handing over can wait when rumqttc's channel is full: the deadline bounds that too.
        match tokio::time::timeout_at(deadline, publish).await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => {
                return Err(Error::new(
                    ErrorKind::Closed,
                    format!("the connection task is gone: {e}"),
                ));
            }
            Err(_) => {
                return Err(Error::new(
                    ErrorKind::Timeout,
                    format!(
                        "{} could not be handed to the connection within {timeout:?}",
                        request.verb()
                    ),
                ));
            }
        }
        let publish = match tokio::time::timeout_at(deadline, rx).await {
            Ok(Ok(outcome)) => outcome?,
            Ok(Err(_)) => return Err(Error::new(ErrorKind::Closed, "the client was closed")),
            Err(_) => {
                return Err(Error::new(
                    ErrorKind::Timeout,
                    format!("no response to {} within {timeout:?}", request.verb()),
                ));
            }
        };
        let reply = rpc::read_reply(&publish, request.verb())?;
        if let Some(version) = &reply.version
            && let Err(e) = self.clock.receive(version)
        {
            warn!(error = %e, "a response's __ts was not merged into the clock");
        }
        if let Response::Error(e) = reply.response {
            return Err(e.into());
        }
        Ok(reply)
    }
}

/// A client handle that does not keep the connection open (for background tasks).
struct WeakClient {
    shared: std::sync::Weak<Shared>,
    guard: std::sync::Weak<CloseOnDrop>,
    clock: Clock,
    timeout: Duration,
    task: Arc<std::sync::Mutex<Option<JoinHandle<()>>>>,
}

impl WeakClient {
    /// A full client while some handle still holds the connection open.
    fn upgrade_shared(&self) -> Option<Client> {
        Some(Client {
            shared: self.shared.upgrade()?,
            guard: self.guard.upgrade()?,
            clock: self.clock.clone(),
            timeout: self.timeout,
            task: Arc::clone(&self.task),
        })
    }
}

/// After every reconnection: KEYNOTIFY each observed key again, then GET it and deliver a
/// resync notification when it changed while disconnected.
async fn resync_on_reconnect(weak: WeakClient) {
    let Some(shared) = weak.shared.upgrade() else {
        return;
    };
    let mut link = shared.link.subscribe();
    drop(shared);
    let mut seen = link.borrow().connection;
    loop {
        let (closed, connection) = match link.wait_for(|l| l.closed || l.connection > seen).await {
            Ok(state) => (state.closed, state.connection),
            Err(_) => return,
        };
        if closed {
            return;
        }
        seen = connection;
        let Some(client) = weak.upgrade_shared() else {
            return;
        };
        if client.shared.observers.is_empty() {
            continue;
        }
        let keys = client.shared.observers.unregister_all();
        debug!(
            keys = keys.len(),
            "re-registering observed keys after a reconnection"
        );
        if let Err(e) = client
            .shared
            .subscribe(&client.shared.notification_filter, client.timeout)
            .await
        {
            warn!(error = %e, "could not restore the notification subscription");
            continue;
        }
        for key in keys {
            let _op = client.shared.observers.op_lock(&key).lock().await;
            match client.register(&key).await {
                Ok(current) => {
                    client.shared.observers.resync(&key, current.clone());
                    client.shared.observers.registered(&key, current);
                }
                Err(e) => {
                    warn!(error = %e, key = %key.escape_ascii(), "could not re-register an observed key")
                }
            }
        }
    }
}
