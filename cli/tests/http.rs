//! `mqstate serve --http`: `/healthz`, `/readyz` and `/metrics` seen by the tools that use them
//! — Debian's Prometheus scraping `/metrics` and `promtool check metrics` linting it — with
//! `serve` attached to a mosquitto (`--broker`) so the test can pause the broker under the store
//! (SIGSTOP) and watch `/readyz` fail and recover.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

mod support;

use mqstate_tests::Mosquitto;
use support::{Proc, free_port, mqstate, wait_port};

/// A bound on anything that should happen, so a bug fails the test instead of hanging it.
const BOUND: Duration = Duration::from_secs(30);

/// `GET path` on 127.0.0.1:`port`: the status code and the body.
fn get(port: u16, path: &str) -> (u16, String) {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).expect("the HTTP listener accepts");
    stream.set_read_timeout(Some(BOUND)).unwrap();
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    let status = response
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("not an HTTP response: {response:?}"));
    let body = response
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_owned())
        .unwrap_or_default();
    (status, body)
}

/// Polls `GET path` until its status is `want` (bounded); returns the body.
fn wait_status(port: u16, path: &str, want: u16) -> String {
    let deadline = Instant::now() + BOUND;
    loop {
        let (status, body) = get(port, path);
        if status == want {
            return body;
        }
        assert!(
            Instant::now() < deadline,
            "{path} stayed {status} (want {want}): {body}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The value of the sample `name{labels}` in a Prometheus text page.
fn sample(page: &str, series: &str) -> Option<f64> {
    page.lines().find_map(|l| {
        l.strip_prefix(series)?
            .strip_prefix(' ')?
            .trim()
            .parse()
            .ok()
    })
}

#[test]
fn health_readiness_and_metrics_through_a_broker() {
    let broker = Mosquitto::start().expect("mosquitto starts");
    let http = free_port();
    let data = tempfile::tempdir().unwrap();
    let mut serve = Proc(
        mqstate()
            .args(["serve", "--broker", &broker.url()])
            .args(["--http", &http.to_string()])
            .args(["--data-dir", data.path().to_str().unwrap()])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    wait_port(&mut serve.0, http);
    assert_eq!(get(http, "/healthz"), (200, "ok\n".to_owned()));
    let ready = wait_status(http, "/readyz", 200);
    assert!(ready.starts_with("ready:"), "{ready}");
    assert_eq!(get(http, "/nope").0, 404);

    // Three SETs (one persisted) and a GET, by the CLI as a user makes them.
    let url = broker.url();
    for args in [
        &["set", "a", "1"][..],
        &["set", "b", "22", "--persist"],
        &["set", "a", "333"],
        &["get", "a"],
    ] {
        let out = mqstate().args(["--url", &url]).args(args).output().unwrap();
        assert!(out.status.success(), "{args:?}: {out:?}");
    }
    let page = get(http, "/metrics").1;
    assert_eq!(
        sample(
            &page,
            r#"mqstate_requests_total{command="SET",outcome="ok"}"#
        ),
        Some(3.0),
        "{page}"
    );
    // GETs: the CLI's and /readyz's own (at least one).
    assert!(
        sample(
            &page,
            r#"mqstate_requests_total{command="GET",outcome="ok"}"#
        )
        .is_some_and(|n| n >= 2.0),
        "{page}"
    );
    assert_eq!(sample(&page, "mqstate_keys"), Some(2.0), "{page}");
    assert_eq!(
        sample(&page, "mqstate_data_bytes"),
        Some(7.0),
        "a333 b22: {page}"
    );
    assert!(
        sample(&page, "mqstate_journal_bytes").is_some_and(|b| b > 0.0),
        "{page}"
    );
    assert!(
        sample(
            &page,
            r#"mqstate_request_duration_seconds_bucket{le="+Inf"}"#
        )
        .is_some_and(|n| n >= 5.0),
        "{page}"
    );
    assert!(page.contains("mqstate_build_info{version=\""), "{page}");

    promtool_accepts(&page);
    prometheus_scrapes(http, &url);

    // The broker under the store stops: /readyz fails, the process stays healthy; then the
    // broker resumes and /readyz recovers.
    broker.pause(true).expect("SIGSTOP mosquitto");
    let why = wait_status(http, "/readyz", 503);
    assert!(why.starts_with("not ready:"), "{why}");
    assert_eq!(get(http, "/healthz").0, 200);
    broker.pause(false).expect("SIGCONT mosquitto");
    wait_status(http, "/readyz", 200);
    drop(serve);
}

/// `promtool check metrics` finds nothing to complain about in `page`.
fn promtool_accepts(page: &str) {
    let mut child = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("promtool runs (scripts/setup installs Debian's prometheus)");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(page.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success() && out.stdout.is_empty() && out.stderr.is_empty(),
        "promtool check metrics: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A real Prometheus scrapes `/metrics` every 200 ms; its query API sees SETs made now.
fn prometheus_scrapes(http: u16, url: &str) {
    let dir = tempfile::tempdir().unwrap();
    let web = free_port();
    let config = dir.path().join("prometheus.yml");
    std::fs::write(
        &config,
        format!(
            "global:\n  scrape_interval: 200ms\n  scrape_timeout: 150ms\n\
             scrape_configs:\n  - job_name: mqstate\n    static_configs:\n      \
             - targets: ['127.0.0.1:{http}']\n"
        ),
    )
    .unwrap();
    let mut prometheus = Proc(
        Command::new("prometheus")
            .arg(format!("--config.file={}", config.display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.path().join("data").display()
            ))
            .arg(format!("--web.listen-address=127.0.0.1:{web}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("prometheus runs (scripts/setup installs Debian's prometheus)"),
    );
    // Its port opens before its storage is ready; until then the API answers 503.
    wait_port(&mut prometheus.0, web);
    wait_status(web, "/-/ready", 200);
    let query = |q: &str| -> Option<f64> {
        let (status, body) = get(web, &format!("/api/v1/query?query={q}"));
        assert_eq!(status, 200, "{body}");
        let json: serde_json::Value = serde_json::from_str(&body).ok()?;
        json["data"]["result"][0]["value"][1].as_str()?.parse().ok()
    };
    let sets = "mqstate_requests_total%7Bcommand%3D%22SET%22%2Coutcome%3D%22ok%22%7D";
    let deadline = Instant::now() + BOUND;
    while query(sets) != Some(3.0) {
        assert!(Instant::now() < deadline, "Prometheus never saw the 3 SETs");
        std::thread::sleep(Duration::from_millis(100));
    }
    // The counter moves: one more SET, and the next scrapes see 4.
    let out = mqstate()
        .args(["--url", url, "set", "c", "4"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    while query(sets) != Some(4.0) {
        assert!(
            Instant::now() < deadline,
            "Prometheus never saw the 4th SET"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(query("up%7Bjob%3D%22mqstate%22%7D"), Some(1.0));
}

/// `--otlp-endpoint`: an `https://` URL is refused at start-up; with a collector that is not
/// there, requests are still answered and the lost spans show in `/metrics` (which promtool
/// still accepts).
#[test]
fn otlp_endpoint_refusals_and_span_counters() {
    let out = mqstate()
        .args(["serve", "--otlp-endpoint", "https://127.0.0.1:4318"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("https:// is not supported"), "{err}");

    let dead = free_port();
    let (port, http) = (free_port(), free_port());
    let mut serve = Proc(
        mqstate()
            .args(["serve", "--listen", &port.to_string()])
            .args(["--http", &http.to_string()])
            .env("MQSTATE_OTLP_ENDPOINT", format!("http://127.0.0.1:{dead}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    wait_port(&mut serve.0, http);
    let url = format!("mqtt://127.0.0.1:{port}");
    let set = mqstate()
        .args(["--url", &url, "set", "k", "v"])
        .output()
        .unwrap();
    assert!(set.status.success(), "{set:?}");
    let deadline = Instant::now() + BOUND;
    let page = loop {
        let (_, page) = get(http, "/metrics");
        if sample(
            &page,
            "mqstate_spans_dropped_total{reason=\"export_failed\"}",
        ) >= Some(1.0)
        {
            break page;
        }
        assert!(
            Instant::now() < deadline,
            "no failed export counted: {page}"
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_eq!(sample(&page, "mqstate_spans_exported_total"), Some(0.0));
    assert_eq!(
        sample(&page, "mqstate_spans_dropped_total{reason=\"queue_full\"}"),
        Some(0.0)
    );
    promtool_accepts(&page);
    drop(serve);
}
