//! The `mqstate` binary end to end: every client command against a live `mqstate serve`
//! started on a free port (exit codes, `--json` parsed, binary values byte-exact, `watch`
//! seeing another process's change, `lock --` excluding a second holder), and the error
//! messages people see, checked by content.

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

mod support;

use support::{BIN, Proc, Store, free_port, mqstate, serve, serve_with, wait_port};

impl Store {
    fn cmd(&self, args: &[&str]) -> Command {
        let mut c = mqstate();
        c.args(["--url", &self.url]).args(args);
        c
    }

    fn run(&self, args: &[&str]) -> Output {
        self.cmd(args).output().unwrap()
    }

    fn run_stdin(&self, args: &[&str], input: &[u8]) -> Output {
        let mut child = self
            .cmd(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        child.stdin.take().unwrap().write_all(input).unwrap();
        child.wait_with_output().unwrap()
    }

    fn json(&self, args: &[&str]) -> (i32, Value) {
        let mut all = vec!["--json"];
        all.extend_from_slice(args);
        let out = self.run(&all);
        let text = String::from_utf8(out.stdout.clone()).unwrap();
        let value = serde_json::from_str(text.trim())
            .unwrap_or_else(|e| panic!("{args:?}: {e}: {text:?} / {}", stderr(&out.stderr)));
        (code(&out), value)
    }
}

fn code(out: &Output) -> i32 {
    out.status.code().expect("exited normally")
}

fn stderr(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn stdout_text(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn get_set_del_vdel_exit_codes_and_json() {
    let s = serve();
    let out = s.run(&["set", "greeting", "hello"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out.stderr));
    assert!(
        stdout_text(&out).starts_with("OK (version "),
        "{}",
        stdout_text(&out)
    );

    let out = s.run(&["get", "greeting"]);
    assert_eq!((code(&out), stdout_text(&out).as_str()), (0, "hello\n"));

    let (rc, v) = s.json(&["get", "greeting"]);
    assert_eq!(rc, 0);
    assert_eq!(v["found"], true);
    assert_eq!(v["value"], "hello");
    assert!(
        v["version"].as_str().unwrap().ends_with(":StateStore"),
        "{v}"
    );

    let (rc, v) = s.json(&["get", "missing"]);
    assert_eq!(
        (rc, &v["found"], &v["value"]),
        (1, &Value::Bool(false), &Value::Null)
    );
    let out = s.run(&["get", "missing"]);
    assert_eq!(code(&out), 1);
    assert!(out.stdout.is_empty());

    // NX: exists → not met; NEX: same value → applied, other value → not met.
    let (rc, v) = s.json(&["set", "greeting", "other", "--nx"]);
    assert_eq!((rc, &v["applied"]), (1, &Value::Bool(false)));
    let (rc, v) = s.json(&["set", "greeting", "hello", "--nex"]);
    assert_eq!((rc, &v["applied"]), (0, &Value::Bool(true)));
    assert!(v["version"].is_string());
    let (rc, _) = s.json(&["set", "greeting", "other", "--nex"]);
    assert_eq!(rc, 1);
    let (rc, _) = s.json(&["set", "fresh", "x", "--nx", "--persist"]);
    assert_eq!(rc, 0);

    // VDEL: wrong value, then the right one, then nothing left.
    let (rc, v) = s.json(&["vdel", "greeting", "nope"]);
    assert_eq!((rc, &v["outcome"]), (1, &Value::from("value_mismatch")));
    let (rc, v) = s.json(&["vdel", "greeting", "hello"]);
    assert_eq!((rc, &v["outcome"]), (0, &Value::from("deleted")));
    let (rc, v) = s.json(&["vdel", "greeting", "hello"]);
    assert_eq!((rc, &v["outcome"]), (1, &Value::from("not_found")));

    // DEL: 1 then 0.
    let (rc, v) = s.json(&["del", "fresh"]);
    assert_eq!((rc, &v["deleted"]), (0, &Value::from(1)));
    let out = s.run(&["del", "fresh"]);
    assert_eq!((code(&out), stdout_text(&out).as_str()), (1, "not found\n"));

    // Expiry.
    assert_eq!(
        code(&s.run(&["set", "short", "lived", "--expiry", "300ms"])),
        0
    );
    assert_eq!(code(&s.run(&["get", "short"])), 0);
    std::thread::sleep(Duration::from_millis(700));
    assert_eq!(code(&s.run(&["get", "short"])), 1);
}

#[test]
fn fencing_tokens_and_store_errors_exit_3() {
    let s = serve();
    let (rc, v) = s.json(&["set", "fenced", "v1"]);
    assert_eq!(rc, 0);
    let token = v["version"].as_str().unwrap().to_owned();
    assert_eq!(
        code(&s.run(&["set", "fenced", "v2", "--fencing-token", &token])),
        0
    );
    // The key is fenced now: a write without a token is a store error.
    let out = s.run(&["set", "fenced", "v3"]);
    assert_eq!(code(&out), 3, "{}", stderr(&out.stderr));
    assert!(
        stderr(&out.stderr).contains("a fencing token is required for this request"),
        "{}",
        stderr(&out.stderr)
    );
    let out = s.run(&["del", "fenced"]);
    assert_eq!(code(&out), 3);
    let out = s.run(&["del", "fenced", "--fencing-token", &token]);
    assert_eq!(code(&out), 0, "{}", stderr(&out.stderr));
    // A malformed token is a usage error, caught before anything is sent.
    let out = s.run(&["set", "k", "v", "--fencing-token", "yesterday"]);
    assert_eq!(code(&out), 2);
    assert!(stderr(&out.stderr).contains("--fencing-token"));
}

#[test]
fn binary_values_are_byte_exact_through_stdin_file_and_stdout() {
    let s = serve();
    let value: Vec<u8> = (0..=255u8).chain((0..=255u8).rev()).collect();
    let out = s.run_stdin(&["set", "bin"], &value);
    assert_eq!(code(&out), 0, "{}", stderr(&out.stderr));
    let out = s.run(&["--raw", "get", "bin"]);
    assert_eq!(code(&out), 0);
    assert_eq!(out.stdout, value);

    // --json carries non-UTF-8 values as base64.
    let (_, v) = s.json(&["get", "bin"]);
    let b64 = v["value_base64"].as_str().unwrap();
    assert!(b64.starts_with("AAECAwQF"), "{b64}");

    // --file, and an empty value.
    let dir = tempdir();
    let file = dir.join("value.bin");
    std::fs::write(&file, b"\x00\r\n\xff").unwrap();
    assert_eq!(
        code(&s.run(&["set", "f", "--file", file.to_str().unwrap()])),
        0
    );
    assert_eq!(s.run(&["--raw", "get", "f"]).stdout, b"\x00\r\n\xff");
    let out = s.run(&["get", "f"]);
    assert_eq!(stdout_text(&out), "\\x00\\r\\n\\xff\n");
    let out = s.run_stdin(&["set", "empty"], b"");
    assert_eq!(code(&out), 0);
    let out = s.run(&["--raw", "get", "empty"]);
    assert_eq!((code(&out), out.stdout.len()), (0, 0));

    // VDEL with the value on stdin.
    let out = s.run_stdin(&["vdel", "bin"], &value);
    assert_eq!(code(&out), 0, "{}", stdout_text(&out));
}

/// Reads the child's stderr until a line contains `needle`.
fn wait_stderr(child: &mut Child, needle: &str) -> BufReader<std::process::ChildStderr> {
    let mut reader = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    loop {
        line.clear();
        let n = reader.read_line(&mut line).unwrap();
        assert!(n > 0, "stderr ended before {needle:?}");
        if line.contains(needle) {
            return reader;
        }
    }
}

fn sigint(child: &Child) {
    let ok = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(ok.success());
}

#[test]
fn watch_sees_changes_made_by_another_process() {
    let s = serve();
    let mut watcher = s
        .cmd(&["--json", "watch", "-n", "3", "w/a", "w/b"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let _stderr = wait_stderr(&mut watcher, "watching w/a, w/b");
    assert_eq!(code(&s.run(&["set", "w/a", "one"])), 0);
    assert_eq!(code(&s.run(&["set", "w/b", "two"])), 0);
    assert_eq!(code(&s.run(&["del", "w/a"])), 0);
    let out = watcher.wait_with_output().unwrap();
    assert_eq!(code(&out), 0);
    let events: Vec<Value> = stdout_text(&out)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(events.len(), 3, "{events:?}");
    assert_eq!(
        (&events[0]["key"], &events[0]["event"], &events[0]["value"]),
        (&"w/a".into(), &"set".into(), &"one".into())
    );
    assert_eq!(
        (&events[1]["key"], &events[1]["value"]),
        (&"w/b".into(), &"two".into())
    );
    assert_eq!(
        (&events[2]["key"], &events[2]["event"]),
        (&"w/a".into(), &"delete".into())
    );
    assert!(events.iter().all(|e| e["version"].is_string()));

    // Text output, until Ctrl-C (exit 0).
    let mut watcher = s
        .cmd(&["watch", "w/c"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let _stderr = wait_stderr(&mut watcher, "watching w/c");
    assert_eq!(code(&s.run(&["set", "w/c", "x\ty"])), 0);
    let mut stdout = BufReader::new(watcher.stdout.take().unwrap());
    let mut line = String::new();
    stdout.read_line(&mut line).unwrap();
    assert!(line.starts_with("SET w/c = x\\ty (version "), "{line:?}");
    sigint(&watcher);
    assert_eq!(watcher.wait().unwrap().code(), Some(0));
}

fn tempdir() -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "mqstate-cli-test-{}-{}",
        std::process::id(),
        free_port()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn locked_append(s: &Store, file: &Path, id: &str) -> Child {
    let script = format!(
        "for i in 1 2 3; do echo \"{id} begin $MQSTATE_FENCING_TOKEN\" >> '{f}'; sleep 0.1; echo \"{id} end\" >> '{f}'; done",
        f = file.display()
    );
    s.cmd(&[
        "lock", "excl", "--lease", "2s", "--wait", "20s", "--", "sh", "-c", &script,
    ])
    .stdout(Stdio::null())
    .stderr(Stdio::piped())
    .spawn()
    .unwrap()
}

#[test]
fn lock_excludes_a_second_holder_and_returns_the_command_exit_code() {
    let s = serve();
    let dir = tempdir();
    let file = dir.join("log");
    let a = locked_append(&s, &file, "A");
    let b = locked_append(&s, &file, "B");
    for child in [a, b] {
        let out = child.wait_with_output().unwrap();
        assert_eq!(code(&out), 0, "{}", stderr(&out.stderr));
    }
    let log = std::fs::read_to_string(&file).unwrap();
    let lines: Vec<&str> = log.lines().collect();
    assert_eq!(lines.len(), 12, "{log}");
    // Each holder's six lines are contiguous: no interleaving of A and B.
    let first = &lines[0][..1];
    let second = &lines[6][..1];
    assert_ne!(first, second, "{log}");
    assert!(lines[..6].iter().all(|l| l.starts_with(first)), "{log}");
    assert!(lines[6..].iter().all(|l| l.starts_with(second)), "{log}");
    // Two different fencing tokens, the second newer.
    let token = |l: &str| l.split(' ').nth(2).unwrap().to_owned();
    assert!(token(lines[0]) < token(lines[6]), "{log}");

    // The command's exit code; the lock is free afterwards.
    let out = s.run(&["lock", "excl", "--", "sh", "-c", "exit 7"]);
    assert_eq!(code(&out), 7);
    assert_eq!(code(&s.run(&["leader", "excl"])), 1);

    // While held by someone else, a short --wait gives up with exit 1 naming the holder.
    // (The command runs 8 s: on a busy machine each CLI process this test starts meanwhile
    // may take a second to spawn and connect, and the check below must come before it ends.)
    let mut holder = s
        .cmd(&[
            "lock", "excl", "--holder", "alice", "--lease", "2s", "--", "sleep", "8",
        ])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while stdout_text(&s.run(&["leader", "excl"])) != "leader: alice\n" {
        assert!(Instant::now() < deadline, "alice never held the lock");
        std::thread::sleep(Duration::from_millis(50));
    }
    let held = Instant::now();
    let out = s.run(&["lock", "excl", "--wait", "300ms", "--", "true"]);
    assert_eq!(code(&out), 1);
    assert!(
        stderr(&out.stderr).contains("held by alice"),
        "{}",
        stderr(&out.stderr)
    );
    // The lease is 2 s and the command runs 8 s: past the first lease, renewal keeps it held.
    std::thread::sleep(Duration::from_millis(2500).saturating_sub(held.elapsed()));
    assert!(
        held.elapsed() < Duration::from_secs(5),
        "too slow to check well within the command's 8 s: {:?}",
        held.elapsed()
    );
    assert_eq!(stdout_text(&s.run(&["leader", "excl"])), "leader: alice\n");
    assert_eq!(holder.wait().unwrap().code(), Some(0));
    assert_eq!(code(&s.run(&["leader", "excl"])), 1);
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn leader_prints_and_follows_the_holder() {
    let s = serve();
    let out = s.run(&["leader", "election"]);
    assert_eq!((code(&out), stdout_text(&out).as_str()), (1, "no leader\n"));
    let mut follower = s
        .cmd(&["--json", "leader", "--follow", "election"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(follower.stdout.take().unwrap()).lines();
    let first: Value = serde_json::from_str(&lines.next().unwrap().unwrap()).unwrap();
    assert_eq!(first["leader"], Value::Null);
    let out = s.run(&[
        "lock",
        "election",
        "--holder",
        "bob",
        "--",
        "sh",
        "-c",
        "sleep 0.3",
    ]);
    assert_eq!(code(&out), 0, "{}", stderr(&out.stderr));
    let second: Value = serde_json::from_str(&lines.next().unwrap().unwrap()).unwrap();
    assert_eq!(second["leader"], "bob");
    let third: Value = serde_json::from_str(&lines.next().unwrap().unwrap()).unwrap();
    assert_eq!(third["leader"], Value::Null);
    sigint(&follower);
    assert_eq!(follower.wait().unwrap().code(), Some(0));
}

#[test]
fn ping_reports_round_trips_and_what_it_knows_of_the_server() {
    let s = serve();
    let out = s.run(&["ping"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out.stderr));
    let text = stdout_text(&out);
    assert!(
        text.starts_with("PONG from the state store at mqtt://127.0.0.1:"),
        "{text}"
    );
    assert!(text.contains("server version: not exposed"), "{text}");
    let (rc, v) = s.json(&["ping", "-c", "4"]);
    assert_eq!(rc, 0);
    assert_eq!(v["rtt_ms"].as_array().unwrap().len(), 4);
    assert_eq!(v["server_version"], Value::Null);
    assert_eq!(v["protocol_version"], "1.0");
}

#[test]
fn connection_options_env_and_credentials() {
    let dir = tempdir();
    let users = dir.join("users");
    std::fs::write(&users, "ann:s3cret\n").unwrap();
    let s = serve_with(&["--password-file", users.to_str().unwrap()]);
    let port = s.url.rsplit(':').next().unwrap().to_owned();
    let good = dir.join("good");
    std::fs::write(&good, "s3cret").unwrap();
    let bad = dir.join("bad");
    std::fs::write(&bad, "guess").unwrap();

    let out = mqstate()
        .args([
            "--host",
            "127.0.0.1",
            "-p",
            &port,
            "-u",
            "ann",
            "--password-file",
        ])
        .arg(&good)
        .args(["--client-id", "cli-test-ann", "set", "k", "v"])
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out.stderr));

    let out = mqstate()
        .args([
            "--host",
            "127.0.0.1",
            "-p",
            &port,
            "-u",
            "ann",
            "--password-file",
        ])
        .arg(&bad)
        .args(["get", "k"])
        .output()
        .unwrap();
    assert_eq!(code(&out), 4);
    assert!(
        stderr(&out.stderr).contains("refused the credentials"),
        "{}",
        stderr(&out.stderr)
    );

    // --env reads the Azure IoT Operations variables.
    let out = mqstate()
        .args(["--env", "--raw", "get", "k"])
        .env("AIO_BROKER_HOSTNAME", "127.0.0.1")
        .env("AIO_BROKER_TCP_PORT", &port)
        .env("AIO_MQTT_USE_TLS", "false")
        .env("AIO_MQTT_USERNAME", "ann")
        .env("AIO_MQTT_PASSWORD_FILE", &good)
        .output()
        .unwrap();
    assert_eq!(
        (code(&out), out.stdout.as_slice()),
        (0, &b"v"[..]),
        "{}",
        stderr(&out.stderr)
    );
    let out = mqstate()
        .args(["--env", "get", "k"])
        .env_remove("AIO_BROKER_HOSTNAME")
        .output()
        .unwrap();
    assert_eq!(code(&out), 2);
    assert!(stderr(&out.stderr).contains("AIO_BROKER_HOSTNAME"));

    // -o takes any setting of the core's table, and refuses unknown ones by name.
    let out = mqstate()
        .args([
            "--url",
            &s.url,
            "-o",
            "keep_alive=30s",
            "-o",
            "username=ann",
            "-o",
        ])
        .arg(format!("password_file={}", good.display()))
        .args(["get", "k"])
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out.stderr));
    let out = mqstate()
        .args(["-o", "keep_alive=soon", "get", "k"])
        .output()
        .unwrap();
    assert_eq!(code(&out), 2);
    assert!(
        stderr(&out.stderr).contains("keep_alive"),
        "{}",
        stderr(&out.stderr)
    );
    let out = mqstate()
        .args(["-o", "kep_alive=3", "get", "k"])
        .output()
        .unwrap();
    assert!(
        stderr(&out.stderr).contains("unknown setting"),
        "{}",
        stderr(&out.stderr)
    );

    // A TLS CA file that does not exist: refused before connecting, naming the file.
    let out = mqstate()
        .args([
            "--url",
            &s.url,
            "--ca-file",
            "/nonexistent/ca.pem",
            "get",
            "k",
        ])
        .output()
        .unwrap();
    assert_eq!(code(&out), 2, "{}", stderr(&out.stderr));
    assert!(
        stderr(&out.stderr).contains("/nonexistent/ca.pem"),
        "{}",
        stderr(&out.stderr)
    );
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn a_refused_connection_says_refused() {
    let port = free_port();
    let out = mqstate()
        .args(["--url", &format!("mqtt://127.0.0.1:{port}"), "get", "k"])
        .output()
        .unwrap();
    assert_eq!(code(&out), 4);
    let err = stderr(&out.stderr);
    assert!(err.contains("refused"), "{err}");
    assert!(!err.contains("subscribe"), "{err}");
    assert!(!err.contains("\x1b["), "colours on a pipe: {err:?}");
}

fn mosquitto() -> PathBuf {
    for candidate in [
        "/usr/sbin/mosquitto",
        "/usr/bin/mosquitto",
        "/usr/local/sbin/mosquitto",
    ] {
        if Path::new(candidate).exists() {
            return candidate.into();
        }
    }
    panic!("mosquitto is needed for this test (scripts/setup installs it)");
}

/// mosquitto on a free port, with nothing behind it; dropped with the guard.
fn lone_mosquitto(dir: &Path) -> (Proc, u16) {
    let port = free_port();
    let conf = dir.join("mosquitto.conf");
    std::fs::write(
        &conf,
        format!("listener {port} 127.0.0.1\nallow_anonymous true\n"),
    )
    .unwrap();
    let mut broker = Proc(
        Command::new(mosquitto())
            .arg("-c")
            .arg(&conf)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    wait_port(&mut broker.0, port);
    (broker, port)
}

#[test]
fn a_broker_without_a_state_store_is_named_as_such() {
    let dir = tempdir();
    let (_broker, port) = lone_mosquitto(&dir);
    // Shorter than the no-store window: the timeout comes first, and names the cause.
    let out = mqstate()
        .args([
            "--url",
            &format!("mqtt://127.0.0.1:{port}"),
            "--timeout",
            "500ms",
            "get",
            "k",
        ])
        .output()
        .unwrap();
    assert_eq!(code(&out), 3);
    let err = stderr(&out.stderr);
    assert!(
        err.contains("the broker says no state store is subscribed"),
        "{err}"
    );
    assert!(err.contains("is `mqstate serve` running"), "{err}");
    let _ = std::fs::remove_dir_all(dir);
}

/// mosquitto says "no matching subscribers" (PUBACK 0x10): `get` and `ping` fail with
/// `no_store` after the short no-store window, not after their 30 s timeout.
#[test]
fn get_and_ping_fail_fast_with_no_store_behind_the_broker() {
    let dir = tempdir();
    let (_broker, port) = lone_mosquitto(&dir);
    for command in [&["get", "k"][..], &["ping"][..]] {
        let out = mqstate()
            .args([
                "--url",
                &format!("mqtt://127.0.0.1:{port}"),
                "--timeout",
                "30s",
            ])
            .args(command)
            .output()
            .unwrap();
        assert_eq!(code(&out), 3, "{command:?}");
        let err = stderr(&out.stderr);
        assert!(err.contains("[no_store]"), "{command:?}: {err}");
        assert!(err.contains("no state store is subscribed"), "{err}");
        assert!(err.contains("start `mqstate serve`"), "{err}");
        assert!(!err.contains("within 30s"), "not the timeout: {err}");
    }
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn usage_errors_exit_2_without_a_backtrace() {
    for args in [
        &["get"][..],
        &["set"][..],
        &["frobnicate"][..],
        &["set", "k", "v", "--nx", "--nex"][..],
    ] {
        let out = mqstate()
            .args(args)
            .env("RUST_BACKTRACE", "1")
            .output()
            .unwrap();
        assert_eq!(code(&out), 2, "{args:?}");
        let err = stderr(&out.stderr);
        assert!(err.contains("Usage:") || err.contains("error:"), "{err}");
        assert!(!err.to_lowercase().contains("backtrace"), "{err}");
    }
    // An empty key is refused before connecting.
    let out = mqstate().args(["get", ""]).output().unwrap();
    assert_eq!(code(&out), 2);
    // `set` without a value on a terminal-less empty stdin stores the empty value, so the
    // no-value case is checked through --file instead.
    let out = mqstate()
        .args(["set", "k", "--file", "/nonexistent/v"])
        .output()
        .unwrap();
    assert_eq!(code(&out), 2);
    assert!(stderr(&out.stderr).contains("/nonexistent/v"));
}

#[test]
fn serve_names_the_data_dir_is_quiet_and_never_prints_a_backtrace() {
    let dir = tempdir();
    let blocker = dir.join("a-file");
    std::fs::write(&blocker, "").unwrap();
    let data_dir = blocker.join("data");
    let out = mqstate()
        .args(["serve", "--listen", "127.0.0.1:0", "--data-dir"])
        .arg(&data_dir)
        .env("RUST_BACKTRACE", "full")
        .output()
        .unwrap();
    assert_eq!(code(&out), 3);
    let err = stderr(&out.stderr);
    assert!(err.contains(&data_dir.display().to_string()), "{err}");
    assert!(!err.to_lowercase().contains("backtrace"), "{err}");

    // Without -v, serve prints its own lines only: not the embedded broker's start-up.
    let port = free_port();
    let mut server = mqstate()
        .args(["serve", "--listen", &format!("127.0.0.1:{port}")])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let reader = wait_stderr(&mut server, "serving");
    sigint(&server);
    assert_eq!(server.wait().unwrap().code(), Some(0));
    let rest: Vec<String> = reader.lines().map(Result::unwrap).collect();
    assert!(
        rest.iter().any(|l| l.contains("state store stopped")),
        "{rest:?}"
    );
    for line in &rest {
        for chatter in [
            "client connected",
            "client disconnected",
            "broker listening",
            "mqtt5",
        ] {
            assert!(!line.contains(chatter), "chatter without -v: {rest:?}");
        }
        assert!(!line.contains("\x1b["), "colours on a pipe: {line:?}");
    }
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn completions_for_each_shell() {
    for (shell, marker) in [
        ("bash", "complete"),
        ("zsh", "#compdef"),
        ("fish", "complete -c mqstate"),
    ] {
        let out = mqstate().args(["completions", shell]).output().unwrap();
        assert_eq!(code(&out), 0, "{shell}");
        let text = stdout_text(&out);
        assert!(text.contains(marker), "{shell}");
        assert!(
            text.contains("watch") && text.contains("fencing-token"),
            "{shell}"
        );
    }
    let out = mqstate().args(["completions", "tcsh"]).output().unwrap();
    assert_eq!(code(&out), 2);
}

#[test]
fn keys_lists_by_pattern_in_text_json_raw_and_stops_early() {
    let s = serve_with(&["--scan-page-size", "2"]);
    for key in ["sensor/a", "sensor/b", "sensor/c", "other", "a*b"] {
        assert_eq!(code(&s.run(&["set", key, "v"])), 0);
    }
    let out = s.run_stdin(&["set", "nl\nkey"], b"v");
    assert_eq!(code(&out), 0, "{}", stderr(&out.stderr));

    // Text: one escaped key per line, every page followed.
    let out = s.run(&["keys", "sensor/*"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out.stderr));
    assert_eq!(stdout_text(&out), "sensor/a\nsensor/b\nsensor/c\n");
    let out = s.run(&["keys", "*"]);
    assert_eq!(stdout_text(&out).lines().count(), 6);
    assert!(stdout_text(&out).contains("nl\\nkey\n"));
    // Escapes and classes, as redis-cli --scan --pattern.
    assert_eq!(stdout_text(&s.run(&["keys", "a\\*b"])), "a*b\n");
    assert_eq!(
        stdout_text(&s.run(&["keys", "sensor/[^a]"])),
        "sensor/b\nsensor/c\n"
    );
    // No match: nothing printed, exit 0.
    let out = s.run(&["keys", "nothing*"]);
    assert_eq!((code(&out), out.stdout.len()), (0, 0));

    // --count stops early.
    assert_eq!(
        stdout_text(&s.run(&["keys", "*", "--count", "3"]))
            .lines()
            .count(),
        3
    );

    // --json: one object per key.
    let out = s.run(&["--json", "keys", "sensor/?"]);
    let keys: Vec<Value> = stdout_text(&out)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(keys.len(), 3);
    assert_eq!(keys[0]["key"], "sensor/a");

    // --raw: exact bytes; -0 ends each key with NUL (for keys holding a newline).
    assert_eq!(s.run(&["--raw", "keys", "nl*"]).stdout, b"nl\nkey\n");
    assert_eq!(s.run(&["keys", "-0", "nl*"]).stdout, b"nl\nkey\0");

    // An empty pattern is a usage error.
    let out = s.run(&["keys", ""]);
    assert_eq!(code(&out), 2);
    assert!(stderr(&out.stderr).contains("pattern must not be empty"));
}

#[test]
fn keys_in_a_pipe_that_closes_early_ends_quietly() {
    let s = serve_with(&["--scan-page-size", "5"]);
    for i in 0..40 {
        assert_eq!(code(&s.run(&["set", &format!("p/{i:02}"), "v"])), 0);
    }
    let mut child = s
        .cmd(&["keys", "p/*"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    assert_eq!(first, "p/00\n");
    // The reader is gone (stdout closed): the scan stops without an error.
    let out = child.wait_with_output().unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out.stderr));
    assert!(out.stderr.is_empty(), "{}", stderr(&out.stderr));
}

/// Issue 30, item 5: the flags of `serve` are honoured or refused, never ignored.
#[test]
fn serve_honours_or_refuses_every_flag_it_is_given() {
    // -p is the port serve listens on (it used to be ignored, binding 1883).
    let port = free_port();
    let mut server = Proc(
        mqstate()
            .args(["serve", "-p", &port.to_string()])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    wait_port(&mut server.0, port);
    let out = mqstate()
        .args(["-p", &port.to_string(), "set", "k", "v"])
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out.stderr));

    for (args, names) in [
        (
            &["serve", "--url", "mqtt://127.0.0.1:1"][..],
            &["--url", "--broker", "--listen"][..],
        ),
        (
            &["serve", "--host", "0.0.0.0"][..],
            &["--host", "--listen"][..],
        ),
        (&["serve", "--timeout", "2s"][..], &["--timeout"][..]),
        (&["serve", "--json"][..], &["--json"][..]),
        (&["serve", "--tls"][..], &["--tls", "--tls-cert"][..]),
        (
            &["serve", "--broker", "mqtt://127.0.0.1:1", "-p", "1"][..],
            &["--broker"][..],
        ),
        (&["demo", "-p", "1"][..], &["-p/--port"][..]),
        (&["bench", "--timeout", "1s"][..], &["--timeout"][..]),
        (&["settings", "--url", "mqtt://x"][..], &["--url"][..]),
        (&["completions", "bash", "--json"][..], &["--json"][..]),
    ] {
        let out = mqstate().args(args).output().unwrap();
        assert_eq!(code(&out), 2, "{args:?}: {}", stderr(&out.stderr));
        let err = stderr(&out.stderr);
        for name in names {
            assert!(err.contains(name), "{args:?}: {err}");
        }
    }

    // A URL from the environment is not addressed to serve: not refused.
    let port = free_port();
    let mut server = Proc(
        mqstate()
            .args(["serve", "--listen", &port.to_string()])
            .env("MQSTATE_URL", "mqtt://127.0.0.1:1")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    wait_port(&mut server.0, port);
}

/// `--listen` takes PORT, HOST:PORT (a name resolved) and [IPv6]:PORT.
#[test]
fn listen_takes_a_port_a_host_name_or_an_ipv6_address() {
    let ipv6 = TcpListener::bind("[::1]:0").is_ok();
    for (form, url) in [
        ("{port}", "mqtt://127.0.0.1:{port}"),
        ("localhost:{port}", "mqtt://localhost:{port}"),
        ("[::1]:{port}", "mqtt://[::1]:{port}"),
    ] {
        if form.starts_with('[') && !ipv6 {
            continue;
        }
        let port = free_port().to_string();
        let listen = form.replace("{port}", &port);
        let url = url.replace("{port}", &port);
        let mut server = mqstate()
            .args(["serve", "--listen", &listen])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        drop(wait_stderr(&mut server, "serving"));
        let server = Proc(server);
        let out = mqstate()
            .args(["--url", &url, "set", "k", "v"])
            .output()
            .unwrap();
        assert_eq!(code(&out), 0, "{listen}: {}", stderr(&out.stderr));
        drop(server);
    }
    for bad in [
        "[::1",
        "localhost",
        "host:port",
        "no-such-host.invalid:1883",
    ] {
        let out = mqstate().args(["serve", "--listen", bad]).output().unwrap();
        assert_eq!(code(&out), 2, "{bad}");
        assert!(stderr(&out.stderr).contains("--listen"), "{bad}");
    }
}

/// A port that is taken is named in the hint (not a literal `<port>`).
#[test]
fn a_busy_port_is_named_in_the_hint() {
    let s = serve();
    let port = s.url.rsplit(':').next().unwrap().to_owned();
    let out = mqstate()
        .args(["serve", "--listen", &format!("127.0.0.1:{port}")])
        .output()
        .unwrap();
    assert_eq!(code(&out), 3);
    let err = stderr(&out.stderr);
    assert!(err.contains(&format!("lsof -i :{port}")), "{err}");
    assert!(err.contains("already in use"), "{err}");
    assert!(!err.contains("<port>"), "{err}");
}

/// Runs `mqstate ARGS` with a stdout whose reader is already gone: every write fails
/// with EPIPE. Returns the output once it ends (or panics after 20 s).
fn run_into_closed_pipe(cmd: &mut Command) -> (i32, String) {
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let mut child = cmd
        .stdout(writer)
        .stderr(Stdio::piped())
        .env("RUST_BACKTRACE", "1")
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("{cmd:?} kept running with its stdout closed");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = child.wait_with_output().unwrap();
    (code(&out), stderr(&out.stderr))
}

/// `mqstate completions bash | head` and friends: a closed stdout ends the command
/// quietly (exit 0, nothing on stderr), never a panic, never a command that runs on.
#[test]
fn a_closed_stdout_ends_every_command_quietly() {
    let s = serve();
    assert_eq!(code(&s.run(&["set", "k", "v"])), 0);
    for args in [
        &["completions", "bash"][..],
        &["settings"][..],
        &["--help"][..],
        &["demo"][..],
    ] {
        let (code, err) = run_into_closed_pipe(mqstate().args(args));
        assert_eq!(code, 0, "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
    }
    for args in [
        &["get", "k"][..],
        &["--json", "get", "k"][..],
        &["--raw", "get", "k"][..],
        &["keys", "*"][..],
        &["--json", "leader", "k"][..],
        &["ping"][..],
    ] {
        let (code, err) = run_into_closed_pipe(&mut s.cmd(args));
        assert_eq!(code, 0, "{args:?}: {err}");
        assert!(err.is_empty(), "{args:?}: {err}");
    }
    // watch ends at its first notification instead of running on for nobody.
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let mut watch = s
        .cmd(&["watch", "w"])
        .stdout(writer)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(wait_stderr(&mut watch, "watching"));
    let watch = Proc(watch);
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut watch = watch;
    loop {
        assert_eq!(code(&s.run(&["set", "w", "v"])), 0);
        if let Some(status) = watch.0.try_wait().unwrap() {
            assert_eq!(status.code(), Some(0));
            break;
        }
        assert!(
            Instant::now() < deadline,
            "watch ran on with its stdout closed"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Every duration flag needs its unit: a bare number is refused (it was seconds here and
/// is milliseconds in Node and C), as is a negative one, with the rule's own message.
#[test]
fn durations_need_their_unit_and_are_never_negative() {
    for args in [
        &["--timeout", "2000", "get", "k"][..],
        &["--connect-timeout", "5", "get", "k"][..],
        &["-o", "request_timeout=5", "get", "k"][..],
        &["-o", "keep_alive=30", "get", "k"][..],
        &["set", "k", "v", "--expiry", "30"][..],
        &["lock", "k", "--lease", "10", "--", "true"][..],
        &["lock", "k", "--wait", "1", "--", "true"][..],
        &["bench", "--duration", "5"][..],
    ] {
        let out = mqstate().args(args).output().unwrap();
        assert_eq!(code(&out), 2, "{args:?}");
        let err = stderr(&out.stderr);
        assert!(err.contains("has no unit"), "{args:?}: {err}");
        assert!(err.contains("ms, "), "{args:?}: {err}");
    }
    for args in [
        &["set", "k", "v", "--expiry", "-1"][..],
        &["set", "k", "v", "-x", "-1s"][..],
        &["--timeout", "-5s", "get", "k"][..],
        &["lock", "k", "--lease", "-10s", "--", "true"][..],
    ] {
        let out = mqstate().args(args).output().unwrap();
        assert_eq!(code(&out), 2, "{args:?}");
        let err = stderr(&out.stderr);
        assert!(err.contains("must not be negative"), "{args:?}: {err}");
        assert!(!err.contains("-- -1"), "{args:?}: {err}");
    }
    let help = stdout_text(&mqstate().arg("--help").output().unwrap());
    assert!(help.contains("Durations take their unit"), "{help}");
    // With units they work.
    let s = serve();
    let out = s.run(&[
        "--timeout",
        "2s",
        "--connect-timeout",
        "1500ms",
        "set",
        "k",
        "v",
        "-x",
        "1m",
    ]);
    assert_eq!(code(&out), 0, "{}", stderr(&out.stderr));
}

/// `--json leader` shows the lock key's version while someone leads.
#[test]
fn leader_json_shows_the_version_of_a_leader() {
    let s = serve();
    assert_eq!(code(&s.run(&["set", "election", "alice"])), 0);
    let (code, value) = s.json(&["leader", "election"]);
    assert_eq!(code, 0);
    assert_eq!(value["leader"], "alice");
    let version = value["version"]
        .as_str()
        .expect("a version while there is a leader");
    assert!(version.ends_with(":StateStore"), "{value}");
}

/// The help's summary (its first line) names every command.
#[test]
fn the_help_summary_names_every_command() {
    let help = stdout_text(&mqstate().arg("--help").output().unwrap());
    let summary = help.lines().next().unwrap();
    let commands: Vec<&str> = help
        .lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|c| *c != "help")
        .collect();
    assert!(commands.len() >= 14, "{commands:?}");
    for command in commands {
        assert!(
            summary.contains(command),
            "{command} missing from {summary:?}"
        );
    }
}

/// tcp:// and ssl:// are aliases of mqtt:// and mqtts://; any other scheme is refused with
/// a message that says so.
#[test]
fn url_schemes_follow_one_rule() {
    let s = serve();
    let tcp = s.url.replace("mqtt://", "tcp://");
    let out = mqstate()
        .args(["--url", &tcp, "set", "k", "v"])
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out.stderr));
    for url in ["http://127.0.0.1:1", "ws://127.0.0.1:1"] {
        let out = mqstate().args(["--url", url, "get", "k"]).output().unwrap();
        assert_eq!(code(&out), 2);
        let err = stderr(&out.stderr);
        assert!(err.contains("mqtt:// or mqtts://"), "{err}");
        assert!(err.contains("tcp:// and ssl:// are their aliases"), "{err}");
    }
}

/// A port that answers HTTP is named as not an MQTT broker, in words.
#[test]
fn an_http_port_is_named_as_not_a_broker() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming().take(20) {
            let Ok(mut stream) = stream else { continue };
            let mut buf = [0u8; 512];
            let _ = std::io::Read::read(&mut stream, &mut buf);
            let body = "x".repeat(20_000);
            let _ = stream.write_all(
                format!(
                    "HTTP/1.0 200 OK\r\nContent-Length: {}\r\n\r\n{body}",
                    body.len()
                )
                .as_bytes(),
            );
        }
    });
    let out = mqstate()
        .args([
            "--url",
            &format!("mqtt://127.0.0.1:{port}"),
            "--connect-timeout",
            "3s",
            "get",
            "k",
        ])
        .output()
        .unwrap();
    assert_eq!(code(&out), 4);
    let err = stderr(&out.stderr);
    assert!(
        err.contains(&format!(
            "the server at 127.0.0.1:{port} did not answer as an MQTT broker"
        )),
        "{err}"
    );
    assert!(!err.contains("boundary"), "{err}");
}

/// mqtts:// without a CA file trusts the system's roots (here: SSL_CERT_FILE, which the
/// platform loader reads), and a TLS failure says which roots were used.
#[test]
fn mqtts_without_a_ca_file_uses_the_system_roots() {
    let pki = tempdir();
    mqstate_tests::pki::make(&pki);
    let port = free_port();
    let mut server = mqstate()
        .args(["serve", "--listen", &port.to_string(), "--tls-cert"])
        .arg(pki.join("server.crt"))
        .arg("--tls-key")
        .arg(pki.join("server.key"))
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Its stderr is closed from here on: its TLS error lines must not end it.
    drop(wait_stderr(&mut server, "serving"));
    let _server = Proc(server);
    let url = format!("mqtts://localhost:{port}");
    let out = mqstate()
        .args(["--url", &url, "set", "k", "v"])
        .env("SSL_CERT_FILE", pki.join("ca.crt"))
        .env_remove("SSL_CERT_DIR")
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out.stderr));

    // Roots that do not hold the broker's CA: the failure names them.
    let other = tempdir();
    mqstate_tests::pki::make(&other);
    let out = mqstate()
        .args(["--url", &url, "--connect-timeout", "3s", "get", "k"])
        .env("SSL_CERT_FILE", other.join("ca.crt"))
        .env_remove("SSL_CERT_DIR")
        .output()
        .unwrap();
    assert_eq!(code(&out), 4);
    let err = stderr(&out.stderr);
    assert!(err.contains("system's root certificates"), "{err}");
    let out = mqstate()
        .args(["--url", &url, "--connect-timeout", "3s", "--ca-file"])
        .arg(other.join("ca.crt"))
        .args(["get", "k"])
        .output()
        .unwrap();
    assert_eq!(code(&out), 4);
    let err = stderr(&out.stderr);
    assert!(
        err.contains(&format!("the CA file {}", other.join("ca.crt").display())),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(pki);
    let _ = std::fs::remove_dir_all(other);
}

/// The README's install lines run in a home that has neither `~/.local/bin` nor the
/// completions folder: they create what they use.
#[test]
fn readme_install_lines_create_the_folders_they_use() {
    let readme =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../README.md"))
            .unwrap();
    let blocks: Vec<&str> = readme
        .split("```sh")
        .skip(1)
        .filter_map(|b| b.split("```").next())
        .filter(|b| b.contains("bash-completion"))
        .collect();
    assert_eq!(
        blocks.len(),
        2,
        "the tarball and the from-source install blocks"
    );
    for block in blocks {
        let home = tempdir();
        let mut lines: Vec<&str> = block.lines().skip(1).collect();
        // The tarball the first block unpacks, made here with the binary built for tests.
        if let Some(tar) = lines.iter().find_map(|l| l.strip_prefix("tar -xzf ")) {
            let tar = tar.split_whitespace().next().unwrap();
            let dir = tar.trim_end_matches(".tar.gz");
            std::fs::create_dir_all(home.join(dir).join("completions")).unwrap();
            std::fs::copy(BIN, home.join(dir).join("mqstate")).unwrap();
            std::fs::write(home.join(dir).join("completions/mqstate.bash"), "complete").unwrap();
            let made = Command::new("tar")
                .args(["-czf", tar, dir])
                .current_dir(&home)
                .status()
                .unwrap();
            assert!(made.success());
            std::fs::remove_dir_all(home.join(dir)).unwrap();
        }
        // `cargo install` is what the second block is about; it is not run here.
        lines.retain(|l| !l.starts_with("cargo "));
        let bin_dir = Path::new(BIN).parent().unwrap();
        let out = Command::new("bash")
            .args(["-e", "-o", "pipefail", "-c", &lines.join("\n")])
            .current_dir(&home)
            .env("HOME", &home)
            .env(
                "PATH",
                format!("{}:{}", bin_dir.display(), std::env::var("PATH").unwrap()),
            )
            .output()
            .unwrap();
        assert!(out.status.success(), "{block}: {}", stderr(&out.stderr));
        assert!(
            home.join(".local/share/bash-completion/completions/mqstate")
                .is_file(),
            "{block}"
        );
        let _ = std::fs::remove_dir_all(home);
    }
}
