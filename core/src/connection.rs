//! The connection: one rumqttc v5 event loop per client, driven by one task on the client's
//! runtime, with the traps of rumqttc handled (see `shared/design/toolchain-notes.md`):
//!
//! - TCP_NODELAY on, an explicit maximum packet size, an explicit session expiry, no topic
//!   aliases, and clean start only on the first connection ([`options`]);
//! - reconnection with exponential backoff and jitter (rumqttc alone retries in a hot loop),
//!   credentials and SAT tokens re-read before every attempt, off the event loop's task;
//! - subscriptions restored after every CONNACK without a session, each waited for by SUBACK,
//!   with exact packet-id bookkeeping across reconnections ([`link`]);
//! - a CONNACK without a session fails the requests of the lost session at once with
//!   [`ErrorKind::ConnectionLost`] (rumqttc silently drops their publishes);
//! - a `CollisionTimeout` rebuilds the client and event loop instead of livelocking;
//! - the event loop never awaits a publish; closing really closes the socket;
//! - connection failures are classified (refused, timed out, unauthorized, TLS) so callers
//!   can tell "retry" from "fix the settings".

mod beat;
mod link;
mod nagle;
pub(crate) mod options;
mod session_end;

use std::sync::Arc;
use std::time::Duration;

use rumqttc::Outgoing;
use rumqttc::v5::mqttbytes::v5::{
    ConnectReturnCode, Packet, PubAckReason, Publish, SubscribeReasonCode,
};
use rumqttc::v5::{AsyncClient, ConnectionError, Event, EventLoop, StateError};
use tracing::{debug, info, warn};

use crate::error::{Error, ErrorKind};
use crate::settings::{ConnectionSettings, MQTT_MAX_PACKET_SIZE};
use crate::topics;

pub(crate) use link::Shared;
use options::{Credentials, off_loop};

/// Capacity of the channel between callers and the event loop.
const REQUEST_CHANNEL_CAPACITY: usize = 4096;
/// How long a closing client waits for its DISCONNECT to go out.
const CLOSE_GRACE: Duration = Duration::from_secs(1);

/// Drives the event loop until the client closes.
pub(crate) async fn run(shared: Arc<Shared>, mut eventloop: EventLoop) {
    // One long-lived wait for the close, instead of a new waiter on every event.
    let closed_signal = {
        let mut closed = shared.link.subscribe();
        async move {
            let _ = closed.wait_for(|l| l.closed).await;
        }
    };
    tokio::pin!(closed_signal);
    let mut close_seen = false;
    // Connected when the client closed: its session is ended after the connection.
    let mut connected_at_close = false;
    let mut failures: u32 = 0;
    let mut nagle = nagle::NagleWatch::default();
    let mut closing_deadline: Option<tokio::time::Instant> = None;
    let mut beat = beat::Beat::new(beat::BEAT);
    loop {
        // Events already read (a batch of packets comes out one event at a time) are taken
        // without building the select below and its `poll` future for each.
        let polled = match eventloop.poll_buffered() {
            Some(event) => Ok(event),
            None => tokio::select! {
                biased;
                _ = &mut closed_signal, if !close_seen => {
                    close_seen = true;
                    if !shared.link.borrow().connected {
                        break;
                    }
                    connected_at_close = true;
                    closing_deadline = Some(tokio::time::Instant::now() + CLOSE_GRACE);
                    continue;
                }
                _ = sleep_until(closing_deadline), if closing_deadline.is_some() => break,
                polled = eventloop.poll() => polled,
                () = beat.elapsed(), if beat.armed() => {
                    beat.on_elapsed();
                    continue;
                }
            },
        };
        match polled {
            Ok(Event::Incoming(packet)) => {
                on_packet(&shared, &mut eventloop, packet, &mut failures, &mut nagle)
            }
            Ok(Event::Outgoing(Outgoing::Subscribe(pkid))) => shared.subs().written(pkid),
            Ok(Event::Outgoing(Outgoing::Publish(pkid))) => {
                beat.request_sent();
                shared.pending.routes().written(pkid)
            }
            Ok(Event::Outgoing(Outgoing::AwaitAck(pkid))) => {
                let held = eventloop.state.collision.as_ref().and_then(request_id);
                shared.pending.routes().collided(pkid, held);
            }
            Ok(Event::Outgoing(Outgoing::Disconnect)) if closing_deadline.is_some() => break,
            Ok(Event::Outgoing(_)) => {}
            Err(e) => {
                // What rumqttc took from its channel without writing it is dropped if the
                // broker keeps no session.
                let unwritten = unwritten_requests(&eventloop.pending)
                    .filter(|(pkid, _)| *pkid == 0)
                    .map(|(_, id)| id);
                shared.pending.routes().disconnected(unwritten);
                on_disconnected(&shared, &e);
                if shared.link.borrow().closed {
                    break;
                }
                if matches!(e, ConnectionError::MqttState(StateError::CollisionTimeout)) {
                    eventloop = rebuild(&shared, &eventloop);
                }
                failures = failures.saturating_add(1);
                let delay = backoff(&shared.settings, failures);
                debug!(?delay, failures, "reconnecting after a delay");
                tokio::select! {
                    _ = tokio::time::sleep(delay) => {}
                    _ = &mut closed_signal, if !close_seen => break,
                }
                let settings = shared.settings.clone();
                match off_loop(move || Credentials::read(&settings)).await {
                    Ok(credentials) => credentials.apply(&mut eventloop.options),
                    Err(e) => {
                        warn!(error = %e, "credentials could not be refreshed");
                        shared.link.send_modify(|l| l.last_error = Some(e));
                    }
                }
            }
        }
    }
    let end_session = (connected_at_close && !shared.settings.session_expiry.is_zero())
        .then(|| eventloop.options.clone());
    // Dropping the event loop closes the socket.
    drop(eventloop);
    shared.link.send_modify(|l| {
        l.connected = false;
        l.closed = true;
        l.acked.clear();
        l.ready = false;
    });
    let n = shared
        .pending
        .fail_all(&Error::new(ErrorKind::Closed, "the client was closed"));
    shared.observers.close_all();
    if let Some(options) = end_session {
        session_end::end(&options).await;
    }
    debug!(failed = n, client_id = %shared.client_id, "event loop stopped");
}

