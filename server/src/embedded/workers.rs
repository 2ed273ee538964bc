//! The in-process store served by several tasks at once, in one order.
//!
//! One task serving every connection's requests — take from the store's lane, read the
//! envelope, decode, apply, encode, hand the response to one more task that routes it —
//! caps the whole server at what one core does, and queues every request behind the others
//! (the tail latency with many in flight). Here `n` workers take turns instead:
//!
//! 1. a worker holds the session (an async lock) while it waits for the next request and
//!    reads its envelope;
//! 2. it takes the store (a short blocking lock) **before** it lets the session go, so the
//!    store applies requests in exactly the order the broker routed them: per-key and
//!    per-client order, one clock, one journal order, as with a single task. It lets the
//!    session go only if more requests wait (an idle server hands nothing over);
//! 3. under the store it checks for duplicates, applies the request (clock tick, state
//!    machine, journal append) and encodes the payload; notifications go to the ordered
//!    outbox from inside the lock, in the order of the changes (see
//!    [`Service::serve_ordered`]); the response is appended to its response topic's
//!    [`Chains`] entry, still inside the lock, so responses keep the order of the requests
//!    per response topic (MQTT's ordered topics, which clients may rely on);
//! 4. it lets the store go, builds the response's properties and routes it itself, straight
//!    into the requester's delivery lane, while the next worker already serves the next
//!    request — unless another worker is routing for that topic: then that worker routes it
//!    next, in order.
//!
//! So what is serial is the take + envelope + apply (a few µs); routing responses, the
//! larger part, runs on as many workers as there are cores, and the hop through the router
//! task is gone for responses. A request costs no more wake-ups than before: the worker
//! woken by the lane, the requester's connection task, and under load the next worker
//! (which then has a request to serve).
//!
//! PX expiries and session ends are served by the task that runs the workers, under the
//! same store lock.
//!
//! # Shutdown
//!
//! When `shutdown` flips, the store stops taking requests: its session leaves the request
//! topic (the broker no longer routes requests to it), each worker finishes the request it
//! holds (applied, journaled and answered), the requests already waiting in the session are
//! answered `__stat 503` ("the store is shutting down"), unapplied, and the journal is
//! fsynced and closed ([`Service::close`]). A pause armed in [`crate::faults`] holds the worker whose turn it is
//! before it applies its request, so requests queue in the session and are served in order
//! when the pause ends.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};

use mqtt5::broker::router::MessageRouter;
use tokio::sync::Notify;
use tokio::sync::mpsc::UnboundedReceiver;
use tokio::sync::watch;
use tokio::task::JoinSet;

use super::session::{StoreSession, request_meta};
use crate::service::{Command, Outgoing, Service};

/// How many workers serve the store: one per core the runtime may use (at least 2, so one
/// waits for the next request while another routes; at most 16).
pub(crate) fn default_workers() -> usize {
    std::thread::available_parallelism().map_or(2, |n| n.get().clamp(2, 16))
}

/// Routes responses straight into the router from the workers.
pub(crate) struct Responder {
    pub(crate) router: Arc<MessageRouter>,
    /// The server's client id, as the publisher.
    pub(crate) own_id: String,
}

impl Responder {
    /// Routes without waiting: when the requester's delivery lane is full the response
    /// joins the requester's queue behind it at once (bounded in bytes, like every
    /// client's). A worker that waited for room there would stop serving the store, and the
    /// requester's connection, itself waiting for room in the store's lane, would never
    /// drain its own lane: each would wait out the router's 2 s budget.
    async fn publish(&self, response: Outgoing) {
        let packet = super::to_packet(response.into_message());
        self.router
            .route_message_with_deadline(&packet, Some(&self.own_id), tokio::time::Instant::now())
            .await;
    }
}

/// The response topics some worker is routing for, each with the responses that wait for
/// it, in the order the store produced them.
#[derive(Default)]
pub(crate) struct Chains(Mutex<HashMap<String, VecDeque<Outgoing>>>);

