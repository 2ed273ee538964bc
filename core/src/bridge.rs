//! The binding-facing layer: what the Python, Node, C and Kotlin bindings call, in owned
//! types only — no generics a binding must name, no lifetimes, no tokio types, everything
//! `Send + Sync + 'static` — so that every exported method in every language is a thin
//! conversion: convert the arguments, make one call here, map the result or the error.
//!
//! - [`ClientHandle`]: a cloneable client handle (`connect`, `set`, `get`, `del`, `vdel`, `observe`,
//!   `scan`, `lock`, `election`, `link_info`, `close`), settings by name ([`Settings::set`]);
//! - [`Pager`]: a SCAN, one [`Call`] per page, the continuation token kept inside;
//! - [`Call`]: what every operation returns — awaitable from any executor, waitable from a
//!   plain thread ([`Call::wait`], refused on a runtime thread instead of deadlocking),
//!   cancellable from any thread ([`Call::cancel`], error kind `cancelled`), or delivered to
//!   a callback ([`Call::on_complete`]);
//! - [`Subscription`]: the one stream type for key changes, lock-holder changes and
//!   lock/leader status, with `degraded`/`restored` connection events; async, blocking,
//!   non-blocking or pushed to an [`EventSink`] on a dedicated thread;
//! - [`LockHandle`] / [`ElectionHandle`]: locks and elections whose waits are cancellable
//!   calls and whose decision callbacks are asynchronous and fallible;
//! - [`CompletionQueue`]: how call outcomes reach a host's event-loop thread (asyncio,
//!   Node), one wake-up per batch;
//! - [`runtime`]: the runtime the library owns for callers that have none, and
//!   [`runtime::wait_idle`] for exit hooks.
//!
//! Errors are the core's [`Error`](crate::Error): the binding maps
//! [`ErrorKind::code`](crate::ErrorKind::code) / [`number`](crate::ErrorKind::number) from
//! the one [`ERROR_TABLE`](crate::ERROR_TABLE).
//!
//! A binding's `set`, whole (here a blocking C-style one; an async binding awaits the call
//! instead of waiting):
//!
//! ```no_run
//! use std::time::Duration;
//! use mqstate::bridge::ClientHandle;
//! use mqstate::{Error, SetOptions};
//!
//! fn binding_set(store: &ClientHandle, key: &[u8], value: &[u8], timeout_ms: Option<u64>)
//!     -> Result<(bool, Option<String>), Error>
//! {
//!     let options = SetOptions {
//!         timeout: timeout_ms.map(Duration::from_millis),
//!         ..SetOptions::default()
//!     };
//!     let outcome = store.set(key.to_vec(), value.to_vec(), options).wait(None)?;
//!     Ok((outcome.applied, outcome.version.map(|v| v.to_text())))
//! }
//! ```

mod call;
mod client_handle;
mod completions;
mod duration;
mod lock;
mod pager;
pub mod runtime;
mod subscription;

pub use call::{Call, Canceller};
pub use client_handle::{ClientHandle, Settings};
pub use completions::CompletionQueue;
pub use duration::{millis_to_duration, secs_to_duration};
pub use lock::{BoxFuture, Decide, ElectionHandle, Lead, LockHandle, blocking_decide};
pub use pager::Pager;

/// The client handle's name before 0.3.0.
#[deprecated(
    since = "0.3.0",
    note = "renamed `ClientHandle` (the client handle, not the store)"
)]
pub type Store = ClientHandle;
pub use subscription::{Event, EventSink, Subscription};
