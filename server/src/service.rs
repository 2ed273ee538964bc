//! The MQTT adapter around the pure [`StateMachine`]: the connection's poll loop owns it (and the
//! journal), hands it requests and disconnect events in arrival order, wakes it exactly
//! at [`StateMachine::next_expiry_ms`] to fire PX expiries, and it hands responses and
//! notifications to the [`Outbox`].
//!
//! Serving inline in the poll loop saves a hop per request; nothing here awaits (replies
//! are handed to a [`Sink`] without waiting, or queued), so the loop never stalls on the
//! broker. The journal's fsync does block it, by design: a persisted change is applied, and
//! answered, only once its record is on disk (and answered `__stat 500`, unapplied, if the
//! write fails).

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use bytes::Bytes;
use mqstate::codec::Response;
use rumqttc::v5::mqttbytes::v5::Publish;

use crate::envelope::{self, Failure, RequestMeta, Verdict};
use crate::journal::Journal;
use crate::metrics::Outcome;
use crate::outbox::{Counters, Message, Outbox, Sink};
use crate::state_machine::{Invocation, JournalOp, Notice, StateMachine};
use crate::telemetry::ErrorType;

/// What the store is told besides the requests it serves.
#[derive(Debug)]
pub enum Command {
    /// A client's MQTT session ended (with its connection, at its expiry, or replaced by a
    /// clean start): drop its registrations and queued notifications.
    SessionEnded(String),
}

pub(crate) use crate::wall_clock::now_ms;

/// A successful response, not yet in its MQTT form: building the properties (a handful of
/// small allocations) is left to whoever publishes it, outside the store's lock.
#[derive(Clone, Debug)]
pub(crate) struct Answer {
    /// The requester's response topic.
    pub(crate) topic: String,
    /// The request's correlation data.
    pub(crate) correlation: Bytes,
    /// The response payload.
    pub(crate) payload: Bytes,
    /// The response's `__ts`.
    pub(crate) version: Option<String>,
}

impl Answer {
    /// The response as the server publishes it (`__stat 200`).
    pub(crate) fn into_message(self) -> Message {
        Message {
            topic: self.topic,
            payload: self.payload,
            properties: envelope::ok_properties(self.correlation, self.version),
        }
    }
}

/// A response on its way out, in whichever form is cheapest to hand over.
#[derive(Clone, Debug)]
pub(crate) enum Outgoing {
    /// A success, its properties not built yet.
    Answer(Answer),
    /// Anything else (an RPC error), ready.
    Message(Message),
}

impl Outgoing {
    /// The topic it goes to.
    pub(crate) fn topic(&self) -> &str {
        match self {
            Outgoing::Answer(answer) => &answer.topic,
            Outgoing::Message(message) => &message.topic,
        }
    }

    /// The response as the server publishes it.
    pub(crate) fn into_message(self) -> Message {
        match self {
            Outgoing::Answer(answer) => answer.into_message(),
            Outgoing::Message(message) => message,
        }
    }
}

/// What the service may ask of a broker it runs in (the embedded one). Defined here, and
/// implemented by the broker module, so that dependencies point one way: `server` wires
/// `connection` and `embedded` to `service`, which knows neither.
pub(crate) trait BrokerControl: Send {
    /// Closes the connection of `client_id` (callable from any thread, returns at once).
    fn disconnect(&self, client_id: &str);
}

