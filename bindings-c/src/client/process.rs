//! The library's threads and the process: waiting until no call or callback is in flight
//! (for an `atexit` handler) and a fork's child getting a runtime of its own.

/// Waits until no mqstate call and no callback is in flight on any thread — up to
/// `timeout_ms` (0: do not wait, only look; `MQSTATE_WAIT_FOREVER`: without limit) — and returns true when that was
/// reached in time. It only waits: it closes, cancels and frees nothing (close clients,
/// free subscriptions and locks first; their calls then end). Meant for an `atexit` handler,
/// so that no library thread is inside a callback of a program that is exiting.
#[unsafe(no_mangle)]
pub extern "C" fn mqstate_wait_idle(timeout_ms: u32) -> bool {
    std::panic::catch_unwind(|| match super::timeout::wait(timeout_ms) {
        Some(limit) => mqstate::bridge::runtime::wait_idle(limit),
        None => {
            while !mqstate::bridge::runtime::wait_idle(std::time::Duration::from_secs(3600)) {}
            true
        }
    })
    .unwrap_or(false)
}

/// For a `pthread_atfork` child handler: the child gets a runtime of its own on first use;
/// clients connected before the fork return `MQSTATE_STATUS_UNSUPPORTED` there (connect
/// again). Without it, a child must not use mqstate at all if the parent had connected.
#[unsafe(no_mangle)]
pub extern "C" fn mqstate_atfork_child() {
    let _ = std::panic::catch_unwind(mqstate::bridge::runtime::after_fork_in_child);
}
