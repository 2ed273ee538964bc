//! The console of `mqstate serve --http`: the page at `/` and the JSON API under `/api/`
//! (docs/console.md). Reads look inside the running store
//! ([`Inspector`](mqstate_server::inspect::Inspector)); writes go through the store's own path
//! as a client's do (a client of the broker, so observers are notified); faults arm the
//! testing kit's faults on the running server.

use std::net::SocketAddr;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Limited};
use hyper::body::Incoming;
use hyper::header::{CACHE_CONTROL, CONTENT_TYPE, HeaderValue};
use hyper::{Method, Request, Response, StatusCode};
use mqstate::codec::SetCondition;
use mqstate::{Client, DelOptions, Hlc, SetOptions, VdelOutcome};
use mqstate_server::monitor::Monitor;
use serde_json::{Map, Value, json};
use tokio::sync::{Mutex, mpsc, oneshot};

use super::api::{
    Guard, Refusal, b64, bytes_json, bytes_param, json_response, key_param, query, version_json,
};
use super::{Body, Facts, RestartRequest, Target, whole};

/// The page, inside the binary.
const PAGE: &str = include_str!("console.html");

/// What the page may load and do: nothing from elsewhere, no framing.
const PAGE_POLICY: &str = "default-src 'none'; script-src 'unsafe-inline'; \
     style-src 'unsafe-inline'; connect-src 'self'; img-src data:; base-uri 'none'; \
     form-action 'none'; frame-ancestors 'none'";

/// The most bytes of a value `/api/key` answers.
const MAX_VALUE_SHOWN: usize = 64 * 1024;

/// The largest request body a write may send.
const MAX_BODY: usize = 8 * 1024 * 1024;

/// How many clients, registrations per client and locks `/api/clients` lists.
const MAX_CLIENTS: usize = 1000;
const MAX_REGISTRATIONS: usize = 100;
const MAX_LOCKS: usize = 1000;

/// How long a write through the console's client may take.
const WRITE_TIMEOUT: Duration = Duration::from_secs(5);

/// How long a restart may take.
const RESTART_TIMEOUT: Duration = Duration::from_secs(30);

/// The console's state.
pub struct Console {
    guard: Guard,
    facts: Facts,
    monitor: Monitor,
    restarts: mpsc::Sender<RestartRequest>,
    /// The client the console writes through, connected at the first write and kept.
    client: Mutex<Option<Client>>,
}

impl Console {
    pub fn new(
        bound: SocketAddr,
        token: String,
        facts: Facts,
        monitor: Monitor,
        restarts: mpsc::Sender<RestartRequest>,
    ) -> Console {
        Console {
            guard: Guard::new(bound, token),
            facts,
            monitor,
            restarts,
            client: Mutex::new(None),
        }
    }

    /// Drops the console's client (the store restarted: it connects again, with the new
    /// server's credentials, at the next write).
    pub async fn forget_client(&self) {
        *self.client.lock().await = None;
    }

    /// Serves `/` and `/api/…`.
    pub async fn route(&self, request: Request<Incoming>, target: &Target) -> Response<Body> {
        match self.serve(request, target).await {
            Ok(response) => response,
            Err(refusal) => refusal.response(),
        }
    }

    async fn serve(
        &self,
        request: Request<Incoming>,
        target: &Target,
    ) -> Result<Response<Body>, Refusal> {
        let params = query(request.uri().query());
        let path = request.uri().path().to_owned();
        if path == "/" {
            self.guard.check_host(request.headers())?;
        } else {
            let token = params.get("token").map(String::as_str);
            self.guard.check_read(request.headers(), token)?;
        }
        let method = request.method().clone();
        match (&method, path.as_str()) {
            (&Method::GET | &Method::HEAD, "/") => Ok(page()),
            (&Method::GET, "/api/overview") => Ok(ok(self.overview(target))),
            (&Method::GET, "/api/keys") => self.keys(target, &params).map(ok),
            (&Method::GET, "/api/key") => self.key(target, &params).map(ok),
            (&Method::GET, "/api/clients") => self.clients(target).await.map(ok),
            (&Method::GET, "/api/events") => super::events::stream(&self.monitor, &params),
            (&Method::POST, _) if path.starts_with("/api/") => {
                self.guard.check_write(request.headers())?;
                let body = read_body(request).await?;
                self.write(target, &path, &body).await.map(ok)
            }
            (
                _,
                "/" | "/api/overview" | "/api/keys" | "/api/key" | "/api/clients" | "/api/events",
            ) => Err(Refusal::new(
                StatusCode::METHOD_NOT_ALLOWED,
                "invalid_argument",
                format!("{path} answers GET"),
            )),
            _ => Err(Refusal::new(
                StatusCode::NOT_FOUND,
                "not_found",
                format!("no {method} {path} here (docs/console.md lists the API)"),
            )),
        }
    }

