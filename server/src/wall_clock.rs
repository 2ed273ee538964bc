//! The wall clock, read one way everywhere in the server (the store's clock, the journal,
//! the live stream's event times, session times): the core's [`SystemTimeSource`], the
//! reading every mqstate clock uses.

use mqstate::hlc::{SystemTimeSource, TimeSource};

/// The current time in ms since the Unix epoch (0 before it, `u64::MAX` past what fits).
pub(crate) fn now_ms() -> u64 {
    SystemTimeSource.now_ms()
}
