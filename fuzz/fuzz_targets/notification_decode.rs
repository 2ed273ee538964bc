//! Fuzzes notification decoding from a topic and a payload, both taken from the input.
//!
//! Input layout: one mode byte, then the topic up to the first NUL, then the payload. When
//! the mode byte is odd the topic is prefixed with the real notification prefix and `/`, so
//! the fuzzer spends its time on the hex segments and the payload rather than on finding the
//! 60-character prefix. Whatever decodes must re-encode (topic and payload) to the same
//! notification.

#![no_main]

use bytes::Bytes;
use libfuzzer_sys::fuzz_target;
use mqstate::codec::{KeyEvent, Notification};
use mqstate::topics::NOTIFICATION_PREFIX;

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    let (topic, payload) = match rest.iter().position(|&b| b == 0) {
        Some(nul) => (&rest[..nul], &rest[nul + 1..]),
        None => (rest, &[][..]),
    };
    let topic = String::from_utf8_lossy(topic);
    let topic = if mode & 1 == 1 {
        format!("{NOTIFICATION_PREFIX}/{topic}")
    } else {
        topic.into_owned()
    };
    let payload = Bytes::copy_from_slice(payload);

    if let Ok(event) = KeyEvent::decode(&payload) {
        assert_eq!(KeyEvent::decode(&event.encode()), Ok(event));
    }
    let Ok(notification) = Notification::decode(&topic, &payload) else {
        return;
    };
    assert!(!notification.client_id.is_empty() && !notification.key.is_empty());
    let again = Notification::decode(&notification.topic(), &notification.event.encode());
    assert_eq!(again, Ok(notification));
});
