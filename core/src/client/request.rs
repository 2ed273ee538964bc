//! `Client::request`: one request/response exchange through the correlation engine
//! ([`crate::rpc`]): wait for the connection, stamp, send, wait, read; and what happens to a
//! request the broker routes to nobody (sent again with growing pauses, then `no_store`).

use std::time::Duration;

use bytes::Bytes;
use rumqttc::v5::mqttbytes::QoS;
use rumqttc::v5::mqttbytes::v5::PublishProperties;
use rumqttc::v5::{ClientError, Request as MqttRequest};
use tokio::time::Instant;
use tracing::{Instrument, field, warn};

use super::Client;
use crate::codec::{Request, Response, Verb};
use crate::error::{Error, ErrorKind};
use crate::hlc::Hlc;
use crate::telemetry::{CallTrace, names};
use crate::topics;
use crate::vocabulary::NO_STORE_WINDOW;

use crate::rpc::{
    CorrelationId, Envelope, Outcome, PendingGuard, Reply, check_timeout, new_correlation_id,
    packet_size, read_reply,
};

impl Client {
    /// One request/response exchange: wait for the connection, stamp, send, wait, read. In
    /// a `tracing` span named by the verb, with OpenTelemetry's database-client fields
    /// ([`names`]; `otel.name` and `otel.kind` for `tracing-opentelemetry`), `error.type` set
    /// when it fails.
    pub(crate) async fn request(
        &self,
        request: Request<&[u8]>,
        fencing_token: Option<&Hlc>,
        persist: bool,
        timeout: Duration,
    ) -> Result<Reply, Error> {
        // An operation the binding traces as a whole (a lock's acquire, a SCAN page) lends
        // its trace to the requests it makes through a client that has none.
        let ambient;
        let this = match &self.trace {
            None => match CallTrace::ambient() {
                Some(trace) => {
                    ambient = self.traced(trace);
                    &ambient
                }
                None => self,
            },
            Some(_) => self,
        };
        let verb = request.verb();
        let span = tracing::info_span!(
            target: "mqstate::call",
            "mqstate.call",
            otel.name = verb.as_str(),
            otel.kind = "client",
            db.system.name = names::DB_SYSTEM,
            db.operation.name = verb.as_str(),
            server.address = %self.shared.settings.host,
            server.port = self.shared.settings.port,
            error.type = field::Empty,
        );
        if span.is_disabled() {
            return this
                .exchange(request, fencing_token, persist, timeout)
                .await;
        }
        let result = this
            .exchange(request, fencing_token, persist, timeout)
            .instrument(span.clone())
            .await;
        if let Err(e) = &result {
            span.record("error.type", e.kind().code());
        }
        result
    }

