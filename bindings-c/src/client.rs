//! The client half of the C binding: settings, clients, subscriptions, scans, locks, elections,
//! cancellation and error objects — each function a thin conversion over the core's binding
//! layer (`mqstate::bridge`), run inside the panic boundary, with every pointer checked.

#[macro_use]
pub mod guard;
pub mod cache;
mod call;
pub mod cancel;
pub mod election;
pub mod error;
pub mod handle;
pub mod lock;
pub mod observer;
pub mod process;
pub mod scan;
pub mod settings;
pub mod subscription;
pub mod text;
pub mod timeout;
