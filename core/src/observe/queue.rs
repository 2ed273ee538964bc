//! A bounded event queue with one overflow policy, read three ways: awaited (any executor),
//! waited for with a timeout from a plain thread, or polled without waiting.
//!
//! **Overflow policy**: at most `capacity` events are buffered; when a slow reader lets the
//! queue fill up, the *oldest* buffered event is discarded and counted, and the count is
//! handed out with the next event read (so the reader learns how many it missed). The newest
//! state is therefore always delivered, and memory stays bounded.
//!
//! Several readers may share a queue (clones of one subscription): each event goes to one of
//! them.

use std::collections::VecDeque;
use std::sync::{Condvar, Mutex, MutexGuard};
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

struct State<T> {
    items: VecDeque<T>,
    dropped: u64,
    closed: bool,
    wakers: Vec<Waker>,
}

/// What a blocking read found.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Next<T> {
    /// An event, with the number of events discarded before it.
    Event(T, u64),
    /// The queue is closed and drained.
    Closed,
    /// Nothing arrived within the timeout.
    TimedOut,
}

/// A bounded multi-reader queue (see the module documentation).
pub(crate) struct EventQueue<T> {
    state: Mutex<State<T>>,
    ready: Condvar,
    capacity: usize,
}

impl<T> EventQueue<T> {
    /// An empty queue holding at most `capacity` (at least 1) events.
    pub(crate) fn new(capacity: usize) -> Self {
        EventQueue {
            state: Mutex::new(State {
                items: VecDeque::new(),
                dropped: 0,
                closed: false,
                wakers: Vec::new(),
            }),
            ready: Condvar::new(),
            capacity: capacity.max(1),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State<T>> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn wake(&self, wakers: Vec<Waker>) {
        self.ready.notify_all();
        for w in wakers {
            w.wake();
        }
    }

    /// Appends an event, discarding the oldest when full. Ignored once closed.
    pub(crate) fn push(&self, event: T) {
        let wakers = {
            let mut q = self.lock();
            if q.closed {
                return;
            }
            if q.items.len() >= self.capacity {
                q.items.pop_front();
                q.dropped += 1;
            }
            q.items.push_back(event);
            std::mem::take(&mut q.wakers)
        };
        self.wake(wakers);
    }

    /// Closes the queue: readers drain what is buffered, then see the end.
    pub(crate) fn close(&self) {
        let wakers = {
            let mut q = self.lock();
            q.closed = true;
            std::mem::take(&mut q.wakers)
        };
        self.wake(wakers);
    }

    /// Whether the queue was closed.
    pub(crate) fn is_closed(&self) -> bool {
        self.lock().closed
    }

    fn pop(q: &mut State<T>) -> Option<(T, u64)> {
        let item = q.items.pop_front()?;
        Some((item, std::mem::take(&mut q.dropped)))
    }

    /// The next event (with the discarded count), `None` once closed and drained, or pending.
    pub(crate) fn poll_next(&self, cx: &mut Context<'_>) -> Poll<Option<(T, u64)>> {
        let mut q = self.lock();
        if let Some(next) = Self::pop(&mut q) {
            return Poll::Ready(Some(next));
        }
        if q.closed {
            return Poll::Ready(None);
        }
        if !q.wakers.iter().any(|w| w.will_wake(cx.waker())) {
            q.wakers.push(cx.waker().clone());
        }
        Poll::Pending
    }

    /// The next event if one is buffered.
    pub(crate) fn try_next(&self) -> Option<(T, u64)> {
        Self::pop(&mut self.lock())
    }

    /// Blocks the calling thread until an event arrives, the queue closes, or `timeout`
    /// passes (`None`: no limit).
    pub(crate) fn next_blocking(&self, timeout: Option<Duration>) -> Next<T> {
        let deadline = timeout.map(|t| Instant::now() + t);
        let mut q = self.lock();
        loop {
            if let Some((item, dropped)) = Self::pop(&mut q) {
                return Next::Event(item, dropped);
            }
            if q.closed {
                return Next::Closed;
            }
            q = match deadline {
                None => self.ready.wait(q).unwrap_or_else(|e| e.into_inner()),
                Some(d) => {
                    let left = d.saturating_duration_since(Instant::now());
                    if left.is_zero() {
                        return Next::TimedOut;
                    }
                    self.ready
                        .wait_timeout(q, left)
                        .unwrap_or_else(|e| e.into_inner())
                        .0
                }
            };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn drops_the_oldest_and_counts() {
        let q = EventQueue::new(2);
        for i in 0..5 {
            q.push(i);
        }
        assert_eq!(q.try_next(), Some((3, 3)));
        assert_eq!(q.try_next(), Some((4, 0)));
        assert_eq!(q.try_next(), None);
    }

    #[test]
    fn blocking_reads_wake_on_push_close_and_time_out() {
        let q = Arc::new(EventQueue::new(8));
        assert_eq!(
            q.next_blocking(Some(Duration::from_millis(10))),
            Next::TimedOut
        );
        let writer = {
            let q = Arc::clone(&q);
            std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(20));
                q.push(7);
                q.close();
            })
        };
        assert_eq!(q.next_blocking(None), Next::Event(7, 0));
        assert_eq!(q.next_blocking(None), Next::Closed);
        writer.join().unwrap();
        q.push(8);
        assert_eq!(q.try_next(), None, "closed queues take nothing");
    }
}
