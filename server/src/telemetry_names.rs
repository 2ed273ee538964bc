//! Every name the store's spans use, in one place: the W3C trace context properties it reads,
//! the OpenTelemetry attribute keys and values it writes, and the resource it reports as.
//! Those the clients' spans share come from the core's vocabulary
//! ([`mqstate::telemetry::names`]), so that both sides of a call agree; the rest are the
//! store's own.

use mqstate::telemetry::names;

/// The MQTT5 user property carrying the caller's W3C `traceparent` (the names of the W3C
/// "Trace Context: MQTT" convention).
pub(crate) const TRACEPARENT: &str = names::TRACEPARENT;
/// The MQTT5 user property carrying the caller's W3C `tracestate`.
pub(crate) const TRACESTATE: &str = names::TRACESTATE;

/// The resource attribute naming the process.
pub(crate) const SERVICE_NAME: &str = "service.name";
/// The default `service.name` (`OTEL_SERVICE_NAME` overrides it in the CLI).
pub(crate) const DEFAULT_SERVICE_NAME: &str = "mqstate-serve";
/// The instrumentation scope of the spans.
pub(crate) const SCOPE_NAME: &str = "mqstate-server";

/// `db.system.name`: which database this is.
pub(crate) const DB_SYSTEM_NAME: &str = names::DB_SYSTEM_NAME;
/// The value of [`DB_SYSTEM_NAME`]: the state store protocol, as the clients name it.
pub(crate) const DB_SYSTEM_VALUE: &str = names::DB_SYSTEM;
/// `db.operation.name`: the request's verb (also the span's name).
pub(crate) const DB_OPERATION_NAME: &str = names::DB_OPERATION_NAME;
/// `error.type`: the store error kind or the `__stat` code of a failed request.
pub(crate) const ERROR_TYPE: &str = names::ERROR_TYPE;
/// `error.type` of a request the store dropped without answering.
pub(crate) const ERROR_TYPE_DROPPED: &str = "dropped";
/// `server.address`: where the store's broker listens.
pub(crate) const SERVER_ADDRESS: &str = names::SERVER_ADDRESS;
/// `server.port`: the listener's port.
pub(crate) const SERVER_PORT: &str = names::SERVER_PORT;
/// The requesting client's id (`__srcId`, else the broker's word).
pub(crate) const CLIENT_ID: &str = names::CLIENT_ID;

/// The OTLP/HTTP path the spans are posted to, below the endpoint.
pub(crate) const OTLP_TRACES_PATH: &str = "/v1/traces";
