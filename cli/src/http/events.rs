//! `GET /api/events`: the store's live event stream as server-sent events (docs/console.md,
//! "The live stream"), filtered here, so a viewer that asks for one key pattern is not sent
//! every event.
//!
//! Each viewer is a task that reads the [`Monitor`] and hands formatted events to the
//! response body through a small channel. A viewer that does not read fills that channel;
//! its task then waits (never the store: the monitor's ring moves on, and the viewer is told
//! how many events it skipped), and after [`STALLED`] it is dropped, freeing its place.

use std::collections::HashMap;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::BodyExt;
use hyper::body::Frame;
use hyper::header::{CACHE_CONTROL, CONTENT_TYPE, HeaderValue};
use hyper::{Response, StatusCode};
use mqstate_server::monitor::{Event, Monitor, Next, Viewer, What};
use serde_json::{Value, json};
use tokio::sync::mpsc;

use super::Body;
use super::api::{Refusal, bytes_json};

/// How often a comment line keeps an idle stream (and the proxies on its way) alive.
const KEEP_ALIVE: Duration = Duration::from_secs(15);

/// How long a viewer may leave its stream unread before it is dropped.
const STALLED: Duration = Duration::from_secs(60);

/// Chunks of formatted events waiting for the body.
const QUEUE: usize = 16;

/// How long a viewer gathers events after one before it sends them (and how often, at most,
/// it wakes up under load).
const GATHER: Duration = Duration::from_millis(50);

/// The most bytes of events in one chunk.
const MAX_BATCH: usize = 256 * 1024;

/// Which events a viewer asked for.
#[derive(Debug, Default)]
struct Filter {
    pattern: Option<Vec<u8>>,
    client: Option<String>,
    /// `Some(true)`: only requests that went well; `Some(false)`: only those that did not.
    ok: Option<bool>,
}

impl Filter {
    fn parse(params: &HashMap<String, String>) -> Result<Filter, Refusal> {
        let nonempty = |name: &str| params.get(name).filter(|v| !v.is_empty()).cloned();
        let ok = match params.get("outcome").map(String::as_str) {
            None | Some("") => None,
            Some("ok") => Some(true),
            Some("error") => Some(false),
            Some(other) => {
                return Err(Refusal::invalid(format!("outcome {other:?}: ok or error")));
            }
        };
        Ok(Filter {
            pattern: nonempty("pattern").map(String::into_bytes),
            client: nonempty("client"),
            ok,
        })
    }

    fn admits(&self, what: &What) -> bool {
        let (client, key, ok) = match what {
            What::Request {
                client,
                key,
                outcome,
                ..
            } => (
                client.as_deref(),
                key.as_deref(),
                Some(matches!(
                    outcome,
                    mqstate_server::metrics::Outcome::Ok
                        | mqstate_server::metrics::Outcome::Duplicate
                )),
            ),
            What::Notification { client, key, .. } => (Some(client.as_str()), Some(&key[..]), None),
            What::Connected { client, .. } | What::Disconnected { client } => {
                (Some(client.as_str()), None, None)
            }
            _ => (None, None, None),
        };
        if let Some(want) = self.ok
            && ok != Some(want)
        {
            return false;
        }
        if let Some(want) = &self.client
            && client.is_some_and(|c| c != want)
        {
            return false;
        }
        if let (Some(pattern), Some(key)) = (&self.pattern, key) {
            return mqstate::glob::matches(pattern, key);
        }
        true
    }
}

/// Answers a viewer with the stream of the events `params` asks for, or `503` when the
/// monitor already has its most viewers.
pub fn stream(
    monitor: &Monitor,
    params: &HashMap<String, String>,
) -> Result<Response<Body>, Refusal> {
    let filter = Filter::parse(params)?;
    let viewer = monitor.subscribe().ok_or_else(|| {
        Refusal::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "unavailable",
            format!(
                "{} viewers watch already: close one, or try again later",
                monitor.max_viewers()
            ),
        )
    })?;
    let (tx, rx) = mpsc::channel(QUEUE);
    tokio::spawn(feed(viewer, filter, tx));
    let mut response = Response::new(Sse { rx }.boxed());
    let headers = response.headers_mut();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
    headers.insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
    Ok(response)
}

/// Reads the monitor for one viewer until it leaves (its body dropped) or stalls.
///
/// Events are sent in batches: the first one at once, then whatever came within [`GATHER`]
/// of it, in one chunk. Under load a viewer then costs a wake-up and a write per batch, not
/// per request (the store's ring holds what comes meanwhile), and a lone event still shows
/// at once.
async fn feed(mut viewer: Viewer, filter: Filter, tx: mpsc::Sender<Bytes>) {
    // Said at once, so the page knows it is connected before the first event.
    if tx
        .send(Bytes::from_static(b": connected\n\n"))
        .await
        .is_err()
    {
        return;
    }
    let mut keep_alive = tokio::time::interval(KEEP_ALIVE);
    keep_alive.tick().await;
    let mut batch = Vec::new();
    loop {
        let first = tokio::select! {
            next = viewer.next() => next,
            _ = keep_alive.tick() => {
                if !send(&tx, Bytes::from_static(b": keep-alive\n\n")).await {
                    return;
                }
                continue;
            }
            () = tx.closed() => return,
        };
        let mut next = Some(first);
        while let Some(event) = next.take() {
            match event {
                Next::Event(event) if filter.admits(&event.what) => {
                    batch.extend_from_slice(&event.rendered(|e| {
                        let mut one = Vec::new();
                        sse_into(&mut one, &event_json(e));
                        Bytes::from(one)
                    }));
                }
                Next::Event(_) => {}
                Next::Skipped(count) => {
                    sse_into(&mut batch, &json!({"kind": "skipped", "count": count}));
                }
                Next::Closed => return,
            }
            if batch.len() < MAX_BATCH {
                next = viewer.try_next();
            }
        }
        if !batch.is_empty() && !send(&tx, Bytes::from(std::mem::take(&mut batch))).await {
            return;
        }
        tokio::time::sleep(GATHER).await;
    }
}

