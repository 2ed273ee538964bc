//! # mqstate-server
//!
//! A local MQTT5 state store that behaves like the Azure IoT Operations service byte for
//! byte: the emulator every mqstate suite talks to, and a zero-install store for
//! developers.

pub mod journal;
pub mod store;
