//! The MQTT5 envelope of the state store's RPC (spec §2), as pure data: the names of the
//! user properties, the content type, the protocol version and its check, and the message
//! expiry derived from a timeout.
//!
//! One copy for everyone: the client writes requests and reads responses with these names,
//! the server (which builds the core without its `client` feature) reads requests and
//! writes responses and notifications with them, and the benchmark tools and the test
//! harness speak the protocol by hand with them. No I/O, no MQTT types.

use std::time::Duration;

/// The most QoS 1 PUBLISHes a client keeps in flight (unacknowledged), and the Receive
/// Maximum the embedded broker announces. rumqttc sizes its in-flight table by its upper
/// limit before it connects — a slot per packet id, ≈ 216 bytes each: 13.5 MiB per
/// connection at the default of 65,535 — and lowers it to the broker's Receive Maximum
/// after the CONNACK (mosquitto's default is 20), so this is both the ceiling and the cost.
pub const MAX_IN_FLIGHT: u16 = 1024;

/// The largest packet MQTT 5 allows: the largest Remaining Length (a variable byte integer of
/// four bytes) — the one definition for the client's default, the embedded broker's
/// announced Maximum Packet Size and the store adapter's limit (rumqttc caps incoming
/// packets at 10 KiB unless told otherwise).
pub const MQTT_MAX_PACKET_SIZE: u32 = 268_435_455;

/// The content type of every request and response.
pub const CONTENT_TYPE: &str = "application/octet-stream";

/// The RPC protocol version mqstate speaks (`__protVer`).
pub const PROTOCOL_VERSION: &str = "1.0";

/// The protocol major versions mqstate supports, as a response's `__supProtMajVer` says it.
pub const SUPPORTED_MAJOR_VERSIONS: &str = "1";

/// User property names, in the order of spec §2 where it gives one.
pub mod property {
    /// A request's fencing token (an HLC text).
    pub const FENCING_TOKEN: &str = "__ft";
    /// Asks the service to persist a SET (`true`).
    pub const PERSISTENCE: &str = "aio-persistence";
    /// The requesting client's id.
    pub const SOURCE_ID: &str = "__srcId";
    /// A request's timestamp; a response's and a notification's version.
    pub const TIMESTAMP: &str = "__ts";
    /// The RPC protocol version of a request or response.
    pub const PROTOCOL_VERSION: &str = "__protVer";
    /// The broker's partitioning key (the client id).
    pub const PARTITION: &str = "$partition";
    /// Marks a request as high priority (empty value).
    pub const HIGH_PRIORITY: &str = "$high_priority";
    /// A response's RPC status (`200`, `204`, `400`, `505` …).
    pub const STATUS: &str = "__stat";
    /// A response's status message.
    pub const STATUS_MESSAGE: &str = "__stMsg";
    /// The name of the property a failed request got wrong.
    pub const PROPERTY_NAME: &str = "__propName";
    /// The value of the property a failed request got wrong.
    pub const PROPERTY_VALUE: &str = "__propVal";
    /// `true` when the failure is an application error.
    pub const APPLICATION_ERROR: &str = "__apErr";
    /// The protocol major versions the service supports (with status 505), space-separated.
    pub const SUPPORTED_MAJOR_VERSIONS: &str = "__supProtMajVer";
    /// The protocol version of the request a failed response answers.
    pub const REQUEST_PROTOCOL_VERSION: &str = "__requestProtVer";
}

/// Whether a `__protVer` value names a major version mqstate speaks (`1`, `1.0`, `1.7` …).
pub fn is_supported_protocol(version: &str) -> bool {
    version.split('.').next() == Some("1")
}

/// The message expiry of a request: its timeout rounded up to whole seconds, at least 1
/// (MQTT expiries are whole seconds and zero would mean "never").
pub fn message_expiry_secs(timeout: Duration) -> u32 {
    let secs = timeout
        .as_secs()
        .saturating_add(u64::from(timeout.subsec_nanos() > 0));
    u32::try_from(secs.max(1)).unwrap_or(u32::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expiry_rounds_up_and_is_never_zero() {
        assert_eq!(message_expiry_secs(Duration::from_millis(1)), 1);
        assert_eq!(message_expiry_secs(Duration::ZERO), 1);
        assert_eq!(message_expiry_secs(Duration::from_millis(1500)), 2);
        assert_eq!(message_expiry_secs(Duration::from_secs(10)), 10);
        assert_eq!(message_expiry_secs(Duration::MAX), u32::MAX);
    }

    #[test]
    fn protocol_versions() {
        for ok in ["1", "1.0", "1.7"] {
            assert!(is_supported_protocol(ok), "{ok}");
        }
        for bad in ["", "2.0", "10.0", "0.9", ".1"] {
            assert!(!is_supported_protocol(bad), "{bad}");
        }
    }
}
