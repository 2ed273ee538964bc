//! `mqstate serve --http ADDRESS`: an HTTP listener for probes, Prometheus and the console,
//! off by default.
//!
//! - `GET /healthz`: 200 while the process serves HTTP (a liveness probe).
//! - `GET /readyz`: 200 once a real request (a GET) made through the store's broker, as a
//!   client makes it, is answered within [`READY_TIMEOUT`]; 503 with the reason otherwise (the
//!   broker unreachable, the store not answering). A readiness probe.
//! - `GET /metrics`: the server's counters in the Prometheus text format (version 0.0.4), or
//!   OpenMetrics when the scraper asks for it (`Accept: application/openmetrics-text`).
//! - `/` and `/api/…`: the console and its JSON API ([`console`], docs/console.md).
//!
//! Anything else is 404.

mod api;
mod console;
mod events;
mod prometheus;

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::header::{ACCEPT, CONTENT_TYPE, HeaderValue};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use mqstate::{Client, ClientOptions, ConnectionSettings, GetOptions};
use mqstate_server::inspect::Inspector;
use mqstate_server::monitor::Monitor;
use mqstate_server::{MetricsReader, ServerHandle};
use tokio::net::TcpListener;
use tokio::sync::{Mutex, mpsc, oneshot};

/// How long `/readyz` waits for the store's answer (and for connecting).
pub const READY_TIMEOUT: Duration = Duration::from_secs(2);

/// The key `/readyz` reads (it need not exist: any answer means the store answers).
const PROBE_KEY: &str = "$mqstate/readyz";

/// Every response's body: whole, or streamed (the console's live stream).
pub(crate) type Body = BoxBody<Bytes, Infallible>;

/// A request to restart the store (the console's fault), answered with whether persisted
/// keys were kept, or why the restart failed.
pub type RestartRequest = oneshot::Sender<Result<bool, String>>;

/// What the listener serves from that a restart of the store replaces.
pub struct Target {
    metrics: prometheus::Exporter,
    reader: MetricsReader,
    probe_settings: ConnectionSettings,
    inspector: Inspector,
    /// Where clients connect: `mqtt://…`.
    broker_url: String,
}

impl Target {
    /// What `server` serves (`tls`: its clients connect with TLS).
    pub fn of(server: &ServerHandle, tls: bool) -> Target {
        let scheme = if tls { "mqtts" } else { "mqtt" };
        Target {
            metrics: prometheus::Exporter::new(server.metrics_reader()),
            reader: server.metrics_reader(),
            probe_settings: server.probe_settings(),
            inspector: server.inspector(),
            broker_url: format!("{scheme}://{}", server.addr()),
        }
    }
}

/// What the console shows of the server that does not change while it runs.
#[derive(Clone, Debug)]
pub struct Facts {
    /// `--data-dir`, if given.
    pub data_dir: Option<std::path::PathBuf>,
    /// `--node-id`.
    pub node_id: String,
}

/// What the listener serves from.
struct Endpoints {
    target: RwLock<Arc<Target>>,
    /// The readiness client, connected at the first `/readyz` and kept.
    probe: Mutex<Option<Client>>,
    console: console::Console,
}

/// A running listener; dropping it stops accepting.
pub struct HttpListener {
    addr: SocketAddr,
    task: tokio::task::JoinHandle<()>,
    endpoints: Arc<Endpoints>,
}

impl HttpListener {
    /// Binds `addr` and serves the endpoints of `target`: the console's writes and faults
    /// need `token`, its live stream reads `monitor`, and its restart asks `restarts`.
    pub async fn start(
        addr: SocketAddr,
        target: Target,
        facts: Facts,
        token: String,
        monitor: Monitor,
        restarts: mpsc::Sender<RestartRequest>,
    ) -> std::io::Result<HttpListener> {
        let listener = TcpListener::bind(addr).await?;
        let addr = listener.local_addr()?;
        let endpoints = Arc::new(Endpoints {
            target: RwLock::new(Arc::new(target)),
            probe: Mutex::new(None),
            console: console::Console::new(addr, token, facts, monitor, restarts),
        });
        let task = tokio::spawn(accept_loop(listener, Arc::clone(&endpoints)));
        Ok(HttpListener {
            addr,
            task,
            endpoints,
        })
    }

    /// The bound address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Serves a restarted store from now on (its clients connect again).
    pub async fn retarget(&self, target: Target) {
        *self
            .endpoints
            .target
            .write()
            .unwrap_or_else(|p| p.into_inner()) = Arc::new(target);
        *self.endpoints.probe.lock().await = None;
        self.endpoints.console.forget_client().await;
    }

