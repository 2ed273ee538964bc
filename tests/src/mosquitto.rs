//! Debian's mosquitto on a free loopback port, with a generated configuration, for tests.
//!
//! ```no_run
//! let broker = mqstate_tests::Mosquitto::start()?;
//! println!("{}", broker.url()); // mqtt://127.0.0.1:PORT
//! # Ok::<(), std::io::Error>(())
//! ```
//!
//! The configuration: `listener PORT 127.0.0.1`, `allow_anonymous true`,
//! `set_tcp_nodelay true` (not with [`Mosquitto::start_with_nagle`]), `persistence false`
//! (or `true` with a temporary directory, see
//! [`Mosquitto::start_persistent`]), its log to stderr (kept in `mosquitto.log` in the
//! temporary directory) and to `$SYS/broker/log/#` (so the server learns of disconnects),
//! and `user root` when run as root. A start that loses the race for its port ("address in
//! use") is retried on another port. The broker is killed when dropped.

use std::fs::File;
use std::io::{Error, ErrorKind, Result};
use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use tempfile::TempDir;

use crate::listening::wait_listening;

/// Where mosquitto is looked for when it is not on `PATH`.
const SBIN: &str = "/usr/sbin/mosquitto";

/// A running mosquitto.
#[derive(Debug)]
pub struct Mosquitto {
    child: Option<Child>,
    port: u16,
    persistence: bool,
    extra: String,
    /// Publish the log on `$SYS/broker/log/#` (`log_dest topic`).
    sys_log: bool,
    /// `set_tcp_nodelay true` (mosquitto's own default is false: Nagle's algorithm on).
    nodelay: bool,
    dir: TempDir,
}

impl Mosquitto {
    /// Starts mosquitto with `persistence false`.
    pub fn start() -> Result<Mosquitto> {
        Mosquitto::launch(false, "")
    }

    /// Starts mosquitto with `persistence false` and `extra` lines appended to the
    /// configuration (for example `max_packet_size 65536`).
    pub fn start_with_config(extra: &str) -> Result<Mosquitto> {
        Mosquitto::launch(false, extra)
    }

    /// Starts mosquitto as a default install runs: without `log_dest topic`, so client
    /// disconnects are not published on `$SYS/broker/log/#`.
    pub fn start_without_sys_log() -> Result<Mosquitto> {
        Mosquitto::launch_with(false, "", false)
    }

    /// Starts mosquitto with `persistence false` and without `set_tcp_nodelay true`: Nagle's
    /// algorithm on, as mosquitto runs when installed.
    pub fn start_with_nagle() -> Result<Mosquitto> {
        Mosquitto::launch_full(false, "", true, false)
    }

    /// Starts mosquitto with `persistence true` in a temporary directory, so that
    /// [`Mosquitto::restart`] keeps sessions and queued messages.
    pub fn start_persistent() -> Result<Mosquitto> {
        Mosquitto::launch(true, "")
    }

    fn launch(persistence: bool, extra: &str) -> Result<Mosquitto> {
        Mosquitto::launch_with(persistence, extra, true)
    }

    fn launch_with(persistence: bool, extra: &str, sys_log: bool) -> Result<Mosquitto> {
        Mosquitto::launch_full(persistence, extra, sys_log, true)
    }

    fn launch_full(
        persistence: bool,
        extra: &str,
        sys_log: bool,
        nodelay: bool,
    ) -> Result<Mosquitto> {
        let mut last = None;
        for _ in 0..20 {
            let mut broker = Mosquitto {
                child: None,
                port: free_port()?,
                persistence,
                extra: extra.to_owned(),
                sys_log,
                nodelay,
                dir: tempfile::Builder::new()
                    .prefix("mqstate-mosquitto")
                    .tempdir()?,
            };
            match broker.spawn() {
                Ok(()) => return Ok(broker),
                Err(e) if e.kind() == ErrorKind::AddrInUse => last = Some(e),
                Err(e) => return Err(e),
            }
        }
        Err(last.unwrap_or_else(|| Error::other("mosquitto did not start")))
    }

    fn config_path(&self) -> PathBuf {
        self.dir.path().join("mosquitto.conf")
    }

    /// The file mosquitto logs to (useful when a test fails).
    pub fn log_path(&self) -> PathBuf {
        self.dir.path().join("mosquitto.log")
    }

    fn write_config(&self) -> Result<()> {
        let mut conf = format!(
            "listener {} 127.0.0.1\nallow_anonymous true\n{}\
             log_dest stderr\n{}log_type error\nlog_type warning\n\
             log_type notice\nlog_type information\nmax_queued_messages 1000\n",
            self.port,
            if self.nodelay {
                "set_tcp_nodelay true\n"
            } else {
                ""
            },
            if self.sys_log { "log_dest topic\n" } else { "" }
        );
        if self.persistence {
            conf.push_str(&format!(
                "persistence true\npersistence_location {}/\n",
                self.dir.path().display()
            ));
        } else {
            conf.push_str("persistence false\n");
        }
        if running_as_root() {
            conf.push_str("user root\n");
        }
        conf.push_str(&self.extra);
        conf.push('\n');
        std::fs::write(self.config_path(), conf)
    }