    fn overview(&self, target: &Target) -> Value {
        let metrics = target.reader.read();
        let size = target.inspector.size().ok();
        json!({
            "version": env!("CARGO_PKG_VERSION"),
            "broker": target.broker_url,
            "in_process": target.inspector.in_process(),
            "data_dir": self.facts.data_dir.as_ref().map(|d| d.display().to_string()),
            "node_id": self.facts.node_id,
            "keys": size.map(|s| s.0),
            "data_bytes": size.map(|s| s.1),
            "clients_online": metrics.sessions_online,
            "sessions_offline": metrics.sessions_offline,
            "viewers": self.monitor.viewers(),
            "max_viewers": self.monitor.max_viewers(),
            "token_for_reads": self.guard.token_for_reads(),
        })
    }

    fn keys(
        &self,
        target: &Target,
        params: &std::collections::HashMap<String, String>,
    ) -> Result<Value, Refusal> {
        let pattern = params.get("pattern").map_or("*", String::as_str);
        if pattern.is_empty() {
            return Err(Refusal::invalid(
                "the pattern must not be empty (* matches every key)",
            ));
        }
        let after = bytes_param("after", None, params.get("after").map(String::as_str))?;
        let limit = match params.get("limit") {
            None => 100,
            Some(n) => n
                .parse::<usize>()
                .ok()
                .filter(|n| (1..=mqstate_server::inspect::MAX_PAGE).contains(n))
                .ok_or_else(|| {
                    Refusal::invalid(format!(
                        "limit {n:?}: a number from 1 to {}",
                        mqstate_server::inspect::MAX_PAGE
                    ))
                })?,
        };
        let page = target
            .inspector
            .page(pattern.as_bytes(), after.as_deref(), limit)?;
        let now = now_ms();
        let keys: Vec<Value> = page
            .keys
            .iter()
            .map(|k| {
                json!({
                    "key": bytes_json(&k.key),
                    "size": k.size,
                    "expires_in_ms": k.expires_at_ms.map(|at| at.saturating_sub(now)),
                    "persisted": k.persisted,
                    "fenced": k.fenced,
                })
            })
            .collect();
        Ok(json!({
            "keys": keys,
            "next": page.next.map(|n| b64(&n)),
        }))
    }

    fn key(
        &self,
        target: &Target,
        params: &std::collections::HashMap<String, String>,
    ) -> Result<Value, Refusal> {
        let key = key_param(
            params.get("key").map(String::as_str),
            params.get("key_b64").map(String::as_str),
        )?;
        let info = target
            .inspector
            .key(&key, MAX_VALUE_SHOWN)?
            .ok_or_else(|| Refusal::new(StatusCode::NOT_FOUND, "not_found", "no such key"))?;
        let now = now_ms();
        Ok(json!({
            "key": bytes_json(&info.key),
            "value": bytes_json(&info.value),
            "size": info.size,
            "truncated": info.value.len() < info.size,
            "version": version_json(&info.version),
            "expires_at_ms": info.expires_at_ms,
            "expires_in_ms": info.expires_at_ms.map(|at| at.saturating_sub(now)),
            "fencing_token": info.fencing_token.as_ref().map(version_json),
            "persisted": info.persisted,
        }))
    }

    async fn clients(&self, target: &Target) -> Result<Value, Refusal> {
        let clients = target
            .inspector
            .clients(MAX_CLIENTS, MAX_REGISTRATIONS)
            .await?;
        let locks = target.inspector.locks(MAX_LOCKS)?;
        let now = now_ms();
        Ok(json!({
            "clients": clients.iter().map(|c| json!({
                "id": c.id,
                "connected": c.connected,
                "since_ms": c.since_ms,
                "address": c.address.map(|a| a.to_string()),
                "registrations": c.registrations.iter().map(|k| bytes_json(k)).collect::<Vec<_>>(),
                "registration_count": c.registration_count,
            })).collect::<Vec<_>>(),
            "locks": locks.iter().map(|l| json!({
                "key": bytes_json(&l.key),
                "holder": l.holder,
                "token": version_json(&l.token),
                "lease_left_ms": l.expires_at_ms.saturating_sub(now),
            })).collect::<Vec<_>>(),
        }))
    }

