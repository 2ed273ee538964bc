//! The service's side of spec §5: reading `__ts` / `__ft`, and issuing versions from the
//! service's own hybrid logical clock with the core's rules ([`Hlc::receive`] to merge a
//! request's `__ts`, [`Hlc::tick`] for a version no request stamped).

use std::cmp::Ordering;

use mqstate::Hlc;
use mqstate::codec::{StoreError, StoreErrorKind};

/// The service clock plus whether its current value is still unissued.
///
/// Every version the store hands out comes from here, and restored versions raise it, so
/// each new version is strictly newer than every version issued before: in particular
/// newer than the key's previous version.
#[derive(Debug)]
pub(crate) struct ServiceClock {
    current: Hlc,
    /// `current` was produced by merging a request's `__ts` and has not been issued yet:
    /// the next version is exactly it (spec §5.4's example: equal clocks give counter 1).
    fresh: bool,
}

/// The internal steps never refuse drift: the request's own `__ts`/`__ft` are checked
/// against the configured drift before they reach the clock, and the clock itself may sit
/// ahead of the time after accepting such a stamp (or after a restart with a slower clock).
const NO_DRIFT_LIMIT: u64 = u64::MAX;

/// The largest `__ts` counter the service merges. The clock is shared by every client: a
/// stamp with a counter near `u64::MAX` (its wall clock just inside the drift) would leave
/// no room to tick, and every later stamped request would fail until the wall clock passed
/// it. Refusing counters above half the range keeps at least 2^63 ticks for everyone else.
pub(crate) const MAX_STAMP_COUNTER: u64 = u64::MAX / 2;

impl ServiceClock {
    /// A clock named `node_id` starting at `now_ms`. A node id the HLC format cannot carry
    /// (empty, or containing `:`) is repaired: empty becomes `StateStore`, `:` becomes `_`.
    pub(crate) fn new(node_id: &str, now_ms: u64) -> ServiceClock {
        let repaired = if node_id.is_empty() {
            "StateStore".to_owned()
        } else {
            node_id.replace(':', "_")
        };
        let current = Hlc::new(now_ms, 0, repaired.as_str())
            .or_else(|_| Hlc::new(now_ms, 0, "StateStore"))
            .expect("StateStore is a valid node id");
        ServiceClock {
            current,
            fresh: false,
        }
    }

    /// The current value (the `__ts` of answers that carry no key version).
    pub(crate) fn current(&self) -> &Hlc {
        &self.current
    }

    /// Merges a request's `__ts` (already checked for drift) with the receive rule. A stamp
    /// carrying the service's own node id is merged as if it came from another node, so the
    /// next version is newer than it all the same. A counter above [`MAX_STAMP_COUNTER`] is
    /// refused (`malformed timestamp`) and leaves the clock alone.
    pub(crate) fn merge(&mut self, stamp: &Hlc, now_ms: u64) -> Result<(), StoreError> {
        if stamp.counter() > MAX_STAMP_COUNTER {
            return Err(StoreErrorKind::TimestampMalformed.into());
        }
        let foreign;
        let stamp = if stamp.node_id() == self.current.node_id() {
            let other = format!("{}'", stamp.node_id());
            foreign = Hlc::new(stamp.wall_ms(), stamp.counter(), other)
                .map_err(|_| StoreErrorKind::TimestampMalformed)?;
            &foreign
        } else {
            stamp
        };
        // A counter that cannot be incremented cannot be merged: the stamp is unusable.
        self.current = self
            .current
            .receive(stamp, now_ms, NO_DRIFT_LIMIT)
            .map_err(|_| StoreErrorKind::TimestampMalformed)?;
        self.fresh = true;
        Ok(())
    }

    /// A new version: the merged request stamp if it is still unissued, else a tick. It is
    /// strictly newer than `previous` (the key's last version) and than every earlier one.
    ///
    /// A merged stamp left unissued by an earlier request (a GET, say) is stale once time
    /// has moved on: a change made later (a PX expiry) gets a tick at `now_ms` instead.
    pub(crate) fn issue(&mut self, now_ms: u64, previous: Option<&Hlc>) -> Result<Hlc, StoreError> {
        if !self.fresh || self.current.wall_ms() < now_ms {
            self.current = self.tick(now_ms)?;
        }
        // Unreachable while every version comes from this clock (restores raise it); kept
        // as a guard that jumps past the key's version in one step.
        if let Some(previous) = previous
            && self.current.cmp_time(previous) != Ordering::Greater
        {
            self.raise_to(previous);
            self.current = self.tick(now_ms)?;
        }
        self.fresh = false;
        Ok(self.current.clone())
    }

