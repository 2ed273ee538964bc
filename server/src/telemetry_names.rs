//! Every name the store's spans use, in one place: the W3C trace context properties it reads,
//! the OpenTelemetry attribute keys and values it writes, and the resource it reports as.
//! When the core gains its telemetry vocabulary, these become re-exports of it.

/// The MQTT5 user property carrying the caller's W3C `traceparent` (the names of the W3C
/// "Trace Context: MQTT" convention).
pub(crate) const TRACEPARENT: &str = "traceparent";
/// The MQTT5 user property carrying the caller's W3C `tracestate`.
pub(crate) const TRACESTATE: &str = "tracestate";

/// The resource attribute naming the process.
pub(crate) const SERVICE_NAME: &str = "service.name";
/// The default `service.name` (`OTEL_SERVICE_NAME` overrides it in the CLI).
pub(crate) const DEFAULT_SERVICE_NAME: &str = "mqstate-serve";
/// The instrumentation scope of the spans.
pub(crate) const SCOPE_NAME: &str = "mqstate-server";

/// `db.system.name`: which database this is.
pub(crate) const DB_SYSTEM_NAME: &str = "db.system.name";
/// The value of [`DB_SYSTEM_NAME`].
pub(crate) const DB_SYSTEM_VALUE: &str = "mqstate";
/// `db.operation.name`: the request's verb (also the span's name).
pub(crate) const DB_OPERATION_NAME: &str = "db.operation.name";
/// `error.type`: the store error kind or the `__stat` code of a failed request.
pub(crate) const ERROR_TYPE: &str = "error.type";
/// `error.type` of a request the store dropped without answering.
pub(crate) const ERROR_TYPE_DROPPED: &str = "dropped";
/// `server.address`: where the store's broker listens.
pub(crate) const SERVER_ADDRESS: &str = "server.address";
/// `server.port`: the listener's port.
pub(crate) const SERVER_PORT: &str = "server.port";
/// The requesting client's id (`__srcId`, else the broker's word).
pub(crate) const CLIENT_ID: &str = "mqstate.client_id";

/// The OTLP/HTTP path the spans are posted to, below the endpoint.
pub(crate) const OTLP_TRACES_PATH: &str = "/v1/traces";
