//! # mqstate
//!
//! A client for the MQTT5 *state store*, the key-value store that Azure IoT Operations runs
//! beside its MQTT broker, built as the one implementation that the Python, Node and C
//! bindings of mqstate share.
//!
//! This crate holds the pure layers every language uses:
//!
//! - [`codec`]: request, response and notification payloads, both directions;
//! - [`hlc`]: the hybrid logical clock that versions values and fences writes;
//! - [`topics`]: topic names, hex encoding, and the response-topic check;
//! - [`Error`] / [`ErrorKind`]: the one error model.
//!
//! With the default `client` feature it is also the client: [`Client`] (connection,
//! correlation engine, `set`/`get`/`del`/`vdel`, [`Observer`] streams that survive
//! reconnections).
//!
//! ```
//! use mqstate::codec::{Request, Response, SetCondition};
//! use bytes::Bytes;
//!
//! let request: Request<&[u8]> = Request::Set {
//!     key: b"SETKEY2",
//!     value: b"VALUE5",
//!     condition: SetCondition::Always,
//!     expiry_ms: None,
//! };
//! assert_eq!(&request.encode()[..], b"*3\r\n$3\r\nSET\r\n$7\r\nSETKEY2\r\n$6\r\nVALUE5\r\n");
//! assert_eq!(Response::decode(&Bytes::from_static(b"+OK\r\n")).unwrap(), Response::Ok);
//! ```

pub mod codec;
pub mod envelope;
mod error;
pub mod glob;
pub mod hlc;
pub mod telemetry;
pub mod topics;

#[cfg(feature = "client")]
pub mod bridge;
#[cfg(feature = "client")]
pub mod cache;
#[cfg(feature = "client")]
mod client;
#[cfg(feature = "client")]
mod connection;
#[cfg(feature = "client")]
pub mod election;
#[cfg(feature = "client")]
pub mod lock;
#[cfg(feature = "client")]
pub mod observe;
#[cfg(feature = "client")]
mod rpc;
#[cfg(feature = "client")]
mod settings;
#[cfg(feature = "client")]
pub mod tls;
#[cfg(feature = "client")]
pub mod vocabulary;

#[cfg(feature = "client")]
pub use cache::{CacheOptions, CacheStats};
#[cfg(feature = "client")]
pub use client::{
    Client, ClientOptions, DEFAULT_OBSERVER_CAPACITY, DEFAULT_REQUEST_TIMEOUT, DelOptions,
    GetOptions, KeyStream, LinkInfo, MIN_EXPIRY, ObserveOptions, ScanOptions, Scanner, SetOptions,
    SetOutcome, VdelOutcome, Versioned,
};
#[cfg(feature = "client")]
pub use election::{Election, ElectionOptions};
pub use envelope::MQTT_MAX_PACKET_SIZE;
pub use error::{
    CallbackPayload, ERROR_BASE_CLASS, ERROR_FAMILIES, ERROR_TABLE, Error, ErrorInfo, ErrorKind,
    Result, RpcDetails,
};
pub use hlc::{Clock, Hlc};
#[cfg(feature = "client")]
pub use lock::{
    Edit, EditOutcome, HolderChange, HolderWatch, Lock, LockOptions, LockStatus, LossReason,
};
#[cfg(feature = "client")]
pub use observe::{KeyNotification, Observer, ObserverEvent};
#[cfg(feature = "client")]
pub use settings::{
    ConnectionSettings, SETTINGS, SettingInfo, SettingType, TlsSettings, URL_SCHEME_RULE,
    URL_SCHEMES, parse_bool, parse_count, parse_duration, parse_duration_with_unit, setting_info,
};

/// The Rust blocks of the project's README, compiled as doctests (the other languages'
/// blocks run in their own suites, the shell blocks in `scripts/lib/suites/docs`).
#[cfg(all(doctest, feature = "client"))]
#[doc = include_str!("../../README.md")]
pub struct ReadmeDoctests;
