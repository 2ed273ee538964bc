//! The hybrid logical clock of spec §5: versions of stored values, fencing tokens, and the
//! `__ts` of every request.
//!
//! [`Hlc`] is a pure value with the two rules of the spec as methods taking the time as an
//! argument ([`Hlc::tick`] before sending, [`Hlc::receive`] on every `__ts` received).
//! [`Clock`] is the shared, thread-safe clock a process owns, reading time from an
//! injectable [`TimeSource`].

use std::cmp::Ordering;
use std::fmt;
use std::str::FromStr;
use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

use crate::codec::wire;
use crate::error::{Error, ErrorKind};

/// The maximum drift the service and the SDKs allow: one minute.
pub const DEFAULT_MAX_DRIFT_MS: u64 = 60_000;

/// One hybrid logical clock value: `{wall_ms}:{counter}:{node_id}`.
///
/// Ordered by wall clock, then counter, then node id byte-wise (spec §5.2). For fencing,
/// where the node id does not count, use [`Hlc::cmp_time`].
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Hlc {
    wall_ms: u64,
    counter: u64,
    node_id: Arc<str>,
}

impl Hlc {
    /// Builds a clock value; the node id must be non-empty and free of `:`.
    pub fn new(wall_ms: u64, counter: u64, node_id: impl Into<Arc<str>>) -> Result<Hlc, Error> {
        let node_id = node_id.into();
        check_node_id(&node_id)?;
        Ok(Hlc {
            wall_ms,
            counter,
            node_id,
        })
    }

    /// Parses `{wall}:{counter}:{node}`: both numbers plain decimal (any number of digits,
    /// no sign or space) fitting in 64 bits, the node id non-empty. Anything else is
    /// [`Malformed`](ErrorKind::Malformed).
    pub fn parse(text: &str) -> Result<Hlc, Error> {
        let malformed = || Error::malformed(format!("malformed timestamp {text:?}"));
        let mut parts = text.splitn(3, ':');
        let (Some(wall), Some(counter), Some(node)) = (parts.next(), parts.next(), parts.next())
        else {
            return Err(malformed());
        };
        let wall_ms = wire::parse_u64(wall.as_bytes()).ok_or_else(malformed)?;
        let counter = wire::parse_u64(counter.as_bytes()).ok_or_else(malformed)?;
        if node.is_empty() || node.contains(':') {
            return Err(malformed());
        }
        Ok(Hlc {
            wall_ms,
            counter,
            node_id: Arc::from(node),
        })
    }

    /// Milliseconds since the Unix epoch.
    pub fn wall_ms(&self) -> u64 {
        self.wall_ms
    }

    /// The logical counter.
    pub fn counter(&self) -> u64 {
        self.counter
    }

    /// The node id.
    pub fn node_id(&self) -> &str {
        &self.node_id
    }

    /// Compares (wall clock, counter) only: the order fencing tokens use (spec §5.2).
    pub fn cmp_time(&self, other: &Hlc) -> Ordering {
        (self.wall_ms, self.counter).cmp(&(other.wall_ms, other.counter))
    }

    fn with(&self, wall_ms: u64, counter: u64) -> Hlc {
        Hlc {
            wall_ms,
            counter,
            node_id: Arc::clone(&self.node_id),
        }
    }

    fn check_drift(wall_ms: u64, now_ms: u64, max_drift_ms: u64) -> Result<(), Error> {
        if wall_ms.saturating_sub(now_ms) > max_drift_ms {
            return Err(Error::new(
                ErrorKind::ClockDrift,
                format!(
                    "clock at {wall_ms} ms is more than {max_drift_ms} ms ahead of the local time {now_ms} ms"
                ),
            ));
        }
        Ok(())
    }

    fn overflow() -> Error {
        Error::new(
            ErrorKind::ClockOverflow,
            "hybrid logical clock counter overflow",
        )
    }

