//! Naming a broker that holds small packets.
//!
//! A broker that leaves Nagle's algorithm on (mosquitto's default: `set_tcp_nodelay false`)
//! sends a request's PUBACK at once, then holds the response until the client acknowledges
//! the PUBACK at the TCP level, which Linux delays by up to 40 ms when the client has nothing
//! to send. One request at a time then costs ≈ 44 ms instead of ≈ 0.5 ms, silently. On Linux
//! the client re-arms `TCP_QUICKACK` after each read (`set_tcp_quickack`, patched into
//! rumqttc: `third_party/rumqttc/PATCHES.md`), which removes the stall when the store does the
//! same. Where it cannot (another OS, or a store that does not), the client sees the
//! signature — each response arriving 30–60 ms after the broker acknowledged the latest
//! request, several times in a row — and says once, in the log, what to change.

use std::time::{Duration, Instant};

/// The gap between a request's PUBACK and a response that a delayed ACK produces.
const STALL: std::ops::RangeInclusive<Duration> =
    Duration::from_millis(30)..=Duration::from_millis(60);
/// Responses in a row with that gap before the broker is named.
const STREAK: u32 = 5;

/// Watches the gaps between PUBACKs and responses on one connection.
#[derive(Debug, Default)]
pub(crate) struct NagleWatch {
    last_ack: Option<Instant>,
    streak: u32,
    warned: bool,
}

impl NagleWatch {
    /// The broker acknowledged a request (routed to a subscriber) at `at`.
    pub(crate) fn acked(&mut self, at: Instant) {
        self.last_ack = Some(at);
    }

    /// A response arrived at `at`: true once, when the streak names the broker.
    pub(crate) fn answered(&mut self, at: Instant) -> bool {
        let stalled = self
            .last_ack
            .take()
            .is_some_and(|ack| STALL.contains(&at.saturating_duration_since(ack)));
        self.streak = if stalled { self.streak + 1 } else { 0 };
        if self.streak >= STREAK && !self.warned {
            self.warned = true;
            return true;
        }
        false
    }
}

/// What the log says when the watch fires.
pub(crate) const ADVICE: &str = "responses arrive about 40 ms after the broker acknowledges each \
    request: the broker seems to hold small packets (Nagle's algorithm) until the client's \
    delayed TCP acknowledgement; with mosquitto, set `set_tcp_nodelay true` in mosquitto.conf \
    (docs/server.md, \"Broker settings that matter\")";

#[cfg(test)]
mod tests {
    use super::*;

    fn run(gaps_ms: &[u64]) -> Vec<bool> {
        let mut watch = NagleWatch::default();
        let mut t = Instant::now();
        gaps_ms
            .iter()
            .map(|&gap| {
                watch.acked(t);
                t += Duration::from_millis(gap);
                let fired = watch.answered(t);
                t += Duration::from_millis(1);
                fired
            })
            .collect()
    }

    #[test]
    fn five_delayed_answers_in_a_row_name_the_broker_once() {
        assert_eq!(
            run(&[41, 42, 44, 40, 43, 41, 44]),
            [false, false, false, false, true, false, false]
        );
    }

    #[test]
    fn a_fast_or_slow_answer_breaks_the_streak() {
        assert!(!run(&[41, 42, 44, 40, 0, 43, 41, 44, 40]).contains(&true));
        assert!(!run(&[41, 42, 44, 40, 200, 43, 41, 44, 40]).contains(&true));
        assert!(!run(&[0; 20]).contains(&true));
    }

    #[test]
    fn an_answer_without_an_ack_breaks_the_streak() {
        let mut watch = NagleWatch::default();
        let t = Instant::now();
        for n in 0..4 {
            watch.acked(t + Duration::from_millis(100 * n));
            assert!(!watch.answered(t + Duration::from_millis(100 * n + 41)));
        }
        assert!(!watch.answered(t + Duration::from_millis(500)));
        watch.acked(t + Duration::from_millis(600));
        assert!(!watch.answered(t + Duration::from_millis(641)));
    }
}
