//! What the server has to publish but the broker cannot take yet, held in bounded queues
//! so that a flood of notifications to a slow or vanished client cannot grow the server's
//! memory without bound.
//!
//! While the MQTT client's channel has room, messages go straight into it and nothing is
//! queued here. When it is full (the broker is slow to acknowledge), messages wait in:
//!
//! - one queue of responses, at most `response_queue_limit` long;
//! - one queue of notifications **per client**, at most `notify_queue_limit` long.
//!
//! **Drop policy:** when a queue is full the **oldest** message in it is dropped to make
//! room for the new one: the newest notification carries the key's latest state, and a
//! client orders notifications by version anyway. The first drop of an overflow episode
//! logs a warning naming the client; when its queue drains, one line says how many were
//! dropped. A client that disconnects loses its queue ([`Outbox::forget_client`]).
//!
//! The publisher task drains responses first, then the clients' queues round-robin.
//! Order is kept: nothing bypasses the queues while anything is queued or in flight.

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use bytes::Bytes;
use rumqttc::v5::mqttbytes::v5::PublishProperties;
use tokio::sync::Notify;

use crate::metrics::{Recorder, Stats};

/// One PUBLISH the server sends (QoS 1, not retained).
#[derive(Clone, Debug)]
pub struct Message {
    /// The topic.
    pub topic: String,
    /// The payload.
    pub payload: Bytes,
    /// The properties.
    pub properties: PublishProperties,
}

/// Where messages go when there is room: the MQTT client's channel.
pub trait Sink {
    /// Hands `message` over without waiting, or gives it back when there is no room.
    // Giving the message back unboxed keeps the hot path free of an allocation.
    #[allow(clippy::result_large_err)]
    fn try_send(&self, message: Message) -> Result<(), Message>;
}

/// Counters the server reports through [`ServerHandle::stats`](crate::ServerHandle::stats).
#[derive(Debug, Default)]
pub struct Counters {
    /// Requests received on the request topic.
    pub requests: AtomicU64,
    /// Requests dropped or answered with an RPC error.
    pub rejected: AtomicU64,
    /// Notifications handed to the broker.
    pub notifications: AtomicU64,
    /// Notifications dropped because their client's queue was full.
    pub notifications_dropped: AtomicU64,
    /// Responses dropped because the response queue was full.
    pub responses_dropped: AtomicU64,
    /// The longest any client's notification queue has been.
    pub max_client_queue: AtomicU64,
    /// Registrations dropped because their client disconnected.
    pub registrations_dropped: AtomicU64,
    /// Requests by command and outcome, their latencies, and the store's sizes.
    pub(crate) recorder: Recorder,
    /// The span exporter's counters (zero while it is off).
    pub(crate) spans: std::sync::Arc<crate::telemetry::SpanCounters>,
}

impl Counters {
    /// [`Stats`] from these counters and the embedded broker's session counts.
    pub(crate) fn stats(&self, offline_sessions: u64, offline_sessions_ended: u64) -> Stats {
        Stats {
            requests: self.requests.load(Ordering::Relaxed),
            rejected: self.rejected.load(Ordering::Relaxed),
            notifications: self.notifications.load(Ordering::Relaxed),
            notifications_dropped: self.notifications_dropped.load(Ordering::Relaxed),
            responses_dropped: self.responses_dropped.load(Ordering::Relaxed),
            max_client_queue: self.max_client_queue.load(Ordering::Relaxed),
            registrations_dropped: self.registrations_dropped.load(Ordering::Relaxed),
            offline_sessions_ended,
            offline_sessions,
        }
    }
}

#[derive(Default)]
struct State {
    responses: VecDeque<Message>,
    clients: HashMap<String, ClientQueue>,
    /// Clients with queued notifications, in round-robin order.
    ready: VecDeque<String>,
    in_flight: bool,
    closed: bool,
}

#[derive(Default)]
struct ClientQueue {
    messages: VecDeque<Message>,
    dropped: u64,
}

impl State {
    fn idle(&self) -> bool {
        !self.in_flight && self.responses.is_empty() && self.ready.is_empty()
    }
}

/// The bounded queues between the store and the broker.
pub struct Outbox {
    state: Mutex<State>,
    wake: Notify,
    notify_limit: usize,
    response_limit: usize,
}

