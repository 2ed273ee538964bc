//! mqstate-node: the Node.js binding of mqstate, built with napi-rs.
//!
//! It exposes the state store client ([`client`]: native classes over the core's binding
//! layer, wrapped by the package's hand-written `index.js`) and the core's pure layers, for
//! an application that owns its own MQTT connection (mqtt.js, say), as three namespaces:
//!
//! - `codec` ([`codec`]): request encoders, response / notification / request decoders;
//! - `hlc` ([`hlc`]): the `Hlc` value and the process `Clock`;
//! - `topics` ([`topics`]): topic names, hex encoding, the response-topic check;
//!
//! plus `errorCodes()` / `storeErrorKinds()` ([`error`]) and the telemetry vocabulary and call
//! traces the JS layer's OpenTelemetry support uses ([`telemetry`]). Every export converts its
//! arguments ([`args`]), calls the core and maps the core's error kind to a JS `Error` with
//! a stable `code`; nothing here decides protocol behaviour, and no input can panic.

#![deny(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

pub mod args;
pub mod client;
pub mod codec;
pub mod error;
pub mod hlc;
pub mod telemetry;
pub mod testing;
pub mod topics;
