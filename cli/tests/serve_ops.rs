//! `mqstate serve` as operators run it: SIGTERM under load loses no acknowledged persistent
//! write and exits 0 within `--shutdown-timeout`; `--log-format json` writes one JSON
//! object per line; `--fsync` refuses what does not fit together.

mod support;

use std::collections::HashMap;
use std::io::Read;
use std::path::PathBuf;
use std::process::{Child, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use mqstate::{Client, ClientOptions, ConnectionSettings, Hlc, SetOptions};
use support::{Proc, free_port, mqstate, wait_port};

/// The bound given to the server under test.
const SHUTDOWN_TIMEOUT: Duration = Duration::from_secs(5);

fn tempdir() -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "mqstate-serve-ops-{}-{}",
        std::process::id(),
        free_port()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// `mqstate serve` on a free port with `extra` arguments, its stderr piped; once it listens.
fn serve(extra: &[&str]) -> (Proc, String) {
    let port = free_port();
    let child = mqstate()
        .args(["serve", "--listen", &format!("127.0.0.1:{port}")])
        .args(extra)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut proc = Proc(child);
    wait_port(&mut proc.0, port);
    (proc, format!("mqtt://127.0.0.1:{port}"))
}

fn sigterm(child: &Child) {
    let status = std::process::Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
}

/// Waits for the child to exit, at most `bound`; its exit code (None: still running).
fn wait_exit(child: &mut Child, bound: Duration) -> Option<Option<i32>> {
    let deadline = Instant::now() + bound;
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return Some(status.code());
        }
        if Instant::now() > deadline {
            return None;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

async fn client(url: &str) -> Client {
    let settings = ConnectionSettings::from_url(url).unwrap();
    let options = ClientOptions {
        request_timeout: Duration::from_secs(3),
        ..ClientOptions::default()
    };
    Client::connect_with(settings, options).await.unwrap()
}

/// Several clients SET persisted keys as fast as they are answered; SIGTERM arrives in the
/// middle. The server exits 0 within its bound, and after a restart on the same data
/// directory every key holds the value and version of its last acknowledged SET. The log
/// lines of the run (`--log-format json`) are each one JSON object.
#[test]
fn sigterm_under_load_keeps_every_acknowledged_persistent_write() {
    const CLIENTS: usize = 4;
    const IN_FLIGHT: usize = 8;
    let dir = tempdir();
    let data = dir.to_str().unwrap();
    let timeout = format!("{}s", SHUTDOWN_TIMEOUT.as_secs());
    let (mut server, url) = serve(&[
        "--data-dir",
        data,
        "--shutdown-timeout",
        &timeout,
        "--log-format",
        "json",
    ]);
    let runtime = tokio::runtime::Runtime::new().unwrap();
    // key -> (value, version) of its last acknowledged SET.
    type Acked = HashMap<String, (String, Hlc)>;
    let acked_count = Arc::new(AtomicU64::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let mut writers = Vec::new();
    for c in 0..CLIENTS {
        let client = runtime.block_on(client(&url));
        for w in 0..IN_FLIGHT {
            let client = client.clone();
            let acked_count = Arc::clone(&acked_count);
            let stop = Arc::clone(&stop);
            // Each writer owns its keys, so its own acknowledgements are in order.
            writers.push(runtime.spawn(async move {
                let mut acked = Acked::new();
                let mut errors = 0;
                for n in 0u64.. {
                    if stop.load(Ordering::Relaxed) || errors > 0 {
                        break;
                    }
                    let key = format!("c{c}-w{w}-k{}", n % 16);
                    let value = format!("{c}-{w}-{n}");
                    let options = SetOptions {
                        persist: true,
                        ..SetOptions::default()
                    };
                    match client.set(&key, &value, options).await {
                        Ok(outcome) => {
                            assert!(outcome.applied);
                            acked.insert(key, (value, outcome.version.unwrap()));
                            acked_count.fetch_add(1, Ordering::Relaxed);
                        }
                        // Refused at shutdown (503), or the connection closed: not
                        // acknowledged, so not recorded.
                        Err(_) => errors += 1,
                    }
                }
                acked
            }));
        }
    }
    // Mid-load: once a good number of writes were acknowledged.
    let deadline = Instant::now() + Duration::from_secs(20);
    while acked_count.load(Ordering::Relaxed) < 400 {
        assert!(Instant::now() < deadline, "the load did not get going");
        std::thread::sleep(Duration::from_millis(5));
    }
    let before = acked_count.load(Ordering::Relaxed);
    sigterm(&server.0);
    let signalled = Instant::now();
    let code = wait_exit(&mut server.0, SHUTDOWN_TIMEOUT + Duration::from_secs(5));
    let took = signalled.elapsed();
    assert_eq!(
        code,
        Some(Some(0)),
        "exit code after SIGTERM (None: still running after {took:?})"
    );
    stop.store(true, Ordering::Relaxed);
    let mut acked = Acked::new();
    for writer in writers {
        acked.extend(runtime.block_on(writer).unwrap());
    }
    assert!(
        acked_count.load(Ordering::Relaxed) >= before,
        "writes went on until the signal"
    );

    let mut stderr = String::new();
    server
        .0
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    let mut messages = Vec::new();
    for line in stderr.lines().filter(|l| !l.trim().is_empty()) {
        let event: serde_json::Value =
            serde_json::from_str(line).unwrap_or_else(|e| panic!("not a JSON line ({e}): {line}"));
        for field in ["timestamp", "level", "target", "message"] {
            assert!(event.get(field).is_some(), "no {field} in {line}");
        }
        messages.push(event);
    }
    let said = |text: &str| {
        messages
            .iter()
            .find(|e| e["message"].as_str().is_some_and(|m| m.contains(text)))
            .unwrap_or_else(|| panic!("no {text:?} line in:\n{stderr}"))
    };
    assert_eq!(said("shutting down")["signal"], "SIGTERM", "{stderr}");
    assert_eq!(said("state store stopped")["clean"], true, "{stderr}");
    assert_eq!(said("persistence log opened")["fsync"], "always");

    // The same data directory, restarted: every acknowledged write, as acknowledged.
    let (_again, url) = serve(&["--data-dir", data]);
    let lost: Vec<String> = runtime.block_on(async {
        let client = client(&url).await;
        let mut lost = Vec::new();
        for (key, (value, version)) in &acked {
            match client.get(key).await.unwrap() {
                Some(got)
                    if got.value == value.as_bytes() && got.version.as_ref() == Some(version) => {}
                got => lost.push(format!(
                    "{key}: acknowledged {value} at {version}, now {got:?}"
                )),
            }
        }
        lost
    });
    assert!(
        lost.is_empty(),
        "{} of {} acknowledged writes lost:\n{}",
        lost.len(),
        acked.len(),
        lost.join("\n")
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// `--fsync-interval` needs `--fsync interval`, and more than 0; `--fsync` takes only its
/// three policies.
#[test]
fn fsync_flags_that_do_not_fit_are_usage_errors() {
    for args in [
        &["--fsync-interval", "1s"][..],
        &["--fsync", "never", "--fsync-interval", "1s"],
        &["--fsync", "interval", "--fsync-interval", "0s"],
        &["--fsync", "sometimes"],
        &["--fsync", "interval", "--fsync-interval", "5"],
    ] {
        let out = mqstate()
            .args(["serve", "--listen", &format!("127.0.0.1:{}", free_port())])
            .args(args)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains("fsync"), "{args:?}: {stderr}");
    }
}

/// `--fsync interval --fsync-interval` reach the journal (its start-up line says so), and a
/// quiet store stops at once on SIGINT with exit 0.
#[test]
fn the_fsync_policy_given_is_the_journals() {
    let dir = tempdir();
    let (mut server, _) = serve(&[
        "--data-dir",
        dir.to_str().unwrap(),
        "--fsync",
        "interval",
        "--fsync-interval",
        "250ms",
        "--log-format",
        "json",
    ]);
    let status = std::process::Command::new("kill")
        .args(["-INT", &server.0.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let code = wait_exit(&mut server.0, SHUTDOWN_TIMEOUT + Duration::from_secs(5));
    assert_eq!(code, Some(Some(0)));
    let mut stderr = String::new();
    server
        .0
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    let opened = stderr
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .find(|e| e["message"] == "persistence log opened")
        .unwrap_or_else(|| panic!("no start-up line of the journal:\n{stderr}"));
    assert_eq!(opened["fsync"], "interval (250ms)", "{stderr}");
    assert!(stderr.contains("SIGINT"), "{stderr}");
    let _ = std::fs::remove_dir_all(&dir);
}
