//! The store's own spans (issue 57): one per request, exported over OTLP/HTTP with the JSON
//! encoding to a collector (`mqstate serve --otlp-endpoint`). Off by default.
//!
//! A request carrying a W3C `traceparent` user property ([`TraceParent`]) gets a span in the
//! caller's trace, its parent the caller's span; a request without one (or with an invalid
//! one) gets a span of a new trace. A `traceparent` whose sampled flag is clear is not
//! exported (the `parentbased_always_on` sampler of OpenTelemetry SDKs).
//!
//! The request path only hands a finished span to a bounded queue ([`OtlpConfig::queue`]);
//! when it is full the span is dropped and counted ([`SpanMetrics::dropped`]). A background
//! task batches the queue ([`OtlpConfig::batch`] spans or every [`OtlpConfig::interval`])
//! and POSTs each batch over plain HTTP/1.1, within [`OtlpConfig::timeout`]; a batch that
//! fails is dropped, counted ([`SpanMetrics::failed`]) and logged at most once every 30 s.
//! Names and attributes: `docs/server.md`, "Traces".

use std::fmt::Write as _;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use mqstate::codec::StoreErrorKind;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::{mpsc, watch};

use crate::telemetry_names as names;

pub use mqstate::telemetry::TraceParent;

/// Whether a `tracestate` value is kept: at most 512 bytes (the length W3C lets a vendor cut
/// it to) of printable ASCII. It is passed on as the span's trace state, not interpreted.
pub(crate) fn acceptable_tracestate(value: &str) -> bool {
    mqstate::telemetry::tracestate_acceptable(value)
}

/// Where and how `mqstate serve` exports its spans.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OtlpConfig {
    /// The collector's OTLP/HTTP endpoint, `http://HOST[:PORT][/BASE]`: spans are POSTed to
    /// `BASE/v1/traces` (a URL that already ends in `/v1/traces` is used as it is).
    /// `https://` is refused (no TLS client in the server).
    pub endpoint: String,
    /// The resource's `service.name` (default `mqstate-serve`).
    pub service_name: String,
    /// How many finished spans may wait for export; past it, new ones are dropped.
    pub queue: usize,
    /// The most spans one POST carries.
    pub batch: usize,
    /// How often what is queued is exported, at the latest.
    pub interval: Duration,
    /// How long one export (connect, send, read the status) may take.
    pub timeout: Duration,
}

impl OtlpConfig {
    /// The defaults for `endpoint`: a queue of 4096 spans, batches of up to 512 or every
    /// second, 5 s per export.
    pub fn new(endpoint: impl Into<String>) -> OtlpConfig {
        OtlpConfig {
            endpoint: endpoint.into(),
            service_name: names::DEFAULT_SERVICE_NAME.to_owned(),
            queue: 4096,
            batch: 512,
            interval: Duration::from_secs(1),
            timeout: Duration::from_secs(5),
        }
    }

    /// Checks the endpoint (what [`Server::start`](crate::Server::start) would refuse).
    pub fn validate(&self) -> Result<(), String> {
        Endpoint::parse(&self.endpoint).map(|_| ())
    }
}

/// A parsed `http://` endpoint.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Endpoint {
    host: String,
    port: u16,
    /// The request target, `/…/v1/traces`.
    path: String,
    /// The `Host` header.
    authority: String,
}