/// The store, its journal, and where its output goes.
pub(crate) struct Service {
    pub(crate) store: StateMachine,
    pub(crate) journal: Option<Journal>,
    pub(crate) outbox: Arc<Outbox>,
    /// Where replies go when nothing is queued: the MQTT client, or the embedded broker's
    /// router.
    pub(crate) sink: Box<dyn Sink + Send>,
    pub(crate) counters: Arc<Counters>,
    /// Set with the embedded broker: drops clients that use a forbidden response topic.
    pub(crate) disconnector: Option<Box<dyn BrokerControl>>,
    /// Set with the embedded broker: `x-mqtt-client-id` is the broker's word.
    pub(crate) trust_broker_id: bool,
    /// The adapter's own MQTT client id (its disconnects are not a client's).
    pub(crate) own_client_id: String,
    /// Debug logs may show values (`--log-values`); by default they show keys and lengths.
    pub(crate) log_values: bool,
    /// Whether the warning that an external broker cannot deliver notifications to
    /// clients without a subscription was given (once, at the first KEYNOTIFY).
    pub(crate) warned_unrouted: bool,
    /// The answers of recent writes, for requests delivered twice (see [`dedup`](crate::dedup)).
    pub(crate) answered: crate::dedup::Answered,
    /// Store errors armed for the next requests (and the pause the workers honour).
    pub(crate) faults: Arc<crate::faults::Faults>,
    /// Set with `--otlp-endpoint`: where each request's span goes.
    pub(crate) tracer: Option<crate::telemetry::Tracer>,
    /// Set with [`ServerConfig::monitor`](crate::ServerConfig::monitor): the live event stream.
    pub(crate) monitor: Option<crate::monitor::Monitor>,
}

impl Service {
    /// How long until the next expiry is due (`None`: no expiry pending).
    pub(crate) fn until_next_expiry(&self) -> Option<Duration> {
        self.store
            .next_expiry_ms()
            .map(|due| Duration::from_millis(due.saturating_sub(now_ms())))
    }

    /// Waits until the next expiry is due (forever when none is pending); the serving loops
    /// select on it and then call [`Service::expire_due`].
    pub(crate) async fn next_expiry(delay: Option<Duration>) {
        match delay {
            Some(delay) => tokio::time::sleep(delay).await,
            None => std::future::pending().await,
        }
    }

    /// Fires every expiry that is due now.
    pub(crate) fn expire_due(&mut self) {
        let now = now_ms();
        if self.store.next_expiry_ms().is_some_and(|due| due <= now) {
            self.expire(now);
        }
    }

    /// Handles one command.
    pub(crate) fn command(&mut self, command: Command) {
        match command {
            Command::SessionEnded(client_id) => self.disconnected(&client_id),
        }
    }

    fn expire(&mut self, now: u64) {
        let expired = self.store.expire(now);
        self.append(&expired.journal);
        for notice in expired.notifications {
            self.notify(notice);
        }
    }

    /// Deletes every key (see [`StateMachine::clear`]): observers get a DELETE each, and
    /// persisted keys leave the journal. Returns how many keys were deleted.
    #[cfg(feature = "testing")]
    pub(crate) fn clear(&mut self) -> usize {
        self.expire_due();
        let before = self.store.len();
        let cleared = self.store.clear(now_ms());
        self.append(&cleared.journal);
        for notice in cleared.notifications {
            self.notify(notice);
        }
        before
    }

    /// Drops every client's KEYNOTIFY registrations, connections left up: what a store
    /// restarted behind its broker has lost. Returns how many there were.
    #[cfg(feature = "testing")]
    pub(crate) fn forget_registrations(&mut self) -> usize {
        self.store.drop_all_registrations()
    }

    /// Drops the registrations and queued notifications of a client that is gone (its
    /// session ended on the embedded broker; its connection closed behind an external one).
    pub(crate) fn disconnected(&mut self, client_id: &str) {
        if client_id == self.own_client_id {
            return;
        }
        let dropped = self.store.client_disconnected(client_id);
        self.outbox.forget_client(client_id);
        if dropped > 0 {
            self.counters
                .registrations_dropped
                .fetch_add(dropped as u64, Ordering::Relaxed);
            tracing::info!(
                client_id,
                dropped,
                "client gone: dropped its KEYNOTIFY registrations"
            );
        }
    }

    /// Serves a PUBLISH received on the request topic through an MQTT client.
    pub(crate) fn request(&mut self, publish: &Publish) {
        let meta = RequestMeta::read(publish, self.trust_broker_id);
        self.serve(&publish.payload, &meta);
    }

