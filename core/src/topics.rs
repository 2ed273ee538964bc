//! The topic names of the state store (spec §2 and §7), hex encoding of client ids and
//! keys in notification topics, and the check that refuses forbidden response topics.

use crate::error::Error;

/// The state store's service id, part of every topic.
pub const SERVICE_ID: &str = "FA9AE35F-2F64-47CD-9BFF-08E2B32A0FE8";

/// The topic requests are published to.
pub const REQUEST_TOPIC: &str = "statestore/v1/FA9AE35F-2F64-47CD-9BFF-08E2B32A0FE8/command/invoke";

/// Notification topics start with this; no response topic may.
pub const NOTIFICATION_PREFIX: &str = "clients/statestore/v1/FA9AE35F-2F64-47CD-9BFF-08E2B32A0FE8";

const NOTIFY_SEGMENT: &str = "/command/notify/";

/// The default response topic of a client:
/// `clients/{clientId}/services/statestore/v1/{SERVICE_ID}/command/invoke/response`.
pub fn response_topic(client_id: &str) -> String {
    format!("clients/{client_id}/services/{REQUEST_TOPIC}/response")
}

/// The filter a client subscribes to before its first KEYNOTIFY:
/// `clients/statestore/v1/{SERVICE_ID}/{HEX(clientId)}/command/notify/+`.
pub fn notification_filter(client_id: &str) -> String {
    format!(
        "{NOTIFICATION_PREFIX}/{}{NOTIFY_SEGMENT}+",
        hex_encode(client_id.as_bytes())
    )
}

/// The topic on which the service notifies `client_id` of changes to `key`.
pub fn notification_topic(client_id: &str, key: &[u8]) -> String {
    let mut topic = String::with_capacity(
        NOTIFICATION_PREFIX.len() + NOTIFY_SEGMENT.len() + 1 + 2 * (client_id.len() + key.len()),
    );
    topic.push_str(NOTIFICATION_PREFIX);
    topic.push('/');
    push_hex(&mut topic, client_id.as_bytes());
    topic.push_str(NOTIFY_SEGMENT);
    push_hex(&mut topic, key);
    topic
}

/// Splits a notification topic into the client id and the key it names. Both are hex in
/// the topic (upper case when sent; lower case is accepted); bad hex, an empty key, a client
/// id that is not UTF-8 or a topic of another shape is [`Malformed`](crate::ErrorKind::Malformed).
pub fn parse_notification_topic(topic: &str) -> Result<(String, Vec<u8>), Error> {
    let rest = topic
        .strip_prefix(NOTIFICATION_PREFIX)
        .and_then(|r| r.strip_prefix('/'))
        .ok_or_else(|| Error::malformed("not a notification topic"))?;
    let (client_hex, key_hex) = rest
        .split_once(NOTIFY_SEGMENT)
        .ok_or_else(|| Error::malformed("notification topic without /command/notify/"))?;
    let client_id = String::from_utf8(hex_decode(client_hex)?)
        .map_err(|_| Error::malformed("client id in the notification topic is not UTF-8"))?;
    let key = hex_decode(key_hex)?;
    if client_id.is_empty() || key.is_empty() {
        return Err(Error::malformed(
            "empty client id or key in the notification topic",
        ));
    }
    Ok((client_id, key))
}

/// Refuses a response topic the service would disconnect the client for: the request topic
/// itself, anything starting with [`NOTIFICATION_PREFIX`], and the empty topic. Wildcards,
/// which a PUBLISH cannot carry, are refused too.
pub fn check_response_topic(topic: &str) -> Result<(), Error> {
    if topic.is_empty() {
        return Err(Error::invalid_argument(
            "the response topic must not be empty",
        ));
    }
    if topic == REQUEST_TOPIC || topic.starts_with(NOTIFICATION_PREFIX) {
        return Err(Error::invalid_argument(format!(
            "the response topic {topic:?} is reserved by the state store service"
        )));
    }
    if topic.contains(['+', '#', '\0']) {
        return Err(Error::invalid_argument(format!(
            "the response topic {topic:?} contains a wildcard or NUL"
        )));
    }
    Ok(())
}

const HEX_DIGITS: &[u8; 16] = b"0123456789ABCDEF";

fn push_hex(out: &mut String, bytes: &[u8]) {
    for &b in bytes {
        out.push(HEX_DIGITS[usize::from(b >> 4)] as char);
        out.push(HEX_DIGITS[usize::from(b & 0x0f)] as char);
    }
}

/// Whether the MQTT topic filter `filter` matches `topic` (`+`, `#`; a `$share/group/`
/// filter counts as not matching: the client may not be the member served).
pub fn filter_matches(filter: &str, topic: &str) -> bool {
    if filter.starts_with("$share/") {
        return false;
    }
    let mut levels = topic.split('/');
    for part in filter.split('/') {
        match (part, levels.next()) {
            ("#", _) => return true,
            ("+", Some(_)) => {}
            (part, Some(level)) if part == level => {}
            _ => return false,
        }
    }
    levels.next().is_none()
}

/// Upper-case base-16 (RFC 4648 §8), two digits per byte, no separators.
pub fn hex_encode(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(2 * bytes.len());
    push_hex(&mut out, bytes);
    out
}

/// Decodes base-16 in either case. An odd number of digits or a non-hex character is
/// [`Malformed`](crate::ErrorKind::Malformed).
pub fn hex_decode(text: &str) -> Result<Vec<u8>, Error> {
    let digits = text.as_bytes();
    if !digits.len().is_multiple_of(2) {
        return Err(Error::malformed("odd number of hex digits"));
    }
    digits
        .chunks_exact(2)
        .map(|pair| match (nibble(pair[0]), nibble(pair[1])) {
            (Some(hi), Some(lo)) => Ok(hi << 4 | lo),
            _ => Err(Error::malformed("invalid hex digit")),
        })
        .collect()
}

fn nibble(digit: u8) -> Option<u8> {
    match digit {
        b'0'..=b'9' => Some(digit - b'0'),
        b'A'..=b'F' => Some(digit - b'A' + 10),
        b'a'..=b'f' => Some(digit - b'a' + 10),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn topic_filters_match_like_mqtt() {
        assert!(filter_matches("a/b", "a/b"));
        assert!(filter_matches("a/+", "a/b"));
        assert!(filter_matches("a/#", "a/b/c"));
        assert!(filter_matches("#", "a"));
        assert!(filter_matches("a/#", "a"));
        assert!(!filter_matches("a/+", "a/b/c"));
        assert!(!filter_matches("a/b/c", "a/b"));
        assert!(!filter_matches("a/c", "a/b"));
        assert!(!filter_matches("$share/g/a/b", "a/b"));
    }

    use super::*;

    #[test]
    fn hex_round_trip_all_bytes() {
        let all: Vec<u8> = (0..=255).collect();
        let text = hex_encode(&all);
        assert_eq!(hex_decode(&text).unwrap(), all);
        assert_eq!(hex_decode(&text.to_lowercase()).unwrap(), all);
    }

    #[test]
    fn notification_topic_round_trip() {
        let topic = notification_topic("c", b"\x00\xff");
        assert_eq!(
            parse_notification_topic(&topic).unwrap(),
            ("c".into(), vec![0, 255])
        );
        assert!(parse_notification_topic("clients/other/63/command/notify/6B").is_err());
        assert!(
            parse_notification_topic(&format!("{NOTIFICATION_PREFIX}/63/command/notify/")).is_err()
        );
    }

    #[test]
    fn wildcards_are_refused() {
        assert!(check_response_topic("a/+/b").is_err());
        assert!(check_response_topic("a/#").is_err());
    }
}