    fn spawn(&mut self) -> Result<()> {
        self.write_config()?;
        let log = File::options()
            .create(true)
            .append(true)
            .open(self.log_path())?;
        let mut child = Command::new(binary())
            .arg("-c")
            .arg(self.config_path())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()?;
        // Its own listener: a connect alone also succeeds when another process took the
        // port and this mosquitto is about to exit with "address in use".
        match wait_listening(&mut child, self.port, Duration::from_secs(10)) {
            Ok(()) => {
                self.child = Some(child);
                Ok(())
            }
            Err(e) if e.kind() == ErrorKind::TimedOut => {
                let _ = child.kill();
                let _ = child.wait();
                Err(Error::new(ErrorKind::TimedOut, "mosquitto did not listen"))
            }
            Err(e) => {
                // It exited: its log says whether it lost the port.
                let log = std::fs::read_to_string(self.log_path()).unwrap_or_default();
                let kind = if log.contains("in use") {
                    ErrorKind::AddrInUse
                } else {
                    ErrorKind::Other
                };
                Err(Error::new(kind, format!("mosquitto: {e}: {}", log.trim())))
            }
        }
    }

    /// The TCP port on 127.0.0.1.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// `127.0.0.1`.
    pub fn host(&self) -> &'static str {
        "127.0.0.1"
    }

    /// `mqtt://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("mqtt://127.0.0.1:{}", self.port)
    }

    /// How many times mosquitto's log says that `client_id`'s connection ended (a
    /// DISCONNECT, a closed socket, a keep-alive timeout).
    pub fn disconnects_logged(&self, client_id: &str) -> usize {
        let log = std::fs::read_to_string(self.log_path()).unwrap_or_default();
        log.lines()
            .filter(|line| logs_disconnect(line, client_id))
            .count()
    }

    /// Whether mosquitto is running.
    pub fn is_running(&mut self) -> bool {
        matches!(self.child.as_mut().map(Child::try_wait), Some(Ok(None)))
    }

    /// Stops mosquitto cleanly (SIGTERM, so a persistent broker saves its state), waiting
    /// up to 5 s before killing it.
    pub fn stop(&mut self) -> Result<()> {
        let Some(mut child) = self.child.take() else {
            return Ok(());
        };
        let _ = Command::new("kill")
            .arg("-TERM")
            .arg(child.id().to_string())
            .status();
        let deadline = Instant::now() + Duration::from_secs(5);
        while child.try_wait()?.is_none() {
            if Instant::now() > deadline {
                child.kill()?;
                break;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        child.wait()?;
        Ok(())
    }

    /// Stops and starts mosquitto again on the same port (and the same persistence
    /// directory), retrying while the port is still held.
    pub fn restart(&mut self) -> Result<()> {
        self.stop()?;
        let mut last = None;
        for _ in 0..50 {
            match self.spawn() {
                Ok(()) => return Ok(()),
                Err(e) => last = Some(e),
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        Err(last.unwrap_or_else(|| Error::other("mosquitto did not restart")))
    }

    /// Pauses (SIGSTOP) or resumes (SIGCONT) the broker process: a broker that stops
    /// acknowledging, without closing any connection.
    pub fn pause(&self, paused: bool) -> Result<()> {
        let Some(child) = &self.child else {
            return Err(Error::other("mosquitto is not running"));
        };
        let signal = if paused { "-STOP" } else { "-CONT" };
        let status = Command::new("kill")
            .arg(signal)
            .arg(child.id().to_string())
            .status()?;
        if status.success() {
            Ok(())
        } else {
            Err(Error::other(format!("kill {signal} failed")))
        }
    }
}

impl Drop for Mosquitto {
    fn drop(&mut self) {
        // A failing test gets the broker's log in its captured output.
        if std::thread::panicking()
            && let Ok(log) = std::fs::read_to_string(self.log_path())
        {
            eprintln!("---- mosquitto log (port {}) ----\n{log}", self.port);
        }
        if let Some(mut child) = self.child.take() {
            let _ = Command::new("kill")
                .arg("-CONT")
                .arg(child.id().to_string())
                .status();
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

fn binary() -> PathBuf {
    let on_path = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|p| p.join("mosquitto"))
            .find(|p| p.is_file())
    });
    on_path.unwrap_or_else(|| PathBuf::from(SBIN))
}

fn running_as_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            status
                .lines()
                .find(|l| l.starts_with("Uid:"))
                .and_then(|l| l.split_whitespace().nth(2).map(|euid| euid == "0"))
        })
        .unwrap_or(false)
}

/// Whether `line` of mosquitto's log (its file, or a `$SYS/broker/log/#` message) says that
/// `client_id`'s connection ended: a DISCONNECT, a closed socket, a keep-alive timeout.
pub fn logs_disconnect(line: &str, client_id: &str) -> bool {
    line.split_once(&format!("Client {client_id} "))
        .is_some_and(|(_, rest)| {
            rest.contains("disconnect") || rest.contains("closed its connection")
        })
}

/// A port that was free a moment ago on 127.0.0.1.
pub fn free_port() -> Result<u16> {
    Ok(TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The race of CI run 40: another process holds the port, so a connect succeeds while
    /// this mosquitto exits with "address in use". The start must fail, not hand over the
    /// other listener.
    #[test]
    fn a_port_held_by_another_process_is_a_failed_start() {
        let holder = TcpListener::bind("127.0.0.1:0").unwrap();
        let mut broker = Mosquitto {
            child: None,
            port: holder.local_addr().unwrap().port(),
            persistence: false,
            extra: String::new(),
            sys_log: false,
            nodelay: true,
            dir: tempfile::tempdir().unwrap(),
        };
        let err = broker.spawn().unwrap_err();
        assert_eq!(err.kind(), ErrorKind::AddrInUse, "{err}");
        assert!(broker.child.is_none());
    }
}