    /// Serves one request: its payload and what was read from its envelope.
    pub(crate) fn serve(&mut self, payload: &Bytes, meta: &RequestMeta) {
        let handed_back = self.serve_ordered(payload, meta, false);
        debug_assert!(
            handed_back.is_none(),
            "nothing is handed back unless asked for"
        );
    }

    /// Serves one request like [`Service::serve`], but with `direct` hands back its
    /// response (if it has one) instead of sending it, for the caller to publish after it
    /// lets the store go (see [`crate::embedded::workers`], which keeps the responses of
    /// each response topic in the order they are handed back). Notifications are sent from
    /// here either way, through the outbox, in the order of the changes (hence per key).
    pub(crate) fn serve_ordered(
        &mut self,
        payload: &Bytes,
        meta: &RequestMeta,
        direct: bool,
    ) -> Option<Outgoing> {
        self.counters.requests.fetch_add(1, Ordering::Relaxed);
        let started = std::time::Instant::now();
        let (outcome, response, error) = self.dispatch(payload, meta, direct);
        let command = crate::metrics::command_of(payload);
        let recorder = &self.counters.recorder;
        let took = started.elapsed();
        recorder.request(command, outcome, took);
        if let Some(monitor) = &self.monitor
            && monitor.watched()
        {
            monitor.publish(request_event(payload, meta, outcome, error, took));
        }
        if let Some(tracer) = &self.tracer {
            tracer.request(
                crate::telemetry::RequestSpan {
                    operation: crate::metrics::COMMANDS[command],
                    parent: meta.trace_parent,
                    trace_state: meta.trace_state.as_deref(),
                    client_id: meta.client_id(),
                    error,
                },
                started,
            );
        }
        recorder.sizes(
            self.store.len(),
            self.store.data_bytes(),
            self.answered.len(),
        );
        if let Some(journal) = &self.journal {
            recorder.journal(journal.len_bytes(), journal.compactions());
        }
        response
    }

    /// Answers, fails or drops one request; says which (and why it failed, if it did).
    fn dispatch(
        &mut self,
        payload: &Bytes,
        meta: &RequestMeta,
        direct: bool,
    ) -> (Outcome, Option<Outgoing>, Option<ErrorType>) {
        let client = meta.client_id().unwrap_or("?");
        match meta.verdict() {
            Verdict::Answer => return self.answer(payload, meta, direct),
            Verdict::Drop(reason) => {
                self.counters.rejected.fetch_add(1, Ordering::Relaxed);
                tracing::warn!(client_id = %client, reason, "dropped a request");
            }
            Verdict::Forbidden => {
                self.counters.rejected.fetch_add(1, Ordering::Relaxed);
                let topic = meta.response_topic.as_deref().unwrap_or_default();
                // Only the broker's word is good enough to disconnect someone.
                let culprit = meta.broker_client_id.as_deref();
                match (&self.disconnector, culprit) {
                    (Some(disconnector), Some(culprit)) => {
                        tracing::warn!(
                            client_id = culprit,
                            topic,
                            "forbidden response topic: request dropped, client disconnected"
                        );
                        disconnector.disconnect(culprit);
                    }
                    _ => {
                        tracing::warn!(client_id = %client, topic, "forbidden response topic: request dropped")
                    }
                }
            }
            Verdict::Fail(failure) => {
                self.counters.rejected.fetch_add(1, Ordering::Relaxed);
                tracing::warn!(client_id = %client, status = failure.status, message = %failure.message, "rejected a request");
                let response = self.fail(meta, &failure, direct);
                return (
                    Outcome::Failed,
                    response,
                    Some(ErrorType::Status(failure.status)),
                );
            }
        }
        (Outcome::Dropped, None, Some(ErrorType::Dropped))
    }

    /// Sends `response` now, or hands it back with `direct`.
    fn respond(&self, response: Outgoing, direct: bool) -> Option<Outgoing> {
        if direct {
            return Some(response);
        }
        self.outbox
            .send_response(&*self.sink, response.into_message(), &self.counters);
        None
    }

