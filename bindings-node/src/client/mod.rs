//! The state store client for JavaScript: native classes over the core's binding layer
//! ([`mqstate::bridge`]), wrapped by the hand-written JS layer (`index.js`), which adds the
//! option objects, `AbortSignal`, async iterators and the error classes.
//!
//! - [`pending`]: every asynchronous method returns a Promise settled from the core
//!   [`Call`](mqstate::bridge::Call)'s completion; a [`CancelHandle`](pending::CancelHandle)
//!   passed last lets an `AbortSignal` cancel the core call;
//! - [`settings`]: connecting with settings by name (the core's one settings table);
//! - [`native`]: `NativeClient` (set, get, del, vdel, observe, scan, lock, election, close);
//! - [`pager`]: `NativePager`, a SCAN one page per call;
//! - [`subscription`]: `NativeSubscription`, the one event stream;
//! - [`locks`]: `NativeLock` (with the fenced edit) and `NativeElection`;
//! - [`convert`]: core values as the plain JS objects the JS layer wraps.
//!
//! Each exported method converts its arguments, makes one bridge call and maps the result
//! or the error; the JS layer turns the raw objects into its public classes.

pub mod convert;
pub mod locks;
pub mod native;
pub mod pager;
pub mod pending;
pub mod settings;
pub mod subscription;