    /// A POST: a write or a fault.
    async fn write(
        &self,
        target: &Target,
        path: &str,
        body: &Map<String, Value>,
    ) -> Result<Value, Refusal> {
        let inspector = &target.inspector;
        match path {
            "/api/keys/set" => self.set(target, body).await,
            "/api/keys/delete" => {
                let key = body_key(body)?;
                let client = self.client(target).await?;
                let options = DelOptions {
                    timeout: Some(WRITE_TIMEOUT),
                    ..DelOptions::default()
                };
                let deleted = client.del(&key, options).await?;
                Ok(json!({"deleted": deleted}))
            }
            "/api/keys/vdel" => {
                let key = body_key(body)?;
                let value = body_bytes(body, "value")?
                    .ok_or_else(|| Refusal::invalid("give the value: value (text) or value_b64"))?;
                let client = self.client(target).await?;
                let options = DelOptions {
                    timeout: Some(WRITE_TIMEOUT),
                    ..DelOptions::default()
                };
                let outcome = match client.vdel(&key, &value, options).await? {
                    VdelOutcome::Deleted => "deleted",
                    VdelOutcome::NotFound => "not_found",
                    VdelOutcome::ValueMismatch => "value_mismatch",
                };
                Ok(json!({"deleted": u8::from(outcome == "deleted"), "outcome": outcome}))
            }
            "/api/faults/cut" => {
                let client = body_str(body, "client")?;
                let cut = inspector.cut(client.as_deref()).await?;
                Ok(json!({"cut": cut}))
            }
            "/api/faults/pause" => {
                let ms = body_u64(body, "ms")?.ok_or_else(|| Refusal::invalid("give ms"))?;
                inspector.pause(Duration::from_millis(ms))?;
                Ok(json!({"paused_ms": ms}))
            }
            "/api/faults/fail" => {
                let n = body_u64(body, "n")?.ok_or_else(|| Refusal::invalid("give n"))?;
                let error = body_str(body, "error")?
                    .ok_or_else(|| Refusal::invalid("give error: a state store error's code"))?;
                let command = body_str(body, "command")?;
                let n = usize::try_from(n).map_err(|_| Refusal::invalid("n is too large"))?;
                inspector.fail_next(n, &error, command.as_deref())?;
                Ok(json!({"armed": n}))
            }
            "/api/faults/restart" => self.restart().await,
            _ => Err(Refusal::new(
                StatusCode::NOT_FOUND,
                "not_found",
                format!("no POST {path} here (docs/console.md lists the API)"),
            )),
        }
    }

    async fn set(&self, target: &Target, body: &Map<String, Value>) -> Result<Value, Refusal> {
        let key = body_key(body)?;
        let value = body_bytes(body, "value")?
            .ok_or_else(|| Refusal::invalid("give the value: value (text) or value_b64"))?;
        let condition = match body_str(body, "condition")?.as_deref() {
            None | Some("always") => SetCondition::Always,
            Some("nx") => SetCondition::NotExists,
            Some("nex") => SetCondition::NotExistsOrEqual,
            Some(other) => {
                return Err(Refusal::invalid(format!(
                    "condition {other:?}: one of always, nx, nex"
                )));
            }
        };
        let fencing_token = body_str(body, "fencing_token")?
            .map(|t| Hlc::parse(&t))
            .transpose()
            .map_err(|e| Refusal::invalid(format!("fencing_token: {e}")))?;
        let options = SetOptions {
            condition,
            expiry: body_u64(body, "expiry_ms")?.map(Duration::from_millis),
            fencing_token,
            persist: body_bool(body, "persist")?.unwrap_or(false),
            timeout: Some(WRITE_TIMEOUT),
        };
        let client = self.client(target).await?;
        let outcome = client.set(&key, &value, options).await?;
        Ok(json!({
            "set": outcome.applied,
            "version": outcome.version.as_ref().map(version_json),
        }))
    }

