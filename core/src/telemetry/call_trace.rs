//! [`CallTrace`]: what one traced call carries (the caller's trace context) and what it met
//! on its way (events with their times), for the binding that ends the call's span.

use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use super::TraceContext;

tokio::task_local! {
    /// The trace of the operation the current task runs ([`CallTrace::scope`]).
    static AMBIENT: Arc<CallTrace>;
}

/// One thing a call met on its way: a resending, a wait for the connection, a refusal.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CallEvent {
    /// Its name ([`names`](super::names)`::EVENT_*`).
    pub name: &'static str,
    /// When it happened.
    pub at: SystemTime,
    /// Its attributes (names from [`names`](super::names)).
    pub attributes: Vec<(&'static str, i64)>,
}

/// The trace of one call: the context its request carries and the events it met. Made by
/// the binding for a call its span covers ([`Client::traced`](crate::Client::traced)); read
/// back when the call ends ([`CallTrace::take_events`]).
#[derive(Debug, Default)]
pub struct CallTrace {
    context: Option<TraceContext>,
    events: Mutex<Vec<CallEvent>>,
}

impl CallTrace {
    /// A trace carrying `context` (or none: the events alone).
    pub fn new(context: Option<TraceContext>) -> Arc<CallTrace> {
        Arc::new(CallTrace {
            context,
            events: Mutex::new(Vec::new()),
        })
    }

    /// The trace context the call's requests carry.
    pub fn context(&self) -> Option<&TraceContext> {
        self.context.as_ref()
    }

    /// The events so far, oldest first; they are taken (a second call returns the later
    /// ones).
    pub fn take_events(&self) -> Vec<CallEvent> {
        std::mem::take(&mut *self.events.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// Runs `work` with `trace` as the trace of every request it makes through a client that
    /// has none of its own ([`CallTrace::ambient`]): how an operation made of several
    /// requests inside the core (a lock's acquire, a SCAN page) carries its span's context.
    /// Tasks `work` spawns do not inherit it (a lock's automatic renewal is no part of the
    /// acquire that started it).
    pub async fn scope<F: Future>(trace: Arc<CallTrace>, work: F) -> F::Output {
        AMBIENT.scope(trace, work).await
    }

    /// The trace of the [`scope`](CallTrace::scope) the current task runs in, if any.
    pub(crate) fn ambient() -> Option<Arc<CallTrace>> {
        AMBIENT.try_with(Arc::clone).ok()
    }

    /// Notes an event now.
    pub(crate) fn note(&self, name: &'static str, attributes: Vec<(&'static str, i64)>) {
        let event = CallEvent {
            name,
            at: SystemTime::now(),
            attributes,
        };
        self.events
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(event);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_are_taken_in_order() {
        let t = CallTrace::new(None);
        t.note("a", vec![("n", 1)]);
        t.note("b", vec![]);
        let got = t.take_events();
        assert_eq!(got.iter().map(|e| e.name).collect::<Vec<_>>(), ["a", "b"]);
        assert!(got[0].at <= got[1].at);
        assert!(t.take_events().is_empty());
        assert!(t.context().is_none());
    }

    #[tokio::test]
    async fn a_scope_is_the_ambient_trace_of_its_task_only() {
        assert!(CallTrace::ambient().is_none());
        let t = CallTrace::new(None);
        let inner = CallTrace::scope(Arc::clone(&t), async {
            let spawned = tokio::spawn(async { CallTrace::ambient().is_none() });
            (CallTrace::ambient(), spawned.await.unwrap())
        })
        .await;
        assert!(Arc::ptr_eq(&inner.0.unwrap(), &t));
        assert!(inner.1, "a spawned task does not inherit it");
        assert!(CallTrace::ambient().is_none());
    }
}