async fn sleep_until(deadline: Option<tokio::time::Instant>) {
    match deadline {
        Some(d) => tokio::time::sleep_until(d).await,
        None => std::future::pending().await,
    }
}

fn on_packet(
    shared: &Shared,
    eventloop: &mut EventLoop,
    packet: Packet,
    failures: &mut u32,
    nagle: &mut nagle::NagleWatch,
) {
    match packet {
        Packet::Publish(publish) => dispatch(shared, publish, nagle),
        Packet::ConnAck(ack) => {
            *failures = 0;
            // rumqttc sends its pending PUBLISHes first (none when the session is new).
            shared
                .pending
                .routes()
                .connected(unwritten_requests(&eventloop.pending));
            let max_packet = ack
                .properties
                .as_ref()
                .and_then(|p| p.max_packet_size)
                .unwrap_or(MQTT_MAX_PACKET_SIZE);
            let mut new_session = false;
            shared.link.send_modify(|l| {
                l.connection += 1;
                new_session = !ack.session_present || l.connection == 1;
                if new_session {
                    l.session += 1;
                    l.acked.clear();
                    l.refused.clear();
                }
                l.connected = true;
                l.cut_at = None;
                l.broker_max_packet = max_packet;
                l.last_error = None;
                l.refresh_ready(&shared.response_topic);
            });
            let link = shared.link.borrow().clone();
            info!(
                client_id = %shared.client_id,
                session_present = ack.session_present,
                connection = link.connection,
                "connected"
            );
            if new_session {
                let lost = shared.pending.fail_sessions_before(
                    link.session,
                    &Error::new(
                        ErrorKind::ConnectionLost,
                        "the MQTT session was lost with the request in flight; it may or may not have been applied",
                    )
                    .with_may_have_applied(),
                );
                if lost > 0 {
                    warn!(lost, "requests failed: their MQTT session was lost");
                }
            }
            // Reconnections resume the session when the broker kept it.
            if !shared.settings.session_expiry.is_zero() {
                eventloop.options.set_clean_start(false);
            }
            let mut subs = shared.subs();
            let missing = subs.reconnected(&link.acked);
            if !missing.is_empty() {
                shared.send_subscribe(&mut subs, missing);
            }
        }
        Packet::SubAck(ack) => {
            let filters = shared.subs().acked(ack.pkid);
            shared.link.send_modify(|l| {
                for (filter, code) in filters.into_iter().zip(&ack.return_codes) {
                    match code {
                        SubscribeReasonCode::Success(_) => {
                            l.refused.remove(&filter);
                            l.acked.insert(filter);
                        }
                        refused => {
                            warn!(%filter, ?refused, "the broker refused a subscription");
                            l.refused.insert(filter, format!("{refused:?}"));
                        }
                    }
                }
                l.refresh_ready(&shared.response_topic);
            });
        }
        Packet::Disconnect(d) => warn!(reason = ?d.reason_code, "the broker sent DISCONNECT"),
        // The client publishes requests only: a broker that routes one to nobody says so here
        // (mosquitto does), and the request is told at once.
        Packet::PubAck(ack) => {
            let id = shared.pending.routes().acked(ack.pkid);
            if let Some(id) = id {
                let to_someone = ack.reason != PubAckReason::NoMatchingSubscribers;
                if to_someone {
                    nagle.acked(std::time::Instant::now());
                }
                shared.pending.routed(&id, to_someone);
            }
        }
        _ => {}
    }
}

