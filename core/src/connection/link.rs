//! The link between callers and the event loop: the connection state callers wait on
//! ([`Link`]), the subscriptions the client wants and their exact SUBSCRIBE/SUBACK
//! bookkeeping, and [`Shared`], what the client handles, the observers and the event loop
//! share (including the runtime every background task of the client runs on).
//!
//! **Subscription bookkeeping.** rumqttc gives no packet id when a SUBSCRIBE is queued; it
//! reports `Outgoing::Subscribe(pkid)` when it writes one. Every queued SUBSCRIBE produces
//! exactly one such event, in queue order, on whichever connection it is finally written —
//! a SUBSCRIBE queued just before a disconnection is written after the reconnection. So the
//! queue of filters waiting for their packet id is never cleared by a CONNACK (it is cleared
//! only when the event loop and its channel are rebuilt), and a CONNACK re-subscribes only
//! the wanted filters that are neither acknowledged nor still queued.

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use rumqttc::v5::mqttbytes::QoS;
use rumqttc::v5::mqttbytes::v5::Filter;
use rumqttc::v5::{AsyncClient, EventLoop, MqttOptions};
use tokio::runtime::Handle;
use tokio::sync::watch;
use tracing::warn;

use super::REQUEST_CHANNEL_CAPACITY;
use crate::cache::{Cache, LinkView};
use crate::error::{Error, ErrorKind};
use crate::observe::Registry;
use crate::rpc::PendingMap;
use crate::settings::{ConnectionSettings, MQTT_MAX_PACKET_SIZE};
use crate::topics;

/// The state of the link, watched by callers.
#[derive(Clone, Debug, Default)]
pub(crate) struct Link {
    /// CONNACKs received so far.
    pub(crate) connection: u64,
    /// MQTT sessions begun so far (CONNACKs without a session present).
    pub(crate) session: u64,
    /// Connected now.
    pub(crate) connected: bool,
    /// Filters subscribed (SUBACK received) in the current session.
    pub(crate) acked: HashSet<String>,
    /// Filters the broker refused in the current session, with its reason.
    pub(crate) refused: HashMap<String, String>,
    /// Connected with the response topic subscribed: requests may be sent (derived from
    /// `connected` and `acked` by [`Link::refresh_ready`], kept to spare the hot path a
    /// hash lookup).
    pub(crate) ready: bool,
    /// The broker's maximum packet size.
    pub(crate) broker_max_packet: u32,
    /// The last connection failure.
    pub(crate) last_error: Option<Error>,
    /// The client is closing or closed.
    pub(crate) closed: bool,
    /// When the last connection was lost (`None` while connected, and before the first).
    pub(crate) cut_at: Option<std::time::Instant>,
}

impl Link {
    /// What the client's cache needs of it.
    pub(crate) fn view(&self) -> LinkView {
        LinkView {
            connection: self.connection,
            connected: self.connected,
            closed: self.closed,
            cut_at: self.cut_at,
        }
    }

    /// Recomputes `ready` after `connected` or `acked` changed.
    pub(crate) fn refresh_ready(&mut self, response_topic: &str) {
        self.ready = self.connected && !self.closed && self.acked.contains(response_topic);
    }
}

/// Subscriptions wanted, and SUBSCRIBE packets waiting for their packet id and SUBACK.
#[derive(Default)]
pub(crate) struct Subscriptions {
    wanted: Vec<String>,
    /// Filters of SUBSCRIBE requests queued to rumqttc, in order, until their packet id is
    /// seen (whatever connection that happens on).
    queued: VecDeque<Vec<String>>,
    /// Filters of SUBSCRIBE packets written on the current connection, by packet id, until
    /// their SUBACK.
    sent: HashMap<u16, Vec<String>>,
}

