//! The MQTT5 envelope of a request (spec §2): what the adapter reads from a request's
//! properties, how it decides that a request cannot be answered, and the properties of
//! the responses and notifications it sends.
//!
//! Rules, in the order they are checked:
//!
//! 1. no response topic → drop (nowhere to answer);
//! 2. a forbidden response topic ([`mqstate::topics::check_response_topic`]) → drop, and
//!    with the embedded broker also disconnect the client;
//! 3. no correlation data → drop (the client could not match an answer);
//! 4. QoS 0 → answer `__stat` 400 with a `__stMsg` naming the problem;
//! 5. `__protVer` with a major version other than 1 → answer `__stat` 505;
//! 6. no client id (no `__srcId` and nothing from the broker) → answer `__stat` 400;
//! 7. with the embedded broker, a `__srcId` other than the client id the broker knows for
//!    the connection → answer `__stat` 400 (`__propName: __srcId`): a client may not
//!    register, stop or spend quota under another client's id.

use bytes::Bytes;
use mqstate::envelope::{is_supported_protocol, property};
use rumqttc::v5::mqttbytes::QoS;
use rumqttc::v5::mqttbytes::v5::{Publish, PublishProperties};

pub use mqstate::envelope::{CONTENT_TYPE, PROTOCOL_VERSION, SUPPORTED_MAJOR_VERSIONS};

/// The user property the embedded broker adds with the publisher's client id.
pub const BROKER_CLIENT_ID_PROPERTY: &str = "x-mqtt-client-id";

/// What was read from one request's envelope.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RequestMeta {
    /// The response topic, if any.
    pub response_topic: Option<String>,
    /// The correlation data, if any.
    pub correlation: Option<Bytes>,
    /// `__srcId`: the client id the requester claims.
    pub src_id: Option<String>,
    /// The client id the broker vouches for (embedded broker only).
    pub broker_client_id: Option<String>,
    /// `__ts`.
    pub timestamp: Option<String>,
    /// `__ft`.
    pub fencing_token: Option<String>,
    /// `aio-persistence: true` was present.
    pub persist: bool,
    /// `__protVer`.
    pub protocol_version: Option<String>,
    /// The request arrived at QoS 0.
    pub qos0: bool,
    /// `traceparent`: the caller's W3C trace context, when valid
    /// ([`TraceParent::parse`](crate::telemetry::TraceParent::parse); an invalid one is
    /// ignored).
    pub trace_parent: Option<crate::telemetry::TraceParent>,
    /// `tracestate`, passed on with a valid `traceparent` (at most 512 bytes of printable
    /// ASCII; anything else is ignored).
    pub trace_state: Option<String>,
}

impl RequestMeta {
    /// Reads the envelope of a received PUBLISH. The first occurrence of a user property
    /// wins; `broker_client_id` is read only when the broker is trusted to set it.
    pub fn read(publish: &Publish, trust_broker_id: bool) -> RequestMeta {
        let mut meta = RequestMeta::at_qos0(publish.qos == QoS::AtMostOnce);
        let Some(props) = &publish.properties else {
            return meta;
        };
        meta.response_topic = props.response_topic.clone();
        meta.correlation = props.correlation_data.clone();
        for (name, value) in &props.user_properties {
            meta.user_property(name, value, trust_broker_id);
        }
        meta
    }

    /// An empty envelope of a request received at QoS 0 (`qos0`) or above; fill it with
    /// [`RequestMeta::user_property`] and the response topic and correlation data.
    pub fn at_qos0(qos0: bool) -> RequestMeta {
        RequestMeta {
            qos0,
            ..RequestMeta::default()
        }
    }

    /// Takes one user property, in the order received: the first occurrence of a name
    /// wins; `x-mqtt-client-id` is read only when the broker is trusted to set it.
    pub fn user_property(&mut self, name: &str, value: &str, trust_broker_id: bool) {
        let slot = match name {
            property::SOURCE_ID => &mut self.src_id,
            property::TIMESTAMP => &mut self.timestamp,
            property::FENCING_TOKEN => &mut self.fencing_token,
            property::PROTOCOL_VERSION => &mut self.protocol_version,
            BROKER_CLIENT_ID_PROPERTY if trust_broker_id => &mut self.broker_client_id,
            crate::telemetry_names::TRACEPARENT => {
                if self.trace_parent.is_none() {
                    self.trace_parent = crate::telemetry::TraceParent::parse(value);
                }
                return;
            }
            crate::telemetry_names::TRACESTATE => {
                if self.trace_state.is_none() && crate::telemetry::acceptable_tracestate(value) {
                    self.trace_state = Some(value.to_owned());
                }
                return;
            }
            property::PERSISTENCE => {
                self.persist |= value.eq_ignore_ascii_case("true");
                return;
            }
            _ => return,
        };
        if slot.is_none() {
            *slot = Some(value.to_owned());
        }
    }

    /// The requesting client: `__srcId`, else what the broker knows.
    pub fn client_id(&self) -> Option<&str> {
        self.src_id
            .as_deref()
            .filter(|id| !id.is_empty())
            .or(self.broker_client_id.as_deref())
    }

