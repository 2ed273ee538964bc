//! Speed must not depend on who else is connected (issue 35): `client-bench idle`
//! (`bench/src/bin/client_bench/`) measures a live `mqstate serve` given 2,000 idle clients (each with the two subscriptions
//! of an mqstate client) against a second one without, in turns (`--baseline-url`), and this
//! test fails when the store's CPU per request doubles with them. Before the broker's router
//! was indexed, 1,000 left the store 0.06x its throughput.
//!
//! Clients that left must cost nothing either (issue 49): the same with 2,000 sessions left by
//! clients that sent DISCONNECT (`abandoned`) and by clients whose connections closed
//! without it (`vanished`), each session kept for its hour; for those the bar is 1/0.8x, and
//! the store, idle with them, must not burn CPU (it swept every offline session every 5 s).
//!
//! The bars are on the store's cost per request, not on its ops/s: on a shared 2-core host
//! the machine's speed moved by up to 40 % between two runs seconds apart (0.73x the ops/s
//! with both processes' CPU per request 1.39x higher), and on a loaded one the share of the
//! cores the processes get moves too (0.49x the ops/s beside a release build, at 1.11x the
//! cost). The bench divides each store's CPU per request by its own in the same run (which
//! only the machine changes), and takes the median of three rounds in turns (one run of one
//! store read 1.46x beside a release build, the bench's own CPU per request having fallen
//! 0.81x). The costs these issues found were all CPU (a router walking every subscription,
//! a fragmented heap, a sweep of every session); a cost that waits instead of computing would
//! show in the ops/s ratio the bench prints, which this test does not bar.
//!
//! Its own test binary, so that no other test loads the machine while it measures. The stores
//! are the `mqstate` binary of the same build (`$MQSTATE_BIN` to name another): `cargo test
//! --workspace` builds it beside `client-bench`.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// The program under test.
const BENCH: &str = env!("CARGO_BIN_EXE_client-bench");

/// Idle clients held during the second measurement.
const IDLE: &str = "2000";
/// The most the store's cost per request may grow with online idle clients (the median of the
/// rounds against the baseline store, each relative to the bench's own:
/// bench/src/bin/client_bench/side_by_side.rs): 1/0.5.
const MAX_COST_ONLINE: f64 = 2.0;
/// The same with the sessions of clients that left: 1/0.8.
const MAX_COST_OFFLINE: f64 = 1.25;
/// The most CPU the idle store may use with the offline sessions, in % of a core.
const MAX_IDLE_CPU_PERCENT: f64 = 2.0;

/// The `mqstate` binary that serves the stores: `$MQSTATE_BIN`, else the one of this build,
/// beside `client-bench`.
fn mqstate_bin() -> PathBuf {
    let bin = std::env::var_os("MQSTATE_BIN").map_or_else(
        || PathBuf::from(BENCH).with_file_name(format!("mqstate{}", std::env::consts::EXE_SUFFIX)),
        PathBuf::from,
    );
    assert!(
        bin.is_file(),
        "no mqstate binary at {}: build it first (cargo build -p mqstate-cli, same profile and target), or set MQSTATE_BIN",
        bin.display()
    );
    bin
}

/// A live `mqstate serve` on a free loopback port, killed on drop.
struct Store {
    /// `mqtt://127.0.0.1:PORT`.
    url: String,
    child: Child,
}

impl Store {
    /// Starts one and waits (up to 20 s) until it listens.
    fn start() -> Store {
        let port = mqstate_tests::free_port().expect("a free loopback port");
        let mut child = Command::new(mqstate_bin())
            .args(["serve", "--listen", &format!("127.0.0.1:{port}")])
            .env_remove("RUST_LOG")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        if let Err(e) = mqstate_tests::wait_listening(&mut child, port, Duration::from_secs(20)) {
            let _ = child.kill();
            panic!("{e}");
        }
        Store {
            url: format!("mqtt://127.0.0.1:{port}"),
            child,
        }
    }