/// The request (correlation id) a PUBLISH carries.
fn request_id(publish: &Publish) -> Option<crate::rpc::CorrelationId> {
    let data = publish.properties.as_ref()?.correlation_data.as_ref()?;
    crate::rpc::CorrelationId::try_from(data.as_ref()).ok()
}

/// The requests among rumqttc's pending packets, in order, with their packet id (0 for a
/// PUBLISH never written).
fn unwritten_requests(
    pending: &std::collections::VecDeque<rumqttc::v5::Request>,
) -> impl Iterator<Item = (u16, crate::rpc::CorrelationId)> + '_ {
    pending.iter().filter_map(|r| match r {
        rumqttc::v5::Request::Publish(p) => request_id(p).map(|id| (p.pkid, id)),
        _ => None,
    })
}

/// Routes a received PUBLISH: a response to its request, a notification to its observers.
fn dispatch(shared: &Shared, publish: Publish, nagle: &mut nagle::NagleWatch) {
    if publish.topic == shared.response_topic.as_bytes() {
        let correlation = publish
            .properties
            .as_ref()
            .and_then(|p| p.correlation_data.clone());
        match correlation {
            Some(id) => {
                shared.signs.answered();
                if nagle.answered(std::time::Instant::now()) {
                    warn!(client_id = %shared.client_id, "{}", nagle::ADVICE);
                }
                if !shared.pending.complete(&id, publish) {
                    debug!("dropped a response nobody waits for (late, duplicate or unknown)");
                }
            }
            None => debug!("dropped a response without correlation data"),
        }
    } else if publish
        .topic
        .starts_with(topics::NOTIFICATION_PREFIX.as_bytes())
    {
        shared.observers.dispatch(
            &shared.client_id,
            publish,
            |key, event, version, trusted| {
                if let Some(cache) = &shared.cache {
                    cache.notified(key, event, version, trusted);
                }
            },
        );
    } else {
        debug!(topic = %String::from_utf8_lossy(&publish.topic), "dropped a message on an unexpected topic");
    }
}

/// What a failed connection says to people: rumqttc's text, except where it would not
/// name the cause: a peer that does not speak MQTT 5 (an HTTP server, another protocol), or
/// a TLS failure, which also says which certificates were trusted.
fn describe_failure(
    e: &ConnectionError,
    was_connected: bool,
    settings: &ConnectionSettings,
) -> String {
    let not_mqtt = matches!(
        e,
        ConnectionError::MqttState(StateError::Deserialization(_)) | ConnectionError::NotConnAck(_)
    );
    if not_mqtt && !was_connected {
        // rumqttc's own words ("Promised boundary crossed, contains 17487 bytes") are for
        // the debug log, not for people.
        format!(
            "the server at {}:{} did not answer as an MQTT broker (it sent something that is \
             not MQTT 5): is this the broker's port?",
            settings.host, settings.port
        )
    } else if classify(e) == ErrorKind::Tls {
        let roots = crate::tls::Roots::of(settings.tls.as_ref().and_then(|t| t.ca_file.as_deref()));
        format!("{e} (the broker's certificate was checked against {roots})")
    } else {
        e.to_string()
    }
}