    /// Decides what to do with this request.
    pub fn verdict(&self) -> Verdict {
        let Some(topic) = self.response_topic.as_deref() else {
            return Verdict::Drop("no response topic");
        };
        if mqstate::topics::check_response_topic(topic).is_err() {
            return Verdict::Forbidden;
        }
        if self.correlation.is_none() {
            return Verdict::Drop("no correlation data");
        }
        if self.qos0 {
            return Verdict::Fail(Failure {
                status: 400,
                message: "requests must be published at QoS 1, not QoS 0".to_owned(),
                property: None,
            });
        }
        if let Some(version) = &self.protocol_version
            && !is_supported_protocol(version)
        {
            return Verdict::Fail(Failure {
                status: 505,
                message: format!("unsupported protocol version {version:?}"),
                property: Some((property::PROTOCOL_VERSION, version.clone())),
            });
        }
        if self.client_id().is_none() {
            return Verdict::Fail(Failure {
                status: 400,
                message: format!("the request has no {} user property", property::SOURCE_ID),
                property: Some((property::SOURCE_ID, String::new())),
            });
        }
        if let (Some(claimed), Some(known)) = (
            self.src_id.as_deref().filter(|id| !id.is_empty()),
            self.broker_client_id.as_deref(),
        ) && claimed != known
        {
            // The broker knows who sent it: a client may not act (register, stop, count
            // against the quota) under another client's id.
            return Verdict::Fail(Failure {
                status: 400,
                message: format!(
                    "{} {claimed:?} is not the client id this connection uses",
                    property::SOURCE_ID
                ),
                property: Some((property::SOURCE_ID, claimed.to_owned())),
            });
        }
        Verdict::Answer
    }
}

/// What the adapter does with one request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Hand it to the store and answer with `__stat` 200.
    Answer,
    /// Answer with an RPC error and do not touch the store.
    Fail(Failure),
    /// Drop it (logged), for the reason given.
    Drop(&'static str),
    /// The response topic is forbidden: drop it, and disconnect the client if possible.
    Forbidden,
}

/// An RPC-level failure sent instead of a store response.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Failure {
    /// `__stat`.
    pub status: u16,
    /// `__stMsg`.
    pub message: String,
    /// `__propName` / `__propVal`: the offending header, if one is to blame.
    pub property: Option<(&'static str, String)>,
}

/// The properties of a `__stat` 200 response.
pub fn ok_properties(correlation: Bytes, version: Option<String>) -> PublishProperties {
    let mut user_properties = Vec::with_capacity(3);
    user_properties.push((property::STATUS.to_owned(), "200".to_owned()));
    if let Some(version) = version {
        user_properties.push((property::TIMESTAMP.to_owned(), version));
    }
    user_properties.push((
        property::PROTOCOL_VERSION.to_owned(),
        PROTOCOL_VERSION.to_owned(),
    ));
    response_properties(correlation, user_properties)
}

/// The properties of an RPC error response.
pub fn failure_properties(correlation: Bytes, failure: &Failure) -> PublishProperties {
    let mut user_properties = vec![
        (property::STATUS.to_owned(), failure.status.to_string()),
        (property::STATUS_MESSAGE.to_owned(), failure.message.clone()),
        (property::APPLICATION_ERROR.to_owned(), "false".to_owned()),
    ];
    if let Some((name, value)) = &failure.property {
        user_properties.push((property::PROPERTY_NAME.to_owned(), (*name).to_owned()));
        user_properties.push((property::PROPERTY_VALUE.to_owned(), value.clone()));
    }
    if failure.status == 505 {
        user_properties.push((
            property::SUPPORTED_MAJOR_VERSIONS.to_owned(),
            SUPPORTED_MAJOR_VERSIONS.to_owned(),
        ));
        if let Some((_, requested)) = &failure.property {
            user_properties.push((
                property::REQUEST_PROTOCOL_VERSION.to_owned(),
                requested.clone(),
            ));
        }
    }
    user_properties.push((
        property::PROTOCOL_VERSION.to_owned(),
        PROTOCOL_VERSION.to_owned(),
    ));
    response_properties(correlation, user_properties)
}

fn response_properties(
    correlation: Bytes,
    user_properties: Vec<(String, String)>,
) -> PublishProperties {
    PublishProperties {
        correlation_data: Some(correlation),
        content_type: Some(CONTENT_TYPE.to_owned()),
        user_properties,
        ..PublishProperties::default()
    }
}

