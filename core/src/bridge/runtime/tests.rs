//! The library's runtime driven by its waiters: liveness whoever waits, and however.

use std::sync::mpsc;
use std::time::{Duration, Instant};

use super::shared_handle;
use crate::bridge::Call;
use crate::error::Error;

/// A generous bound for "it happened", never a speed claim.
const EVENTUALLY: Duration = Duration::from_secs(30);

fn call<T: Send + 'static>(work: impl Future<Output = T> + Send + 'static) -> Call<T> {
    Call::spawn(&shared_handle(), async move { Ok::<T, Error>(work.await) })
}

#[test]
fn blocking_waits_on_many_threads_all_complete() {
    let threads: Vec<_> = (0..8u64)
        .map(|t| {
            std::thread::spawn(move || {
                for i in 0..200u64 {
                    let got = call(async move {
                        tokio::task::yield_now().await;
                        tokio::time::sleep(Duration::from_micros(10)).await;
                        t * 1000 + i
                    })
                    .wait(None)
                    .unwrap();
                    assert_eq!(got, t * 1000 + i);
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
}

#[test]
fn a_call_nobody_waits_for_still_runs_after_a_blocking_wait() {
    // A blocking wait first, so that the background thread is the one lingering.
    assert_eq!(call(async { 1 }).wait(None).unwrap(), 1);
    a_call_nobody_waits_for_runs();
}

/// Drops a call that sleeps, then waits for it to have run anyway.
fn a_call_nobody_waits_for_runs() {
    let (tx, rx) = mpsc::channel();
    drop(call(async move {
        tokio::time::sleep(Duration::from_millis(2)).await;
        tx.send(()).unwrap();
    }));
    rx.recv_timeout(EVENTUALLY).expect("the call ran");
}

#[test]
fn a_call_nobody_waits_for_still_runs_after_blocking_waits_kept_coming() {
    // Blocking waits for longer than several lingers, so that the lingers have grown.
    let until = Instant::now() + super::LINGER_MAX * 4;
    let mut i = 0u64;
    while Instant::now() < until {
        assert_eq!(call(async move { i }).wait(None).unwrap(), i);
        i += 1;
    }
    a_call_nobody_waits_for_runs();
}

#[test]
fn a_linger_doubles_while_waiters_keep_coming_up_to_its_bound() {
    use super::driver::linger_for;
    use super::{LINGER, LINGER_MAX};
    assert_eq!(linger_for(0), LINGER);
    assert_eq!(linger_for(1), LINGER * 2);
    assert_eq!(linger_for(2), LINGER * 4);
    assert!(LINGER < LINGER_MAX);
    for round in [3, 10, 31, 32, 33, 1000, u32::MAX] {
        assert_eq!(linger_for(round), LINGER_MAX, "round {round}");
    }
    let mut last = Duration::ZERO;
    for round in 0..40 {
        assert!(
            linger_for(round) >= last,
            "round {round} is shorter than the one before"
        );
        last = linger_for(round);
    }
}

#[test]
fn awaited_and_callback_calls_complete_while_a_thread_drives() {
    let driving = std::thread::spawn(|| {
        for i in 0..300u32 {
            assert_eq!(call(async move { i }).wait(None).unwrap(), i);
        }
    });
    let (tx, rx) = mpsc::channel();
    for i in 0..50u32 {
        let tx = tx.clone();
        call(async move {
            tokio::time::sleep(Duration::from_micros(50)).await;
            i
        })
        .on_complete(move |r| tx.send(r.unwrap()).unwrap());
    }
    let other = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    for i in 0..50u32 {
        let got = other.block_on(call(async move {
            tokio::time::sleep(Duration::from_micros(50)).await;
            i
        }));
        assert_eq!(got.unwrap(), i);
    }
    let mut delivered: Vec<u32> = (0..50)
        .map(|_| rx.recv_timeout(EVENTUALLY).unwrap())
        .collect();
    delivered.sort_unstable();
    assert_eq!(delivered, (0..50).collect::<Vec<_>>());
    driving.join().unwrap();
}

#[test]
fn a_slice_ends_without_the_result_and_a_later_one_gets_it() {
    let (tx, rx) = tokio::sync::oneshot::channel::<u8>();
    let pending = call(async move { rx.await.unwrap() });
    // Nothing can complete it yet: every slice ends empty-handed, and the call goes on.
    for _ in 0..3 {
        assert!(pending.wait_slice(Duration::from_millis(5)).is_none());
    }
    tx.send(7).unwrap();
    let got = loop {
        if let Some(result) = pending.wait_slice(Duration::from_millis(50)) {
            break result;
        }
    };
    assert_eq!(got.unwrap(), 7);
}

#[test]
fn a_wait_with_a_timeout_cancels_the_call() {
    let (_tx, rx) = tokio::sync::oneshot::channel::<u8>();
    let pending = call(async move { rx.await.unwrap_or(0) });
    let canceller = pending.canceller();
    let err = pending.wait(Some(Duration::from_millis(5))).unwrap_err();
    assert_eq!(err.kind(), crate::ErrorKind::Timeout);
    canceller.cancel(); // idempotent: already cancelled
}

#[test]
fn a_lone_blocking_waiter_runs_its_call_itself_not_as_a_task() {
    // Whether this thread is the only one waiting depends on the other tests running at the
    // same time (some keep blocking waiters busy on 8 threads): it is once they are done, if
    // not sooner, and then the work ran outside of any task. A fixed number of tries could
    // all fall while they run (it did in CI); the deadline only bounds a broken runtime.
    let deadline = Instant::now() + EVENTUALLY;
    let mut tries = 0u64;
    let inline = loop {
        tries += 1;
        let ran_inline = call(async { tokio::task::try_id().is_none() })
            .wait(None)
            .unwrap();
        if ran_inline || super::is_threaded() || Instant::now() >= deadline {
            break ran_inline;
        }
    };
    if super::is_threaded() {
        // MQSTATE_RUNTIME=threaded: every call is a task of the runtime's own workers.
        assert!(!inline, "a call ran outside the threaded runtime's tasks");
    } else {
        assert!(inline, "the work ran as a task in all {tries} tries");
    }
}

#[test]
fn a_call_cancelled_before_anyone_waits_never_runs() {
    let (tx, rx) = mpsc::channel();
    let pending = call(async move {
        tx.send(()).unwrap();
        std::future::pending::<()>().await;
    });
    pending.cancel();
    let err = pending.wait(None).unwrap_err();
    assert_eq!(err.kind(), crate::ErrorKind::Cancelled);
    if super::is_threaded() {
        return; // there a call starts at once: whether it ran before the cancel is a race
    }
    // The work was dropped unstarted: its sender is gone without a message.
    assert_eq!(
        rx.recv_timeout(EVENTUALLY),
        Err(mpsc::RecvTimeoutError::Disconnected)
    );
}

#[test]
fn a_call_run_here_past_its_slice_goes_on_as_a_task() {
    let (tx, rx) = tokio::sync::oneshot::channel::<u8>();
    let (ran_tx, ran_rx) = mpsc::channel();
    let pending = call(async move {
        ran_tx.send(std::thread::current().id()).unwrap();
        rx.await.unwrap()
    });
    // The first slice starts the work (here or on a task) and ends without the result.
    assert!(pending.wait_slice(Duration::from_millis(5)).is_none());
    ran_rx.recv_timeout(EVENTUALLY).expect("the work started");
    // Completed from elsewhere while nobody waits: the rest ran as a task.
    tx.send(9).unwrap();
    let (done_tx, done_rx) = mpsc::channel();
    pending.on_complete(move |r| done_tx.send(r.unwrap()).unwrap());
    assert_eq!(done_rx.recv_timeout(EVENTUALLY).unwrap(), 9);
}