    fn answer(
        &mut self,
        payload: &Bytes,
        meta: &RequestMeta,
        direct: bool,
    ) -> (Outcome, Option<Outgoing>, Option<ErrorType>) {
        let client_id = meta.client_id().unwrap_or_default();
        if let Some(kind) = self.faults.failure_for(payload) {
            // An injected store error: what the service sends for it (`__stat 200`, a
            // `-ERR` payload, no `__ts`), the store untouched.
            let (Some(topic), Some(correlation)) = (&meta.response_topic, &meta.correlation) else {
                return (Outcome::Dropped, None, Some(ErrorType::Dropped));
            };
            tracing::debug!(
                client_id,
                error = kind.as_str(),
                "answered with an injected store error"
            );
            let answer = Answer {
                topic: topic.clone(),
                correlation: correlation.clone(),
                payload: Response::Error(mqstate::codec::StoreError::new(kind)).encode(),
                version: None,
            };
            return (
                Outcome::StoreError,
                self.respond(Outgoing::Answer(answer), direct),
                Some(ErrorType::Store(kind)),
            );
        }
        let now = now_ms();
        if let (Some(correlation), Some(topic)) = (&meta.correlation, &meta.response_topic)
            && let Some(kept) = self.answered.get(now, client_id, correlation)
        {
            // A redelivered write: the same answer again, the store untouched.
            let answer = Answer {
                topic: topic.clone(),
                correlation: correlation.clone(),
                payload: kept.payload(),
                version: kept.version(),
            };
            tracing::debug!(
                client_id,
                "a request delivered twice: answered again, not applied again"
            );
            return (
                Outcome::Duplicate,
                self.respond(Outgoing::Answer(answer), direct),
                None,
            );
        }
        let journal = &mut self.journal;
        let mut writer = |ops: &[JournalOp]| match journal {
            Some(journal) => match journal.append(ops) {
                Ok(()) => true,
                Err(e) => {
                    tracing::error!(error = %e, "could not append to the persistence log");
                    false
                }
            },
            None => true,
        };
        let reply = self.store.handle_persisting(
            now,
            Invocation {
                client_id,
                payload,
                timestamp: meta.timestamp.as_deref(),
                fencing_token: meta.fencing_token.as_deref(),
                persist: meta.persist,
            },
            &mut writer,
        );
        if tracing::enabled!(tracing::Level::DEBUG) {
            tracing::debug!(
                client_id,
                request = %describe(payload, self.log_values),
                response = reply.response.kind_name(),
                version = ?reply.version.as_ref().map(ToString::to_string),
                "request"
            );
        }
        if !self.trust_broker_id && !self.warned_unrouted && is_keynotify(payload) {
            self.warned_unrouted = true;
            tracing::warn!(
                client_id,
                "KEYNOTIFY through an external broker: notifications reach only clients \
                 subscribed to their notification topic (the embedded broker delivers them \
                 without a subscription, as the real service does)"
            );
        }
        // A failed write of this request's own change left the store untouched; the only
        // notifications then are DELETEs of keys that expired before it.
        if reply.journal_failed {
            let failure = Failure {
                status: 500,
                message: "the store could not write its persistence log".to_owned(),
                property: None,
            };
            let response = self.fail(meta, &failure, direct);
            for notice in reply.notifications {
                self.notify(notice);
            }
            return (Outcome::Failed, response, Some(ErrorType::Status(500)));
        }
        let (outcome, error) = match &reply.response {
            Response::Error(e) => (Outcome::StoreError, Some(ErrorType::Store(e.kind()))),
            _ => (Outcome::Ok, None),
        };
        let (Some(topic), Some(correlation)) = (&meta.response_topic, &meta.correlation) else {
            return (outcome, None, error);
        };
        // Writes are kept for duplicates; reads may simply run again.
        if !matches!(
            reply.response,
            Response::Value(_) | Response::NotFound | Response::Page(_)
        ) {
            self.answered.keep(
                now,
                client_id,
                correlation,
                &reply.response,
                reply.version.as_ref(),
            );
        }
        let answer = Answer {
            topic: topic.clone(),
            correlation: correlation.clone(),
            payload: reply.response.encode(),
            version: reply.version.map(|v| v.to_text()),
        };
        // The response first: a client that observes the key it writes (and whose response
        // does not go through a worker) sees its answer before the notification.
        let response = self.respond(Outgoing::Answer(answer), direct);
        for notice in reply.notifications {
            self.notify(notice);
        }
        (outcome, response, error)
    }