impl Subscriptions {
    /// rumqttc wrote the oldest queued SUBSCRIBE with packet id `pkid`.
    pub(crate) fn written(&mut self, pkid: u16) {
        match self.queued.pop_front() {
            Some(filters) => {
                self.sent.insert(pkid, filters);
            }
            None => warn!(pkid, "a SUBSCRIBE was written that mqstate did not queue"),
        }
    }

    /// The filters acknowledged by the SUBACK of `pkid`.
    pub(crate) fn acked(&mut self, pkid: u16) -> Vec<String> {
        self.sent.remove(&pkid).unwrap_or_default()
    }

    /// A new connection: SUBSCRIBEs written on the old one get no SUBACK any more; returns
    /// the wanted filters that need a SUBSCRIBE now (neither acknowledged nor still queued).
    pub(crate) fn reconnected(&mut self, acked: &HashSet<String>) -> Vec<String> {
        self.sent.clear();
        self.wanted
            .iter()
            .filter(|f| !acked.contains(*f) && !self.queued.iter().flatten().any(|q| q == *f))
            .cloned()
            .collect()
    }

    /// The channel to rumqttc was replaced: nothing queued will be written.
    pub(crate) fn channel_replaced(&mut self) {
        self.queued.clear();
        self.sent.clear();
    }
}

/// Whether a state store has ever answered this client, to name the cause when a request
/// goes unanswered.
#[derive(Debug, Default)]
pub(crate) struct StoreSigns {
    answered: std::sync::atomic::AtomicBool,
}

impl StoreSigns {
    /// A response arrived.
    pub(crate) fn answered(&self) {
        self.answered
            .store(true, std::sync::atomic::Ordering::Relaxed);
    }

    /// Whether any response has arrived.
    pub(crate) fn has_answered(&self) -> bool {
        self.answered.load(std::sync::atomic::Ordering::Relaxed)
    }
}

/// What the client handle, the observers and the event loop share.
pub(crate) struct Shared {
    /// What has been seen of a state store behind the broker.
    pub(crate) signs: StoreSigns,
    pub(crate) client_id: String,
    pub(crate) response_topic: String,
    pub(crate) notification_filter: String,
    pub(crate) settings: ConnectionSettings,
    pub(crate) pending: PendingMap,
    pub(crate) link: watch::Sender<Link>,
    pub(crate) observers: Registry,
    /// The client-side cache, when it is on.
    pub(crate) cache: Option<Cache>,
    /// The runtime every task of this client runs on (captured at connect), so that work
    /// started from a drop on any thread — inside a runtime or not — still runs.
    pub(crate) runtime: Handle,
    mqtt: RwLock<AsyncClient>,
    subs: Mutex<Subscriptions>,
}

impl Shared {
    /// Replaces the rumqttc handle (the event loop was rebuilt).
    pub(crate) fn replace_mqtt(&self, mqtt: AsyncClient) {
        *self.mqtt.write().unwrap_or_else(|e| e.into_inner()) = mqtt;
        self.subs().channel_replaced();
    }

