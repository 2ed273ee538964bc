//! Notification payloads (spec §7) and their topics, both directions.
//!
//! The service publishes `NOTIFY SET VALUE <value>` or `NOTIFY DELETE`; the article's
//! `DEL` is accepted too, and `DELETE` is what mqstate emits.

use bytes::Bytes;

use super::wire::{self, Reader};
use crate::error::Error;
use crate::topics;

/// What happened to an observed key.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum KeyEvent {
    /// The key was set to this value.
    Set(Bytes),
    /// The key was deleted (DEL, VDEL or expiry).
    Delete,
}

impl KeyEvent {
    /// Decodes a notification payload.
    pub fn decode(payload: &Bytes) -> Result<KeyEvent, Error> {
        let mut reader = Reader::new(payload);
        let n = reader.array_header()?;
        if n < 2 {
            return Err(Error::malformed("notification with fewer than 2 elements"));
        }
        if reader.blob()? != b"NOTIFY"[..] {
            return Err(Error::malformed("notification does not start with NOTIFY"));
        }
        let op = reader.blob()?;
        let event = match (&op[..], n) {
            (b"SET", 4) => {
                if reader.blob()? != b"VALUE"[..] {
                    return Err(Error::malformed("SET notification without VALUE"));
                }
                KeyEvent::Set(reader.blob()?)
            }
            (b"DELETE" | b"DEL", 2) => KeyEvent::Delete,
            (b"SET" | b"DELETE" | b"DEL", _) => {
                return Err(Error::malformed("notification has the wrong element count"));
            }
            _ => return Err(Error::malformed("unknown notification operation")),
        };
        reader.finish()?;
        Ok(event)
    }

    /// The exact size of the encoded payload.
    pub fn encoded_len(&self) -> usize {
        match self {
            KeyEvent::Set(value) => 4 + 12 + 9 + 11 + wire::blob_len(value.len()),
            KeyEvent::Delete => 4 + 12 + 12,
        }
    }

    /// Appends the payload to `out`, in the service's form (`DELETE`).
    pub fn encode_to(&self, out: &mut Vec<u8>) {
        out.reserve(self.encoded_len());
        match self {
            KeyEvent::Set(value) => {
                out.extend_from_slice(b"*4\r\n$6\r\nNOTIFY\r\n$3\r\nSET\r\n$5\r\nVALUE\r\n");
                wire::put_blob(out, value);
            }
            KeyEvent::Delete => out.extend_from_slice(b"*2\r\n$6\r\nNOTIFY\r\n$6\r\nDELETE\r\n"),
        }
    }

    /// The payload, in one exactly-sized allocation.
    pub fn encode(&self) -> Bytes {
        let mut out = Vec::with_capacity(self.encoded_len());
        self.encode_to(&mut out);
        Bytes::from(out)
    }
}

/// A notification as received: which client it was sent to, which key changed, and how.
/// (The key's new version travels in the `__ts` user property, outside the payload.)
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Notification {
    /// The MQTT client id the notification is addressed to (from the topic).
    pub client_id: String,
    /// The key that changed (from the topic: the topic, not the payload, names the key).
    pub key: Bytes,
    /// What happened.
    pub event: KeyEvent,
}

impl Notification {
    /// Decodes a notification from its topic and payload.
    pub fn decode(topic: &str, payload: &Bytes) -> Result<Notification, Error> {
        let (client_id, key) = topics::parse_notification_topic(topic)?;
        let event = KeyEvent::decode(payload)?;
        Ok(Notification {
            client_id,
            key: Bytes::from(key),
            event,
        })
    }

    /// The topic this notification is published on.
    pub fn topic(&self) -> String {
        topics::notification_topic(&self.client_id, &self.key)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encoded_len_is_exact() {
        for event in [
            KeyEvent::Delete,
            KeyEvent::Set(Bytes::from_static(b"0123456789")),
        ] {
            let bytes = event.encode();
            assert_eq!(bytes.len(), event.encoded_len());
            assert_eq!(KeyEvent::decode(&bytes), Ok(event));
        }
    }
}
