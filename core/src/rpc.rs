//! The correlation engine: correlation ids, the map of requests waiting for their response,
//! the request envelope (spec §2 user properties) and the reading of a response envelope.
//!
//! The event loop only moves a received response into its waiting slot; decoding happens
//! on the caller's task, so at high concurrency the work spreads over every core instead of
//! queueing behind the one event loop.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use bytes::Bytes;
use rumqttc::v5::mqttbytes::v5::{Publish, PublishProperties};
use tokio::sync::oneshot;

use crate::codec::{Response, Verb};
use crate::envelope::{CONTENT_TYPE, PROTOCOL_VERSION, is_supported_protocol, message_expiry_secs, property};
use crate::error::{Error, ErrorKind};
use crate::hlc::Hlc;

/// A request's correlation data: 16 random bytes laid out as a UUID v4.
pub(crate) type CorrelationId = [u8; 16];

/// A fresh random correlation id.
pub(crate) fn new_correlation_id() -> CorrelationId {
    let mut id: CorrelationId = rand::random();
    id[6] = (id[6] & 0x0f) | 0x40; // version 4
    id[8] = (id[8] & 0x3f) | 0x80; // RFC 4122 variant
    id
}


/// What a waiting request receives.
pub(crate) type Outcome = Result<Publish, Error>;

struct Slot {
    tx: oneshot::Sender<Outcome>,
    session: u64,
}

/// Hashes a correlation id by its first eight bytes: they are random already, so no
/// mixing is needed (and SipHash's cost is spared on every request and response).
#[derive(Default)]
pub(crate) struct IdHasher(u64);

impl std::hash::Hasher for IdHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8).take(1) {
            let mut word = [0u8; 8];
            word[..chunk.len()].copy_from_slice(chunk);
            self.0 ^= u64::from_le_bytes(word);
        }
    }

    fn write_usize(&mut self, _len: usize) {
        // The array's length prefix carries no information.
    }
}

type IdMap<V> = HashMap<CorrelationId, V, std::hash::BuildHasherDefault<IdHasher>>;

/// Requests waiting for their response, by correlation id.
#[derive(Default)]
pub(crate) struct PendingMap {
    slots: Mutex<IdMap<Slot>>,
}

impl PendingMap {
    fn lock(&self) -> std::sync::MutexGuard<'_, IdMap<Slot>> {
        self.slots.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Registers a request sent in MQTT session `session`.
    pub(crate) fn insert(&self, id: CorrelationId, session: u64) -> oneshot::Receiver<Outcome> {
        let (tx, rx) = oneshot::channel();
        self.lock().insert(id, Slot { tx, session });
        rx
    }

    /// Hands a response to its request. `false` when nobody waits for it (unknown, late or
    /// duplicate correlation data): the caller drops it.
    pub(crate) fn complete(&self, correlation: &[u8], publish: Publish) -> bool {
        let Ok(id) = CorrelationId::try_from(correlation) else {
            return false;
        };
        let slot = self.lock().remove(&id);
        match slot {
            Some(slot) => slot.tx.send(Ok(publish)).is_ok(),
            None => false,
        }
    }

    /// Forgets a request (timed out or cancelled).
    pub(crate) fn remove(&self, id: &CorrelationId) {
        self.lock().remove(id);
    }

    /// Fails every request sent in a session older than `session` (that session is gone, and
    /// with it the requests and responses it held).
    pub(crate) fn fail_sessions_before(&self, session: u64, error: &Error) -> usize {
        let failed: Vec<Slot> = self
            .lock()
            .extract_if(|_, slot| slot.session < session)
            .map(|(_, slot)| slot)
            .collect();
        let n = failed.len();
        for slot in failed {
            let _ = slot.tx.send(Err(error.clone()));
        }
        n
    }

    /// Fails every request.
    pub(crate) fn fail_all(&self, error: &Error) -> usize {
        self.fail_sessions_before(u64::MAX, error)
    }

    /// Requests waiting.
    pub(crate) fn len(&self) -> usize {
        self.lock().len()
    }
}

