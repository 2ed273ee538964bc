//! [`Subscription`]: the one stream of events (key changes, lock holders and leaders, lock
//! and leadership status), read with a suspending `next()` (Kotlin) / `async` (Swift), or
//! pushed to an [`EventListener`] callback on a thread of its own.

use std::sync::Arc;

use mqstate::bridge::{Event as CoreEvent, EventSink, Subscription as CoreSubscription};

use crate::MqstateError;
use crate::call::settle;
use crate::values::{Event, Seconds, duration};

/// Receives a subscription's events (see [`Subscription::listen`]).
#[uniffi::export(callback_interface)]
pub trait EventListener: Send + Sync {
    /// One event. Called for every event, in order, on one thread of the subscription's
    /// own, never concurrently.
    fn on_event(&self, event: Event);
    /// The subscription has ended (closed, or its client closed); called once, after the
    /// last `on_event`, on the same thread.
    fn on_end(&self);
}

/// Hands events to a foreign listener and tells it of the end when dropped.
struct Listener(Box<dyn EventListener>);

impl EventSink for Listener {
    fn deliver(&mut self, event: CoreEvent) {
        self.0.on_event(event.into());
    }
}

impl Drop for Listener {
    fn drop(&mut self) {
        self.0.on_end();
    }
}

/// A stream of [`Event`]s. It ends when closed (`close()` in Swift; `stop()` of this raw
/// layer in Kotlin, which the idiomatic `Subscription.close()` calls before freeing it), when
/// its last reference is dropped, or when its client closes. Ending a key's subscription
/// sends `KEYNOTIFY … STOP` at once.
#[derive(uniffi::Object)]
pub struct Subscription {
    sub: CoreSubscription,
}

impl Subscription {
    pub(crate) fn new(sub: CoreSubscription) -> Arc<Subscription> {
        Arc::new(Subscription { sub })
    }
}

#[uniffi::export]
impl Subscription {
    /// The next event; none once the subscription has ended and is drained. With a
    /// `timeout`, the `timeout` error when none came in time. Neither the timeout nor
    /// cancelling the coroutine that waits loses an event.
    #[uniffi::method(default(timeout = None))]
    pub async fn next(&self, timeout: Option<Seconds>) -> Result<Option<Event>, MqstateError> {
        let call = self.sub.next_within(duration("timeout", timeout)?);
        Ok(settle(call).await?.map(Event::from))
    }

    /// The next event if one is buffered now, else none.
    pub fn try_next(&self) -> Option<Event> {
        self.sub.try_next().map(Event::from)
    }

    /// Whether the subscription has ended (events may still be buffered).
    pub fn is_closed(&self) -> bool {
        self.sub.is_closed()
    }

    /// Ends the subscription now (a key's: `KEYNOTIFY … STOP` is sent at once); a pending
    /// `next()` returns what is buffered, then none.
    pub fn close(&self) {
        self.sub.close();
    }

    /// Pushes every event to `listener` on a thread of this subscription's own instead
    /// (the pull methods then see nothing). A second listener is refused.
    pub fn listen(&self, listener: Box<dyn EventListener>) -> Result<(), MqstateError> {
        Ok(self.sub.set_sink(Listener(listener))?)
    }
}
