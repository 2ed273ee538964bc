//! [`CallRecord`]: one completed call as a binding without an OpenTelemetry API reports it
//! (C's call observer), measured here once: the operation, how long it took, how it ended,
//! whether the cache answered, and the trace context it carried.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use super::TraceContext;
use crate::error::Error;

/// One completed call: what a [`CallObserver`] is given.
#[derive(Clone, Copy, Debug)]
pub struct CallRecord<'a> {
    /// The request's verb as the wire spells it (`SET`, `GET`, `DEL`, `VDEL`): the span
    /// name and `db.operation.name` of the other languages.
    pub operation: &'static str,
    /// From the call's start to its end (a cache hit's included).
    pub duration: Duration,
    /// The error the call ended with, or `None` when it succeeded. A call abandoned before
    /// it ended (its caller cancelled it) ends with `cancelled`.
    pub error: Option<&'a Error>,
    /// `true` when the client's cache answered (no request was sent).
    pub cache_hit: bool,
    /// The trace context the call's request carried ([`Client::traced`](crate::Client::traced)).
    pub trace: Option<&'a TraceContext>,
}

/// What is told of every completed call of a client ([`CallObservers::set`]). It runs on
/// the thread that completed the call (a runtime thread, or the caller's for a cache hit):
/// it must be quick and must not block.
pub type CallObserver = Arc<dyn Fn(&CallRecord<'_>) + Send + Sync>;

/// The observer of a client's calls, shared by every clone of its handle: none until one is
/// set, and then one read of a lock per call.
#[derive(Clone, Default)]
pub struct CallObservers {
    slot: Arc<RwLock<Option<CallObserver>>>,
    /// Whether an observer is set: a call without one reads this alone (no lock, no shared
    /// write: parallel calls do not contend on the slot's reader count).
    set: Arc<AtomicBool>,
}

impl std::fmt::Debug for CallObservers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CallObservers")
            .field("set", &self.current().is_some())
            .finish()
    }
}

impl CallObservers {
    /// Replaces the observer (`None`: no more records). Calls already started report to the
    /// one they started with.
    pub fn set(&self, observer: Option<CallObserver>) {
        let mut slot = self.slot.write().unwrap_or_else(|e| e.into_inner());
        self.set.store(observer.is_some(), Ordering::Release);
        *slot = observer;
    }

    /// The observer now, if any.
    pub fn current(&self) -> Option<CallObserver> {
        self.slot.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Starts measuring one call, if an observer is set.
    pub(crate) fn start(
        &self,
        operation: &'static str,
        trace: Option<&TraceContext>,
    ) -> Option<Measured> {
        if !self.set.load(Ordering::Acquire) {
            return None;
        }
        let observer = self.current()?;
        Some(Measured {
            observer,
            operation,
            trace: trace.cloned(),
            start: Instant::now(),
            done: false,
        })
    }
}

/// One call being measured: reported once, when it ends ([`Measured::end`]) or is dropped
/// unfinished (as `cancelled`).
pub(crate) struct Measured {
    observer: CallObserver,
    operation: &'static str,
    trace: Option<TraceContext>,
    start: Instant,
    done: bool,
}

impl Measured {
    /// Reports the call's end.
    pub(crate) fn end(mut self, error: Option<&Error>, cache_hit: bool) {
        self.report(error, cache_hit);
    }

    fn report(&mut self, error: Option<&Error>, cache_hit: bool) {
        self.done = true;
        let record = CallRecord {
            operation: self.operation,
            duration: self.start.elapsed(),
            error,
            cache_hit,
            trace: self.trace.as_ref(),
        };
        // An observer that panics must not take the call (or a runtime thread) with it.
        let observer = &self.observer;
        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| observer(&record)));
    }
}

impl Drop for Measured {
    fn drop(&mut self) {
        if !self.done {
            let cancelled = Error::new(
                crate::error::ErrorKind::Cancelled,
                "the call was abandoned before it ended",
            );
            self.report(Some(&cancelled), false);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    #[test]
    fn each_call_is_reported_once_with_its_outcome() {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let observers = CallObservers::default();
        assert!(
            observers.start("GET", None).is_none(),
            "no observer: nothing measured"
        );
        let sink = Arc::clone(&seen);
        observers.set(Some(Arc::new(move |r: &CallRecord<'_>| {
            sink.lock()
                .unwrap()
                .push((r.operation, r.error.map(Error::code), r.cache_hit));
        })));
        observers.start("SET", None).unwrap().end(None, false);
        observers.start("GET", None).unwrap().end(None, true);
        drop(observers.start("DEL", None).unwrap());
        assert_eq!(
            *seen.lock().unwrap(),
            [
                ("SET", None, false),
                ("GET", None, true),
                ("DEL", Some("cancelled"), false)
            ]
        );
        observers.set(None);
        assert!(observers.start("GET", None).is_none());
    }

    #[test]
    fn a_panicking_observer_is_contained() {
        let observers = CallObservers::default();
        observers.set(Some(Arc::new(|_: &CallRecord<'_>| panic!("observer"))));
        observers.start("SET", None).unwrap().end(None, false);
    }
}