    /// The send step ("now" tick, spec §5.3): `(now, 0)` if `now` is past the wall clock,
    /// else the counter plus one. A clock more than `max_drift_ms` ahead of `now` is
    /// [`ClockDrift`](ErrorKind::ClockDrift); a counter at its maximum is
    /// [`ClockOverflow`](ErrorKind::ClockOverflow).
    pub fn tick(&self, now_ms: u64, max_drift_ms: u64) -> Result<Hlc, Error> {
        if now_ms > self.wall_ms {
            return Ok(self.with(now_ms, 0));
        }
        Hlc::check_drift(self.wall_ms, now_ms, max_drift_ms)?;
        let counter = self.counter.checked_add(1).ok_or_else(Hlc::overflow)?;
        Ok(self.with(self.wall_ms, counter))
    }

    /// The receive step (spec §5.3): merges `other` (a `__ts` from the service) into this
    /// clock at `now_ms`. A value from this clock's own node changes nothing.
    pub fn receive(&self, other: &Hlc, now_ms: u64, max_drift_ms: u64) -> Result<Hlc, Error> {
        if other.node_id == self.node_id {
            return Ok(self.clone());
        }
        let wall = now_ms.max(self.wall_ms).max(other.wall_ms);
        Hlc::check_drift(wall, now_ms, max_drift_ms)?;
        let mine = self.wall_ms == wall;
        let theirs = other.wall_ms == wall;
        let counter = match (mine, theirs) {
            (false, false) => return Ok(self.with(wall, 0)),
            (true, true) => self.counter.max(other.counter),
            (true, false) => self.counter,
            (false, true) => other.counter,
        };
        let counter = counter.checked_add(1).ok_or_else(Hlc::overflow)?;
        Ok(self.with(wall, counter))
    }
}

fn check_node_id(node_id: &str) -> Result<(), Error> {
    if node_id.is_empty() || node_id.contains(':') {
        return Err(Error::invalid_argument(format!(
            "node id {node_id:?} must be non-empty and must not contain ':'"
        )));
    }
    Ok(())
}

impl Ord for Hlc {
    fn cmp(&self, other: &Hlc) -> Ordering {
        self.cmp_time(other)
            .then_with(|| self.node_id.as_bytes().cmp(other.node_id.as_bytes()))
    }
}

impl PartialOrd for Hlc {
    fn partial_cmp(&self, other: &Hlc) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// Appends `n` in decimal, left-padded with zeros to `width` digits.
fn push_padded(out: &mut String, n: u64, width: usize) {
    let mut buf = [0u8; wire::MAX_DIGITS];
    let digits = wire::format_decimal(n, &mut buf);
    const ZEROS: &str = "000000000000000";
    out.push_str(&ZEROS[..width.saturating_sub(digits.len()).min(ZEROS.len())]);
    // Decimal digits are ASCII.
    out.push_str(std::str::from_utf8(digits).unwrap_or_default());
}

impl Hlc {
    /// The canonical text form (what [`Display`](fmt::Display) writes), formatted by hand:
    /// it is on every request and response.
    pub fn to_text(&self) -> String {
        let mut out = String::with_capacity(15 + 1 + 5 + 1 + self.node_id.len());
        push_padded(&mut out, self.wall_ms, 15);
        out.push(':');
        push_padded(&mut out, self.counter, 5);
        out.push(':');
        out.push_str(&self.node_id);
        out
    }
}

/// The canonical form: wall clock padded to 15 digits, counter to 5.
impl fmt::Display for Hlc {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_text())
    }
}

impl FromStr for Hlc {
    type Err = Error;
    fn from_str(s: &str) -> Result<Hlc, Error> {
        Hlc::parse(s)
    }
}

/// Where a [`Clock`] reads the time: milliseconds since the Unix epoch.
pub trait TimeSource: Send + Sync + 'static {
    /// The current time in milliseconds since the Unix epoch.
    fn now_ms(&self) -> u64;
}

/// The system's real-time clock.
#[derive(Clone, Copy, Debug, Default)]
pub struct SystemTimeSource;

impl TimeSource for SystemTimeSource {
    fn now_ms(&self) -> u64 {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
    }
}

impl<F: Fn() -> u64 + Send + Sync + 'static> TimeSource for F {
    fn now_ms(&self) -> u64 {
        self()
    }
}