impl Chains {
    fn lock(&self) -> MutexGuard<'_, HashMap<String, VecDeque<Outgoing>>> {
        self.0.lock().unwrap_or_else(|poison| poison.into_inner())
    }

    /// Called under the store's lock: `response` back if the caller is now the one routing
    /// for its topic, else `None` (queued behind the routing in progress).
    fn join(&self, response: Outgoing) -> Option<Outgoing> {
        let mut chains = self.lock();
        match chains.get_mut(response.topic()) {
            Some(waiting) => {
                waiting.push_back(response);
                None
            }
            None => {
                chains.insert(response.topic().to_owned(), VecDeque::new());
                Some(response)
            }
        }
    }

    /// The next response for `topic` once the previous one is routed; `None` ends the
    /// caller's turn at that topic.
    fn next(&self, topic: &str) -> Option<Outgoing> {
        let mut chains = self.lock();
        let next = chains.get_mut(topic).and_then(VecDeque::pop_front);
        if next.is_none() {
            chains.remove(topic);
        }
        next
    }
}

fn lock(service: &Mutex<Service>) -> MutexGuard<'_, Service> {
    service.lock().unwrap_or_else(|poison| poison.into_inner())
}

/// What the workers share.
struct Shared {
    service: Arc<Mutex<Service>>,
    /// The pause the workers honour (the service's faults).
    faults: Arc<crate::faults::Faults>,
    session: Arc<tokio::sync::Mutex<StoreSession>>,
    chains: Chains,
    responder: Responder,
    /// A worker applied a PX due before the one the expiry loop sleeps for.
    expiry_moved: Notify,
}

/// Serves the store from its session with `workers` tasks until `shutdown` flips; expiries
/// on time, disconnect events as they come.
pub(crate) async fn run(
    service: Arc<Mutex<Service>>,
    session: StoreSession,
    responder: Responder,
    workers: usize,
    mut commands: UnboundedReceiver<Command>,
    mut shutdown: watch::Receiver<bool>,
) {
    let faults = Arc::clone(&lock(&service).faults);
    let shared = Arc::new(Shared {
        service,
        faults,
        session: Arc::new(tokio::sync::Mutex::new(session)),
        chains: Chains::default(),
        responder,
        expiry_moved: Notify::new(),
    });
    let (closing, closing_rx) = watch::channel(false);
    let mut tasks = JoinSet::new();
    for _ in 0..workers.max(1) {
        tasks.spawn(worker(Arc::clone(&shared), closing_rx.clone()));
    }
    loop {
        let expiry = lock(&shared.service).until_next_expiry();
        tokio::select! {
            biased;
            _ = shutdown.changed() => break,
            Some(command) = commands.recv() => lock(&shared.service).command(command),
            () = Service::next_expiry(expiry) => lock(&shared.service).expire_due(),
            () = shared.expiry_moved.notified() => {}
            // A worker ends only when the session is gone.
            _ = tasks.join_next() => break,
        }
    }
    // No new requests: the broker stops routing them to the store, then the workers finish
    // what they hold, refuse what waits, and end. (Aborted instead if this task is, past
    // the shutdown's bound: workers hold the store's lock only between awaits, so that
    // leaves it free.)
    let responder = &shared.responder;
    responder
        .router
        .unsubscribe(&responder.own_id, mqstate::topics::REQUEST_TOPIC, None)
        .await;
    closing.send_replace(true);
    while tasks.join_next().await.is_some() {}
    let mut service = lock(&shared.service);
    service.outbox.close();
    service.close();
}

/// The session, held by the worker whose turn it is.
type Turn = tokio::sync::OwnedMutexGuard<StoreSession>;

/// One worker: takes its turn at the session, applies in turn, routes on its own; once
/// `closing` flips, refuses what waits in the session and ends.
async fn worker(shared: Arc<Shared>, mut closing: watch::Receiver<bool>) {
    let mut kept: Option<Turn> = None;
    loop {
        let mut turn = match kept.take() {
            Some(turn) => turn,
            None => Arc::clone(&shared.session).lock_owned().await,
        };
        if *closing.borrow() {
            refuse_waiting(&shared, &mut turn).await;
            return;
        }
        let packet = tokio::select! {
            biased;
            _ = closing.changed() => {
                kept = Some(turn);
                continue;
            }
            packet = turn.next() => packet,
        };
        let Some(packet) = packet else {
            return;
        };
        // A pause (a fault on demand) holds the turn: every later request waits behind
        // this one, in order, and is served once it ends — or refused, unapplied, if the
        // store shuts down meanwhile.
        let closed = tokio::select! {
            biased;
            () = shared.faults.wait_unpaused() => false,
            _ = closing.wait_for(|closing| *closing) => true,
        };
        if closed {
            refuse(&shared, &packet).await;
            kept = Some(turn);
            continue;
        }
        let (response, moved, turn) = apply(&shared, turn, &packet);
        kept = turn;
        if moved {
            shared.expiry_moved.notify_one();
        }
        let Some(mut response) = response else {
            continue;
        };
        let topic = response.topic().to_owned();
        loop {
            shared.responder.publish(response).await;
            match shared.chains.next(&topic) {
                Some(next) => response = next,
                None => break,
            }
        }
    }
}

