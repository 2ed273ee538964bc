//! The names the store's spans use: the core's telemetry vocabulary (`mqstate::telemetry`,
//! the same names every client reports), and the few only an exporting store needs.

pub(crate) use mqstate::telemetry::names::{
    CLIENT_ID, DB_OPERATION_NAME, DB_SYSTEM as DB_SYSTEM_VALUE, DB_SYSTEM_NAME, ERROR_TYPE,
    SERVER_ADDRESS, SERVER_PORT, TRACEPARENT, TRACESTATE,
};

/// The resource attribute naming the process.
pub(crate) const SERVICE_NAME: &str = "service.name";
/// The default `service.name` (`OTEL_SERVICE_NAME` overrides it in the CLI).
pub(crate) const DEFAULT_SERVICE_NAME: &str = "mqstate-serve";
/// The instrumentation scope of the spans.
pub(crate) const SCOPE_NAME: &str = "mqstate-server";
/// `error.type` of a request the store dropped without answering.
pub(crate) const ERROR_TYPE_DROPPED: &str = "dropped";
/// The OTLP/HTTP path the spans are posted to, below the endpoint.
pub(crate) const OTLP_TRACES_PATH: &str = "/v1/traces";