impl Outbox {
    /// Empty queues with the given per-client and response limits (each at least 1).
    pub fn new(notify_limit: usize, response_limit: usize) -> Outbox {
        Outbox {
            state: Mutex::new(State::default()),
            wake: Notify::new(),
            notify_limit: notify_limit.max(1),
            response_limit: response_limit.max(1),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(|poison| poison.into_inner())
    }

    /// Sends a response, directly when nothing is queued, else through the queue.
    pub fn send_response(
        &self,
        sink: &(impl Sink + ?Sized),
        message: Message,
        counters: &Counters,
    ) {
        let mut state = self.lock();
        let message = if state.idle() {
            match sink.try_send(message) {
                Ok(()) => return,
                Err(message) => message,
            }
        } else {
            message
        };
        if state.responses.len() >= self.response_limit {
            state.responses.pop_front();
            counters.responses_dropped.fetch_add(1, Ordering::Relaxed);
            tracing::warn!(
                limit = self.response_limit,
                "response queue full: dropped the oldest response"
            );
        }
        state.responses.push_back(message);
        drop(state);
        self.wake.notify_one();
    }

    /// Sends a notification to `client_id`, directly when nothing is queued, else through
    /// that client's bounded queue (dropping its oldest notification when full).
    pub fn send_notification(
        &self,
        sink: &(impl Sink + ?Sized),
        client_id: &str,
        message: Message,
        counters: &Counters,
    ) {
        let mut state = self.lock();
        let message = if state.idle() {
            match sink.try_send(message) {
                Ok(()) => {
                    counters.notifications.fetch_add(1, Ordering::Relaxed);
                    return;
                }
                Err(message) => message,
            }
        } else {
            message
        };
        let state = &mut *state;
        let queue = match state.clients.get_mut(client_id) {
            Some(queue) => queue,
            None => state.clients.entry(client_id.to_owned()).or_default(),
        };
        if queue.messages.is_empty() {
            state.ready.push_back(client_id.to_owned());
        }
        if queue.messages.len() >= self.notify_limit {
            queue.messages.pop_front();
            queue.dropped += 1;
            counters
                .notifications_dropped
                .fetch_add(1, Ordering::Relaxed);
            if queue.dropped == 1 {
                tracing::warn!(
                    client_id,
                    limit = self.notify_limit,
                    "notification queue full: dropping the oldest notifications of this client"
                );
            }
        }
        queue.messages.push_back(message);
        counters
            .max_client_queue
            .fetch_max(queue.messages.len() as u64, Ordering::Relaxed);
        self.wake.notify_one();
    }

    /// Drops everything queued for a client that is gone.
    pub fn forget_client(&self, client_id: &str) {
        let mut state = self.lock();
        if let Some(queue) = state.clients.remove(client_id) {
            state.ready.retain(|c| c != client_id);
            if !queue.messages.is_empty() || queue.dropped > 0 {
                tracing::info!(
                    client_id,
                    discarded = queue.messages.len(),
                    dropped = queue.dropped,
                    "client gone: discarded its queued notifications"
                );
            }
        }
    }

    /// How many messages are queued (not counting one in flight).
    pub fn queued(&self) -> usize {
        let state = self.lock();
        state.responses.len()
            + state
                .clients
                .values()
                .map(|q| q.messages.len())
                .sum::<usize>()
    }

    /// The next message for the publisher, waiting until there is one; `None` once
    /// closed. The caller must call [`Outbox::done`] after handing it over.
    pub async fn next(&self, counters: &Counters) -> Option<Message> {
        loop {
            if let Some(message) = self.pop(counters) {
                return Some(message);
            }
            if self.lock().closed {
                return None;
            }
            self.wake.notified().await;
        }
    }

    fn pop(&self, counters: &Counters) -> Option<Message> {
        let mut state = self.lock();
        if state.closed {
            return None;
        }
        if let Some(message) = state.responses.pop_front() {
            state.in_flight = true;
            return Some(message);
        }
        let client_id = state.ready.pop_front()?;
        let queue = state.clients.get_mut(&client_id)?;
        let message = queue.messages.pop_front()?;
        if queue.messages.is_empty() {
            if queue.dropped > 0 {
                tracing::warn!(
                    client_id,
                    dropped = queue.dropped,
                    "notification queue drained after an overflow"
                );
            }
            state.clients.remove(&client_id);
        } else {
            state.ready.push_back(client_id);
        }
        state.in_flight = true;
        counters.notifications.fetch_add(1, Ordering::Relaxed);
        Some(message)
    }

    /// The message from [`Outbox::next`] has been handed over.
    pub fn done(&self) {
        self.lock().in_flight = false;
    }

    /// Stops the publisher: [`Outbox::next`] returns `None` from now on.
    pub fn close(&self) {
        self.lock().closed = true;
        self.wake.notify_one();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::RefCell;

    /// A sink with room for `room` messages.
    struct Tight {
        room: RefCell<usize>,
        sent: RefCell<Vec<String>>,
    }

    impl Sink for Tight {
        fn try_send(&self, message: Message) -> Result<(), Message> {
            let mut room = self.room.borrow_mut();
            if *room == 0 {
                return Err(message);
            }
            *room -= 1;
            self.sent.borrow_mut().push(message.topic);
            Ok(())
        }
    }

    fn msg(topic: &str) -> Message {
        Message {
            topic: topic.to_owned(),
            payload: Bytes::new(),
            properties: PublishProperties::default(),
        }
    }

    #[tokio::test]
    async fn a_flood_to_one_client_stays_bounded_and_keeps_the_newest() {
        let counters = Counters::default();
        let outbox = Outbox::new(3, 10);
        let sink = Tight {
            room: RefCell::new(1),
            sent: RefCell::new(Vec::new()),
        };
        for i in 0..100 {
            outbox.send_notification(&sink, "slow", msg(&format!("n{i}")), &counters);
        }
        assert_eq!(*sink.sent.borrow(), vec!["n0".to_owned()]);
        assert_eq!(outbox.queued(), 3);
        assert_eq!(counters.notifications_dropped.load(Ordering::Relaxed), 96);
        assert_eq!(counters.max_client_queue.load(Ordering::Relaxed), 3);
        let mut drained = Vec::new();
        for _ in 0..3 {
            drained.push(outbox.next(&counters).await.unwrap().topic);
            outbox.done();
        }
        assert_eq!(drained, vec!["n97", "n98", "n99"]);
    }

    #[tokio::test]
    async fn responses_go_first_and_clients_take_turns() {
        let counters = Counters::default();
        let outbox = Outbox::new(10, 10);
        let sink = Tight {
            room: RefCell::new(0),
            sent: RefCell::new(Vec::new()),
        };
        outbox.send_notification(&sink, "a", msg("a1"), &counters);
        outbox.send_notification(&sink, "a", msg("a2"), &counters);
        outbox.send_notification(&sink, "b", msg("b1"), &counters);
        outbox.send_response(&sink, msg("r1"), &counters);
        let mut order = Vec::new();
        while outbox.queued() > 0 {
            order.push(outbox.next(&counters).await.unwrap().topic);
            outbox.done();
        }
        assert_eq!(order, vec!["r1", "a1", "b1", "a2"]);
    }

    #[test]
    fn nothing_bypasses_a_queue_or_a_message_in_flight() {
        let counters = Counters::default();
        let outbox = Outbox::new(10, 10);
        let full = Tight {
            room: RefCell::new(0),
            sent: RefCell::new(Vec::new()),
        };
        outbox.send_notification(&full, "a", msg("a1"), &counters);
        let roomy = Tight {
            room: RefCell::new(10),
            sent: RefCell::new(Vec::new()),
        };
        outbox.send_notification(&roomy, "a", msg("a2"), &counters);
        outbox.send_response(&roomy, msg("r"), &counters);
        assert!(roomy.sent.borrow().is_empty());
        assert_eq!(outbox.queued(), 3);
        outbox.forget_client("a");
        assert_eq!(outbox.queued(), 1);
    }

    #[test]
    fn the_response_queue_is_bounded_too() {
        let counters = Counters::default();
        let outbox = Outbox::new(10, 2);
        let full = Tight {
            room: RefCell::new(0),
            sent: RefCell::new(Vec::new()),
        };
        for i in 0..5 {
            outbox.send_response(&full, msg(&format!("r{i}")), &counters);
        }
        assert_eq!(outbox.queued(), 2);
        assert_eq!(counters.responses_dropped.load(Ordering::Relaxed), 3);
    }
}