/// Shutdown: answers every request waiting in the session `__stat 503`, unapplied.
async fn refuse_waiting(shared: &Shared, turn: &mut Turn) {
    let mut refused = 0u64;
    while turn.pending() {
        // `pending` says one is ready; the bound only guards against a queue that turned
        // out empty.
        let next = tokio::time::timeout(std::time::Duration::from_millis(100), turn.next());
        let Ok(Some(packet)) = next.await else {
            break;
        };
        refuse(shared, &packet).await;
        refused += 1;
    }
    if refused > 0 {
        tracing::info!(
            refused,
            "shutting down: refused the requests still waiting (503, not applied)"
        );
    }
}

/// Answers one request `__stat 503`, unapplied: the store is shutting down.
async fn refuse(shared: &Shared, packet: &mqtt5::packet::publish::PublishPacket) {
    let meta = request_meta(packet);
    let (Some(topic), Some(correlation)) = (&meta.response_topic, &meta.correlation) else {
        return;
    };
    let failure = crate::envelope::Failure {
        status: 503,
        message: "the state store is shutting down: the request was not applied".to_owned(),
        property: None,
    };
    let message = crate::outbox::Message {
        topic: topic.clone(),
        payload: bytes::Bytes::new(),
        properties: crate::envelope::failure_properties(correlation.clone(), &failure),
    };
    shared.responder.publish(Outgoing::Message(message)).await;
}

/// Applies `packet` under the store's lock, taken while the worker still holds its turn.
/// Returns the response to route now (if this worker is to route it), whether the next PX
/// expiry moved earlier, and the turn if nothing else waits: then the same worker takes the
/// next request too, and an idle server hands nothing from worker to worker (each hand-over
/// is a wake-up, often of another thread). With requests waiting, the turn is let go (the
/// store still held, so the next worker applies after this one) and another worker serves
/// the next request while this one routes its response.
fn apply(
    shared: &Shared,
    turn: Turn,
    packet: &mqtt5::packet::publish::PublishPacket,
) -> (Option<Outgoing>, bool, Option<Turn>) {
    let meta = request_meta(packet);
    let mut store = lock(&shared.service);
    let turn = if turn.pending() {
        drop(turn);
        None
    } else {
        Some(turn)
    };
    let due = store.store.next_expiry_ms();
    let response = store
        .serve_ordered(&packet.payload, &meta, true)
        .and_then(|response| shared.chains.join(response));
    let moved = match (due, store.store.next_expiry_ms()) {
        (Some(before), Some(after)) => after < before,
        (None, after) => after.is_some(),
        (Some(_), None) => false,
    };
    (response, moved, turn)
}

#[cfg(test)]
mod tests {
    use bytes::Bytes;

    use super::*;
    use crate::service::Answer;

    fn answer(topic: &str, n: u8) -> Outgoing {
        Outgoing::Answer(Answer {
            topic: topic.to_owned(),
            correlation: Bytes::from(vec![n]),
            payload: Bytes::new(),
            version: None,
        })
    }

    fn correlation(response: &Outgoing) -> u8 {
        match response {
            Outgoing::Answer(a) => a.correlation[0],
            Outgoing::Message(_) => unreachable!(),
        }
    }

    #[test]
    fn responses_to_one_topic_are_routed_in_order_by_one_worker_at_a_time() {
        let chains = Chains::default();
        let first = chains
            .join(answer("a", 1))
            .expect("nobody routes for a yet");
        assert!(chains.join(answer("a", 2)).is_none(), "queued behind 1");
        let other = chains.join(answer("b", 9)).expect("b is free");
        assert_eq!(correlation(&other), 9);
        assert!(chains.join(answer("a", 3)).is_none());
        assert_eq!(correlation(&first), 1);
        assert_eq!(chains.next("a").as_ref().map(correlation), Some(2));
        assert_eq!(chains.next("a").as_ref().map(correlation), Some(3));
        assert!(chains.next("a").is_none(), "the turn at a ends");
        assert!(chains.join(answer("a", 4)).is_some(), "a is free again");
        assert!(chains.next("b").is_none());
    }
}
