//! `hlc`: the hybrid logical clock (spec §5), as the classes `Hlc` (an immutable value with
//! the pure tick/receive rules) and `Clock` (a process's clock on the system time).
//!
//! Counters are unsigned 64-bit, so `counter` is a `bigint`; `toString()` is the canonical
//! padded form and round-trips exactly through `Hlc.parse`. Wall clocks are `number`s
//! (milliseconds since the epoch, exact up to `Number.MAX_SAFE_INTEGER`).

use std::cmp::Ordering;

use mqstate::hlc::{DEFAULT_MAX_DRIFT_MS, SystemTimeSource};
use napi::ValueType;
use napi::bindgen_prelude::{ClassInstance, Env, FromNapiValue, JsValue, Unknown};
use napi_derive::napi;

use crate::args;
use crate::error::{invalid_argument, to_js};

/// One hybrid logical clock value: `{wallMs}:{counter}:{nodeId}`. Immutable: `tick` and
/// `receive` return a new value.
#[napi(namespace = "hlc")]
pub struct Hlc {
    inner: mqstate::Hlc,
}

impl From<mqstate::Hlc> for Hlc {
    fn from(inner: mqstate::Hlc) -> Hlc {
        Hlc { inner }
    }
}

/// An `Hlc` instance, or its text (parsed; a bad text is `malformed`).
pub(crate) fn hlc_arg(env: &Env, value: Unknown, what: &str) -> napi::Result<mqstate::Hlc> {
    let wrong = || invalid_argument(env, format!("{what} must be an Hlc or its text"));
    match value.get_type().map_err(|_| wrong())? {
        ValueType::String => {
            let text = args::string(env, value, what)?;
            mqstate::Hlc::parse(&text).map_err(|e| to_js(env, &e))
        }
        ValueType::Object => {
            let raw = value.value();
            // SAFETY: `raw` is the live argument value of the current call, on the JS thread;
            // the conversion checks the class type tag and fails for any other object.
            let instance = unsafe { ClassInstance::<Hlc>::from_napi_value(raw.env, raw.value) };
            instance.map(|h| h.inner.clone()).map_err(|_| wrong())
        }
        _ => Err(wrong()),
    }
}

fn max_drift(env: &Env, value: Option<Unknown>) -> napi::Result<u64> {
    match value {
        Some(v) if !args::is_absent(env, &v, "maxDriftMs")? => {
            args::u64_arg(env, v, "maxDriftMs", false)
        }
        _ => Ok(DEFAULT_MAX_DRIFT_MS),
    }
}

fn order(ordering: Ordering) -> i32 {
    match ordering {
        Ordering::Less => -1,
        Ordering::Equal => 0,
        Ordering::Greater => 1,
    }
}