    async fn restart(&self) -> Result<Value, Refusal> {
        let (reply, answer) = oneshot::channel();
        self.restarts.send(reply).await.map_err(|_| {
            Refusal::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "unavailable",
                "the server is stopping",
            )
        })?;
        match tokio::time::timeout(RESTART_TIMEOUT, answer).await {
            Ok(Ok(Ok(kept))) => Ok(json!({"restarted": true, "kept_persisted": kept})),
            Ok(Ok(Err(why))) => Err(Refusal::new(
                StatusCode::INTERNAL_SERVER_ERROR,
                "unavailable",
                why,
            )),
            _ => Err(Refusal::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "unavailable",
                "the restart did not finish in time",
            )),
        }
    }

    /// The console's client of the broker, connected at first use.
    async fn client(&self, target: &Target) -> Result<Client, Refusal> {
        let mut client = self.client.lock().await;
        if let Some(client) = client.as_ref() {
            return Ok(client.clone());
        }
        let mut settings = target.probe_settings.clone();
        settings.client_id = settings
            .client_id
            .map(|id| format!("{}-console", id.trim_end_matches("-probe")));
        let connected = super::connect(settings, WRITE_TIMEOUT)
            .await
            .map_err(|why| Refusal::new(StatusCode::SERVICE_UNAVAILABLE, "unavailable", why))?;
        *client = Some(connected.clone());
        Ok(connected)
    }
}

/// The page, with the headers that keep it to itself.
fn page() -> Response<Body> {
    let mut response = Response::new(whole(PAGE));
    let headers = response.headers_mut();
    headers.insert(
        CONTENT_TYPE,
        HeaderValue::from_static("text/html; charset=utf-8"),
    );
    headers.insert(
        "content-security-policy",
        HeaderValue::from_static(PAGE_POLICY),
    );
    headers.insert(
        "x-content-type-options",
        HeaderValue::from_static("nosniff"),
    );
    headers.insert("referrer-policy", HeaderValue::from_static("no-referrer"));
    headers.insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

fn ok(value: Value) -> Response<Body> {
    json_response(StatusCode::OK, &value)
}

/// A POST's JSON object, at most [`MAX_BODY`] bytes.
async fn read_body(request: Request<Incoming>) -> Result<Map<String, Value>, Refusal> {
    let bytes: Bytes = Limited::new(request.into_body(), MAX_BODY)
        .collect()
        .await
        .map_err(|e| {
            Refusal::new(
                StatusCode::PAYLOAD_TOO_LARGE,
                "invalid_argument",
                format!("the body could not be read whole (at most {MAX_BODY} bytes): {e}"),
            )
        })?
        .to_bytes();
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Ok(Map::new());
    }
    match serde_json::from_slice::<Value>(&bytes) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(_) => Err(Refusal::invalid("the body must be a JSON object")),
        Err(e) => Err(Refusal::invalid(format!("the body is not JSON: {e}"))),
    }
}

fn body_str(body: &Map<String, Value>, name: &str) -> Result<Option<String>, Refusal> {
    match body.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(Refusal::invalid(format!("{name} must be a string"))),
    }
}

fn body_u64(body: &Map<String, Value>, name: &str) -> Result<Option<u64>, Refusal> {
    match body.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => v
            .as_u64()
            .map(Some)
            .ok_or_else(|| Refusal::invalid(format!("{name} must be a whole number ≥ 0"))),
    }
}

fn body_bool(body: &Map<String, Value>, name: &str) -> Result<Option<bool>, Refusal> {
    match body.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Bool(b)) => Ok(Some(*b)),
        Some(_) => Err(Refusal::invalid(format!("{name} must be true or false"))),
    }
}

/// `name` (text) or `name_b64` of a body.
fn body_bytes(body: &Map<String, Value>, name: &str) -> Result<Option<Bytes>, Refusal> {
    let text = body_str(body, name)?;
    let b64 = body_str(body, &format!("{name}_b64"))?;
    bytes_param(name, text.as_deref(), b64.as_deref())
}

fn body_key(body: &Map<String, Value>) -> Result<Bytes, Refusal> {
    let text = body_str(body, "key")?;
    let b64 = body_str(body, "key_b64")?;
    key_param(text.as_deref(), b64.as_deref())
}

/// The wall clock as every mqstate clock reads it.
fn now_ms() -> u64 {
    use mqstate::hlc::TimeSource;
    mqstate::hlc::SystemTimeSource.now_ms()
}
