//! The wall clock, read one way everywhere in the server (the store's clock, the live
//! stream's event times, session times).

use std::time::{SystemTime, UNIX_EPOCH};

/// The current time in ms since the Unix epoch (0 before it, `u64::MAX` past what fits).
pub(crate) fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}
