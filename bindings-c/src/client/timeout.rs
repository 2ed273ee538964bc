//! What a duration argument of the C client means: the core's one rule for zero and for "no
//! limit" (`mqstate::vocabulary::DURATION_RULES`), spelled for C, which has no "not given"
//! for a number. So **0 stands for "not given" (the default) exactly where the other
//! languages refuse a zero** — a bound (a request's timeout) or a span (an expiry, a lease) —
//! and a zero-initialised options struct is the defaults. A **wait's 0 is zero: do not
//! wait**, as everywhere; a wait without limit is [`MQSTATE_WAIT_FOREVER`].
//!
//! | argument | 0 means | `MQSTATE_WAIT_FOREVER` |
//! |---|---|---|
//! | a request's `timeout_ms` (set, get, delete, vdel, observe, scan: each page) | the client's `request_timeout` setting | refused |
//! | `mqstate_lock_edit`'s `timeout_ms` | `mqstate::lock::DEFAULT_EDIT_TIMEOUT` | refused |
//! | `mqstate_client_connect`'s `timeout_ms` | the `connect_timeout` setting | refused |
//! | a wait's `timeout_ms` (acquire, campaign, next event, wait-idle) | **do not wait**: one try (one look), then `MQSTATE_STATUS_TIMEOUT` | without limit |
//! | `lease_ms`, `term_ms` | the lock's (election's) default, else `mqstate::lock::DEFAULT_LEASE` | — |
//! | `expiry_ms`, `auto_renew_ms` | never | — |
//! | `renew_every_ms` (elections) | a third of the term | — |
//!
//! The other lock and election calls take no timeout: each is one request, bounded by the
//! client's `request_timeout`, as in every language (`core/vocabulary.json`).

use std::time::Duration;

use crate::status::Failure;

/// `timeout_ms` of a wait without limit: `mqstate_lock_acquire`,
/// `mqstate_election_campaign`, `mqstate_subscription_next`, `mqstate_wait_idle` (where 0 is
/// "do not wait"). Refused by the calls that are bounded.
pub const MQSTATE_WAIT_FOREVER: u32 = u32::MAX;

/// The former name of `MQSTATE_WAIT_FOREVER` (the same value), kept for one minor release:
/// use `MQSTATE_WAIT_FOREVER`.
pub const MQSTATE_NO_TIMEOUT: u32 = MQSTATE_WAIT_FOREVER;

/// `timeout_ms` as a duration; `0` and [`MQSTATE_WAIT_FOREVER`] are handled by the callers.
fn millis(timeout_ms: u32) -> Duration {
    Duration::from_millis(u64::from(timeout_ms))
}

/// The timeout of one request (or of a call bounded like one): `None` for 0, the core's
/// default; [`MQSTATE_WAIT_FOREVER`] is refused, since a request that is never answered would
/// block its caller for ever.
pub(crate) fn request(timeout_ms: u32) -> Result<Option<Duration>, Failure> {
    match timeout_ms {
        0 => Ok(None),
        MQSTATE_WAIT_FOREVER => Err(Failure::invalid(
            "timeout_ms is MQSTATE_WAIT_FOREVER, but this call is bounded: pass 0 for its \
             default, or a number of milliseconds",
        )),
        ms => Ok(Some(millis(ms))),
    }
}

/// The limit of a wait: `Some(ZERO)` for 0 (do not wait), `None` (no limit) for
/// [`MQSTATE_WAIT_FOREVER`].
pub(crate) fn wait(timeout_ms: u32) -> Option<Duration> {
    match timeout_ms {
        MQSTATE_WAIT_FOREVER => None,
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
    fn zero_is_the_default_for_bounds_and_do_not_wait_for_waits() {
        assert_eq!(request(0).unwrap(), None);
        assert_eq!(request(250).unwrap(), Some(Duration::from_millis(250)));
        let refused = request(MQSTATE_WAIT_FOREVER).unwrap_err();
        assert_eq!(refused.status, mqstate_status::InvalidArgument);
        assert!(
            refused.message.contains("MQSTATE_WAIT_FOREVER"),
            "{}",
            refused.message
        );
        assert_eq!(wait(0), Some(Duration::ZERO), "0 is do not wait");
        assert_eq!(wait(MQSTATE_WAIT_FOREVER), None);
        assert_eq!(wait(MQSTATE_NO_TIMEOUT), None, "the former name");
        assert_eq!(wait(7), Some(Duration::from_millis(7)));
        assert_eq!(option(0), None);
        assert_eq!(option(u64::MAX), Some(Duration::from_millis(u64::MAX)));
    }

    #[test]
    fn the_c_spellings_are_the_vocabularys() {
        use mqstate::vocabulary::{Language, duration_spellings};
        let [not_given, no_wait, forever] = duration_spellings(Language::C);
        assert!(not_given.starts_with("0,"));
        assert_eq!(no_wait, "0");
        assert_eq!(forever, "MQSTATE_WAIT_FOREVER");
    }
}