/// Hands a chunk to the body; false when the viewer is gone or read nothing for [`STALLED`].
async fn send(tx: &mpsc::Sender<Bytes>, chunk: Bytes) -> bool {
    match tokio::time::timeout(STALLED, tx.send(chunk)).await {
        Ok(Ok(())) => true,
        Ok(Err(_)) => false,
        Err(_) => {
            tracing::info!("--http: a live viewer read nothing for {STALLED:?}: dropped");
            false
        }
    }
}

/// Appends one server-sent event.
fn sse_into(out: &mut Vec<u8>, value: &Value) {
    out.extend_from_slice(b"data: ");
    // Writing JSON into a Vec cannot fail.
    let _ = serde_json::to_writer(&mut *out, value);
    out.extend_from_slice(b"\n\n");
}

/// An event as the stream sends it.
fn event_json(event: &Event) -> Value {
    let mut shown = match &event.what {
        What::Request {
            client,
            verb,
            key,
            outcome,
            error,
            status,
            duration,
        } => json!({
            "kind": "request",
            "client": client,
            "verb": verb.map_or("?", |v| v.as_str()),
            "key": key.as_ref().map(|k| bytes_json(k)),
            "outcome": outcome.as_str(),
            "error": error,
            "status": status,
            "duration_us": u64::try_from(duration.as_micros()).unwrap_or(u64::MAX),
        }),
        What::Notification { client, key, event } => json!({
            "kind": "notification",
            "client": client,
            "key": bytes_json(key),
            "event": event,
        }),
        What::Connected { client, address } => json!({
            "kind": "connect",
            "client": client,
            "address": address.map(|a| a.to_string()),
        }),
        What::Disconnected { client } => json!({"kind": "disconnect", "client": client}),
        What::Fault { fault, detail } => json!({"kind": "fault", "fault": fault, "detail": detail}),
        _ => json!({"kind": "other"}),
    };
    shown["seq"] = Value::from(event.seq);
    shown["at_ms"] = Value::from(event.at_ms);
    shown
}

/// The body of a stream: what the viewer's task hands over.
struct Sse {
    rx: mpsc::Receiver<Bytes>,
}

impl hyper::body::Body for Sse {
    type Data = Bytes;
    type Error = std::convert::Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        self.rx
            .poll_recv(cx)
            .map(|chunk| chunk.map(|c| Ok(Frame::data(c))))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mqstate_server::metrics::Outcome;

    fn request(client: &str, key: &[u8], outcome: Outcome) -> What {
        What::Request {
            client: Some(client.to_owned()),
            verb: Some(mqstate::codec::Verb::Set),
            key: Some(Bytes::copy_from_slice(key)),
            outcome,
            error: None,
            status: None,
            duration: Duration::from_micros(7),
        }
    }

    fn filter(pairs: &[(&str, &str)]) -> Filter {
        let params = pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        Filter::parse(&params).unwrap()
    }

    #[test]
    fn filters_by_pattern_client_and_outcome() {
        let set = request("app", b"sensor/1", Outcome::Ok);
        let failed = request("app", b"sensor/1", Outcome::StoreError);
        let fault = What::Fault {
            fault: "pause",
            detail: String::new(),
        };
        assert!(filter(&[]).admits(&set));
        assert!(filter(&[("pattern", "sensor/*")]).admits(&set));
        assert!(!filter(&[("pattern", "other/*")]).admits(&set));
        assert!(
            filter(&[("pattern", "other/*")]).admits(&fault),
            "no key: passes"
        );
        assert!(!filter(&[("client", "else")]).admits(&set));
        assert!(filter(&[("outcome", "ok")]).admits(&set));
        assert!(!filter(&[("outcome", "ok")]).admits(&failed));
        assert!(filter(&[("outcome", "error")]).admits(&failed));
        assert!(
            !filter(&[("outcome", "error")]).admits(&fault),
            "not a request"
        );
        let params = [("outcome".to_owned(), "maybe".to_owned())]
            .into_iter()
            .collect();
        assert!(Filter::parse(&params).is_err());
    }

    #[test]
    fn events_carry_their_number_time_and_binary_keys() {
        let event = Event::new(7, 1_700_000_000_000, request("app", b"\xffk", Outcome::Ok));
        let shown = event_json(&event);
        assert_eq!(shown["kind"], "request");
        assert_eq!(shown["seq"], 7);
        assert_eq!(shown["verb"], "SET");
        assert_eq!(shown["duration_us"], 7);
        assert!(shown["key"].get("text").is_none());
        assert_eq!(shown["key"]["b64"], "_2s");
    }
}