impl Endpoint {
    fn parse(url: &str) -> Result<Endpoint, String> {
        let bad = |why: &str| format!("--otlp-endpoint {url:?}: {why}");
        let rest = if let Some(rest) = url.strip_prefix("http://") {
            rest
        } else if url.starts_with("https://") {
            return Err(bad(
                "https:// is not supported (the store exports over plain HTTP); use http://, \
                 e.g. a collector on the same host or in the same pod",
            ));
        } else {
            return Err(bad("expected http://HOST[:PORT][/PATH]"));
        };
        let (authority, path) = match rest.find('/') {
            Some(i) => (&rest[..i], &rest[i..]),
            None => (rest, ""),
        };
        if path.contains(['?', '#']) || authority.contains(['?', '#', '@']) {
            return Err(bad("no user, query or fragment may be given"));
        }
        if !path.bytes().all(|b| b.is_ascii_graphic()) {
            return Err(bad("the path must be printable ASCII without spaces"));
        }
        let (host, port) = if let Some(v6) = authority.strip_prefix('[') {
            let (host, after) = v6.split_once(']').ok_or_else(|| bad("unclosed ["))?;
            (host, after.strip_prefix(':'))
        } else {
            match authority.rsplit_once(':') {
                Some((host, port)) => (host, Some(port)),
                None => (authority, None),
            }
        };
        if host.is_empty() || host.contains([':', ' ']) && !authority.starts_with('[') {
            return Err(bad("no host"));
        }
        let port = match port {
            None => 80,
            Some(p) => p
                .parse::<u16>()
                .ok()
                .filter(|p| *p != 0)
                .ok_or_else(|| bad("the port must be 1-65535"))?,
        };
        let path = if path.ends_with(names::OTLP_TRACES_PATH) {
            path.to_owned()
        } else {
            format!("{}{}", path.trim_end_matches('/'), names::OTLP_TRACES_PATH)
        };
        Ok(Endpoint {
            host: host.to_owned(),
            port,
            path,
            authority: authority.to_owned(),
        })
    }
}

/// What the exporter has counted since start.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SpanMetrics {
    /// Spans the collector accepted.
    pub exported: u64,
    /// Spans dropped because the export queue was full.
    pub dropped: u64,
    /// Spans lost in exports that failed (collector unreachable, too slow, or not 2xx).
    pub failed: u64,
}

/// The exporter's live counters.
#[derive(Debug, Default)]
pub(crate) struct SpanCounters {
    exported: AtomicU64,
    dropped: AtomicU64,
    failed: AtomicU64,
}

impl SpanCounters {
    pub(crate) fn snapshot(&self) -> SpanMetrics {
        SpanMetrics {
            exported: self.exported.load(Ordering::Relaxed),
            dropped: self.dropped.load(Ordering::Relaxed),
            failed: self.failed.load(Ordering::Relaxed),
        }
    }
}

/// Why a request did not succeed, as `error.type` says it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ErrorType {
    /// Answered with a state store error.
    Store(StoreErrorKind),
    /// Answered with an RPC failure of this `__stat`.
    Status(u16),
    /// Not answered.
    Dropped,
}

/// One finished span, waiting for export.
#[derive(Debug)]
struct Span {
    trace_id: [u8; 16],
    span_id: [u8; 8],
    parent: Option<[u8; 8]>,
    trace_state: Option<String>,
    name: &'static str,
    start_ns: u64,
    end_ns: u64,
    client_id: Option<String>,
    error: Option<ErrorType>,
}

/// What the span of one request says.
#[derive(Clone, Copy, Debug)]
pub(crate) struct RequestSpan<'a> {
    /// The verb (the span's name).
    pub(crate) operation: &'static str,
    /// The caller's trace context.
    pub(crate) parent: Option<TraceParent>,
    /// The caller's `tracestate`.
    pub(crate) trace_state: Option<&'a str>,
    /// The requesting client.
    pub(crate) client_id: Option<&'a str>,
    /// Why it failed, if it did.
    pub(crate) error: Option<ErrorType>,
}

/// The request path's side of the exporter: hands finished spans to the queue.
#[derive(Debug)]
pub(crate) struct Tracer {
    queue: mpsc::Sender<Span>,
    counters: Arc<SpanCounters>,
    /// The state of the id generator (SplitMix64 over a random seed).
    ids: AtomicU64,
}