    fn fail(&self, meta: &RequestMeta, failure: &Failure, direct: bool) -> Option<Outgoing> {
        let (Some(topic), Some(correlation)) = (&meta.response_topic, &meta.correlation) else {
            return None;
        };
        let message = Message {
            topic: topic.clone(),
            payload: Bytes::new(),
            properties: envelope::failure_properties(correlation.clone(), failure),
        };
        self.respond(Outgoing::Message(message), direct)
    }

    fn notify(&self, notice: Notice) {
        if self.faults.drops_notification() {
            return;
        }
        if let Some(monitor) = &self.monitor
            && monitor.watched()
        {
            monitor.publish(crate::monitor::What::Notification {
                client: notice.client_id.clone(),
                key: notice.key.clone(),
                event: match notice.event {
                    mqstate::codec::KeyEvent::Delete => "DELETE",
                    _ => "SET",
                },
            });
        }
        let message = Message {
            topic: mqstate::topics::notification_topic(&notice.client_id, &notice.key),
            payload: notice.event.encode(),
            properties: envelope::notification_properties(notice.version.to_text()),
        };
        self.outbox
            .send_notification(&*self.sink, &notice.client_id, message, &self.counters);
    }

    /// A clean stop: fsyncs the journal (whatever its policy left unsynced) and stops its
    /// fsync thread. Errors are logged.
    pub(crate) fn close(&mut self) {
        if let Some(journal) = &mut self.journal
            && let Err(e) = journal.close()
        {
            tracing::error!(error = %e, "could not fsync the persistence log on shutdown");
        }
    }

    /// Appends to the journal, if there is one; false if that failed (logged).
    fn append(&mut self, ops: &[JournalOp]) -> bool {
        let Some(journal) = &mut self.journal else {
            return true;
        };
        if ops.is_empty() {
            return true;
        }
        match journal.append(ops) {
            Ok(()) => true,
            Err(e) => {
                tracing::error!(error = %e, "could not append to the persistence log");
                false
            }
        }
    }
}

/// The live stream's report of one request (only built when someone watches).
fn request_event(
    payload: &Bytes,
    meta: &RequestMeta,
    outcome: Outcome,
    error: Option<ErrorType>,
    duration: Duration,
) -> crate::monitor::What {
    let request = mqstate::codec::Request::decode(payload).ok();
    let (error, status) = match error {
        None => (None, None),
        Some(ErrorType::Store(kind)) => (Some(kind.as_str()), None),
        Some(ErrorType::Status(status)) => (Some(mqstate::ErrorKind::Rpc(0).code()), Some(status)),
        Some(ErrorType::Dropped) => (Some(crate::telemetry_names::ERROR_TYPE_DROPPED), None),
    };
    crate::monitor::What::Request {
        client: meta.client_id().map(str::to_owned),
        verb: request.as_ref().map(mqstate::codec::Request::verb),
        key: request.as_ref().map(|r| Bytes::copy_from_slice(r.key())),
        outcome,
        error,
        status,
        duration,
    }
}

/// Whether a request payload is a KEYNOTIFY (a cheap look at its first argument).
fn is_keynotify(payload: &[u8]) -> bool {
    payload.get(4..17) == Some(b"$9\r\nKEYNOTIFY".as_slice())
}