/// Removes a request from the map if its caller stops waiting (timeout or drop of the
/// future), so abandoned requests leave nothing behind.
pub(crate) struct PendingGuard<'a> {
    pub(crate) map: &'a PendingMap,
    pub(crate) id: CorrelationId,
}

impl Drop for PendingGuard<'_> {
    fn drop(&mut self) {
        self.map.remove(&self.id);
    }
}


/// The parts of a request envelope that vary per request.
pub(crate) struct Envelope<'a> {
    pub(crate) client_id: &'a str,
    pub(crate) response_topic: &'a str,
    pub(crate) correlation: CorrelationId,
    pub(crate) timestamp: &'a Hlc,
    pub(crate) fencing_token: Option<&'a Hlc>,
    pub(crate) persist: bool,
    pub(crate) timeout: Duration,
}

impl Envelope<'_> {
    /// The PUBLISH properties, user properties in the order of spec §2.
    pub(crate) fn properties(&self) -> PublishProperties {
        let mut user = Vec::with_capacity(7);
        if let Some(ft) = self.fencing_token {
            user.push((property::FENCING_TOKEN.to_owned(), ft.to_text()));
        }
        if self.persist {
            user.push((property::PERSISTENCE.to_owned(), "true".to_owned()));
        }
        user.push((property::SOURCE_ID.to_owned(), self.client_id.to_owned()));
        user.push((property::TIMESTAMP.to_owned(), self.timestamp.to_text()));
        user.push((property::PROTOCOL_VERSION.to_owned(), PROTOCOL_VERSION.to_owned()));
        user.push((property::PARTITION.to_owned(), self.client_id.to_owned()));
        user.push((property::HIGH_PRIORITY.to_owned(), String::new()));
        PublishProperties {
            payload_format_indicator: None,
            message_expiry_interval: Some(message_expiry_secs(self.timeout)),
            topic_alias: None,
            response_topic: Some(self.response_topic.to_owned()),
            correlation_data: Some(Bytes::copy_from_slice(&self.correlation)),
            user_properties: user,
            subscription_identifiers: Vec::new(),
            content_type: Some(CONTENT_TYPE.to_owned()),
        }
    }
}

/// An upper bound of the size of a PUBLISH packet with these properties, topic and payload,
/// to refuse values the broker's maximum packet size cannot carry before sending.
pub(crate) fn packet_size(
    props: &PublishProperties,
    topic_len: usize,
    payload_len: usize,
) -> usize {
    let user: usize = props
        .user_properties
        .iter()
        .map(|(k, v)| 1 + 2 + k.len() + 2 + v.len())
        .sum();
    let props_len = 5 // message expiry
        + 3 + props.response_topic.as_ref().map_or(0, String::len)
        + 3 + props.correlation_data.as_ref().map_or(0, Bytes::len)
        + 3 + props.content_type.as_ref().map_or(0, String::len)
        + user;
    // fixed header (≤ 5), topic, packet id, property length (≤ 4), properties, payload
    5 + 2 + topic_len + 2 + 4 + props_len + payload_len
}

/// A response with its envelope read: the decoded payload and the key's version.
#[derive(Debug)]
pub(crate) struct Reply {
    pub(crate) response: Response,
    pub(crate) version: Option<Hlc>,
}

fn property<'a>(props: &'a PublishProperties, name: &str) -> Option<&'a str> {
    props
        .user_properties
        .iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.as_str())
}

/// Reads a response PUBLISH to a request of `verb` (spec §2, "Response handling").
pub(crate) fn read_reply(publish: &Publish, verb: Verb) -> Result<Reply, Error> {
    let props = publish
        .properties
        .as_ref()
        .ok_or_else(|| Error::malformed("response without properties"))?;
    if let Some(version) = property(props, property::PROTOCOL_VERSION) {
        if !is_supported_protocol(version) {
            return Err(Error::malformed(format!(
                "response protocol version {version:?} is not 1.x"
            )));
        }
    }
    if let Some(ct) = &props.content_type
        && ct != CONTENT_TYPE
    {
        return Err(Error::malformed(format!("response content type {ct:?}")));
    }
    let status =
        property(props, property::STATUS).ok_or_else(|| Error::malformed("response without __stat"))?;
    let status: u16 = status
        .parse()
        .map_err(|_| Error::malformed(format!("response status {status:?} is not a number")))?;
    if status != 200 && status != 204 {
        return Err(rpc_error(status, props));
    }
    let version = property(props, property::TIMESTAMP).map(Hlc::parse).transpose()?;
    let response = Response::decode_for(verb, &publish.payload)?;
    Ok(Reply { response, version })
}

