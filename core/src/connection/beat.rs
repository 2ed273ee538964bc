//! The connection's beat: one timer kept armed while requests are being made, so that a
//! request's own timeout is never the earliest timer of its runtime.
//!
//! tokio's time driver wakes its runtime (a write to the I/O driver's `eventfd`, then one
//! more turn of the event loop) whenever a new timer is earlier than every timer it knew of
//! when it last went to sleep. A request's timeout is such a timer whenever nothing else is
//! armed: one request at a time on the library's current-thread runtime (C, blocking
//! Python), each request's timer was gone with its response before the next one came, so
//! every request paid one `write` and one extra `epoll_wait` (docs/benchmarks.md, "What
//! stands in the way", C; the raw runs: `git show 76f337e:docs/benchmarks/history.md`,
//! "The blocking path"). The beat is a timer at most [`BEAT`] ahead: with it armed, a
//! request whose timeout is at least [`BEAT`] is never the earliest, and nothing is written.
//!
//! It costs one wake-up of the connection per [`BEAT`] while requests come, and stops after
//! a whole [`BEAT`] without one (an idle client is not woken); the first request after that
//! arms it again.

use std::pin::Pin;
use std::time::Duration;

use tokio::time::{Instant, Sleep};

/// How far ahead the beat is armed: requests with a timeout at least this long never arm
/// the runtime's earliest timer.
pub(super) const BEAT: Duration = Duration::from_secs(1);

/// The beat of one connection.
pub(super) struct Beat {
    period: Duration,
    sleep: Pin<Box<Sleep>>,
    /// The timer is armed (else it lapsed with no request for a whole beat).
    armed: bool,
    /// A request went out since the timer was last armed.
    active: bool,
}

impl Beat {
    /// An armed beat of `period` ([`BEAT`] but in tests).
    pub(super) fn new(period: Duration) -> Beat {
        Beat {
            period,
            sleep: Box::pin(tokio::time::sleep(period)),
            armed: true,
            active: false,
        }
    }

    /// Whether the timer is armed (the select waits on [`Beat::elapsed`] only then).
    pub(super) fn armed(&self) -> bool {
        self.armed
    }

    /// Completes when the armed timer runs out.
    pub(super) async fn elapsed(&mut self) {
        self.sleep.as_mut().await;
    }

    /// A request went out: the beat goes on (armed again if it had lapsed).
    pub(super) fn request_sent(&mut self) {
        self.active = true;
        if !self.armed {
            self.sleep.as_mut().reset(Instant::now() + self.period);
            self.armed = true;
        }
    }

    /// The timer ran out: armed again if requests came meanwhile, else left to lapse.
    pub(super) fn on_elapsed(&mut self) {
        if std::mem::take(&mut self.active) {
            self.sleep.as_mut().reset(Instant::now() + self.period);
        } else {
            self.armed = false;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PERIOD: Duration = Duration::from_millis(20);

    /// Waits for the beat; how long it took.
    async fn wait(beat: &mut Beat) -> Duration {
        let start = Instant::now();
        beat.elapsed().await;
        Instant::now() - start
    }

    #[tokio::test]
    async fn the_beat_goes_on_while_requests_come_and_lapses_without_them() {
        let mut beat = Beat::new(PERIOD);
        assert!(beat.armed());
        beat.request_sent();
        wait(&mut beat).await;
        beat.on_elapsed();
        assert!(beat.armed(), "a request came during the beat: armed again");
        assert!(
            wait(&mut beat).await >= PERIOD,
            "armed a whole period ahead"
        );
        beat.on_elapsed();
        assert!(!beat.armed(), "a whole period without a request: lapsed");
        beat.request_sent();
        assert!(beat.armed(), "the next request arms it again");
        assert!(wait(&mut beat).await >= PERIOD);
        beat.request_sent();
        beat.request_sent();
        beat.on_elapsed();
        assert!(beat.armed());
    }
}
