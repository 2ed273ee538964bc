//! The requests to stop a command that runs until told: Ctrl-C and SIGTERM on Unix; Ctrl-C,
//! Ctrl-Break and closing the console on Windows. The handlers are installed when
//! [`Shutdown::install`] is called, not at the first poll, so a request sent right after a
//! "ready" note is never missed.

/// The installed handlers; [`Shutdown::wait`] resolves on the first request.
pub struct Shutdown {
    #[cfg(unix)]
    int: tokio::signal::unix::Signal,
    #[cfg(unix)]
    term: tokio::signal::unix::Signal,
    #[cfg(windows)]
    ctrl_c: tokio::signal::windows::CtrlC,
    #[cfg(windows)]
    ctrl_break: tokio::signal::windows::CtrlBreak,
    #[cfg(windows)]
    close: tokio::signal::windows::CtrlClose,
}

impl Shutdown {
    /// Installs the handlers (inside a Tokio runtime).
    #[cfg(unix)]
    pub fn install() -> std::io::Result<Shutdown> {
        use tokio::signal::unix::{SignalKind, signal};
        Ok(Shutdown {
            int: signal(SignalKind::interrupt())?,
            term: signal(SignalKind::terminate())?,
        })
    }

    /// Installs the handlers (inside a Tokio runtime).
    #[cfg(windows)]
    pub fn install() -> std::io::Result<Shutdown> {
        use tokio::signal::windows::{ctrl_break, ctrl_c, ctrl_close};
        Ok(Shutdown {
            ctrl_c: ctrl_c()?,
            ctrl_break: ctrl_break()?,
            close: ctrl_close()?,
        })
    }

    /// Waits for the first request; returns its name (for the log).
    #[cfg(unix)]
    pub async fn wait(mut self) -> &'static str {
        tokio::select! {
            _ = self.int.recv() => "SIGINT",
            _ = self.term.recv() => "SIGTERM",
        }
    }

    /// Waits for the first request; returns its name (for the log).
    #[cfg(windows)]
    pub async fn wait(mut self) -> &'static str {
        tokio::select! {
            _ = self.ctrl_c.recv() => "Ctrl-C",
            _ = self.ctrl_break.recv() => "Ctrl-Break",
            _ = self.close.recv() => "console closed",
        }
    }
}

/// Resolves on the first request to stop. When the handlers cannot be installed, on Ctrl-C
/// alone (Tokio's portable handler).
pub fn requested() -> impl std::future::Future<Output = ()> {
    let installed = Shutdown::install();
    async move {
        match installed {
            Ok(shutdown) => {
                shutdown.wait().await;
            }
            Err(_) => {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
}

/// Ctrl-C, received each time it is pressed: a command run by `mqstate lock` gets it too
/// (the whole foreground process group does) and decides, while this process keeps running
/// to release the lock afterwards.
pub struct Interrupts {
    #[cfg(unix)]
    int: tokio::signal::unix::Signal,
    #[cfg(windows)]
    ctrl_c: tokio::signal::windows::CtrlC,
}

impl Interrupts {
    /// Installs the handler (inside a Tokio runtime).
    pub fn install() -> std::io::Result<Interrupts> {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{SignalKind, signal};
            Ok(Interrupts {
                int: signal(SignalKind::interrupt())?,
            })
        }
        #[cfg(windows)]
        {
            Ok(Interrupts {
                ctrl_c: tokio::signal::windows::ctrl_c()?,
            })
        }
    }

    /// The next Ctrl-C.
    pub async fn recv(&mut self) {
        #[cfg(unix)]
        self.int.recv().await;
        #[cfg(windows)]
        self.ctrl_c.recv().await;
    }
}

/// Asks process `pid` to stop: SIGTERM on Unix (`kill -TERM`); Windows has no such request
/// for a console program, so there `taskkill /F /T` ends it and its children.
pub fn terminate(pid: u32) {
    let pid = pid.to_string();
    #[cfg(unix)]
    let _ = std::process::Command::new("kill")
        .args(["-TERM", &pid])
        .status();
    #[cfg(windows)]
    let _ = std::process::Command::new("taskkill")
        .args(["/F", "/T", "/PID", &pid])
        .status();
}
