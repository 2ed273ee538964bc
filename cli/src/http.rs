//! `mqstate serve --http ADDRESS`: an HTTP listener for probes and Prometheus, off by default.
//!
//! - `GET /healthz`: 200 while the process serves HTTP (a liveness probe).
//! - `GET /readyz`: 200 once a real request (a GET) made through the store's broker, as a
//!   client makes it, is answered within [`READY_TIMEOUT`]; 503 with the reason otherwise (the
//!   broker unreachable, the store not answering). A readiness probe.
//! - `GET /metrics`: the server's counters in the Prometheus text format (version 0.0.4), or
//!   OpenMetrics when the scraper asks for it (`Accept: application/openmetrics-text`).
//!
//! Anything else is 404; a method other than GET or HEAD is 405.

mod prometheus;

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::header::{ACCEPT, CONTENT_TYPE, HeaderValue};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use mqstate::{Client, ClientOptions, ConnectionSettings, GetOptions};
use mqstate_server::MetricsReader;
use tokio::net::TcpListener;
use tokio::sync::Mutex;

/// How long `/readyz` waits for the store's answer (and for connecting).
pub const READY_TIMEOUT: Duration = Duration::from_secs(2);

/// The key `/readyz` reads (it need not exist: any answer means the store answers).
const PROBE_KEY: &str = "$mqstate/readyz";

/// What the listener serves from.
struct Endpoints {
    metrics: prometheus::Exporter,
    probe_settings: ConnectionSettings,
    /// The readiness client, connected at the first `/readyz` and kept.
    probe: Mutex<Option<Client>>,
}

/// A running listener; dropping it stops accepting.
pub struct HttpListener {
    addr: SocketAddr,
    task: tokio::task::JoinHandle<()>,
}

impl HttpListener {
    /// Binds `addr` and serves the endpoints for the server whose counters `metrics` reads
    /// and whose broker `probe_settings` reaches.
    pub async fn start(
        addr: SocketAddr,
        metrics: MetricsReader,
        probe_settings: ConnectionSettings,
    ) -> std::io::Result<HttpListener> {
        let listener = TcpListener::bind(addr).await?;
        let addr = listener.local_addr()?;
        let endpoints = Arc::new(Endpoints {
            metrics: prometheus::Exporter::new(metrics),
            probe_settings,
            probe: Mutex::new(None),
        });
        let task = tokio::spawn(accept_loop(listener, endpoints));
        Ok(HttpListener { addr, task })
    }

    /// The bound address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Stops accepting and closes the readiness client.
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
    async fn route(&self, request: Request<Incoming>) -> Response<Full<Bytes>> {
        if request.method() != Method::GET && request.method() != Method::HEAD {
            return text(StatusCode::METHOD_NOT_ALLOWED, "only GET and HEAD\n");
        }
        match request.uri().path() {
            "/healthz" => text(StatusCode::OK, "ok\n"),
            "/readyz" => self.ready().await,
            "/metrics" => {
                let openmetrics = request
                    .headers()
                    .get(ACCEPT)
                    .and_then(|a| a.to_str().ok())
                    .is_some_and(|a| a.contains("application/openmetrics-text"));
                match self.metrics.encode(openmetrics) {
                    Ok((body, content_type)) => {
                        let mut response = Response::new(Full::new(Bytes::from(body)));
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
                "not found: /healthz, /readyz and /metrics are served here\n",
            ),
        }
    }

    /// One GET through the broker; 200 with how long it took, or 503 with why not.
    async fn ready(&self) -> Response<Full<Bytes>> {
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
            let mut settings = self.probe_settings.clone();
            settings.connect_timeout = READY_TIMEOUT;
            let options = ClientOptions {
                request_timeout: READY_TIMEOUT,
                ..ClientOptions::default()
            };
            let client =
                tokio::time::timeout(READY_TIMEOUT, Client::connect_with(settings, options))
                    .await
                    .map_err(|_| {
                        format!(
                            "could not connect to the broker within {} ms",
                            READY_TIMEOUT.as_millis()
                        )
                    })?
                    .map_err(|e| format!("could not connect to the broker: {e}"))?;
            *probe = Some(client);
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

fn text(status: StatusCode, body: &str) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::from(body.to_owned())));
    *response.status_mut() = status;
    response.headers_mut().insert(
        CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    response
}
