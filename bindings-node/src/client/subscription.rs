//! `NativeSubscription`: the core's one event stream (key changes, holder changes, lock
//! status, connection events). The JS layer makes it an async iterator whose `return()`
//! closes it (for a key, the core then sends `KEYNOTIFY … STOP` at once).

use mqstate::bridge::Subscription;
use napi::bindgen_prelude::{ClassInstance, Env, Object, Unknown};
use napi_derive::napi;

use super::convert::{RawEvent, event, millis};
use super::pending::{CancelHandle, promise};

/// A stream of events.
#[napi]
pub struct NativeSubscription {
    sub: Subscription,
}

impl From<Subscription> for NativeSubscription {
    fn from(sub: Subscription) -> Self {
        NativeSubscription { sub }
    }
}

#[napi]
impl NativeSubscription {
    /// The next event; `null` once the subscription has ended and is drained. With
    /// `timeout` (`timeoutMs`) it rejects with code `timeout` when nothing came. Neither a
    /// timeout nor a cancellation loses an event.
    #[napi(ts_return_type = "Promise<RawEvent | null>")]
    pub fn next<'env>(
        &self,
        env: &'env Env,
        timeout: Option<Unknown>,
        cancel: Option<ClassInstance<CancelHandle>>,
    ) -> napi::Result<Object<'env>> {
        let call = self.sub.next_within(millis(env, timeout, "timeoutMs")?);
        promise(env, call, cancel, |e| e.map(event))
    }

    /// The next event if one is buffered, else `null`.
    #[napi]
    pub fn try_next(&self) -> Option<RawEvent> {
        self.sub.try_next().map(event)
    }

    /// Ends the subscription now (idempotent).
    #[napi]
    pub fn close(&self) {
        self.sub.close();
    }

    /// Whether it has ended (events may still be buffered).
    #[napi(getter)]
    pub fn closed(&self) -> bool {
        self.sub.is_closed()
    }
}