impl Tracer {
    fn next_id(&self) -> u64 {
        loop {
            let mut z = self
                .ids
                .fetch_add(0x9e37_79b9_7f4a_7c15, Ordering::Relaxed)
                .wrapping_add(0x9e37_79b9_7f4a_7c15);
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            z ^= z >> 31;
            if z != 0 {
                return z;
            }
        }
    }

    /// Records the span of one request that started at `started` and just ended.
    pub(crate) fn request(&self, request: RequestSpan<'_>, started: Instant) {
        if request.parent.is_some_and(|p| !p.sampled()) {
            return;
        }
        let end_ns = unix_nanos(SystemTime::now());
        let took = u64::try_from(started.elapsed().as_nanos()).unwrap_or(u64::MAX);
        let (trace_id, parent) = match request.parent {
            Some(p) => (p.trace_id, Some(p.parent_id)),
            None => {
                let mut id = [0; 16];
                id[..8].copy_from_slice(&self.next_id().to_be_bytes());
                id[8..].copy_from_slice(&self.next_id().to_be_bytes());
                (id, None)
            }
        };
        let span = Span {
            trace_id,
            span_id: self.next_id().to_be_bytes(),
            parent,
            trace_state: parent.and(request.trace_state.map(str::to_owned)),
            name: request.operation,
            start_ns: end_ns.saturating_sub(took),
            end_ns,
            client_id: request.client_id.map(str::to_owned),
            error: request.error,
        };
        if self.queue.try_send(span).is_err() {
            self.counters.dropped.fetch_add(1, Ordering::Relaxed);
        }
    }
}

fn unix_nanos(at: SystemTime) -> u64 {
    at.duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
}

/// The running exporter: its task, and how to make it flush and stop.
#[derive(Debug)]
pub(crate) struct Exporter {
    stop: watch::Sender<bool>,
    task: tokio::task::JoinHandle<()>,
}

impl Exporter {
    /// Flushes what is queued (one last export, within its timeout) and stops.
    pub(crate) async fn stop(self) {
        self.stop.send_replace(true);
        let _ = self.task.await;
    }

    /// Stops at once, dropping what is queued.
    pub(crate) fn abort(&self) {
        self.task.abort();
    }
}

/// Starts the exporter for spans of a store listening at `server` (its `server.address`
/// and `server.port`); must be called within a Tokio runtime.
pub(crate) fn start(
    config: &OtlpConfig,
    server: std::net::SocketAddr,
    counters: Arc<SpanCounters>,
) -> std::io::Result<(Tracer, Exporter)> {
    let endpoint = Endpoint::parse(&config.endpoint)
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e))?;
    let (queue, spans) = mpsc::channel(config.queue.max(1));
    let (stop, stopped) = watch::channel(false);
    let head = BatchHead::new(&config.service_name, server);
    let task = tokio::spawn(run(
        spans,
        stopped,
        Batcher {
            endpoint,
            head,
            batch: config.batch.max(1),
            interval: config.interval.max(Duration::from_millis(1)),
            timeout: config.timeout,
            counters: Arc::clone(&counters),
            last_complaint: None,
            unreported: 0,
        },
    ));
    let seed = u64::from_le_bytes(
        uuid::Uuid::new_v4().as_bytes()[..8]
            .try_into()
            .unwrap_or([7; 8]),
    );
    let tracer = Tracer {
        queue,
        counters,
        ids: AtomicU64::new(seed),
    };
    Ok((tracer, Exporter { stop, task }))
}

/// The parts of every span that do not change: resource and the server's attributes,
/// JSON-encoded once.
#[derive(Debug)]
struct BatchHead {
    /// `{"resourceSpans":[{"resource":…,"scopeSpans":[{"scope":…,"spans":[`
    prefix: String,
    /// The attributes every span carries, JSON-encoded, each followed by a comma.
    common: String,
}