    /// [`Client::request`]'s work.
    async fn exchange(
        &self,
        request: Request<&[u8]>,
        fencing_token: Option<&Hlc>,
        persist: bool,
        timeout: Duration,
    ) -> Result<Reply, Error> {
        check_timeout(timeout)?;
        request.validate()?;
        let shared = &self.shared;
        let verb = request.verb();
        let deadline = Instant::now() + timeout;
        let mut session = self.ready(timeout).await?;
        let timestamp = self.clock().tick()?;
        let correlation = new_correlation_id();
        let envelope = Envelope {
            client_id: &shared.client_id,
            response_topic: &shared.response_topic,
            correlation,
            timestamp: &timestamp,
            fencing_token,
            persist,
            timeout,
        };
        let properties = self.with_trace_context(envelope.properties());
        let payload = request.encode();
        let size = packet_size(&properties, topics::REQUEST_TOPIC.len(), payload.len());
        let max = shared.link.borrow().broker_max_packet as usize;
        if size > max {
            return Err(Error::invalid_argument(format!(
                "the request would be a {size}-byte packet; the broker accepts at most {max} bytes"
            )));
        }
        let _guard = PendingGuard {
            map: &shared.pending,
            id: correlation,
        };
        let mut unrouted = Unrouted::default();
        let mut properties = Some(properties);
        let publish = loop {
            let rx = shared.pending.insert(correlation, session);
            let props = properties
                .take()
                .unwrap_or_else(|| self.with_trace_context(envelope.properties()));
            self.hand_over(correlation, payload.clone(), props, deadline, verb, timeout)
                .await?;
            // A deadline already past once the request is handed over has run out. tokio's
            // timer (1 ms resolution) would otherwise let a response that comes within that
            // millisecond beat it: a timeout under one round trip would pass or fail by chance.
            let waited = if Instant::now() >= deadline {
                Err(())
            } else {
                tokio::time::timeout_at(deadline, rx).await.map_err(|_| ())
            };
            match waited {
                Ok(Ok(Outcome::Answered(publish))) => break publish,
                Ok(Ok(Outcome::Failed(e))) => return Err(e),
                Ok(Ok(Outcome::Unrouted)) => {
                    // Nobody got it: send it again shortly, unless nobody has for too long.
                    if let Some(e) = unrouted.note(verb) {
                        self.note(names::EVENT_NO_STORE, Vec::new());
                        return Err(e);
                    }
                    let resume = Instant::now() + unrouted.pause();
                    if resume >= deadline {
                        tokio::time::sleep_until(deadline).await;
                        return Err(Error::new(
                            ErrorKind::Timeout,
                            format!(
                                "no response to {verb} within {timeout:?}: {} (it was not applied)",
                                no_store_cause(unrouted.lasted())
                            ),
                        ));
                    }
                    tokio::time::sleep_until(resume).await;
                    session = self.ready(deadline - Instant::now()).await?;
                    self.note(
                        names::EVENT_RESENT,
                        vec![(names::ATTEMPT, i64::from(unrouted.times) + 1)],
                    );
                }
                Ok(Err(_)) => return Err(Error::new(ErrorKind::Closed, "the client was closed")),
                Err(()) => {
                    let cause = self.unanswered_cause(&correlation, timeout, &unrouted);
                    if !verb.changes_state() {
                        return Err(Error::new(
                            ErrorKind::Timeout,
                            format!("no response to {verb} within {timeout:?}: {cause}"),
                        ));
                    }
                    return Err(Error::new(
                        ErrorKind::Timeout,
                        format!(
                            "no response to {verb} within {timeout:?}: {cause}; it may have been applied"
                        ),
                    )
                    .with_may_have_applied());
                }
            }
        };
        let reply = read_reply(&publish, verb)?;
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

    /// Waits for the connection (up to `timeout`); a wait is an event of the call's trace.
    async fn ready(&self, timeout: Duration) -> Result<u64, Error> {
        if self.trace.is_none() && tracing::Span::current().is_disabled() {
            return self.shared.ready(timeout).await;
        }
        let start = Instant::now();
        let session = self.shared.ready(timeout).await;
        let waited = start.elapsed();
        if waited >= CONNECTION_WAIT_NOTED {
            let ms = i64::try_from(waited.as_millis()).unwrap_or(i64::MAX);
            self.note(names::EVENT_CONNECTION_WAIT, vec![(names::WAITED_MS, ms)]);
        }
        session
    }

    /// Notes an event of this call: in its trace, if it has one, and in its `tracing` span.
    fn note(&self, name: &'static str, attributes: Vec<(&'static str, i64)>) {
        tracing::info!(target: "mqstate::call", event = name, attributes = ?attributes, "{name}");
        if let Some(trace) = &self.trace {
            trace.note(name, attributes);
        }
    }

    /// `properties` with the trace context of this handle's calls, if it has one.
    fn with_trace_context(&self, mut properties: PublishProperties) -> PublishProperties {
        if let Some(context) = self.trace.as_ref().and_then(|t| t.context()) {
            let user = &mut properties.user_properties;
            user.push((
                names::TRACEPARENT.to_owned(),
                context.traceparent().to_owned(),
            ));
            if let Some(state) = context.tracestate() {
                user.push((names::TRACESTATE.to_owned(), state.to_owned()));
            }
        }
        properties
    }

    /// Queues the request's PUBLISH to the connection, noting it for its PUBACK; waits (up to
    /// `deadline`) while rumqttc's channel is full.
    async fn hand_over(
        &self,
        correlation: CorrelationId,
        mut payload: Bytes,
        mut properties: PublishProperties,
        deadline: Instant,
        verb: Verb,
        timeout: Duration,
    ) -> Result<(), Error> {
        let shared = &self.shared;
        loop {
            let queued = {
                let mut routes = shared.pending.routes();
                let queued = shared.mqtt().try_publish_with_properties(
                    topics::REQUEST_TOPIC,
                    QoS::AtLeastOnce,
                    false,
                    payload,
                    properties,
                );
                if queued.is_ok() {
                    routes.queued(correlation);
                }
                queued
            };
            let publish = match queued {
                Ok(()) => return Ok(()),
                Err(
                    ClientError::TryRequest(MqttRequest::Publish(p))
                    | ClientError::Request(MqttRequest::Publish(p)),
                ) => p,
                Err(e) => {
                    return Err(Error::new(
                        ErrorKind::Closed,
                        format!("the connection task is gone: {e}"),
                    ));
                }
            };
            if shared.link.borrow().closed {
                return Err(Error::new(ErrorKind::Closed, "the client is closed"));
            }
            if Instant::now() >= deadline {
                return Err(Error::new(
                    ErrorKind::Timeout,
                    format!("{verb} could not be handed to the connection within {timeout:?}"),
                ));
            }
            // rumqttc's channel is full: try again in a moment.
            payload = publish.payload;
            properties = publish.properties.unwrap_or_default();
            tokio::time::sleep(HAND_OVER_RETRY.min(deadline - Instant::now())).await;
        }
    }