/// How a request shows in the debug log: the verb, the key (escaped, at most 64 bytes), and
/// the length of every other argument; values themselves only with `log_values`.
pub(crate) fn describe(payload: &bytes::Bytes, log_values: bool) -> String {
    use mqstate::codec::Request;
    fn text(bytes: &[u8], limit: usize) -> String {
        let shown = String::from_utf8_lossy(&bytes[..bytes.len().min(limit)])
            .escape_debug()
            .to_string();
        if bytes.len() > limit {
            format!("{shown}…({} bytes)", bytes.len())
        } else {
            shown
        }
    }
    let value = |v: &[u8]| {
        if log_values {
            format!("value={:?}", text(v, 80))
        } else {
            format!("value_len={}", v.len())
        }
    };
    match Request::decode(payload) {
        Ok(Request::Set { key, value: v, .. }) => {
            format!("SET key={:?} {}", text(&key, 64), value(&v))
        }
        Ok(Request::Get { key }) => format!("GET key={:?}", text(&key, 64)),
        Ok(Request::Del { key }) => format!("DEL key={:?}", text(&key, 64)),
        Ok(Request::VDel { key, value: v }) => {
            format!("VDEL key={:?} {}", text(&key, 64), value(&v))
        }
        Ok(Request::KeyNotify { key, stop }) => format!(
            "KEYNOTIFY key={:?}{}",
            text(&key, 64),
            if stop { " STOP" } else { "" }
        ),
        Ok(Request::Scan { pattern, token }) => format!(
            "SCAN pattern={:?}{}",
            text(&pattern, 64),
            if token.is_some() { " (next page)" } else { "" }
        ),
        Err(_) => format!("undecodable payload_len={}", payload.len()),
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use bytes::Bytes;
    use mqstate::codec::{Request, SetCondition};
    use mqstate::envelope::property;
    use rumqttc::v5::mqttbytes::QoS;
    use rumqttc::v5::mqttbytes::v5::{Publish, PublishProperties};

    use super::{Service, describe, is_keynotify};
    use crate::journal::Journal;
    use crate::outbox::{Counters, Message, Outbox, Sink};
    use crate::state_machine::{StateMachine, StoreConfig};

    /// Collects what the service sends.
    #[derive(Clone, Default)]
    struct Collect(Arc<Mutex<Vec<Message>>>);

    impl Sink for Collect {
        fn try_send(&self, message: Message) -> Result<(), Message> {
            self.0.lock().unwrap().push(message);
            Ok(())
        }
    }

    fn request(payload: Bytes, persist: bool) -> Publish {
        let mut user_properties = vec![
            (property::SOURCE_ID.to_owned(), "c".to_owned()),
            (
                property::TIMESTAMP.to_owned(),
                format!("{}:0:c", super::now_ms()),
            ),
        ];
        if persist {
            user_properties.push((property::PERSISTENCE.to_owned(), "true".to_owned()));
        }
        let properties = PublishProperties {
            response_topic: Some("clients/c/response".to_owned()),
            correlation_data: Some(Bytes::from_static(b"0123456789abcdef")),
            user_properties,
            ..PublishProperties::default()
        };
        Publish::new(
            mqstate::topics::REQUEST_TOPIC,
            QoS::AtLeastOnce,
            payload,
            Some(properties),
        )
    }

    fn status(message: &Message) -> Option<&str> {
        message
            .properties
            .user_properties
            .iter()
            .find(|(n, _)| n == property::STATUS)
            .map(|(_, v)| v.as_str())
    }

    /// A persisted SET on a full disk is answered 500 and is not applied in memory; a SET
    /// without persistence still works.
    #[test]
    #[cfg(target_os = "linux")]
    fn a_full_disk_fails_a_persisted_set_without_applying_it() {
        let dir = tempfile::tempdir().unwrap();
        let sent = Collect::default();
        let mut service = Service {
            store: StateMachine::new(StoreConfig::default(), super::now_ms()),
            journal: Some(Journal::on_a_full_disk(dir.path()).unwrap()),
            outbox: Arc::new(Outbox::new(16, 16)),
            sink: Box::new(sent.clone()),
            counters: Arc::new(Counters::default()),
            disconnector: None,
            trust_broker_id: false,
            own_client_id: "server".to_owned(),
            log_values: false,
            warned_unrouted: false,
            answered: Default::default(),
            faults: Default::default(),
            tracer: None,
            monitor: None,
        };
        let set = |key: &'static [u8]| {
            Request::Set {
                key,
                value: &b"v"[..],
                condition: SetCondition::Always,
                expiry_ms: None,
            }
            .encode()
        };
        service.request(&request(set(b"persisted"), true));
        service.request(&request(
            Request::Get {
                key: &b"persisted"[..],
            }
            .encode(),
            false,
        ));
        service.request(&request(set(b"volatile"), false));
        let sent = sent.0.lock().unwrap();
        assert_eq!(sent.len(), 3);
        assert_eq!(status(&sent[0]), Some("500"));
        assert_eq!(
            &sent[1].payload[..],
            b"$-1\r\n",
            "the failed SET was applied"
        );
        assert_eq!(status(&sent[2]), Some("200"));
        assert_eq!(&sent[2].payload[..], b"+OK\r\n");
        assert_eq!(service.store.len(), 1);
    }

    /// A write delivered twice (a resumed session redelivers a request whose PUBACK was
    /// lost) is applied once and answered twice alike; a read runs again.
    #[test]
    fn a_redelivered_write_is_answered_again_not_applied_again() {
        let sent = Collect::default();
        let mut service = Service {
            store: StateMachine::new(StoreConfig::default(), super::now_ms()),
            journal: None,
            outbox: Arc::new(Outbox::new(16, 16)),
            sink: Box::new(sent.clone()),
            counters: Arc::new(Counters::default()),
            disconnector: None,
            trust_broker_id: false,
            own_client_id: "server".to_owned(),
            log_values: false,
            warned_unrouted: false,
            answered: Default::default(),
            faults: Default::default(),
            tracer: None,
            monitor: None,
        };
        let nx = Request::Set {
            key: &b"k"[..],
            value: &b"v"[..],
            condition: SetCondition::NotExists,
            expiry_ms: None,
        }
        .encode();
        let once = request(nx, false);
        service.request(&once);
        service.request(&once);
        let sent = sent.0.lock().unwrap();
        assert_eq!(sent.len(), 2);
        assert_eq!(&sent[0].payload[..], b"+OK\r\n");
        assert_eq!(
            &sent[1].payload[..],
            b"+OK\r\n",
            "the duplicate NX saw its own write"
        );
        assert_eq!(
            sent[0].properties.user_properties, sent[1].properties.user_properties,
            "the same version"
        );
        assert_eq!(service.store.len(), 1);
    }

    #[test]
    fn the_debug_log_shows_keys_and_lengths_never_values() {
        let set = Request::Set {
            key: &b"user\n1"[..],
            value: &b"s3cret-token"[..],
            condition: SetCondition::Always,
            expiry_ms: None,
        }
        .encode();
        let line = describe(&set, false);
        assert!(!line.contains("s3cret"), "{line}");
        assert!(
            line.contains("user\\\\n1") && line.contains("value_len=12"),
            "{line}"
        );
        assert!(describe(&set, true).contains("s3cret-token"));
        let vdel = Request::VDel {
            key: &b"k"[..],
            value: &b"s3cret"[..],
        }
        .encode();
        assert!(!describe(&vdel, false).contains("s3cret"));
    }

    #[test]
    fn keynotify_is_recognised() {
        let k = Request::KeyNotify {
            key: &b"k"[..],
            stop: true,
        }
        .encode();
        assert!(is_keynotify(&k));
        assert!(!is_keynotify(&Request::Get { key: &b"k"[..] }.encode()));
    }
}