impl BatchHead {
    fn new(service_name: &str, server: std::net::SocketAddr) -> BatchHead {
        let mut prefix = String::from(r#"{"resourceSpans":[{"resource":{"attributes":["#);
        string_attr(&mut prefix, names::SERVICE_NAME, service_name);
        prefix.push_str(r#"]},"scopeSpans":[{"scope":{"name":"#);
        json_str(&mut prefix, names::SCOPE_NAME);
        prefix.push_str(r#","version":"#);
        json_str(&mut prefix, env!("CARGO_PKG_VERSION"));
        prefix.push_str(r#"},"spans":["#);
        let mut common = String::new();
        string_attr(&mut common, names::DB_SYSTEM_NAME, names::DB_SYSTEM_VALUE);
        common.push(',');
        string_attr(&mut common, names::SERVER_ADDRESS, &server.ip().to_string());
        common.push(',');
        let _ = write!(
            common,
            r#"{{"key":"{}","value":{{"intValue":"{}"}}}},"#,
            names::SERVER_PORT,
            server.port()
        );
        BatchHead { prefix, common }
    }

    /// The OTLP JSON request body for `spans`.
    fn encode(&self, spans: &[Span]) -> String {
        let mut out = String::with_capacity(self.prefix.len() + spans.len() * 600 + 8);
        out.push_str(&self.prefix);
        for (i, span) in spans.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            self.span(&mut out, span);
        }
        out.push_str("]}]}]}");
        out
    }

    fn span(&self, out: &mut String, span: &Span) {
        out.push_str(r#"{"traceId":""#);
        hex(out, &span.trace_id);
        out.push_str(r#"","spanId":""#);
        hex(out, &span.span_id);
        out.push('"');
        if let Some(parent) = &span.parent {
            out.push_str(r#","parentSpanId":""#);
            hex(out, parent);
            out.push('"');
        }
        if let Some(state) = &span.trace_state {
            out.push_str(r#","traceState":"#);
            json_str(out, state);
        }
        out.push_str(r#","name":"#);
        json_str(out, span.name);
        let _ = write!(
            out,
            r#","kind":2,"startTimeUnixNano":"{}","endTimeUnixNano":"{}","attributes":["#,
            span.start_ns, span.end_ns
        );
        out.push_str(&self.common);
        string_attr(out, names::DB_OPERATION_NAME, span.name);
        if let Some(client) = &span.client_id {
            out.push(',');
            string_attr(out, names::CLIENT_ID, client);
        }
        match span.error {
            None => out.push_str(r#"],"status":{}}"#),
            Some(error) => {
                out.push(',');
                let text;
                let value = match error {
                    ErrorType::Store(kind) => kind.as_str(),
                    ErrorType::Status(status) => {
                        text = status.to_string();
                        &text
                    }
                    ErrorType::Dropped => names::ERROR_TYPE_DROPPED,
                };
                string_attr(out, names::ERROR_TYPE, value);
                out.push_str(r#"],"status":{"code":2}}"#);
            }
        }
    }
}

fn hex(out: &mut String, bytes: &[u8]) {
    for b in bytes {
        let _ = write!(out, "{b:02x}");
    }
}

/// `{"key":KEY,"value":{"stringValue":VALUE}}`
fn string_attr(out: &mut String, key: &str, value: &str) {
    out.push_str(r#"{"key":"#);
    json_str(out, key);
    out.push_str(r#","value":{"stringValue":"#);
    json_str(out, value);
    out.push_str("}}");
}

/// A JSON string literal of `text`, escaped.
fn json_str(out: &mut String, text: &str) {
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if u32::from(c) < 0x20 || c == '\u{2028}' || c == '\u{2029}' => {
                let _ = write!(out, "\\u{:04x}", u32::from(c));
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// The background task's state.
struct Batcher {
    endpoint: Endpoint,
    head: BatchHead,
    batch: usize,
    interval: Duration,
    timeout: Duration,
    counters: Arc<SpanCounters>,
    /// When a failed export was last logged.
    last_complaint: Option<Instant>,
    /// Failed exports not logged since.
    unreported: u64,
}

/// How often a failing export is logged at most.
const COMPLAINT_EVERY: Duration = Duration::from_secs(30);

async fn run(mut spans: mpsc::Receiver<Span>, mut stop: watch::Receiver<bool>, mut b: Batcher) {
    let mut batch = Vec::with_capacity(b.batch);
    let mut tick = tokio::time::interval(b.interval);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        let room = b.batch - batch.len();
        tokio::select! {
            received = spans.recv_many(&mut batch, room) => {
                if received == 0 {
                    break;
                }
                if batch.len() < b.batch {
                    continue;
                }
            }
            _ = tick.tick() => {
                if batch.is_empty() {
                    continue;
                }
            }
            _ = stop.wait_for(|stop| *stop) => break,
        }
        b.export(&mut batch).await;
    }
    // Flush what is left: what was queued before the stop.
    while let Ok(span) = spans.try_recv() {
        batch.push(span);
        if batch.len() >= b.batch {
            b.export(&mut batch).await;
        }
    }
    if !batch.is_empty() {
        b.export(&mut batch).await;
    }
}

impl Batcher {
    async fn export(&mut self, batch: &mut Vec<Span>) {
        let n = batch.len() as u64;
        let body = self.head.encode(batch);
        batch.clear();
        let result = tokio::time::timeout(self.timeout, post(&self.endpoint, &body)).await;
        let error = match result {
            Ok(Ok(())) => {
                self.counters.exported.fetch_add(n, Ordering::Relaxed);
                return;
            }
            Ok(Err(e)) => e,
            Err(_) => format!("no answer within {:?}", self.timeout),
        };
        self.counters.failed.fetch_add(n, Ordering::Relaxed);
        let now = Instant::now();
        if self
            .last_complaint
            .is_some_and(|last| now.duration_since(last) < COMPLAINT_EVERY)
        {
            self.unreported += 1;
            return;
        }
        tracing::warn!(
            endpoint = %format!("http://{}{}", self.endpoint.authority, self.endpoint.path),
            error = %error,
            spans = n,
            failed_exports_not_logged = self.unreported,
            "could not export spans (dropped); next report in 30 s at the earliest"
        );
        self.last_complaint = Some(now);
        self.unreported = 0;
    }
}

/// POSTs one body and reads the status line; `Err` unless 2xx.
async fn post(endpoint: &Endpoint, body: &str) -> Result<(), String> {
    let mut stream = tokio::net::TcpStream::connect((endpoint.host.as_str(), endpoint.port))
        .await
        .map_err(|e| format!("connect: {e}"))?;
    let _ = stream.set_nodelay(true);
    let head = format!(
        "POST {} HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\nConnection: close\r\nUser-Agent: mqstate-serve/{}\r\n\r\n",
        endpoint.path,
        endpoint.authority,
        body.len(),
        env!("CARGO_PKG_VERSION")
    );
    stream
        .write_all(head.as_bytes())
        .await
        .map_err(|e| format!("send: {e}"))?;
    stream
        .write_all(body.as_bytes())
        .await
        .map_err(|e| format!("send: {e}"))?;
    let mut answer = Vec::with_capacity(256);
    let mut chunk = [0; 256];
    while !answer.windows(2).any(|w| w == b"\r\n") && answer.len() < 4096 {
        let n = stream
            .read(&mut chunk)
            .await
            .map_err(|e| format!("read: {e}"))?;
        if n == 0 {
            break;
        }
        answer.extend_from_slice(&chunk[..n]);
    }
    let line = answer
        .split(|&b| b == b'\r')
        .next()
        .map(String::from_utf8_lossy)
        .unwrap_or_default();
    let mut words = line.split(' ');
    match (words.next(), words.next()) {
        (Some(version), Some(status)) if version.starts_with("HTTP/1.") => {
            if status.len() == 3 && status.starts_with('2') {
                Ok(())
            } else {
                Err(format!("the collector answered {line:?}"))
            }
        }
        _ => Err(format!("not an HTTP answer: {line:?}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const VALID: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

    proptest! {
        #[test]
        fn arbitrary_strings_never_panic(text in ".{0,80}") {
            let _ = TraceParent::parse(&text);
            let _ = acceptable_tracestate(&text);
        }

        #[test]
        fn endpoints_never_panic(text in ".{0,60}") {
            let _ = Endpoint::parse(&text);
            let _ = Endpoint::parse(&format!("http://{text}"));
        }
    }

    #[test]
    fn endpoints_are_parsed() {
        let e = Endpoint::parse("http://127.0.0.1:4318").unwrap();
        assert_eq!(
            (e.host.as_str(), e.port, e.path.as_str()),
            ("127.0.0.1", 4318, "/v1/traces")
        );
        let e = Endpoint::parse("http://collector/otlp/").unwrap();
        assert_eq!(
            (e.host.as_str(), e.port, e.path.as_str()),
            ("collector", 80, "/otlp/v1/traces")
        );
        let e = Endpoint::parse("http://[::1]:4318/v1/traces").unwrap();
        assert_eq!(
            (e.host.as_str(), e.port, e.path.as_str()),
            ("::1", 4318, "/v1/traces")
        );
        assert_eq!(e.authority, "[::1]:4318");
        let https = Endpoint::parse("https://collector:4318").unwrap_err();
        assert!(https.contains("https:// is not supported"), "{https}");
        for bad in [
            "collector:4318",
            "http://",
            "http://:4318",
            "http://h:0",
            "http://h:99999",
            "http://u@h:1",
            "http://h:1/?q",
            "http://[::1",
        ] {
            assert!(Endpoint::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn json_strings_are_escaped() {
        let mut out = String::new();
        json_str(&mut out, "a\"b\\c\n\u{1}\u{2028}é");
        assert_eq!(out, r#""a\"b\\c\n\u0001\u2028é""#);
    }

    /// A collector on a free port: records each POST (path, content type, body) and answers
    /// 200, or holds every connection without answering (`hang`).
    struct FakeCollector {
        addr: std::net::SocketAddr,
        posts: mpsc::UnboundedReceiver<(String, String, serde_json::Value)>,
    }

    impl FakeCollector {
        async fn start(hang: bool) -> FakeCollector {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            let addr = listener.local_addr().unwrap();
            let (tx, posts) = mpsc::unbounded_channel();
            tokio::spawn(async move {
                let mut held = Vec::new();
                while let Ok((mut stream, _)) = listener.accept().await {
                    if hang {
                        held.push(stream);
                        continue;
                    }
                    let tx = tx.clone();
                    tokio::spawn(async move {
                        let mut data = Vec::new();
                        let mut chunk = [0; 4096];
                        let head_end = loop {
                            let n = stream.read(&mut chunk).await.unwrap();
                            assert!(n > 0, "closed before the headers ended");
                            data.extend_from_slice(&chunk[..n]);
                            if let Some(i) = data.windows(4).position(|w| w == b"\r\n\r\n") {
                                break i + 4;
                            }
                        };
                        let head = String::from_utf8(data[..head_end].to_vec()).unwrap();
                        let header = |name: &str| {
                            head.lines()
                                .find_map(|l| {
                                    let (n, v) = l.split_once(':')?;
                                    n.eq_ignore_ascii_case(name).then(|| v.trim().to_owned())
                                })
                                .unwrap_or_default()
                        };
                        let length: usize = header("content-length").parse().unwrap();
                        while data.len() < head_end + length {
                            let n = stream.read(&mut chunk).await.unwrap();
                            assert!(n > 0, "closed before the body ended");
                            data.extend_from_slice(&chunk[..n]);
                        }
                        let path = head.split(' ').nth(1).unwrap().to_owned();
                        assert!(head.starts_with("POST "), "{head}");
                        let body = serde_json::from_slice(&data[head_end..]).unwrap();
                        let _ = tx.send((path, header("content-type"), body));
                        let _ = stream
                            .write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}")
                            .await;
                    });
                }
            });
            FakeCollector { addr, posts }
        }

        async fn next(&mut self) -> (String, String, serde_json::Value) {
            tokio::time::timeout(Duration::from_secs(10), self.posts.recv())
                .await
                .expect("no POST within 10 s")
                .unwrap()
        }
    }

    fn config(addr: std::net::SocketAddr) -> OtlpConfig {
        OtlpConfig {
            batch: 3,
            interval: Duration::from_secs(60),
            timeout: Duration::from_secs(2),
            ..OtlpConfig::new(format!("http://{addr}"))
        }
    }

    const SERVER: &str = "127.0.0.1:1883";

    fn span<'a>(parent: Option<TraceParent>, error: Option<ErrorType>) -> RequestSpan<'a> {
        RequestSpan {
            operation: "SET",
            parent,
            trace_state: Some("k=v"),
            client_id: Some("app \"1\""),
            error,
        }
    }

    fn attrs(span: &serde_json::Value) -> std::collections::HashMap<String, serde_json::Value> {
        span["attributes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| (a["key"].as_str().unwrap().to_owned(), a["value"].clone()))
            .collect()
    }

    /// The exporter started with `cfg` for a store at `SERVER`, and its counters.
    fn started(cfg: &OtlpConfig) -> (Tracer, Exporter, Arc<SpanCounters>) {
        let counters = Arc::new(SpanCounters::default());
        let (tracer, exporter) =
            start(cfg, SERVER.parse().unwrap(), Arc::clone(&counters)).unwrap();
        (tracer, exporter, counters)
    }

    #[tokio::test]
    async fn spans_are_posted_as_otlp_json_in_batches() {
        let mut collector = FakeCollector::start(false).await;
        let (tracer, exporter, counters) = started(&config(collector.addr));
        let parent = TraceParent::parse(VALID);
        let started = Instant::now();
        tracer.request(span(parent, None), started);
        tracer.request(
            span(None, Some(ErrorType::Store(StoreErrorKind::QuotaExceeded))),
            started,
        );
        tracer.request(span(parent, Some(ErrorType::Status(400))), started);
        for _ in 0..4 {
            tracer.request(span(parent, None), started);
        }
        // Two full batches at once (the interval is a minute away), the last on stop.
        let (path, content_type, first) = collector.next().await;
        assert_eq!(path, "/v1/traces");
        assert_eq!(content_type, "application/json");
        let (_, _, second) = collector.next().await;
        exporter.stop().await;
        let (_, _, last) = collector.next().await;

        let resource = &first["resourceSpans"][0];
        assert_eq!(
            resource["resource"]["attributes"][0],
            serde_json::json!({"key": "service.name", "value": {"stringValue": "mqstate-serve"}})
        );
        let scope = &resource["scopeSpans"][0];
        assert_eq!(scope["scope"]["name"], "mqstate-server");
        let spans = scope["spans"].as_array().unwrap();
        let count = |body: &serde_json::Value| {
            body["resourceSpans"][0]["scopeSpans"][0]["spans"]
                .as_array()
                .unwrap()
                .len()
        };
        assert_eq!((spans.len(), count(&second), count(&last)), (3, 3, 1));

        let child = &spans[0];
        assert_eq!(child["traceId"], "4bf92f3577b34da6a3ce929d0e0e4736");
        assert_eq!(child["parentSpanId"], "00f067aa0ba902b7");
        assert_eq!(child["traceState"], "k=v");
        assert_eq!(child["name"], "SET");
        assert_eq!(child["kind"], 2);
        let span_id = child["spanId"].as_str().unwrap();
        assert!(span_id.len() == 16 && span_id != "0000000000000000");
        let start: u64 = child["startTimeUnixNano"]
            .as_str()
            .unwrap()
            .parse()
            .unwrap();
        let end: u64 = child["endTimeUnixNano"].as_str().unwrap().parse().unwrap();
        assert!(start <= end && start > 1_600_000_000_000_000_000);
        let a = attrs(child);
        assert_eq!(a["db.system.name"]["stringValue"], names::DB_SYSTEM_VALUE);
        assert_eq!(a["db.operation.name"]["stringValue"], "SET");
        assert_eq!(a["server.address"]["stringValue"], "127.0.0.1");
        assert_eq!(a["server.port"]["intValue"], "1883");
        assert_eq!(a["mqstate.client_id"]["stringValue"], "app \"1\"");
        assert!(!a.contains_key("error.type"));
        assert_eq!(child["status"], serde_json::json!({}));

        let root = &spans[1];
        assert!(root.get("parentSpanId").is_none() && root.get("traceState").is_none());
        let trace_id = root["traceId"].as_str().unwrap();
        assert!(trace_id.len() == 32 && trace_id != "4bf92f3577b34da6a3ce929d0e0e4736");
        assert_eq!(attrs(root)["error.type"]["stringValue"], "quota_exceeded");
        assert_eq!(root["status"]["code"], 2);
        assert_eq!(attrs(&spans[2])["error.type"]["stringValue"], "400");

        assert_eq!(
            counters.snapshot(),
            SpanMetrics {
                exported: 7,
                dropped: 0,
                failed: 0
            }
        );
    }

    #[tokio::test]
    async fn an_unsampled_parent_is_not_exported() {
        let collector = FakeCollector::start(false).await;
        let (tracer, exporter, counters) = started(&config(collector.addr));
        let unsampled = TraceParent::parse(&VALID.replace("-01", "-00"));
        tracer.request(span(unsampled, None), Instant::now());
        exporter.stop().await;
        assert_eq!(counters.snapshot(), SpanMetrics::default());
    }

    #[tokio::test]
    async fn a_full_queue_drops_and_counts_without_blocking() {
        let collector = FakeCollector::start(true).await;
        let (tracer, exporter, counters) = started(&OtlpConfig {
            queue: 2,
            batch: 1,
            timeout: Duration::from_millis(300),
            ..config(collector.addr)
        });
        tracer.request(span(None, None), Instant::now());
        // Let the task take the first span and hang in its POST.
        tokio::time::sleep(Duration::from_millis(100)).await;
        let before = Instant::now();
        for _ in 0..10 {
            tracer.request(span(None, None), Instant::now());
        }
        assert!(
            before.elapsed() < Duration::from_secs(1),
            "recording blocked"
        );
        // 8 dropped: a queue of 2 holds 2 of the 10 (9 if the task had not taken the first).
        let dropped = counters.snapshot().dropped;
        assert!((8..=9).contains(&dropped), "{dropped}");
        exporter.stop().await;
        let m = counters.snapshot();
        assert_eq!((m.exported, m.dropped), (0, dropped), "{m:?}");
        assert_eq!(m.failed + m.dropped, 11, "every span counted once: {m:?}");
    }

    #[tokio::test]
    async fn a_dead_endpoint_fails_exports_without_panicking() {
        let dead = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = dead.local_addr().unwrap();
        drop(dead);
        let (tracer, exporter, counters) = started(&config(addr));
        for _ in 0..7 {
            tracer.request(span(None, None), Instant::now());
        }
        exporter.stop().await;
        assert_eq!(counters.snapshot().failed, 7);
        // Recording after the exporter stopped is a drop, not a panic.
        tracer.request(span(None, None), Instant::now());
        assert_eq!(counters.snapshot().dropped, 1);
    }
}
