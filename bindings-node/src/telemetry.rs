//! Telemetry for the JS layer's OpenTelemetry support (`lib/telemetry.js`): the core's one
//! vocabulary ([`mqstate::telemetry`]) as a plain object, so that JavaScript spells no
//! span, attribute or metric name of its own, and [`NativeCallTrace`], the trace of one call
//! a span covers (the W3C trace context its requests carry, the events it met).
//!
//! Nothing here runs unless the JS layer found `@opentelemetry/api`: an untraced call goes
//! through `NativeClient` exactly as before.

use std::sync::Arc;
use std::time::UNIX_EPOCH;

use mqstate::codec::Verb;
use mqstate::telemetry::{
    CALL_DURATION, CALL_DURATION_BUCKETS, CallTrace, METRICS, TraceContext, names,
};
use napi::bindgen_prelude::{Array, BigInt, Env, JsObjectValue, Object};
use napi_derive::napi;

use crate::error::to_js;

/// The span, attribute and event names the JS layer uses, under the names it reads them by.
/// `ERROR_TYPE` as JavaScript names it: `errorType`.
fn camel(constant: &str) -> String {
    let mut out = String::with_capacity(constant.len());
    for (i, word) in constant.split('_').enumerate() {
        let word = word.to_ascii_lowercase();
        let mut chars = word.chars();
        match chars.next() {
            Some(first) if i > 0 => {
                out.push(first.to_ascii_uppercase());
                out.extend(chars);
            }
            _ => out.push_str(&word),
        }
    }
    out
}

/// The verb (span name, `db.operation.name`) of each `NativeClient` method that sends one.
fn operation(verb: Verb) -> &'static str {
    match verb {
        Verb::Set => "set",
        Verb::Get => "get",
        Verb::Del => "del",
        Verb::VDel => "vdel",
        Verb::KeyNotify => "observe",
        Verb::Scan => "scan",
    }
}

/// The core's telemetry vocabulary: `{ names, operations, callDuration,
/// callDurationBuckets, metrics }`. `names` maps the JS layer's names (camelCase of the
/// core's constants) to the core's values; `operations` maps each `NativeClient` method to
/// its verb; `metrics` lists every metric as `{ name, unit, kind, source, description }`.
#[napi(
    js_name = "telemetryVocabulary",
    ts_return_type = "{ names: Record<string, string>, operations: Record<string, string>, callDuration: string, callDurationBuckets: number[], metrics: Array<{ name: string, unit: string, kind: 'histogram' | 'counter' | 'gauge', source: 'call' | 'link' | 'cache', description: string }> }"
)]
pub fn telemetry_vocabulary(env: &Env) -> napi::Result<Object<'_>> {
    let mut names_ = Object::new(env)?;
    for (constant, value) in names::ALL {
        names_.set_named_property(&camel(constant), *value)?;
    }
    let mut operations = Object::new(env)?;
    for verb in Verb::ALL {
        operations.set_named_property(operation(verb), verb.as_str())?;
    }
    let mut metrics = env.create_array(METRICS.len() as u32)?;
    for (i, m) in METRICS.iter().enumerate() {
        let mut row = Object::new(env)?;
        row.set_named_property("name", m.name)?;
        row.set_named_property("unit", m.unit)?;
        row.set_named_property("kind", m.kind.as_str())?;
        row.set_named_property("source", m.source)?;
        row.set_named_property("description", m.description)?;
        metrics.set(i as u32, row)?;
    }
    let mut object = Object::new(env)?;
    object.set_named_property("names", names_)?;
    object.set_named_property("operations", operations)?;
    object.set_named_property("callDuration", CALL_DURATION)?;
    object.set_named_property("callDurationBuckets", CALL_DURATION_BUCKETS.to_vec())?;
    object.set_named_property::<Array>("metrics", metrics)?;
    Ok(object)
}

/// One event a traced call met.
#[napi(object, object_from_js = false)]
pub struct RawCallEvent {
    /// Its name (the core's `mqstate.*` event names).
    pub name: String,
    /// When, in nanoseconds since the Unix epoch.
    pub time_unix_nano: BigInt,
    /// Its attributes (the core's names), each a number.
    #[napi(ts_type = "Record<string, number>")]
    pub attributes: std::collections::HashMap<String, f64>,
}

/// The trace of one call an OpenTelemetry span covers: made from the span's W3C trace
/// context by `callTrace()`, given to `NativeClient.traced`, read by `takeEvents()`.
#[napi]
pub struct NativeCallTrace {
    trace: Arc<CallTrace>,
}

impl NativeCallTrace {
    /// The core's trace.
    pub(crate) fn trace(&self) -> Arc<CallTrace> {
        Arc::clone(&self.trace)
    }
}

#[napi]
impl NativeCallTrace {
    /// The events the call met so far, oldest first; they are taken (a second call returns
    /// the later ones).
    #[napi]
    pub fn take_events(&self) -> Vec<RawCallEvent> {
        self.trace
            .take_events()
            .into_iter()
            .map(|e| RawCallEvent {
                name: e.name.to_owned(),
                time_unix_nano: BigInt::from(
                    e.at.duration_since(UNIX_EPOCH)
                        .map(|d| d.as_nanos())
                        .unwrap_or(0),
                ),
                attributes: e
                    .attributes
                    .into_iter()
                    .map(|(k, v)| (k.to_owned(), v as f64))
                    .collect(),
            })
            .collect()
    }
}

/// A call trace carrying `traceparent` (and `tracestate`), checked by the core (an invalid
/// one throws `invalid_argument`).
#[napi(js_name = "callTrace")]
pub fn call_trace(
    env: &Env,
    traceparent: String,
    tracestate: Option<String>,
) -> napi::Result<NativeCallTrace> {
    let context =
        TraceContext::new(&traceparent, tracestate.as_deref()).map_err(|e| to_js(env, &e))?;
    Ok(NativeCallTrace {
        trace: CallTrace::new(Some(context)),
    })
}

/// A key as the text of `mqstate.key` (the core's rule: its UTF-8, each byte of an invalid
/// sequence written `\xNN`).
#[napi(
    js_name = "telemetryKeyText",
    ts_args_type = "key: string | Uint8Array"
)]
pub fn telemetry_key_text(env: &Env, key: napi::Unknown<'_>) -> napi::Result<String> {
    let key = crate::args::bytes(env, key, "key")?;
    Ok(mqstate::telemetry::key_text(key.as_ref()))
}