    /// Why request `id` has no response yet, from what the broker said of it: for the error
    /// message of its timeout. A short timeout is named as such, never taken for a missing
    /// store.
    fn unanswered_cause(
        &self,
        id: &CorrelationId,
        timeout: Duration,
        unrouted: &Unrouted,
    ) -> String {
        let short = timeout < SHORT_TIMEOUT;
        let delivered = self.shared.pending.delivered(id);
        let too_short = format!("a timeout of {timeout:?} may be too short for a round trip");
        match (unrouted.lasted(), delivered) {
            (Some(lasted), false) => format!(
                "{}; its last sending is not acknowledged yet",
                no_store_cause(Some(lasted))
            ),
            (_, true) if short => format!("the broker passed it on; {too_short}"),
            (_, true) if !self.shared.signs.has_answered() => "the broker passed it on, but no state store has answered this client yet: is one serving this broker (`mqstate serve`)?".to_owned(),
            (_, true) => "the broker passed it on; the state store did not answer in time".to_owned(),
            (_, false) if short => format!("the broker has not acknowledged it yet; {too_short}"),
            (_, false) => "the broker has not acknowledged it yet (is the connection or the broker overloaded?)".to_owned(),
        }
    }
}

/// A wait for the connection shorter than this is no event of the call's trace.
const CONNECTION_WAIT_NOTED: Duration = Duration::from_millis(1);
/// Under this a timeout that runs out is named as possibly too short.
const SHORT_TIMEOUT: Duration = Duration::from_millis(100);
/// How long to wait before offering a request again to a full rumqttc channel.
const HAND_OVER_RETRY: Duration = Duration::from_millis(1);
/// The first pause before a request the broker routed to nobody is sent again; it doubles
/// up to [`MAX_RESEND_PAUSE`].
const FIRST_RESEND_PAUSE: Duration = Duration::from_millis(50);
/// The longest pause between two sendings of a request routed to nobody.
const MAX_RESEND_PAUSE: Duration = Duration::from_millis(400);

/// The cause named when the broker routed a request to nobody.
fn no_store_cause(lasted: Option<Duration>) -> String {
    let lasted = lasted.map_or(String::new(), |d| format!(" (for {d:.1?})"));
    format!(
        "the broker says no state store is subscribed to the request topic {}{lasted}: is the \
         state store (`mqstate serve`, or Azure IoT Operations) running behind this broker?",
        topics::REQUEST_TOPIC
    )
}

/// A request's sendings that the broker routed to nobody (PUBACK 0x10).
#[derive(Default)]
struct Unrouted {
    since: Option<Instant>,
    times: u32,
}

impl Unrouted {
    /// One more sending was routed to nobody: the `no_store` error once that has gone on for
    /// [`NO_STORE_WINDOW`].
    fn note(&mut self, verb: Verb) -> Option<Error> {
        let since = *self.since.get_or_insert_with(Instant::now);
        self.times += 1;
        let lasted = since.elapsed();
        (lasted >= NO_STORE_WINDOW).then(|| {
            Error::new(
                ErrorKind::NoStore,
                format!(
                    "{verb} was not delivered: {} (sent {} times); it was not applied",
                    no_store_cause(Some(lasted)),
                    self.times
                ),
            )
        })
    }

    /// The pause before sending again.
    fn pause(&self) -> Duration {
        FIRST_RESEND_PAUSE
            .saturating_mul(1 << self.times.saturating_sub(1).min(8))
            .min(MAX_RESEND_PAUSE)
    }

    /// How long sendings have been routed to nobody, if any was.
    fn lasted(&self) -> Option<Duration> {
        self.since.map(|s| s.elapsed())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unrouted_sendings_pause_longer_then_fail_with_no_store() {
        let mut u = Unrouted::default();
        assert!(u.lasted().is_none());
        assert!(u.note(Verb::Get).is_none());
        assert_eq!(u.pause(), FIRST_RESEND_PAUSE);
        assert!(u.note(Verb::Get).is_none());
        assert_eq!(u.pause(), FIRST_RESEND_PAUSE * 2);
        for _ in 0..10 {
            assert!(u.note(Verb::Set).is_none());
        }
        assert_eq!(u.pause(), MAX_RESEND_PAUSE);
        // The first sending routed to nobody was a window ago (no paused clock: that needs
        // tokio's test-util, which would then be in every artifact's feature set).
        u.since = u.since.and_then(|s| s.checked_sub(NO_STORE_WINDOW));
        assert!(u.lasted().unwrap() >= NO_STORE_WINDOW);
        let e = u.note(Verb::Set).unwrap();
        assert_eq!(e.kind(), ErrorKind::NoStore);
        assert!(!e.may_have_applied());
        assert!(e.message().contains("no state store is subscribed"), "{e}");
    }
}