    /// Raises the clock to at least `version` (a version restored from the journal).
    pub(crate) fn raise_to(&mut self, version: &Hlc) {
        if version.cmp_time(&self.current) == Ordering::Greater
            && let Ok(raised) =
                Hlc::new(version.wall_ms(), version.counter(), self.current.node_id())
        {
            self.current = raised;
            self.fresh = false;
        }
    }

    fn tick(&self, now_ms: u64) -> Result<Hlc, StoreError> {
        self.current
            .tick(now_ms, NO_DRIFT_LIMIT)
            .map_err(|_| StoreError::other("the service clock counter overflowed"))
    }
}

/// Parses an optional `__ts` or `__ft`: `malformed timestamp` if it is not an HLC, and
/// `skew` if it is more than `max_drift_ms` ahead of `now_ms`.
pub(crate) fn parse_stamp(
    text: Option<&str>,
    now_ms: u64,
    max_drift_ms: u64,
    skew: StoreErrorKind,
) -> Result<Option<Hlc>, StoreError> {
    let Some(text) = text else {
        return Ok(None);
    };
    let stamp = Hlc::parse(text).map_err(|_| StoreErrorKind::TimestampMalformed)?;
    if stamp.wall_ms().saturating_sub(now_ms) > max_drift_ms {
        return Err(skew.into());
    }
    Ok(Some(stamp))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hlc(text: &str) -> Hlc {
        Hlc::parse(text).unwrap()
    }

    #[test]
    fn spec_example_equal_clocks_give_counter_one() {
        let mut clock = ServiceClock::new("StateStore", 1_696_374_425_000);
        clock
            .merge(&hlc("1696374425000:0:CLIENT"), 1_696_374_425_000)
            .unwrap();
        let v = clock.issue(1_696_374_425_000, None).unwrap();
        assert_eq!(v, hlc("1696374425000:1:StateStore"));
        // Issued once: the next version ticks.
        let w = clock.issue(1_696_374_425_000, Some(&v)).unwrap();
        assert_eq!(w, hlc("1696374425000:2:StateStore"));
    }

    #[test]
    fn own_node_stamps_still_order_before_the_version() {
        let mut clock = ServiceClock::new("StateStore", 1000);
        let stamp = hlc("1000:7:StateStore");
        clock.merge(&stamp, 1000).unwrap();
        assert!(clock.issue(1000, None).unwrap().cmp_time(&stamp) == Ordering::Greater);
    }

    #[test]
    fn overflowing_stamps_are_refused_and_leave_the_clock_alone() {
        let mut clock = ServiceClock::new("S", 1000);
        let before = clock.current().clone();
        let err = clock
            .merge(&hlc("1000:18446744073709551615:c"), 1000)
            .unwrap_err();
        assert_eq!(err.kind(), StoreErrorKind::TimestampMalformed);
        assert_eq!(clock.current(), &before);
    }

    #[test]
    fn a_version_behind_the_key_jumps_past_it() {
        let mut clock = ServiceClock::new("S", 1000);
        let previous = hlc("900000:5:S");
        assert_eq!(
            clock.issue(1000, Some(&previous)).unwrap(),
            hlc("900000:6:S")
        );
    }

    #[test]
    fn raise_to_and_repair() {
        let mut clock = ServiceClock::new("a:b", 5);
        assert_eq!(clock.current().node_id(), "a_b");
        clock.raise_to(&hlc("9000:3:a_b"));
        assert_eq!(clock.issue(10, None).unwrap(), hlc("9000:4:a_b"));
        assert_eq!(ServiceClock::new("", 1).current().node_id(), "StateStore");
    }

    #[test]
    fn stamps_are_parsed_and_checked_for_skew() {
        let skew = StoreErrorKind::FencingTokenSkew;
        assert_eq!(parse_stamp(None, 0, 10, skew), Ok(None));
        assert_eq!(
            parse_stamp(Some("x"), 0, 10, skew).unwrap_err().kind(),
            StoreErrorKind::TimestampMalformed
        );
        assert!(parse_stamp(Some("110:0:c"), 100, 10, skew).is_ok());
        assert_eq!(
            parse_stamp(Some("111:0:c"), 100, 10, skew)
                .unwrap_err()
                .kind(),
            skew
        );
    }
}