/// A process's shared hybrid logical clock: thread-safe, one node id, time from a
/// [`TimeSource`]. Clone it freely: clones share the same state.
#[derive(Clone)]
pub struct Clock {
    state: Arc<Mutex<Hlc>>,
    time: Arc<dyn TimeSource>,
    max_drift_ms: u64,
}

impl fmt::Debug for Clock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Clock")
            .field("current", &self.current())
            .field("max_drift_ms", &self.max_drift_ms)
            .finish()
    }
}

impl Clock {
    /// A clock with `node_id`, reading the system time, with the default one-minute drift.
    pub fn new(node_id: &str) -> Result<Clock, Error> {
        Clock::with_time_source(node_id, SystemTimeSource, DEFAULT_MAX_DRIFT_MS)
    }

    /// A clock reading `time`, refusing to move more than `max_drift_ms` ahead of it.
    pub fn with_time_source(
        node_id: &str,
        time: impl TimeSource,
        max_drift_ms: u64,
    ) -> Result<Clock, Error> {
        let start = Hlc::new(time.now_ms(), 0, node_id)?;
        Ok(Clock {
            state: Arc::new(Mutex::new(start)),
            time: Arc::new(time),
            max_drift_ms,
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Hlc> {
        // A panic while holding the lock cannot leave an Hlc half-written: recover it.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The current value, without ticking.
    pub fn current(&self) -> Hlc {
        self.lock().clone()
    }

    /// The time source's current time.
    pub fn now_ms(&self) -> u64 {
        self.time.now_ms()
    }

    /// The maximum drift ahead of local time this clock accepts.
    pub fn max_drift_ms(&self) -> u64 {
        self.max_drift_ms
    }

    /// Ticks for a send and returns the new value (for a request's `__ts`).
    pub fn tick(&self) -> Result<Hlc, Error> {
        let now = self.time.now_ms();
        let mut state = self.lock();
        let next = state.tick(now, self.max_drift_ms)?;
        *state = next.clone();
        Ok(next)
    }

    /// Merges a received `__ts`. On error the clock is unchanged.
    pub fn receive(&self, other: &Hlc) -> Result<Hlc, Error> {
        let now = self.time.now_ms();
        let mut state = self.lock();
        let next = state.receive(other, now, self.max_drift_ms)?;
        *state = next.clone();
        Ok(next)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU64, Ordering as AtomicOrdering};

    #[test]
    fn display_pads() {
        let h = Hlc::new(1, 2, "n").unwrap();
        assert_eq!(h.to_string(), "000000000000001:00002:n");
        let wide = Hlc::new(u64::MAX, 123_456, "n").unwrap();
        assert_eq!(wide.to_text(), format!("{}:{}:n", u64::MAX, 123_456));
        assert_eq!(
            Hlc::new(0, 0, "x").unwrap().to_text(),
            "000000000000000:00000:x"
        );
        assert_eq!(Hlc::parse(&h.to_string()).unwrap(), h);
    }

    #[test]
    fn node_ids_with_colons_are_refused() {
        assert!(Hlc::new(1, 0, "a:b").is_err());
        assert!(Hlc::new(1, 0, "").is_err());
        assert!(Clock::new("x:y").is_err());
    }

    #[test]
    fn clock_uses_injected_time_and_is_monotonic() {
        let now = Arc::new(AtomicU64::new(1000));
        let source = Arc::clone(&now);
        let clock =
            Clock::with_time_source("me", move || source.load(AtomicOrdering::SeqCst), 60_000)
                .unwrap();
        let a = clock.tick().unwrap();
        let b = clock.tick().unwrap();
        assert!(b > a);
        now.store(500, AtomicOrdering::SeqCst); // time goes backwards
        let c = clock.tick().unwrap();
        assert!(c > b);
        let far = Hlc::new(500 + 60_001, 0, "them").unwrap();
        assert_eq!(
            clock.receive(&far).unwrap_err().kind(),
            ErrorKind::ClockDrift
        );
        assert_eq!(clock.current(), c);
    }
}