/// The properties of a notification: the key's new version in `__ts`.
pub fn notification_properties(version: String) -> PublishProperties {
    PublishProperties {
        user_properties: vec![(property::TIMESTAMP.to_owned(), version)],
        ..PublishProperties::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn publish(qos: QoS, props: PublishProperties) -> Publish {
        Publish::new("t", qos, Bytes::new(), Some(props))
    }

    fn full() -> PublishProperties {
        PublishProperties {
            response_topic: Some("clients/c/resp".into()),
            correlation_data: Some(Bytes::from_static(b"0123456789abcdef")),
            user_properties: vec![
                (property::SOURCE_ID.into(), "c".into()),
                (property::TIMESTAMP.into(), "1:0:c".into()),
                (property::PERSISTENCE.into(), "true".into()),
                (BROKER_CLIENT_ID_PROPERTY.into(), "c".into()),
            ],
            ..PublishProperties::default()
        }
    }

    #[test]
    fn reads_the_envelope() {
        let meta = RequestMeta::read(&publish(QoS::AtLeastOnce, full()), true);
        assert_eq!(meta.client_id(), Some("c"));
        assert_eq!(meta.broker_client_id.as_deref(), Some("c"));
        assert_eq!(meta.timestamp.as_deref(), Some("1:0:c"));
        assert!(meta.persist);
        assert_eq!(meta.verdict(), Verdict::Answer);
        let untrusted = RequestMeta::read(&publish(QoS::AtLeastOnce, full()), false);
        assert_eq!(untrusted.broker_client_id, None);
    }

    #[test]
    fn reads_the_trace_context() {
        let parent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
        let mut props = full();
        props.user_properties.extend([
            ("traceparent".into(), "00-junk".into()),
            ("traceparent".into(), parent.into()),
            ("tracestate".into(), "a=1,b=2".into()),
            ("tracestate".into(), "c=3".into()),
        ]);
        let meta = RequestMeta::read(&publish(QoS::AtLeastOnce, props), true);
        assert_eq!(
            meta.trace_parent,
            crate::telemetry::TraceParent::parse(parent)
        );
        assert!(meta.trace_parent.is_some());
        assert_eq!(meta.trace_state.as_deref(), Some("a=1,b=2"));
        let mut props = full();
        props
            .user_properties
            .push(("tracestate".into(), "x=\u{7}".into()));
        let meta = RequestMeta::read(&publish(QoS::AtLeastOnce, props), true);
        assert_eq!((meta.trace_parent, meta.trace_state), (None, None));
    }

    #[test]
    fn falls_back_to_the_broker_client_id() {
        let mut props = full();
        props
            .user_properties
            .retain(|(n, _)| n != property::SOURCE_ID);
        let meta = RequestMeta::read(&publish(QoS::AtLeastOnce, props.clone()), true);
        assert_eq!(meta.client_id(), Some("c"));
        let meta = RequestMeta::read(&publish(QoS::AtLeastOnce, props), false);
        assert!(matches!(meta.verdict(), Verdict::Fail(f) if f.status == 400));
    }

    #[test]
    fn verdicts_follow_the_rules() {
        let mut props = full();
        props.response_topic = None;
        let meta = RequestMeta::read(&publish(QoS::AtMostOnce, props), true);
        assert_eq!(meta.verdict(), Verdict::Drop("no response topic"));

        let mut props = full();
        props.response_topic = Some(mqstate::topics::REQUEST_TOPIC.into());
        let meta = RequestMeta::read(&publish(QoS::AtLeastOnce, props), true);
        assert_eq!(meta.verdict(), Verdict::Forbidden);

        let mut props = full();
        props.correlation_data = None;
        let meta = RequestMeta::read(&publish(QoS::AtLeastOnce, props), true);
        assert_eq!(meta.verdict(), Verdict::Drop("no correlation data"));

        let meta = RequestMeta::read(&publish(QoS::AtMostOnce, full()), true);
        assert!(
            matches!(meta.verdict(), Verdict::Fail(f) if f.status == 400 && f.message.contains("QoS 0"))
        );

        let mut props = full();
        props
            .user_properties
            .push((property::PROTOCOL_VERSION.into(), "2.0".into()));
        let meta = RequestMeta::read(&publish(QoS::AtLeastOnce, props), true);
        assert!(matches!(meta.verdict(), Verdict::Fail(f) if f.status == 505));
    }

    #[test]
    fn a_src_id_other_than_the_broker_known_id_is_refused() {
        let mut props = full();
        for (name, value) in &mut props.user_properties {
            if name == BROKER_CLIENT_ID_PROPERTY {
                *value = "someone-else".into();
            }
        }
        let meta = RequestMeta::read(&publish(QoS::AtLeastOnce, props.clone()), true);
        assert!(
            matches!(meta.verdict(), Verdict::Fail(f) if f.status == 400 && f.property == Some((property::SOURCE_ID, "c".to_owned())))
        );
        // Without a trusted broker id there is nothing to compare with.
        let meta = RequestMeta::read(&publish(QoS::AtLeastOnce, props), false);
        assert_eq!(meta.verdict(), Verdict::Answer);
    }

    #[test]
    fn response_properties_carry_status_and_version() {
        let props = ok_properties(Bytes::from_static(b"x"), Some("v".into()));
        assert_eq!(props.content_type.as_deref(), Some(CONTENT_TYPE));
        assert_eq!(props.correlation_data.as_deref(), Some(&b"x"[..]));
        assert_eq!(
            props.user_properties,
            vec![
                (property::STATUS.to_owned(), "200".to_owned()),
                (property::TIMESTAMP.to_owned(), "v".to_owned()),
                (
                    property::PROTOCOL_VERSION.to_owned(),
                    PROTOCOL_VERSION.to_owned()
                )
            ]
        );
    }
}
