//! The correlation engine: one request/response exchange of the state store's RPC (spec §2).
//!
//! [`Client::request`] waits for the connection, stamps the request with the process clock,
//! sends it with its envelope ([`wire`]), parks a slot in the [`pending`] map, and waits for
//! the response the event loop moves into that slot, bounded by one deadline. The event loop
//! only moves a received response into its waiting slot; decoding happens on the caller's
//! task, so at high concurrency the work spreads over every core instead of queueing behind
//! the one event loop.
//!
//! Failures are typed: not sent at all (`invalid_argument`, `connection_lost` while waiting
//! for the connection, `timeout` handing it over), or sent and unanswered (`timeout`,
//! `connection_lost` with [`Error::may_have_applied`] set).

mod pending;
pub(crate) mod wire;

use std::time::Duration;

use rumqttc::v5::mqttbytes::QoS;
use tracing::warn;

use crate::Client;
use crate::codec::{Request, Response};
use crate::error::{Error, ErrorKind};
use crate::hlc::Hlc;
use crate::topics;

pub(crate) use pending::{PendingGuard, PendingMap};
pub(crate) use wire::{Envelope, Reply, packet_size, read_reply};

/// A request's correlation data: 16 random bytes laid out as a UUID v4.
pub(crate) type CorrelationId = [u8; 16];

/// A fresh random correlation id.
pub(crate) fn new_correlation_id() -> CorrelationId {
    let mut id: CorrelationId = rand::random();
    id[6] = (id[6] & 0x0f) | 0x40; // version 4
    id[8] = (id[8] & 0x3f) | 0x80; // RFC 4122 variant
    id
}

impl Client {
    /// One request/response exchange: wait for the connection, stamp, send, wait, read.
    pub(crate) async fn request(
        &self,
        request: Request<&[u8]>,
        fencing_token: Option<&Hlc>,
        persist: bool,
        timeout: Duration,
    ) -> Result<Reply, Error> {
        request.validate()?;
        let shared = &self.shared;
        let deadline = tokio::time::Instant::now() + timeout;
        let session = shared.ready(timeout).await?;
        let timestamp = self.clock().tick()?;
        let correlation = new_correlation_id();
        let properties = Envelope {
            client_id: &shared.client_id,
            response_topic: &shared.response_topic,
            correlation,
            timestamp: &timestamp,
            fencing_token,
            persist,
            timeout,
        }
        .properties();
        let payload = request.encode();
        let size = packet_size(&properties, topics::REQUEST_TOPIC.len(), payload.len());
        let max = shared.link.borrow().broker_max_packet as usize;
        if size > max {
            return Err(Error::invalid_argument(format!(
                "the request would be a {size}-byte packet; the broker accepts at most {max} bytes"
            )));
        }
        let rx = shared.pending.insert(correlation, session);
        let _guard = PendingGuard {
            map: &shared.pending,
            id: correlation,
        };
        let mqtt = shared.mqtt();
        let publish = mqtt.publish_bytes_with_properties(
            topics::REQUEST_TOPIC,
            QoS::AtLeastOnce,
            false,
            payload,
            properties,
        );
        // Handing over can wait when rumqttc's channel is full: the deadline bounds that too.
        match tokio::time::timeout_at(deadline, publish).await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => {
                return Err(Error::new(
                    ErrorKind::Closed,
                    format!("the connection task is gone: {e}"),
                ));
            }
            Err(_) => {
                return Err(Error::new(
                    ErrorKind::Timeout,
                    format!(
                        "{} could not be handed to the connection within {timeout:?}",
                        request.verb()
                    ),
                ));
            }
        }
        let publish = match tokio::time::timeout_at(deadline, rx).await {
            Ok(Ok(outcome)) => outcome?,
            Ok(Err(_)) => return Err(Error::new(ErrorKind::Closed, "the client was closed")),
            Err(_) => {
                let verb = request.verb();
                let cause = shared
                    .signs
                    .unanswered_cause()
                    .map(|c| format!(": {c}"))
                    .unwrap_or_default();
                if !verb.changes_state() {
                    return Err(Error::new(
                        ErrorKind::Timeout,
                        format!("no response to {verb} within {timeout:?}{cause}"),
                    ));
                }
                return Err(Error::new(
                    ErrorKind::Timeout,
                    format!(
                        "no response to {verb} within {timeout:?}{cause}; it may have been applied"
                    ),
                )
                .with_may_have_applied());
            }
        };
        let reply = read_reply(&publish, request.verb())?;
        if let Some(version) = &reply.version
            && let Err(e) = self.clock().receive(version)
        {
            warn!(error = %e, "a response's __ts was not merged into the clock");
        }
        if let Response::Error(e) = reply.response {
            return Err(e.into());
        }
        Ok(reply)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn correlation_ids_are_uuid_v4() {
        let a = new_correlation_id();
        assert_eq!(a[6] >> 4, 4);
        assert_eq!(a[8] >> 6, 0b10);
        assert_ne!(a, new_correlation_id());
    }
}