    /// The rumqttc handle to publish with (it is replaced when the event loop is rebuilt).
    pub(crate) fn mqtt(&self) -> AsyncClient {
        self.mqtt.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    pub(crate) fn subs(&self) -> std::sync::MutexGuard<'_, Subscriptions> {
        self.subs.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Queues one SUBSCRIBE for `filters`; the caller holds the subscriptions lock so the
    /// queue order is the order rumqttc sends them in.
    pub(crate) fn send_subscribe(&self, subs: &mut Subscriptions, filters: Vec<String>) {
        let packet: Vec<Filter> = filters
            .iter()
            .map(|f| Filter::new(f.clone(), QoS::AtLeastOnce))
            .collect();
        match self.mqtt().try_subscribe_many(packet) {
            Ok(()) => subs.queued.push_back(filters),
            Err(e) => {
                warn!(error = %e, "could not queue a SUBSCRIBE; it is retried at the next connection")
            }
        }
    }

    /// Subscribes `filter` at QoS 1 (once; it is restored after every reconnection) and waits
    /// for its SUBACK in the current session, up to `timeout`.
    pub(crate) async fn subscribe(&self, filter: &str, timeout: Duration) -> Result<(), Error> {
        {
            let mut subs = self.subs();
            if !subs.wanted.iter().any(|f| f == filter) {
                subs.wanted.push(filter.to_owned());
                if self.link.borrow().connected {
                    self.send_subscribe(&mut subs, vec![filter.to_owned()]);
                }
            }
        }
        let mut link = self.link.subscribe();
        let wait = link
            .wait_for(|l| l.closed || l.acked.contains(filter) || l.refused.contains_key(filter));
        match tokio::time::timeout(timeout, wait).await {
            Ok(Ok(l)) if l.closed => Err(Error::new(ErrorKind::Closed, "the client is closed")),
            Ok(Ok(l)) => match l.refused.get(filter) {
                Some(why) => Err(Error::new(
                    ErrorKind::ConnectUnauthorized,
                    format!("the broker refused the subscription to {filter:?}: {why}"),
                )),
                None => Ok(()),
            },
            Ok(Err(_)) => Err(Error::new(ErrorKind::Closed, "the client is closed")),
            Err(_) => Err(Error::new(
                ErrorKind::Timeout,
                format!("no SUBACK for {filter:?} within {timeout:?}"),
            )),
        }
    }

    /// Waits until connected with the response topic subscribed; returns the session number.
    pub(crate) async fn ready(&self, timeout: Duration) -> Result<u64, Error> {
        {
            // The common case, without a receiver or a timer.
            let l = self.link.borrow();
            if l.ready {
                return Ok(l.session);
            }
        }
        let mut link = self.link.subscribe();
        let wait = link.wait_for(|l| l.closed || l.ready);
        match tokio::time::timeout(timeout, wait).await {
            Ok(Ok(l)) if !l.closed => Ok(l.session),
            Ok(_) => Err(Error::new(ErrorKind::Closed, "the client is closed")),
            Err(_) => {
                let l = self.link.borrow();
                let why = l
                    .last_error
                    .as_ref()
                    .map_or(String::new(), |e| format!(": {e}"));
                Err(Error::new(
                    ErrorKind::ConnectionLost,
                    format!("not connected to the broker within {timeout:?}{why}"),
                ))
            }
        }
    }

    /// Starts closing: marks the link closed and asks rumqttc to send DISCONNECT.
    pub(crate) fn close(&self) {
        let mut was_closed = false;
        self.link.send_modify(|l| {
            was_closed = l.closed;
            l.closed = true;
            l.ready = false;
        });
        if !was_closed {
            let _ = self.mqtt().try_disconnect();
        }
    }
}

impl Shared {
    /// Creates the shared state and the event loop that drives it, from options built
    /// (files read) beforehand.
    pub(crate) fn new(
        settings: ConnectionSettings,
        opts: MqttOptions,
        client_id: String,
        response_topic: String,
        observer_capacity: usize,
        cache: Option<Cache>,
        runtime: Handle,
    ) -> (Arc<Shared>, EventLoop) {
        let (mqtt, eventloop) = AsyncClient::new(opts, REQUEST_CHANNEL_CAPACITY);
        let link = Link {
            broker_max_packet: MQTT_MAX_PACKET_SIZE,
            ..Link::default()
        };
        let shared = Arc::new(Shared {
            notification_filter: topics::notification_filter(&client_id),
            subs: Mutex::new(Subscriptions {
                wanted: vec![response_topic.clone()],
                ..Subscriptions::default()
            }),
            client_id,
            response_topic,
            settings,
            pending: PendingMap::default(),
            link: watch::Sender::new(link),
            observers: Registry::new(observer_capacity),
            cache,
            runtime,
            mqtt: RwLock::new(mqtt),
            signs: StoreSigns::default(),
        });
        (shared, eventloop)
    }
}
