//! What the CLI's test binaries share: the binary, free ports, and a live `mqstate serve`
//! killed on drop. Each test binary uses a part of it.
#![allow(dead_code)]

use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// The `mqstate` binary under test.
pub const BIN: &str = env!("CARGO_BIN_EXE_mqstate");

/// A loopback TCP port nothing listens on now (the harness's one rule).
pub fn free_port() -> u16 {
    mqstate_tests::free_port().expect("a free loopback port")
}

/// Waits (up to 20 s) until `child` itself listens on 127.0.0.1:`port`: a connect alone
/// also succeeds when another test took the port and the child is exiting with "address
/// in use".
pub fn wait_port(child: &mut Child, port: u16) {
    if let Err(e) = mqstate_tests::wait_listening(child, port, Duration::from_secs(20)) {
        panic!("{e}");
    }
}

/// A base command with a clean environment (no inherited URL, log filter or colours).
pub fn mqstate() -> Command {
    let mut c = Command::new(BIN);
    for var in [
        "MQSTATE_URL",
        "RUST_LOG",
        "RUST_BACKTRACE",
        "MQSTATE_LISTEN",
    ] {
        c.env_remove(var);
    }
    c.stdin(Stdio::null());
    c
}

/// A child killed on drop.
pub struct Proc(pub Child);

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A live `mqstate serve` on a free port.
pub struct Store {
    /// `mqtt://127.0.0.1:PORT`.
    pub url: String,
    proc: Proc,
}

/// `mqstate serve` with `extra` arguments on a free port, once it listens.
pub fn serve_with(extra: &[&str]) -> Store {
    let port = free_port();
    let child = mqstate()
        .args(["serve", "--listen", &format!("127.0.0.1:{port}")])
        .args(extra)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut proc = Proc(child);
    wait_port(&mut proc.0, port);
    Store {
        url: format!("mqtt://127.0.0.1:{port}"),
        proc,
    }
}

/// `mqstate serve` on a free port, once it listens.
pub fn serve() -> Store {
    serve_with(&[])
}

impl Store {
    /// The server's process id.
    pub fn pid(&self) -> u32 {
        self.proc.0.id()
    }
}
