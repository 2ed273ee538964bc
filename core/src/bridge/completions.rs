//! [`CompletionQueue`]: how the outcomes of calls reach a host's event-loop thread, one
//! wake-up per batch.
//!
//! Hosts with an event loop (Python's asyncio, Node's libuv) settle their futures and
//! Promises on the loop's own thread, while a [`Call`](super::Call) completes on a library
//! thread. The completing thread [`push`](CompletionQueue::push)es what the loop needs (an
//! outcome with its future's token, a closure that settles a Promise) and wakes the loop
//! only when no wake-up is pending already; the loop then [`take`](CompletionQueue::take)s
//! everything queued since, so at high concurrency one wake-up settles many calls.
//!
//! | state | `push` | `take` | `close` |
//! |---|---|---|---|
//! | idle (nothing pending) | queues, **wakes**, → scheduled | returns nothing | → closed |
//! | scheduled (a wake-up on its way) | queues, no wake-up | returns the batch, → idle | → closed |
//! | closed (the host is gone) | drops the item | returns nothing | — |
//!
//! A consumer that takes one item at a time ([`pop_with`](CompletionQueue::pop_with), C's
//! file-descriptor mode) leaves the queue *scheduled* until it takes the last item.
//!
//! How the loop is woken is the host's: a byte on a pipe the loop watches, a napi
//! thread-safe function. [`push_and_wake`](CompletionQueue::push_and_wake) calls the wake-up
//! under the queue's lock, for wake-ups that must not race [`close`](CompletionQueue::close)
//! (a function `close` is about to free) or that [`take_with`](CompletionQueue::take_with)
//! undoes under the same lock (reading the pipe's byte). [`push`](CompletionQueue::push)
//! leaves the wake-up to the caller, after the lock is released, for wake-ups that take a
//! host's lock (Python's GIL) which the loop may hold while it takes.

use std::collections::VecDeque;
use std::sync::{Mutex, MutexGuard};

/// The outcomes waiting for one event loop (see the module documentation).
#[derive(Debug)]
pub struct CompletionQueue<T> {
    state: Mutex<State<T>>,
}

#[derive(Debug)]
struct State<T> {
    done: VecDeque<T>,
    /// A wake-up is on its way: the loop has not taken the queue since.
    scheduled: bool,
    /// The host is gone: nothing is queued any more.
    closed: bool,
}

