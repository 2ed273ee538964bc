//! Awaiting a core [`Call`] from a foreign coroutine: [`settle`].
//!
//! A Kotlin coroutine (a Swift task) that is cancelled drops the Rust future it was
//! awaiting, but dropping a core [`Call`] does not cancel it: its work would go on (an
//! `acquire` would take the lock later, for nobody). The future [`settle`] returns cancels
//! the call when it is dropped before the call completed, so cancelling the coroutine
//! cancels the core call too.

use mqstate::bridge::{Call, Canceller};

use crate::MqstateError;

/// Cancels its call on drop unless disarmed.
struct CancelOnDrop(Option<Canceller>);

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        if let Some(canceller) = self.0.take() {
            canceller.cancel();
        }
    }
}

/// Awaits `call` (from any executor) and maps its error; dropping the returned future
/// before it completes cancels the call.
pub(crate) async fn settle<T: Send + 'static>(call: Call<T>) -> Result<T, MqstateError> {
    let mut guard = CancelOnDrop(Some(call.canceller()));
    let result = call.await;
    guard.0 = None;
    Ok(result?)
}

#[cfg(test)]
mod tests {
    use std::future::Future;
    use std::pin::pin;
    use std::sync::Arc;
    use std::task::{Context, Poll, Wake, Waker};
    use std::time::Duration;

    use mqstate::bridge::runtime::shared_handle;
    use mqstate::{Error, ErrorKind};

    use super::*;

    struct Noop;
    impl Wake for Noop {
        fn wake(self: Arc<Self>) {}
    }

    #[test]
    fn dropping_the_future_cancels_the_call() {
        let (tx, rx) = std::sync::mpsc::channel();
        let call: Call<()> = Call::spawn(&shared_handle(), async move {
            struct Report(std::sync::mpsc::Sender<&'static str>);
            impl Drop for Report {
                fn drop(&mut self) {
                    let _ = self.0.send("dropped");
                }
            }
            let _report = Report(tx);
            tokio::time::sleep(Duration::from_secs(60)).await;
            Err(Error::new(ErrorKind::Timeout, "never"))
        });
        let waker = Waker::from(Arc::new(Noop));
        {
            let mut fut = pin!(settle(call));
            assert!(matches!(
                fut.as_mut().poll(&mut Context::from_waker(&waker)),
                Poll::Pending
            ));
        }
        // The call's work was dropped (cancelled), long before its 60 s: either after it
        // started (it reports) or before (its sender goes unused).
        let outcome = rx.recv_timeout(Duration::from_secs(5));
        assert!(
            matches!(
                outcome,
                Ok("dropped") | Err(std::sync::mpsc::RecvTimeoutError::Disconnected)
            ),
            "{outcome:?}"
        );
    }

    #[test]
    fn a_completed_call_maps_its_error() {
        let call: Call<()> = Call::ready(Err(Error::new(ErrorKind::NotHeld, "no")));
        let waker = Waker::from(Arc::new(Noop));
        let mut fut = pin!(settle(call));
        match fut.as_mut().poll(&mut Context::from_waker(&waker)) {
            Poll::Ready(Err(e)) => assert_eq!(e.code(), "not_held"),
            other => panic!("{other:?}"),
        }
    }
}