/// The error for a non-success `__stat`, with every detail the service gave.
fn rpc_error(status: u16, props: &PublishProperties) -> Error {
    let mut message = format!("request failed with status {status}");
    if let Some(text) = property(props, property::STATUS_MESSAGE) {
        message.push_str(": ");
        message.push_str(text);
    }
    if let Some(name) = property(props, property::PROPERTY_NAME) {
        message.push_str(&format!(" (property {name}"));
        if let Some(value) = property(props, property::PROPERTY_VALUE) {
            message.push_str(&format!(" = {value:?}"));
        }
        message.push(')');
    }
    if property(props, property::APPLICATION_ERROR) == Some("true") {
        message.push_str(" [application error]");
    }
    if let Some(versions) = property(props, property::SUPPORTED_MAJOR_VERSIONS) {
        message.push_str(&format!(" [supported protocol major versions: {versions}]"));
    }
    Error::new(ErrorKind::Rpc(status), message)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rumqttc::v5::mqttbytes::QoS;

    #[test]
    fn correlation_ids_are_uuid_v4() {
        let a = new_correlation_id();
        assert_eq!(a[6] >> 4, 4);
        assert_eq!(a[8] >> 6, 0b10);
        assert_ne!(a, new_correlation_id());
    }

    fn response(user: &[(&str, &str)], payload: &'static [u8]) -> Publish {
        let props = PublishProperties {
            user_properties: user
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            ..Default::default()
        };
        Publish::new(
            "t",
            QoS::AtLeastOnce,
            Bytes::from_static(payload),
            Some(props),
        )
    }

    #[test]
    fn reads_statuses() {
        let ok = response(&[("__stat", "200"), ("__ts", "5:1:S")], b"+OK\r\n");
        let reply = read_reply(&ok, Verb::Set).unwrap();
        assert_eq!(reply.response, Response::Ok);
        assert_eq!(reply.version.unwrap().counter(), 1);

        let bad = response(
            &[
                ("__stat", "400"),
                ("__stMsg", "QoS 0"),
                ("__propName", "qos"),
            ],
            b"",
        );
        let err = read_reply(&bad, Verb::Set).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Rpc(400));
        assert!(
            err.message().contains("QoS 0") && err.message().contains("qos"),
            "{err}"
        );

        let missing = response(&[], b"+OK\r\n");
        assert_eq!(
            read_reply(&missing, Verb::Set).unwrap_err().kind(),
            ErrorKind::Malformed
        );
        let v2 = response(&[("__stat", "200"), ("__protVer", "2.0")], b"+OK\r\n");
        assert_eq!(
            read_reply(&v2, Verb::Set).unwrap_err().kind(),
            ErrorKind::Malformed
        );
    }

    #[test]
    fn pending_map_fails_old_sessions_only() {
        let map = PendingMap::default();
        let mut old = map.insert([1; 16], 1);
        let mut new = map.insert([2; 16], 2);
        let err = Error::new(ErrorKind::ConnectionLost, "gone");
        assert_eq!(map.fail_sessions_before(2, &err), 1);
        assert_eq!(
            old.try_recv().unwrap().unwrap_err().kind(),
            ErrorKind::ConnectionLost
        );
        assert!(new.try_recv().is_err());
        assert!(
            !map.complete(&[1; 16], response(&[], b"")),
            "late response is dropped"
        );
        assert!(map.complete(&[2; 16], response(&[], b"")));
        assert!(
            !map.complete(&[2; 16], response(&[], b"")),
            "duplicate is dropped"
        );
        assert_eq!(map.len(), 0);
    }
}
