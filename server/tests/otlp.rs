//! `ServerConfig::otlp` (`mqstate serve --otlp-endpoint`): a real client's requests reach a
//! collector as spans, through both ways the store is served (in the broker's process and
//! through the adapter's own connection), and the exporter's counters are reported.

use std::io::{Read, Write};
use std::net::TcpListener;
use std::sync::mpsc;
use std::time::Duration;

use mqstate::telemetry::{CallTrace, TraceContext};
use mqstate::{Client, ClientOptions, ConnectionSettings, SetOptions};
use mqstate_server::telemetry::{OtlpConfig, SpanMetrics};
use mqstate_server::{Server, ServerConfig};

const TRACEPARENT: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

/// A collector on a free port, on a thread: each POST's body, parsed, goes to the channel.
fn collector() -> (String, mpsc::Receiver<serde_json::Value>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            let mut data = Vec::new();
            let mut chunk = [0; 8192];
            let body_at = loop {
                let n = stream.read(&mut chunk).unwrap();
                assert!(n > 0);
                data.extend_from_slice(&chunk[..n]);
                if let Some(i) = data.windows(4).position(|w| w == b"\r\n\r\n") {
                    break i + 4;
                }
            };
            let head = String::from_utf8_lossy(&data[..body_at]).to_lowercase();
            assert!(head.starts_with("post /v1/traces http/1.1\r\n"), "{head}");
            assert!(
                head.contains("content-type: application/json\r\n"),
                "{head}"
            );
            let length: usize = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length: "))
                .unwrap()
                .trim()
                .parse()
                .unwrap();
            while data.len() < body_at + length {
                let n = stream.read(&mut chunk).unwrap();
                assert!(n > 0);
                data.extend_from_slice(&chunk[..n]);
            }
            let body = serde_json::from_slice(&data[body_at..]).unwrap();
            let _ = stream.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n");
            if tx.send(body).is_err() {
                return;
            }
        }
    });
    (url, rx)
}

fn spans(body: &serde_json::Value) -> Vec<serde_json::Value> {
    let mut out = Vec::new();
    for resource in body["resourceSpans"].as_array().unwrap() {
        assert_eq!(
            resource["resource"]["attributes"][0]["value"]["stringValue"],
            "mqstate-serve"
        );
        for scope in resource["scopeSpans"].as_array().unwrap() {
            out.extend(scope["spans"].as_array().unwrap().iter().cloned());
        }
    }
    out
}

fn attr<'a>(span: &'a serde_json::Value, key: &str) -> Option<&'a serde_json::Value> {
    span["attributes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["key"] == key)
        .map(|a| &a["value"])
}

async fn requests_become_spans(embedded_adapter: bool) {
    let (url, posts) = collector();
    let server = Server::start(ServerConfig {
        otlp: Some(OtlpConfig {
            interval: Duration::from_millis(50),
            ..OtlpConfig::new(url)
        }),
        embedded_adapter,
        ..ServerConfig::ephemeral()
    })
    .await
    .expect("server starts");
    let port = server.addr().port();
    let reader = server.metrics_reader();
    let mut settings = ConnectionSettings::new("127.0.0.1", port);
    settings.client_id = Some("otlp-test-client".to_owned());
    let client = Client::connect_with(settings, ClientOptions::default())
        .await
        .expect("connects");
    client.set("k", "v", SetOptions::default()).await.unwrap();
    // A traced call (as a binding makes one per span): its request carries the context.
    let context = TraceContext::new(TRACEPARENT, Some("vendor=x")).unwrap();
    let traced = client.traced(CallTrace::new(Some(context)));
    assert!(traced.get("k").await.unwrap().is_some());
    client.shutdown().await;
    server.shutdown().await;

    let mut got = Vec::new();
    while got.len() < 2 {
        let body = posts
            .recv_timeout(Duration::from_secs(10))
            .expect("the spans are exported by the time the server has stopped");
        got.extend(spans(&body));
    }
    let names: Vec<_> = got.iter().map(|s| s["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["SET", "GET"]);
    // The untraced SET is the root of a trace of its own; the traced GET a child of the
    // caller's span, in its trace.
    assert!(got[0].get("parentSpanId").is_none());
    assert_eq!(got[1]["traceId"], "4bf92f3577b34da6a3ce929d0e0e4736");
    assert_eq!(got[1]["parentSpanId"], "00f067aa0ba902b7");
    assert_eq!(got[1]["traceState"], "vendor=x");
    for span in &got {
        assert_eq!(span["kind"], 2);
        assert_eq!(
            attr(span, "db.system.name").unwrap()["stringValue"],
            "azure.iot_operations.state_store"
        );
        assert_eq!(
            attr(span, "db.operation.name").unwrap()["stringValue"],
            span["name"]
        );
        assert_eq!(
            attr(span, "mqstate.client_id").unwrap()["stringValue"],
            "otlp-test-client"
        );
        assert_eq!(
            attr(span, "server.port").unwrap()["intValue"],
            port.to_string()
        );
        assert!(attr(span, "error.type").is_none());
    }
    assert_eq!(
        reader.read().spans,
        Some(SpanMetrics {
            exported: 2,
            dropped: 0,
            failed: 0
        })
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_served_in_the_broker_become_spans() {
    requests_become_spans(false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_served_through_the_adapter_become_spans() {
    requests_become_spans(true).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_an_endpoint_nothing_is_counted_and_https_is_refused() {
    let server = Server::start(ServerConfig::ephemeral()).await.unwrap();
    assert_eq!(server.metrics().spans, None);
    server.shutdown().await;
    let refused = Server::start(ServerConfig {
        otlp: Some(OtlpConfig::new("https://127.0.0.1:4318")),
        ..ServerConfig::ephemeral()
    })
    .await
    .unwrap_err();
    assert_eq!(refused.kind(), std::io::ErrorKind::InvalidInput);
    assert!(refused.to_string().contains("https://"), "{refused}");
}
