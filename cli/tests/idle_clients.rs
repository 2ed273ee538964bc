//! Speed must not depend on who else is connected (issue 35): `mqstate bench --idle-clients`
//! against a live `mqstate serve` measures the store's throughput with no other clients and
//! then with 2,000 idle ones (each with the two subscriptions of an mqstate client), in one
//! run, and this test fails when the second falls below half of the first. A ratio measured
//! side by side, not a speed: before the broker's router was indexed it was 0.06 with 1,000.
//!
//! Its own test binary, so that no other test loads the machine while it measures.

use std::process::{Command, Stdio};

mod support;

use support::{BIN, serve};

/// Idle clients held during the second measurement.
const IDLE: &str = "2000";
/// The least ratio of throughput with them to throughput without.
const MIN_RATIO: f64 = 0.5;

/// Runs the bench with `mode` idle clients; returns the throughput ratio it printed.
fn ratio(mode: &str) -> f64 {
    let store = serve();
    let out = Command::new(BIN)
        .args(["bench", "--url", &store.url])
        .args(["--clients", "2", "--depth", "8", "--keys", "1000"])
        .args(["--warmup", "500ms", "--duration", "2s"])
        .args(["--idle-clients", IDLE, "--idle-mode", mode])
        .args(["--watch-pid", &store.pid().to_string()])
        .env_remove("RUST_LOG")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "bench failed: {stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    println!("{mode}:\n{stdout}");
    // `ratio                 0.91x the ops/s, 1.11x the p50 with 2000 online idle clients`
    stdout
        .lines()
        .find_map(|l| l.strip_prefix("ratio"))
        .and_then(|rest| rest.trim_start().split('x').next())
        .and_then(|r| r.parse().ok())
        .unwrap_or_else(|| panic!("no ratio line in: {stdout}"))
}

#[test]
fn throughput_with_2000_idle_clients_is_at_least_half_of_without() {
    for mode in ["online", "abandoned"] {
        let r = ratio(mode);
        assert!(
            r >= MIN_RATIO,
            "{mode}: with {IDLE} idle clients the store keeps {r:.2}x its throughput (want >= {MIN_RATIO})"
        );
    }
}
