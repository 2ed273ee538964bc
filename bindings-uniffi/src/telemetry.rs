//! OpenTelemetry's raw layer for Kotlin (and Swift): the core's telemetry vocabulary, and a
//! call traced under the caller's span ([`Client::traced`](crate::Client::traced)): its
//! requests carry the span's W3C trace context, and the [`CallTrace`] gives back what they
//! met on the way, for the span's events. The Kotlin layer (`mqstate/Telemetry.kt`) turns
//! these into spans and metrics through `io.opentelemetry:opentelemetry-api` when it is on
//! the classpath; the names, units and buckets are the core's ([`mqstate::telemetry`]).

use std::sync::Arc;

use mqstate::telemetry::{CALL_DURATION_BUCKETS, METRICS, names as n};

/// One name of the core's vocabulary: its constant's name (`ERROR_TYPE`) and value
/// (`error.type`).
#[derive(Clone, Debug, PartialEq, Eq, uniffi::Record)]
pub struct TelemetryName {
    /// The constant's name in `mqstate::telemetry::names` (and `CALL_DURATION`).
    pub constant: String,
    /// The name itself.
    pub value: String,
}

/// One metric every binding reports (the core's `METRICS`).
#[derive(Clone, Debug, PartialEq, Eq, uniffi::Record)]
pub struct MetricInfo {
    /// Its name.
    pub name: String,
    /// Its unit (UCUM: `s`, `By`, `{request}`).
    pub unit: String,
    /// `histogram`, `counter` or `gauge`.
    pub kind: String,
    /// `call` (measured around each call), `link` (the client's link), `cache` (the
    /// cache's counter of the same name, after `mqstate.cache.`).
    pub source: String,
    /// What it counts.
    pub description: String,
}

/// The core's telemetry vocabulary: names, metrics, and the duration histogram's buckets.
#[derive(Clone, Debug, PartialEq, uniffi::Record)]
pub struct TelemetryVocabulary {
    /// Span, attribute and event names, by constant.
    pub names: Vec<TelemetryName>,
    /// Every metric, in the docs' order.
    pub metrics: Vec<MetricInfo>,
    /// The bucket boundaries of `db.client.operation.duration`, in seconds.
    pub buckets: Vec<f64>,
}

/// The core's telemetry vocabulary (`mqstate::telemetry`).
#[uniffi::export]
pub fn telemetry_vocabulary() -> TelemetryVocabulary {
    let names = n::ALL;
    TelemetryVocabulary {
        names: names
            .iter()
            .map(|(constant, value)| TelemetryName {
                constant: (*constant).to_owned(),
                value: (*value).to_owned(),
            })
            .collect(),
        metrics: METRICS
            .iter()
            .map(|m| MetricInfo {
                name: m.name.to_owned(),
                unit: m.unit.to_owned(),
                kind: m.kind.as_str().to_owned(),
                source: m.source.to_owned(),
                description: m.description.to_owned(),
            })
            .collect(),
        buckets: CALL_DURATION_BUCKETS.to_vec(),
    }
}

/// One integer attribute of a trace event.
#[derive(Clone, Debug, PartialEq, Eq, uniffi::Record)]
pub struct TraceAttribute {
    /// Its name (`mqstate.attempt`, `mqstate.waited_ms`).
    pub name: String,
    /// Its value.
    pub value: i64,
}

/// One thing a traced call met on its way: a resending, a wait for the connection, a
/// refusal (the core's `CallEvent`).
#[derive(Clone, Debug, PartialEq, Eq, uniffi::Record)]
pub struct TraceEvent {
    /// Its name (`mqstate.resent`, `mqstate.connection_wait`, `mqstate.no_store`).
    pub name: String,
    /// When it happened, in nanoseconds since the Unix epoch.
    pub unix_nanos: u64,
    /// Its attributes.
    pub attributes: Vec<TraceAttribute>,
}

/// What one traced call met on its way (the core's `CallTrace`).
#[derive(uniffi::Object)]
pub struct CallTrace {
    trace: Arc<mqstate::telemetry::CallTrace>,
}

impl CallTrace {
    pub(crate) fn new(trace: Arc<mqstate::telemetry::CallTrace>) -> Arc<CallTrace> {
        Arc::new(CallTrace { trace })
    }

    /// A trace carrying `traceparent` (and `tracestate`), checked (`invalid_argument` for a
    /// value that is not W3C's; none: no context, the events alone): the core's, for the
    /// traced handle, and ours, for the caller.
    pub(crate) fn checked(
        traceparent: Option<String>,
        tracestate: Option<String>,
    ) -> Result<(Arc<mqstate::telemetry::CallTrace>, Arc<CallTrace>), crate::MqstateError> {
        let context = traceparent
            .map(|tp| mqstate::telemetry::TraceContext::new(&tp, tracestate.as_deref()))
            .transpose()?;
        let trace = mqstate::telemetry::CallTrace::new(context);
        Ok((Arc::clone(&trace), CallTrace::new(trace)))
    }
}

#[uniffi::export]
impl CallTrace {
    /// The events so far, oldest first, taken (a second call returns the later ones).
    pub fn take_events(&self) -> Vec<TraceEvent> {
        self.trace
            .take_events()
            .into_iter()
            .map(|e| TraceEvent {
                name: e.name.to_owned(),
                unix_nanos: e
                    .at
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)),
                attributes: e
                    .attributes
                    .into_iter()
                    .map(|(name, value)| TraceAttribute {
                        name: name.to_owned(),
                        value,
                    })
                    .collect(),
            })
            .collect()
    }
}

/// The broker a client talks to: a call's `server.address` and `server.port`.
#[derive(Clone, Debug, PartialEq, Eq, uniffi::Record)]
pub struct ServerAddress {
    /// The host, as the settings name it.
    pub host: String,
    /// The port.
    pub port: u16,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_vocabulary_is_the_cores() {
        let v = telemetry_vocabulary();
        assert_eq!(v.metrics.len(), METRICS.len());
        assert_eq!(v.metrics[0].name, mqstate::telemetry::CALL_DURATION);
        assert_eq!(v.buckets, CALL_DURATION_BUCKETS.to_vec());
        let error = v.names.iter().find(|n| n.constant == "ERROR_TYPE").unwrap();
        assert_eq!(error.value, "error.type");
    }
}
