//! The store inside the embedded broker: a session of the broker's router that belongs to
//! no network connection.
//!
//! The store registers itself in the [`MessageRouter`] under the server's client id, with
//! delivery lanes it reads itself, and subscribes that session to the request topic. A
//! request then reaches the store as the `PublishPacket` the broker decoded — already
//! stamped with the publisher's client id, after the KEYNOTIFY routing hook and the ACL —
//! without a TCP connection, a second encode or a second decode; responses and
//! notifications go back through the router ([`super::RouterSink`], or straight from the
//! worker that served the request: [`super::workers`]). Each request crosses the loopback
//! twice (client → broker → client) instead of four times with the adapter.
//!
//! Backpressure is the router's own: when the store's lane is full, the router queues
//! requests in the session's queue (bounded in bytes, like every client's), and the store
//! drains that queue, in order, after the lane. Nobody can take the session over: the
//! access gate refuses a connection that uses the server's client id without the server's
//! credentials.

use std::collections::VecDeque;
use std::sync::Arc;

use bytes::Bytes;
use mqtt5::broker::router::{DeliveryLanes, LaneReceivers, MessageRouter, SubscriptionRequest};
use mqtt5::broker::storage::client_queue::QueueHandle;
use mqtt5::packet::publish::PublishPacket;
use mqtt5::{PropertyId, PropertyValue};
use tokio::sync::oneshot;

use crate::envelope::RequestMeta;

/// Requests the store's delivery lane holds before the router queues them.
const STORE_LANE: usize = 4096;

/// Requests taken from the session's queue at a time.
const QUEUE_BATCH: usize = 256;

/// The store's session in the broker's router.
pub(crate) struct StoreSession {
    lanes: LaneReceivers,
    queue: QueueHandle,
    /// Requests taken from the queue and not yet served.
    batch: VecDeque<PublishPacket>,
    /// A batch was taken from the queue: the router queues behind it until it is served.
    draining: bool,
    /// Fires if the session is displaced (which the access gate prevents).
    takeover: oneshot::Receiver<mqtt5::broker::router::TakeoverNotice>,
}

impl StoreSession {
    /// Registers the session `client_id` and subscribes it to the request topic.
    pub(crate) async fn open(
        router: &Arc<MessageRouter>,
        client_id: &str,
    ) -> std::io::Result<StoreSession> {
        StoreSession::open_with_lane(router, client_id, STORE_LANE).await
    }

    async fn open_with_lane(
        router: &Arc<MessageRouter>,
        client_id: &str,
        lane: usize,
    ) -> std::io::Result<StoreSession> {
        let (lanes, receivers) = DeliveryLanes::channel(lane);
        let queue = router.queue_handle(client_id);
        let (takeover_tx, takeover) = oneshot::channel();
        router
            .register_session(
                client_id.to_owned(),
                lanes,
                Arc::clone(&queue),
                takeover_tx,
                true,
            )
            .await;
        let request = SubscriptionRequest::new(
            client_id,
            mqstate::topics::REQUEST_TOPIC,
            mqtt5::QoS::AtLeastOnce,
        );
        router
            .subscribe(request)
            .await
            .map_err(|e| std::io::Error::other(format!("subscribing the store: {e}")))?;
        Ok(StoreSession {
            lanes: receivers,
            queue,
            batch: VecDeque::new(),
            draining: false,
            takeover,
        })
    }

    /// Whether a request is ready to be taken without waiting.
    pub(crate) fn pending(&self) -> bool {
        !self.batch.is_empty()
            || !self.lanes.qos1.is_empty()
            || !self.lanes.qos0.is_empty()
            || !self.queue.is_empty()
    }

    /// The next request, in the order the broker routed them; `None` once the router is
    /// gone or the session was displaced.
    pub(crate) async fn next(&mut self) -> Option<PublishPacket> {
        loop {
            if let Some(packet) = self.batch.pop_front() {
                return Some(packet);
            }
            if self.draining {
                // Everything taken was served: the router may use the lane again.
                self.draining = false;
                self.queue.finish_drain();
            }
            match self.lanes.try_recv() {
                Ok(message) => return Some(message.publish),
                Err(tokio::sync::mpsc::error::TryRecvError::Disconnected) => return None,
                Err(tokio::sync::mpsc::error::TryRecvError::Empty) => {}
            }
            if !self.queue.is_empty() {
                let taken = self.queue.take(QUEUE_BATCH).await;
                if !taken.is_empty() {
                    self.draining = true;
                    self.batch = taken.iter().map(|m| m.to_publish_packet()).collect();
                }
                continue;
            }
            tokio::select! {
                message = self.lanes.recv() => return message.map(|m| m.publish),
                () = self.queue.notified() => {}
                _ = &mut self.takeover => {
                    tracing::error!("the store's session in the broker was taken over");
                    return None;
                }
            }
        }
    }
}

/// What a request's envelope says, read from the broker's packet (the broker's
/// `x-mqtt-client-id` is trusted: it overwrites whatever the client sent).
pub(crate) fn request_meta(packet: &PublishPacket) -> RequestMeta {
    let mut meta = RequestMeta::at_qos0(packet.qos == mqtt5::QoS::AtMostOnce);
    let props = &packet.properties;
    if let Some(PropertyValue::Utf8String(topic)) = props.get(PropertyId::ResponseTopic) {
        meta.response_topic = Some(topic.clone());
    }
    if let Some(PropertyValue::BinaryData(data)) = props.get(PropertyId::CorrelationData) {
        meta.correlation = Some(Bytes::clone(data));
    }
    for value in props.get_all(PropertyId::UserProperty).unwrap_or_default() {
        if let PropertyValue::Utf8StringPair(name, value) = value {
            meta.user_property(name, value, true);
        }
    }
    meta
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn request(i: usize) -> PublishPacket {
        let mut packet = PublishPacket::new(
            mqstate::topics::REQUEST_TOPIC,
            Bytes::from(i.to_string()),
            mqtt5::QoS::AtLeastOnce,
        );
        packet
            .properties
            .set_response_topic("clients/c/r".to_owned());
        packet
            .properties
            .add_user_property("__ts".to_owned(), format!("t{i}"));
        packet
            .properties
            .add_user_property("__ts".to_owned(), "second".to_owned());
        packet
    }

    #[tokio::test]
    async fn requests_beyond_the_lane_are_queued_and_served_in_order() {
        let router = Arc::new(MessageRouter::new());
        let mut session = StoreSession::open_with_lane(&router, "store", 4)
            .await
            .unwrap();
        // A deadline already past: what the lane cannot take goes to the session's queue.
        for i in 0..50 {
            router
                .route_message_with_deadline(&request(i), Some("c"), tokio::time::Instant::now())
                .await;
        }
        assert!(
            session.queue.count() > 0,
            "the router queued nothing: the test proves nothing"
        );
        for i in 0..50 {
            let packet = tokio::time::timeout(Duration::from_secs(5), session.next())
                .await
                .expect("a request")
                .expect("the session is open");
            assert_eq!(&packet.payload[..], i.to_string().as_bytes());
            let meta = request_meta(&packet);
            assert_eq!(
                meta.timestamp.as_deref(),
                Some(format!("t{i}").as_str()),
                "first wins"
            );
            assert_eq!(meta.response_topic.as_deref(), Some("clients/c/r"));
        }
        // Drained: a later request still arrives, and nothing is left behind.
        router.route_message(&request(50), Some("c")).await;
        let packet = session.next().await.unwrap();
        assert_eq!(&packet.payload[..], b"50");
        assert!(session.queue.is_empty());
    }
}
