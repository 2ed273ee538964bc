//! Waiting for a child process to listen on a port: *that* process, not whoever holds the
//! port now.
//!
//! A harness picks a free port, starts a server on it and waits until the port accepts
//! connections. On a busy machine another test can take the port in between; the server
//! then fails to bind ("address in use") while a connect to the port still succeeds, and
//! the test goes on talking to someone else's broker. [`wait_listening`] closes that gap:
//! it waits until the child's own file descriptors hold the listening socket (Linux:
//! `/proc/net/tcp` gives the socket's inode, `/proc/PID/fd` the child's sockets), and says
//! so at once if the child exits instead.

use std::io::{Error, ErrorKind, Result};
use std::process::Child;
use std::time::{Duration, Instant};

/// How a wait for a child's listener ended badly.
fn exited(status: std::process::ExitStatus, port: u16) -> Error {
    Error::new(
        ErrorKind::AddrInUse,
        format!("the process exited ({status}) before it listened on 127.0.0.1:{port}"),
    )
}

/// Waits (up to `bound`) until `child` itself listens on 127.0.0.1:`port`.
///
/// Errors: [`ErrorKind::AddrInUse`] if the child exits first (most often: it lost the race
/// for the port; its log says), [`ErrorKind::TimedOut`] if the bound passes.
pub fn wait_listening(child: &mut Child, port: u16, bound: Duration) -> Result<()> {
    let deadline = Instant::now() + bound;
    loop {
        if let Some(status) = child.try_wait()? {
            return Err(exited(status, port));
        }
        if listens(child.id(), port) {
            return Ok(());
        }
        if Instant::now() > deadline {
            return Err(Error::new(
                ErrorKind::TimedOut,
                format!("nothing of pid {} listens on 127.0.0.1:{port}", child.id()),
            ));
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Whether process `pid` holds a socket listening on 127.0.0.1:`port` (or any address).
pub fn listens(pid: u32, port: u16) -> bool {
    let inodes = listening_inodes(port);
    if inodes.is_empty() {
        return false;
    }
    let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
        return false;
    };
    fds.flatten().any(|fd| {
        std::fs::read_link(fd.path()).is_ok_and(|target| {
            let target = target.to_string_lossy();
            target
                .strip_prefix("socket:[")
                .and_then(|rest| rest.strip_suffix(']'))
                .is_some_and(|inode| inodes.iter().any(|i| i == inode))
        })
    })
}

/// The inodes of the IPv4 and IPv6 sockets in state LISTEN on `port`.
fn listening_inodes(port: u16) -> Vec<String> {
    let port_hex = format!(":{port:04X}");
    let mut inodes = Vec::new();
    for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
        let Ok(text) = std::fs::read_to_string(table) else {
            continue;
        };
        // Columns: sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode.
        for line in text.lines().skip(1) {
            let cols: Vec<&str> = line.split_whitespace().collect();
            if cols.len() > 9 && cols[1].ends_with(&port_hex) && cols[3] == "0A" {
                inodes.push(cols[9].to_owned());
            }
        }
    }
    inodes
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;

    #[test]
    fn this_process_is_seen_listening_and_another_is_not() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        assert!(listens(std::process::id(), port));
        let mut other = std::process::Command::new("sleep")
            .arg("5")
            .spawn()
            .unwrap();
        assert!(!listens(other.id(), port), "the port is ours, not sleep's");
        let err = {
            other.kill().unwrap();
            other.wait().unwrap();
            wait_listening(&mut other, port, Duration::from_secs(1)).unwrap_err()
        };
        assert_eq!(err.kind(), ErrorKind::AddrInUse, "{err}");
        drop(listener);
        assert!(!listens(std::process::id(), port));
    }
}
