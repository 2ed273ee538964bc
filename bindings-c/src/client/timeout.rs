//! What a duration argument of the C client means, decided once: `0` is always **the
//! default** — the core's, never one written here — and [`MQSTATE_NO_TIMEOUT`] asks for no
//! limit where waiting without end makes sense (acquiring a lock, campaigning, waiting for a
//! subscription's next event).
//!
//! | argument | 0 means | `MQSTATE_NO_TIMEOUT` |
//! |---|---|---|
//! | a request's `timeout_ms` (set, get, delete, vdel, observe, scan: each page) | the client's `request_timeout` setting | refused |
//! | `mqstate_lock_edit`'s `timeout_ms` | `mqstate::lock::DEFAULT_EDIT_TIMEOUT` | refused |
//! | a wait's `timeout_ms` (acquire, campaign, next event, wait-idle) | without limit | without limit |
//! | `mqstate_client_connect`'s `timeout_ms` | the `connect_timeout` setting | refused |
//! | `lease_ms`, `term_ms` | the lock's (election's) default, else `mqstate::lock::DEFAULT_LEASE` | — |
//! | `expiry_ms`, `auto_renew_ms` | never | — |
//! | `renew_every_ms` (elections) | a third of the term | — |
//!
//! The other lock and election calls take no timeout: each is one request, bounded by the
//! client's `request_timeout`, as in every language (`core/vocabulary.json`).

use std::time::Duration;

use crate::status::Failure;

/// `timeout_ms` of a wait that may go on without limit: `mqstate_lock_acquire`,
/// `mqstate_election_campaign`, `mqstate_subscription_next`, `mqstate_wait_idle`.
pub const MQSTATE_NO_TIMEOUT: u32 = u32::MAX;

/// `timeout_ms` as a duration; `0` and [`MQSTATE_NO_TIMEOUT`] are handled by the callers.
fn millis(timeout_ms: u32) -> Duration {
    Duration::from_millis(u64::from(timeout_ms))
}

/// The timeout of one request (or of a call bounded like one): `None` for 0, the core's
/// default; [`MQSTATE_NO_TIMEOUT`] is refused, since a request that is never answered would
/// block its caller for ever.
pub(crate) fn request(timeout_ms: u32) -> Result<Option<Duration>, Failure> {
    match timeout_ms {
        0 => Ok(None),
        MQSTATE_NO_TIMEOUT => Err(Failure::invalid(
            "timeout_ms is MQSTATE_NO_TIMEOUT, but this call is bounded: pass 0 for its \
             default, or a number of milliseconds",
        )),
        ms => Ok(Some(millis(ms))),
    }
}

/// The limit of a wait that may go on without end: `None` (no limit) for 0 — the core's
/// default for these waits — and for [`MQSTATE_NO_TIMEOUT`].
pub(crate) fn wait(timeout_ms: u32) -> Option<Duration> {
    match timeout_ms {
        0 | MQSTATE_NO_TIMEOUT => None,
        ms => Some(millis(ms)),
    }
}

/// A duration option in milliseconds (expiry, lease, term, renewal period): `None` for 0,
/// the core's default.
pub(crate) fn option(ms: u64) -> Option<Duration> {
    (ms > 0).then(|| Duration::from_millis(ms))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::status::mqstate_status;

    #[test]
    fn zero_is_the_default_everywhere_and_no_timeout_only_where_a_wait_may_be_endless() {
        assert_eq!(request(0).unwrap(), None);
        assert_eq!(request(250).unwrap(), Some(Duration::from_millis(250)));
        let refused = request(MQSTATE_NO_TIMEOUT).unwrap_err();
        assert_eq!(refused.status, mqstate_status::InvalidArgument);
        assert!(
            refused.message.contains("MQSTATE_NO_TIMEOUT"),
            "{}",
            refused.message
        );
        assert_eq!(wait(0), None);
        assert_eq!(wait(MQSTATE_NO_TIMEOUT), None);
        assert_eq!(wait(7), Some(Duration::from_millis(7)));
        assert_eq!(option(0), None);
        assert_eq!(option(u64::MAX), Some(Duration::from_millis(u64::MAX)));
    }
}