    /// Stops accepting.
    pub fn stop(self) {
        self.task.abort();
    }
}

async fn accept_loop(listener: TcpListener, endpoints: Arc<Endpoints>) {
    loop {
        let (stream, peer) = match listener.accept().await {
            Ok(accepted) => accepted,
            Err(e) => {
                // Out of file descriptors and the like: say so, wait a little, go on.
                tracing::warn!(error = %e, "--http: could not accept a connection");
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        let endpoints = Arc::clone(&endpoints);
        tokio::spawn(async move {
            let service = hyper::service::service_fn(move |request| {
                let endpoints = Arc::clone(&endpoints);
                async move { Ok::<_, Infallible>(endpoints.route(request).await) }
            });
            if let Err(e) = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service)
                .await
            {
                tracing::debug!(%peer, error = %e, "--http: connection ended");
            }
        });
    }
}

impl Endpoints {
    fn target(&self) -> Arc<Target> {
        Arc::clone(&self.target.read().unwrap_or_else(|p| p.into_inner()))
    }

    async fn route(&self, request: Request<Incoming>) -> Response<Body> {
        let path = request.uri().path();
        if path == "/" || path.starts_with("/api/") {
            return self.console.route(request, &self.target()).await;
        }
        if request.method() != Method::GET && request.method() != Method::HEAD {
            return text(StatusCode::METHOD_NOT_ALLOWED, "only GET and HEAD\n");
        }
        match path {
            "/healthz" => text(StatusCode::OK, "ok\n"),
            "/readyz" => self.ready().await,
            "/metrics" => {
                let openmetrics = request
                    .headers()
                    .get(ACCEPT)
                    .and_then(|a| a.to_str().ok())
                    .is_some_and(|a| a.contains("application/openmetrics-text"));
                match self.target().metrics.encode(openmetrics) {
                    Ok((body, content_type)) => {
                        let mut response = Response::new(whole(body));
                        response
                            .headers_mut()
                            .insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
                        response
                    }
                    Err(e) => text(
                        StatusCode::INTERNAL_SERVER_ERROR,
                        &format!("could not encode the metrics: {e}\n"),
                    ),
                }
            }
            _ => text(
                StatusCode::NOT_FOUND,
                "not found: the console (/), its API (/api/), /healthz, /readyz and /metrics \
                 are served here\n",
            ),
        }
    }

    /// One GET through the broker; 200 with how long it took, or 503 with why not.
    async fn ready(&self) -> Response<Body> {
        let started = Instant::now();
        match self.probe_once().await {
            Ok(()) => text(
                StatusCode::OK,
                &format!(
                    "ready: the store answered through its broker in {} ms\n",
                    started.elapsed().as_millis()
                ),
            ),
            Err(why) => {
                tracing::debug!(reason = %why, "--http: /readyz not ready");
                text(
                    StatusCode::SERVICE_UNAVAILABLE,
                    &format!("not ready: {why}\n"),
                )
            }
        }
    }

    async fn probe_once(&self) -> Result<(), String> {
        // One probe at a time: concurrent probes wait for the first one's verdict.
        let mut probe = self.probe.lock().await;
        if probe.is_none() {
            let settings = self.target().probe_settings.clone();
            *probe = Some(connect(settings, READY_TIMEOUT).await?);
        }
        let client = probe.as_ref().expect("set above");
        let options = GetOptions {
            timeout: Some(READY_TIMEOUT),
            ..GetOptions::default()
        };
        match client.get_with(PROBE_KEY, options).await {
            Ok(_) => Ok(()),
            Err(e) => Err(format!(
                "the store did not answer a GET through its broker: {e}"
            )),
        }
    }
}

/// A client of the store's broker with `settings`, connected within `timeout` (also its
/// request timeout), or why not.
async fn connect(mut settings: ConnectionSettings, timeout: Duration) -> Result<Client, String> {
    settings.connect_timeout = timeout;
    let options = ClientOptions {
        request_timeout: timeout,
        ..ClientOptions::default()
    };
    tokio::time::timeout(timeout, Client::connect_with(settings, options))
        .await
        .map_err(|_| {
            format!(
                "could not connect to the broker within {} ms",
                timeout.as_millis()
            )
        })?
        .map_err(|e| format!("could not connect to the broker: {e}"))
}

/// A whole body.
pub(crate) fn whole(body: impl Into<Bytes>) -> Body {
    Full::new(body.into()).boxed()
}

fn text(status: StatusCode, body: &str) -> Response<Body> {
    let mut response = Response::new(whole(body.to_owned()));
    *response.status_mut() = status;
    response.headers_mut().insert(
        CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    response
}