    /// The server's process id.
    fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for Store {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// User plus system CPU time of process `pid`, in clock ticks (Linux).
fn cpu_ticks(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Fields after the command (which may hold spaces) close with ')'.
    let rest = stat.rsplit_once(')')?.1;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let utime: u64 = fields.get(11)?.parse().ok()?;
    let stime: u64 = fields.get(12)?.parse().ok()?;
    Some(utime + stime)
}

/// What one bench run with idle clients printed, and what the store did after it.
struct Measured {
    /// Throughput with the idle clients over throughput without.
    ops: f64,
    /// The store's CPU per request with them over without, relative to the bench's own.
    cost: f64,
    /// For the modes that leave sessions behind, the store's CPU over the 2 s after the
    /// bench, in % of a core (`None` where /proc is not there to tell; a clock tick is 1/2 %).
    idle_cpu: Option<f64>,
}

/// The number before the `x` that follows `after` in the line of `stdout` that starts with
/// `line`.
fn factor(stdout: &str, line: &str, after: &str) -> f64 {
    stdout
        .lines()
        .filter_map(|l| l.strip_prefix(line))
        .find_map(|rest| rest.split_once(after))
        .and_then(|(_, rest)| rest.trim_start().split('x').next())
        .and_then(|r| r.parse().ok())
        .unwrap_or_else(|| panic!("no `{line}…{after} N.NNx` in: {stdout}"))
}

/// Runs the bench with `mode` idle clients.
fn measure(mode: &str) -> Measured {
    // The store given the idle clients, and one of the same build without them, measured in
    // turns (`--baseline-url`): a drift of the machine, or of the load beside the test, falls
    // on both; the medians of three rounds drop a window that one of them had to itself.
    let (store, baseline) = (Store::start(), Store::start());
    let out = Command::new(BENCH)
        .args(["idle", "--url", &store.url, "--baseline-url", &baseline.url])
        .args(["--rounds", "3"])
        .args(["--clients", "2", "--depth", "8", "--keys", "1000"])
        // Short runs: the bars are on CPU per request (about 5,000 requests a run in a debug
        // build), which needs no long window to settle.
        .args(["--warmup", "300ms", "--duration", "1s"])
        .args(["--idle-clients", IDLE, "--idle-mode", mode])
        .args(["--watch-pid", &store.pid().to_string()])
        .args(["--watch-pid", &baseline.pid().to_string()])
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
    // `ratio                 0.91x the ops/s, 1.11x the p50 with 2000 online idle clients (medians …)`
    let ops = factor(&stdout, "ratio", "");
    // `per request           the store's cost 1.02x the baseline store's, each relative to the bench's own (median)`
    let cost = factor(&stdout, "per request", "the store's cost");
    let idle_cpu = (mode != "online").then(|| {
        let span = std::time::Duration::from_secs(2);
        let before = cpu_ticks(store.pid())?;
        std::thread::sleep(span);
        let after = cpu_ticks(store.pid())?;
        // Clock ticks are 1/100 s on Linux: ticks per second is % of a core.
        let percent = (after - before) as f64 / span.as_secs_f64();
        println!("{mode}: the idle store used {percent:.1}% of a core");
        Some(percent)
    });
    Measured {
        ops,
        cost,
        idle_cpu: idle_cpu.flatten(),
    }
}

#[test]
fn idle_clients_and_their_sessions_leave_the_cost_per_request_unchanged() {
    for (mode, max_cost) in [
        ("online", MAX_COST_ONLINE),
        ("abandoned", MAX_COST_OFFLINE),
        ("vanished", MAX_COST_OFFLINE),
    ] {
        let m = measure(mode);
        assert!(
            m.cost <= max_cost,
            "{mode}: with {IDLE} idle clients the store's CPU per request grew {:.2}x relative to the bench's own (want <= {max_cost})",
            m.cost
        );
        println!(
            "{mode}: {:.2}x the ops/s (not barred: it measures the machine too), {:.2}x the cost",
            m.ops, m.cost
        );
        if let Some(cpu) = m.idle_cpu {
            assert!(
                cpu <= MAX_IDLE_CPU_PERCENT,
                "{mode}: idle with {IDLE} offline sessions the store used {cpu:.1}% of a core (want <= {MAX_IDLE_CPU_PERCENT})"
            );
        }
    }
}
