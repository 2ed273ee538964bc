//! `mqstate lock KEY --lease D -- COMMAND…`: takes the lock (waiting for it), runs the
//! command while the lock is renewed in the background, releases the lock when the command
//! ends, and exits with the command's exit code. The command sees the fencing token in
//! `MQSTATE_FENCING_TOKEN` (for `mqstate set --fencing-token`).

use std::ffi::OsString;
use std::time::Duration;

use clap::Args;
use mqstate::lock::{Lock, LockOptions};
use mqstate::{ErrorKind, LossReason};

use crate::conn::Target;
use crate::failure::{CliResult, Failure, NOT_MET, STORE};
use crate::kv::arg_bytes;
use crate::output::note;

/// `mqstate lock`.
#[derive(Debug, Args)]
pub struct LockArgs {
    /// The lock key.
    key: OsString,
    /// The lease: how long the lock outlives this process if it dies without releasing it.
    #[arg(long, value_name = "DURATION", default_value = "10s", value_parser = crate::conn::duration_arg, allow_hyphen_values = true)]
    lease: Duration,
    /// How long to wait for the lock when someone else holds it (exit 1 after that).
    #[arg(long, value_name = "DURATION", default_value = "60s", value_parser = crate::conn::duration_arg, allow_hyphen_values = true)]
    wait: Duration,
    /// Renew the lease this often (default: a third of the lease).
    #[arg(long, value_name = "DURATION", value_parser = crate::conn::duration_arg, allow_hyphen_values = true)]
    renew: Option<Duration>,
    /// The holder id written into the lock (default: the client id).
    #[arg(long, value_name = "ID")]
    holder: Option<String>,
    /// The command to run while holding the lock.
    #[arg(last = true, required = true, value_name = "COMMAND")]
    command: Vec<OsString>,
}

/// `d` (parsed with its unit by clap), refused when zero.
fn duration(flag: &str, d: Duration) -> CliResult<Duration> {
    if d.is_zero() {
        return Err(Failure::usage(format!("--{flag} must be positive")));
    }
    Ok(d)
}

fn describe(reason: &LossReason) -> String {
    match reason {
        LossReason::Expired => "its lease ran out without a renewal".into(),
        LossReason::TakenOver => "another holder took it".into(),
        LossReason::RenewalFailed(e) => format!("a renewal failed: {e}"),
    }
}

/// Runs `lock`: the command's exit code (128 + signal when a signal ended it).
pub async fn lock(target: &Target, args: LockArgs) -> CliResult {
    let key = arg_bytes(&args.key);
    if key.is_empty() {
        return Err(Failure::usage("the lock key must not be empty"));
    }
    let lease = duration("lease", args.lease)?;
    let wait = duration("wait", args.wait)?;
    let renew = match args.renew {
        Some(r) => duration("renew", r)?,
        None => (lease / 3).max(Duration::from_millis(1)),
    };
    if renew >= lease {
        return Err(Failure::usage("--renew must be shorter than --lease"));
    }
    let client = target.connect().await?;
    let options = LockOptions {
        holder: args.holder.clone(),
        session_id: None,
        auto_renew: Some(renew),
        lease: Some(lease),
    };
    let lock = Lock::with_options(&client, &key, options).map_err(|e| target.fail(&e))?;
    let shown = crate::output::escape(&key);
    let token = match lock.acquire(lease, wait).await {
        Ok(token) => token,
        Err(e) if e.kind() == ErrorKind::Timeout => {
            let holder = lock.holder().await.ok().flatten();
            client.shutdown().await;
            return Err(Failure::new(
                NOT_MET,
                format!(
                    "lock {shown} is held by {} (waited {wait:?})",
                    holder.as_deref().unwrap_or("someone else")
                ),
            ));
        }
        Err(e) => {
            client.shutdown().await;
            return Err(target.fail(&e));
        }
    };
    tracing::debug!(key = %shown, holder = lock.holder_id(), %token, "lock acquired");

    // Ctrl-C goes to the whole foreground process group: the command gets it and decides;
    // this process keeps running (a handler is installed) to release the lock afterwards.
    let mut interrupts = crate::shutdown::Interrupts::install()
        .map_err(|e| Failure::new(STORE, format!("could not handle Ctrl-C: {e}")))?;
    let mut command = std::process::Command::new(&args.command[0]);
    command
        .args(&args.command[1..])
        .env("MQSTATE_LOCK_KEY", &args.key)
        .env("MQSTATE_LOCK_HOLDER", lock.holder_id())
        .env("MQSTATE_FENCING_TOKEN", token.to_string());
    let program = args.command[0].to_string_lossy().into_owned();
    let mut child = match command.spawn() {
        Ok(c) => c,
        Err(e) => {
            let _ = lock.release().await;
            client.shutdown().await;
            return Err(Failure::new(127, format!("could not run {program}: {e}")));
        }
    };
    let pid = child.id();
    let mut waiter = tokio::task::spawn_blocking(move || child.wait());
    let mut lost_reason = None;
    let status = loop {
        tokio::select! {
            status = &mut waiter => break status,
            _ = interrupts.recv() => continue,
            reason = lock.lost(), if lost_reason.is_none() => {
                let reason = reason.unwrap_or(LossReason::Expired);
                note(&format!(
                    "mqstate lock: lost the lock {shown} ({}); stopping {program} (SIGTERM)",
                    describe(&reason)
                ));
                lost_reason = Some(reason);
                crate::shutdown::terminate(pid);
            }
        }
    };
    let released = lock.release().await;
    client.shutdown().await;
    let status = status
        .map_err(|e| Failure::new(STORE, format!("waiting for {program}: {e}")))?
        .map_err(|e| Failure::new(STORE, format!("waiting for {program}: {e}")))?;
    if let Some(reason) = &lost_reason {
        return Err(Failure::new(
            STORE,
            format!(
                "lost the lock {shown} while {program} ran: {}",
                describe(reason)
            ),
        ));
    }
    if let Err(e) = released {
        note(&format!(
            "mqstate lock: could not release {shown} ({e}); it expires after its lease"
        ));
    }
    let code = status.code().or_else(|| signal_code(&status)).unwrap_or(1);
    Ok(u8::try_from(code).unwrap_or(1))
}

/// A shell's exit code for a command killed by a signal (128 + its number); Unix only.
fn signal_code(status: &std::process::ExitStatus) -> Option<i32> {
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        status.signal().map(|s| 128 + s)
    }
    #[cfg(not(unix))]
    {
        let _ = status;
        None
    }
}
