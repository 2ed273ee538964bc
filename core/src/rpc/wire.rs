//! The request envelope as rumqttc properties (spec §2, in its order), the packet-size
//! bound checked before sending, and the reading of a response envelope into a reply or a
//! typed error. The names come from the pure [`envelope`](crate::envelope) module.

use std::time::Duration;

use bytes::Bytes;
use rumqttc::v5::mqttbytes::v5::{Publish, PublishProperties};

use super::CorrelationId;
use crate::codec::{Response, Verb};
use crate::envelope::{
    CONTENT_TYPE, PROTOCOL_VERSION, is_supported_protocol, message_expiry_secs, property,
};
use crate::error::{Error, RpcDetails};
use crate::hlc::Hlc;

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
        user.push((
            property::PROTOCOL_VERSION.to_owned(),
            PROTOCOL_VERSION.to_owned(),
        ));
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
    if let Some(version) = property(props, property::PROTOCOL_VERSION)
        && !is_supported_protocol(version)
    {
        return Err(Error::malformed(format!(
            "response protocol version {version:?} is not 1.x"
        )));
    }
    if let Some(ct) = &props.content_type
        && ct != CONTENT_TYPE
    {
        return Err(Error::malformed(format!("response content type {ct:?}")));
    }
    let status = property(props, property::STATUS)
        .ok_or_else(|| Error::malformed("response without __stat"))?;
    let status: u16 = status
        .parse()
        .map_err(|_| Error::malformed(format!("response status {status:?} is not a number")))?;
    if status != 200 && status != 204 {
        return Err(rpc_error(status, props));
    }
    let version = property(props, property::TIMESTAMP)
        .map(Hlc::parse)
        .transpose()?;
    let response = Response::decode_for(verb, &publish.payload)?;
    Ok(Reply { response, version })
}

/// The error for a non-success `__stat`, with every detail the service gave.
fn rpc_error(status: u16, props: &PublishProperties) -> Error {
    let text = |name| property(props, name).map(str::to_owned);
    Error::rpc(RpcDetails {
        status,
        status_message: text(property::STATUS_MESSAGE),
        property_name: text(property::PROPERTY_NAME),
        property_value: text(property::PROPERTY_VALUE),
        application_error: property(props, property::APPLICATION_ERROR) == Some("true"),
        supported_major_versions: text(property::SUPPORTED_MAJOR_VERSIONS),
        request_protocol_version: text(property::REQUEST_PROTOCOL_VERSION),
    })
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::error::ErrorKind;
    use rumqttc::v5::mqttbytes::QoS;

    pub(crate) fn response(user: &[(&str, &str)], payload: &'static [u8]) -> Publish {
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
        let details = err.rpc_details().unwrap();
        assert_eq!(details.status, 400);
        assert_eq!(details.property_name.as_deref(), Some("qos"));
        assert!(!details.application_error);

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
}