impl<T> Default for CompletionQueue<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T> CompletionQueue<T> {
    /// An empty, open queue.
    pub fn new() -> CompletionQueue<T> {
        CompletionQueue {
            state: Mutex::new(State {
                done: VecDeque::new(),
                scheduled: false,
                closed: false,
            }),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State<T>> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Queues `item`; `true` when it starts a batch, and the caller must then wake the
    /// loop (once, after this returns). A closed queue drops the item and returns `false`.
    #[must_use = "the first item of a batch must wake the loop"]
    pub fn push(&self, item: T) -> bool {
        let mut state = self.lock();
        if state.closed {
            return false;
        }
        state.done.push_back(item);
        !std::mem::replace(&mut state.scheduled, true)
    }

    /// Queues `item` and, when it starts a batch, calls `wake` before the queue's lock is
    /// released. A closed queue drops the item and does not call `wake`.
    pub fn push_and_wake(&self, item: T, wake: impl FnOnce()) {
        let mut state = self.lock();
        if state.closed {
            return;
        }
        state.done.push_back(item);
        if !std::mem::replace(&mut state.scheduled, true) {
            wake();
        }
    }

    /// On the loop's thread: everything queued since the last take; the next push wakes the
    /// loop again.
    pub fn take(&self) -> VecDeque<T> {
        self.take_with(|| ())
    }

    /// As [`take`](Self::take), calling `consume_wake` under the lock when a wake-up was on
    /// its way (to read the byte a pipe wake-up wrote, say).
    pub fn take_with(&self, consume_wake: impl FnOnce()) -> VecDeque<T> {
        let mut state = self.lock();
        if std::mem::replace(&mut state.scheduled, false) {
            consume_wake();
        }
        std::mem::take(&mut state.done)
    }

    /// For a consumer that takes one item at a time (C's file-descriptor mode): the oldest
    /// item; the one that empties the queue calls `consume_wake` under the lock, so the
    /// wake-up is pending exactly while items are queued.
    pub fn pop_with(&self, consume_wake: impl FnOnce()) -> Option<T> {
        let mut state = self.lock();
        let item = state.done.pop_front()?;
        if state.done.is_empty() && std::mem::replace(&mut state.scheduled, false) {
            consume_wake();
        }
        Some(item)
    }

    /// Whether nothing is queued.
    pub fn is_empty(&self) -> bool {
        self.lock().done.is_empty()
    }

    /// The host is gone: drops what is queued; later pushes are dropped too.
    pub fn close(&self) {
        let done = {
            let mut state = self.lock();
            state.closed = true;
            std::mem::take(&mut state.done)
        };
        drop(done); // outside the lock: an item's drop may take other locks
    }

    /// Whether [`close`](Self::close) was called.
    pub fn is_closed(&self) -> bool {
        self.lock().closed
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[test]
    fn the_first_push_of_a_batch_wakes_and_the_rest_do_not() {
        let queue = CompletionQueue::new();
        assert!(queue.push(1));
        assert!(!queue.push(2));
        let mut wakes = 0;
        queue.push_and_wake(3, || wakes += 1);
        assert_eq!(wakes, 0, "a wake-up is already on its way");
        let mut consumed = 0;
        assert_eq!(queue.take_with(|| consumed += 1), [1, 2, 3]);
        assert_eq!(consumed, 1);
        assert!(queue.take_with(|| consumed += 1).is_empty());
        assert_eq!(consumed, 1, "no wake-up was pending");
        queue.push_and_wake(4, || wakes += 1);
        assert_eq!(wakes, 1, "a new batch wakes again");
        assert_eq!(queue.take(), [4]);
    }

    #[test]
    fn taking_one_at_a_time_keeps_the_wake_up_pending_while_items_are_queued() {
        let queue = CompletionQueue::new();
        let (mut wakes, mut consumed) = (0, 0);
        queue.push_and_wake(1, || wakes += 1);
        queue.push_and_wake(2, || wakes += 1);
        assert_eq!((wakes, queue.is_empty()), (1, false));
        assert_eq!(queue.pop_with(|| consumed += 1), Some(1));
        assert_eq!(consumed, 0, "an item is still queued");
        assert_eq!(queue.pop_with(|| consumed += 1), Some(2));
        assert_eq!((consumed, queue.is_empty()), (1, true));
        assert_eq!(queue.pop_with(|| consumed += 1), None);
        assert_eq!(consumed, 1);
        queue.push_and_wake(3, || wakes += 1);
        assert_eq!(wakes, 2, "the queue was empty: a new wake-up");
    }

    #[test]
    fn a_closed_queue_drops_what_it_held_and_what_comes_later() {
        let item = Arc::new(());
        let queue = CompletionQueue::new();
        assert!(queue.push(Arc::clone(&item)));
        queue.close();
        assert!(queue.is_closed());
        assert_eq!(Arc::strong_count(&item), 1, "the queued item was dropped");
        assert!(
            !queue.push(Arc::clone(&item)),
            "no wake-up for a closed queue"
        );
        queue.push_and_wake(Arc::clone(&item), || panic!("woken after close"));
        assert_eq!(Arc::strong_count(&item), 1);
        assert!(queue.take().is_empty());
    }

    /// Four threads push while a consumer takes whenever woken: every item arrives once,
    /// and no wake-up is lost (the consumer never waits on a batch nobody announced).
    #[test]
    fn concurrent_pushes_arrive_once_each_and_never_without_a_wake_up() {
        const THREADS: usize = 4;
        const EACH: usize = 5_000;
        let queue = Arc::new(CompletionQueue::new());
        let (wake_tx, wake_rx) = std::sync::mpsc::channel::<()>();
        let pushers: Vec<_> = (0..THREADS)
            .map(|t| {
                let queue = Arc::clone(&queue);
                let wake_tx = wake_tx.clone();
                std::thread::spawn(move || {
                    for i in 0..EACH {
                        if queue.push(t * EACH + i) {
                            wake_tx.send(()).unwrap();
                        }
                    }
                })
            })
            .collect();
        drop(wake_tx);
        let wakes = AtomicUsize::new(0);
        let mut seen = vec![false; THREADS * EACH];
        let mut count = 0;
        while count < THREADS * EACH {
            wake_rx
                .recv_timeout(std::time::Duration::from_secs(20))
                .expect("items are queued but no wake-up came");
            let batch = queue.take_with(|| {
                wakes.fetch_add(1, Ordering::Relaxed);
            });
            for item in batch {
                assert!(!std::mem::replace(&mut seen[item], true), "{item} twice");
                count += 1;
            }
        }
        for pusher in pushers {
            pusher.join().unwrap();
        }
        assert!(queue.take().is_empty());
        assert!(wakes.load(Ordering::Relaxed) <= THREADS * EACH);
    }
}