/// The kind of a failed connection attempt.
pub(crate) fn classify(e: &ConnectionError) -> ErrorKind {
    use ConnectReturnCode as C;
    match e {
        ConnectionError::ConnectionRefused(
            C::BadUserNamePassword
            | C::NotAuthorized
            | C::BadAuthenticationMethod
            | C::Banned
            | C::BadClientId
            | C::ClientIdentifierNotValid,
        ) => ErrorKind::ConnectUnauthorized,
        ConnectionError::ConnectionRefused(
            C::ServerUnavailable
            | C::ServiceUnavailable
            | C::ServerBusy
            | C::ConnectionRateExceeded
            | C::UseAnotherServer
            | C::ServerMoved,
        ) => ErrorKind::ConnectRefused,
        ConnectionError::ConnectionRefused(_) => ErrorKind::Connect,
        ConnectionError::Timeout(_) => ErrorKind::ConnectTimeout,
        ConnectionError::Tls(_) => ErrorKind::Tls,
        ConnectionError::Io(io) => {
            let tls = io
                .get_ref()
                .is_some_and(|inner| inner.downcast_ref::<rustls::Error>().is_some());
            match io.kind() {
                _ if tls => ErrorKind::Tls,
                std::io::ErrorKind::ConnectionRefused => ErrorKind::ConnectRefused,
                std::io::ErrorKind::TimedOut => ErrorKind::ConnectTimeout,
                _ => ErrorKind::Connect,
            }
        }
        _ => ErrorKind::Connect,
    }
}

fn on_disconnected(shared: &Shared, e: &ConnectionError) {
    let was_connected = shared.link.borrow().connected;
    let kind = if was_connected {
        ErrorKind::ConnectionLost
    } else {
        classify(e)
    };
    shared.link.send_modify(|l| {
        if l.connected {
            l.cut_at = Some(std::time::Instant::now());
        }
        l.connected = false;
        l.ready = false;
        l.last_error = Some(Error::new(
            kind,
            format!(
                "connection to {}:{} failed: {}",
                shared.settings.host,
                shared.settings.port,
                describe_failure(e, was_connected, &shared.settings)
            ),
        ));
    });
    if was_connected && shared.settings.session_expiry.is_zero() {
        // The session ends with the connection: nothing in flight can be answered.
        let session = shared.link.borrow().session;
        shared.pending.fail_sessions_before(
            session + 1,
            &Error::new(ErrorKind::ConnectionLost, "the connection (and its MQTT session) was lost with the request in flight; it may or may not have been applied").with_may_have_applied(),
        );
    }
    if was_connected {
        warn!(error = %e, client_id = %shared.client_id, "connection lost");
    } else {
        debug!(error = %e, "connection attempt failed");
    }
}

/// Replaces a wedged event loop (rumqttc's CollisionTimeout livelock) with a fresh one. Its
/// in-flight publishes are gone, so their requests fail now.
fn rebuild(shared: &Shared, old: &EventLoop) -> EventLoop {
    warn!("rebuilding the MQTT event loop after a collision timeout");
    let (mqtt, eventloop) = AsyncClient::new(old.options.clone(), REQUEST_CHANNEL_CAPACITY);
    shared.replace_mqtt(mqtt);
    shared.pending.routes().reset();
    shared.pending.fail_all(
        &Error::new(
            ErrorKind::ConnectionLost,
            "the MQTT event loop was rebuilt with the request in flight",
        )
        .with_may_have_applied(),
    );
    eventloop
}

/// Exponential backoff with jitter: a random delay in [d/2, d], d = min · 2^(n-1) ≤ max.
pub(crate) fn backoff(settings: &ConnectionSettings, failures: u32) -> Duration {
    let exp = failures.saturating_sub(1).min(20);
    let full = settings
        .reconnect_min_delay
        .saturating_mul(1 << exp)
        .min(settings.reconnect_max_delay);
    let half = full / 2;
    half + full.saturating_sub(half).mul_f64(rand::random::<f64>())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_grows_with_jitter_and_caps() {
        let s = ConnectionSettings::default();
        for n in 1..40 {
            let d = backoff(&s, n);
            let full = s
                .reconnect_min_delay
                .saturating_mul(1 << (n - 1).min(20))
                .min(s.reconnect_max_delay);
            assert!(d >= full / 2 && d <= full, "{n}: {d:?} vs {full:?}");
        }
        assert!(backoff(&s, 1) <= s.reconnect_min_delay);
        assert!(backoff(&s, 30) >= s.reconnect_max_delay / 2);
    }
}
