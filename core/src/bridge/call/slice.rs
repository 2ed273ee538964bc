//! The waiting thread's slice timer, kept armed from one wait to the next.
//!
//! A host that waits in slices to run its own interrupt checks between them (Python's
//! Ctrl-C: [`Call::wait_slice`](super::Call::wait_slice)) would otherwise arm a new timer
//! for every call. That timer is the earliest of the library's runtime (a request's own
//! timeout is seconds away), and tokio's time driver wakes its runtime for each new
//! earliest timer: one `eventfd` write and one more `epoll_wait` per call. Kept armed, one
//! timer serves every call that completes within its slice; it is armed again only once it
//! has run out, at most once per slice.
//!
//! So a slice may end sooner than asked (what was left of the kept one): a slice is "up to",
//! and the host simply waits again. A wait that must last exactly (a timeout) does not use
//! it.

use std::cell::RefCell;
use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use tokio::runtime::{Handle, Id};
use tokio::time::{Instant, Sleep};

thread_local! {
    /// This thread's slice timer and the runtime it belongs to.
    static KEPT: RefCell<Option<(Id, Pin<Box<Sleep>>)>> = const { RefCell::new(None) };
}

/// Runs `future` (on the library's runtime, from the thread driving it) until it completes
/// (`Some`) or this thread's slice timer runs out (`None`); the timer is armed `slice` ahead
/// if it is not armed already within `slice`.
pub(super) async fn within<F: Future>(slice: Duration, future: F) -> Option<F::Output> {
    let runtime = Handle::current().id();
    let now = Instant::now();
    let kept = KEPT
        .with(|k| k.borrow_mut().take())
        .filter(|(id, _)| *id == runtime)
        .map(|(_, sleep)| sleep);
    let mut sleep = match kept {
        Some(mut sleep) => {
            if sleep.deadline() <= now || sleep.deadline() > now + slice {
                sleep.as_mut().reset(now + slice);
            }
            sleep
        }
        None => Box::pin(tokio::time::sleep_until(now + slice)),
    };
    let out = tokio::select! {
        biased;
        out = future => Some(out),
        () = sleep.as_mut() => None,
    };
    // Kept for the next wait. (A wait that unwinds drops its timer: the next one arms anew.)
    KEPT.with(|k| *k.borrow_mut() = Some((runtime, sleep)));
    out
}

/// In a child after `fork()`: this thread's timer belongs to the parent's runtime, whose
/// driver the child must never touch (its lock may have been held by a thread that is not
/// here): it is leaked, not dropped.
pub(super) fn forget() {
    let _ = KEPT.try_with(|k| {
        if let Some(kept) = k.borrow_mut().take() {
            std::mem::forget(kept);
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    const SLICE: Duration = Duration::from_millis(40);

    /// The deadline of this thread's kept timer, if any.
    fn kept() -> Option<Instant> {
        KEPT.with(|k| k.borrow().as_ref().map(|(_, sleep)| sleep.deadline()))
    }

    #[test]
    fn one_slice_timer_serves_every_wait_until_it_runs_out() {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .unwrap();
        runtime.block_on(async {
            assert_eq!(within(SLICE, async { 1 }).await, Some(1));
            let first = kept().expect("the timer is kept after a wait");
            assert_eq!(within(SLICE, async { 2 }).await, Some(2));
            assert_eq!(kept(), Some(first), "the next wait reuses it, not re-armed");

            let start = Instant::now();
            assert_eq!(within(SLICE, std::future::pending::<()>()).await, None);
            assert!(
                Instant::now() >= first,
                "a slice ends when the kept timer runs out"
            );
            assert!(Instant::now() - start <= SLICE + Duration::from_secs(5));

            assert_eq!(within(SLICE, async { 3 }).await, Some(3));
            let again = kept().expect("kept");
            assert!(again > first, "run out: armed again a slice ahead");

            assert_eq!(within(SLICE / 4, async { 4 }).await, Some(4));
            assert!(
                kept().expect("kept") <= Instant::now() + SLICE / 4,
                "a shorter slice is never stretched by a longer one kept"
            );
        });
        // Another runtime never uses this one's timer.
        let other = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .unwrap();
        let before = kept();
        other.block_on(async {
            assert_eq!(within(SLICE, async { 5 }).await, Some(5));
        });
        assert_ne!(kept(), before);
        forget();
        assert_eq!(kept(), None);
    }
}