#[napi(namespace = "hlc")]
impl Hlc {
    /// Builds a value from its fields. `counter` may be a number, a bigint or a decimal
    /// string (it is unsigned 64-bit); the node id must be non-empty and free of `:`.
    #[napi(
        constructor,
        ts_args_type = "wallMs: number | bigint, counter: number | bigint | string, nodeId: string"
    )]
    pub fn new(
        env: &Env,
        wall_ms: Unknown,
        counter: Unknown,
        node_id: Unknown,
    ) -> napi::Result<Hlc> {
        let wall_ms = args::u64_arg(env, wall_ms, "wallMs", false)?;
        let counter = args::u64_arg(env, counter, "counter", true)?;
        let node_id = args::string(env, node_id, "nodeId")?;
        let inner = mqstate::Hlc::new(wall_ms, counter, node_id).map_err(|e| to_js(env, &e))?;
        Ok(inner.into())
    }

    /// Parses `{wall}:{counter}:{node}` (any number of digits). Throws `malformed`.
    #[napi(factory, ts_args_type = "text: string")]
    pub fn parse(env: &Env, text: Unknown) -> napi::Result<Hlc> {
        let text = args::string(env, text, "text")?;
        let inner = mqstate::Hlc::parse(&text).map_err(|e| to_js(env, &e))?;
        Ok(inner.into())
    }

    /// Milliseconds since the Unix epoch.
    #[napi(getter)]
    pub fn wall_ms(&self) -> f64 {
        self.inner.wall_ms() as f64
    }

    /// The logical counter, exact.
    #[napi(getter)]
    pub fn counter(&self) -> u64 {
        self.inner.counter()
    }

    /// The node id.
    #[napi(getter)]
    pub fn node_id(&self) -> String {
        self.inner.node_id().to_owned()
    }

    /// The canonical form: wall clock padded to 15 digits, counter to 5.
    #[napi(js_name = "toString")]
    pub fn to_text(&self) -> String {
        self.inner.to_string()
    }

    /// The canonical form, so that `JSON.stringify` writes the text.
    #[napi(js_name = "toJSON")]
    pub fn to_json(&self) -> String {
        self.inner.to_string()
    }

    /// -1, 0 or 1 as this value is older than, equal to or newer than `other`, comparing
    /// wall clock, then counter, then node id byte-wise.
    #[napi(ts_args_type = "other: Hlc | string")]
    pub fn compare(&self, env: &Env, other: Unknown) -> napi::Result<i32> {
        let other = hlc_arg(env, other, "other")?;
        Ok(order(self.inner.cmp(&other)))
    }

    /// Like `compare`, ignoring the node id: the order fencing tokens use.
    #[napi(ts_args_type = "other: Hlc | string")]
    pub fn compare_time(&self, env: &Env, other: Unknown) -> napi::Result<i32> {
        let other = hlc_arg(env, other, "other")?;
        Ok(order(self.inner.cmp_time(&other)))
    }

    /// Whether `other` has the same wall clock, counter and node id.
    #[napi(ts_args_type = "other: Hlc | string")]
    pub fn equals(&self, env: &Env, other: Unknown) -> napi::Result<bool> {
        let other = hlc_arg(env, other, "other")?;
        Ok(self.inner == other)
    }

    /// The send step at `nowMs`: `(now, 0)` if now is past the wall clock, else the counter
    /// plus one. Throws `clock_drift` or `clock_overflow`. `maxDriftMs` defaults to 60000.
    #[napi(ts_args_type = "nowMs: number | bigint, maxDriftMs?: number | bigint")]
    pub fn tick(
        &self,
        env: &Env,
        now_ms: Unknown,
        max_drift_ms: Option<Unknown>,
    ) -> napi::Result<Hlc> {
        let now_ms = args::u64_arg(env, now_ms, "nowMs", false)?;
        let max_drift_ms = max_drift(env, max_drift_ms)?;
        let next = self.inner.tick(now_ms, max_drift_ms);
        next.map(Hlc::from).map_err(|e| to_js(env, &e))
    }

    /// The receive step at `nowMs`: merges `other` (a `__ts` received) into this value.
    /// Throws `clock_drift` or `clock_overflow`. `maxDriftMs` defaults to 60000.
    #[napi(
        ts_args_type = "other: Hlc | string, nowMs: number | bigint, maxDriftMs?: number | bigint"
    )]
    pub fn receive(
        &self,
        env: &Env,
        other: Unknown,
        now_ms: Unknown,
        max_drift_ms: Option<Unknown>,
    ) -> napi::Result<Hlc> {
        let other = hlc_arg(env, other, "other")?;
        let now_ms = args::u64_arg(env, now_ms, "nowMs", false)?;
        let max_drift_ms = max_drift(env, max_drift_ms)?;
        let next = self.inner.receive(&other, now_ms, max_drift_ms);
        next.map(Hlc::from).map_err(|e| to_js(env, &e))
    }
}

/// A process's clock: one node id, the system time, refusing to run more than the maximum
/// drift (default 60000 ms) ahead of it.
#[napi(namespace = "hlc")]
pub struct Clock {
    inner: mqstate::Clock,
}

#[napi(namespace = "hlc")]
impl Clock {
    /// A clock for `nodeId` (non-empty, no `:`), starting at the current time.
    #[napi(
        constructor,
        ts_args_type = "nodeId: string, maxDriftMs?: number | bigint"
    )]
    pub fn new(env: &Env, node_id: Unknown, max_drift_ms: Option<Unknown>) -> napi::Result<Clock> {
        let node_id = args::string(env, node_id, "nodeId")?;
        let max_drift_ms = max_drift(env, max_drift_ms)?;
        let inner = mqstate::Clock::with_time_source(&node_id, SystemTimeSource, max_drift_ms)
            .map_err(|e| to_js(env, &e))?;
        Ok(Clock { inner })
    }

    /// Ticks for a send and returns the new value (for a request's `__ts`).
    #[napi]
    pub fn tick(&self, env: &Env) -> napi::Result<Hlc> {
        self.inner.tick().map(Hlc::from).map_err(|e| to_js(env, &e))
    }

    /// Merges a received `__ts`; returns the new value. On error the clock is unchanged.
    #[napi(ts_args_type = "other: Hlc | string")]
    pub fn receive(&self, env: &Env, other: Unknown) -> napi::Result<Hlc> {
        let other = hlc_arg(env, other, "other")?;
        let next = self.inner.receive(&other);
        next.map(Hlc::from).map_err(|e| to_js(env, &e))
    }

    /// The current value, without ticking.
    #[napi(getter)]
    pub fn current(&self) -> Hlc {
        self.inner.current().into()
    }

    /// The maximum drift ahead of local time this clock accepts, in milliseconds.
    #[napi(getter)]
    pub fn max_drift_ms(&self) -> f64 {
        self.inner.max_drift_ms() as f64
    }
}
