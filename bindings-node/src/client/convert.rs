//! Core values as the plain JS objects the JS layer wraps into its public classes
//! (`Value`, `SetResult`, `Change`, `HolderChange`, `LockStatus`, `EditResult`), and JS
//! arguments (milliseconds, fencing tokens, optional texts) as core values.
//!
//! Versions and fencing tokens are `hlc.Hlc` instances; durations are milliseconds
//! (`number`); counts are `number`s (exact far beyond any real count).

use std::time::Duration;

use bytes::Bytes;
use mqstate::bridge::{Event, millis_to_duration};
use mqstate::codec::KeyEvent;
use mqstate::lock::LockStatus;
use mqstate::lock::{Edit, EditOutcome, HolderChange};
use mqstate::{Error, KeyNotification, SetOutcome, Versioned};
use napi::ValueType;
use napi::bindgen_prelude::{Buffer, Env, Unknown};
use napi_derive::napi;

use crate::args;
use crate::error::{CallbackId, invalid_argument, to_js};
use crate::hlc::{Hlc, hlc_arg};

/// `{ applied, version }` of a SET.
#[napi(object, object_from_js = false)]
pub struct RawSetResult {
    /// `false` when an `nx` / `nex` condition failed.
    pub applied: bool,
    /// The key's new version when applied.
    #[napi(ts_type = "hlc.Hlc")]
    pub version: Option<Hlc>,
}

impl From<SetOutcome> for RawSetResult {
    fn from(o: SetOutcome) -> Self {
        RawSetResult {
            applied: o.applied,
            version: o.version.map(Hlc::from),
        }
    }
}

/// `{ value, version }` of a GET (or what an edit read).
#[napi(object, object_from_js = false)]
pub struct RawValue {
    /// The value.
    pub value: Buffer,
    /// Its version.
    #[napi(ts_type = "hlc.Hlc")]
    pub version: Option<Hlc>,
}

impl From<Versioned> for RawValue {
    fn from(v: Versioned) -> Self {
        RawValue {
            value: Buffer::from(v.value.to_vec()),
            version: v.version.map(Hlc::from),
        }
    }
}

/// One subscription event, flat: `type` says which fields are set.
#[napi(object, object_from_js = false)]
#[derive(Default)]
pub struct RawEvent {
    /// `'change' | 'holder' | 'status' | 'degraded' | 'restored'`.
    #[napi(js_name = "type")]
    pub kind: String,
    /// change: the key.
    pub key: Option<Buffer>,
    /// change: `'set' | 'delete'`.
    pub event: Option<String>,
    /// change: the new value of a set.
    pub value: Option<Buffer>,
    /// change, holder: the version.
    #[napi(ts_type = "hlc.Hlc")]
    pub version: Option<Hlc>,
    /// change, holder: found by a resynchronisation after a reconnection.
    pub resync: Option<bool>,
    /// change: events dropped before this one (slow reader).
    pub dropped_before: Option<f64>,
    /// holder: the holder id (absent when free).
    pub holder: Option<String>,
    /// status: `'held' | 'not_held' | 'lost'`.
    pub state: Option<String>,
    /// status held: the fencing token.
    #[napi(ts_type = "hlc.Hlc")]
    pub token: Option<Hlc>,
    /// status held: the lease in milliseconds.
    pub lease_ms: Option<f64>,
    /// degraded: why; status lost: `expired`, `taken_over` or `renewal_failed`.
    pub reason: Option<String>,
    /// status lost by `renewal_failed`: the renewal's error code.
    pub error_code: Option<String>,
    /// status lost by `renewal_failed`: the renewal's error message.
    pub error_message: Option<String>,
}

fn change(n: KeyNotification) -> RawEvent {
    let (event, value) = match n.event {
        KeyEvent::Set(v) => ("set", Some(Buffer::from(v.to_vec()))),
        KeyEvent::Delete => ("delete", None),
    };
    RawEvent {
        kind: "change".into(),
        key: Some(Buffer::from(n.key.to_vec())),
        event: Some(event.into()),
        value,
        version: n.version.map(Hlc::from),
        resync: Some(n.resync),
        dropped_before: Some(n.dropped_before as f64),
        ..RawEvent::default()
    }
}

fn holder(h: HolderChange) -> RawEvent {
    RawEvent {
        kind: "holder".into(),
        holder: h.holder,
        version: h.version.map(Hlc::from),
        resync: Some(h.resync),
        ..RawEvent::default()
    }
}

fn status(s: LockStatus) -> RawEvent {
    let mut raw = RawEvent {
        kind: "status".into(),
        ..RawEvent::default()
    };
    raw.state = Some(s.as_str().into());
    match s {
        LockStatus::NotHeld => {}
        LockStatus::Held { token, lease, .. } => {
            raw.token = Some(Hlc::from(token));
            raw.lease_ms = Some(lease.as_millis() as f64);
        }
        LockStatus::Lost(reason) => {
            raw.reason = Some(reason.as_str().into());
            raw.error_code = reason.error().map(|e| e.code().to_owned());
            raw.error_message = reason.error().map(|e| e.message().to_owned());
        }
    }
    raw
}

/// An event of any subscription.
pub fn event(e: Event) -> RawEvent {
    match e {
        Event::Change(n) => change(n),
        Event::Holder(h) => holder(h),
        Event::Status(s) => status(s),
        Event::Degraded { reason } => RawEvent {
            kind: "degraded".into(),
            reason: Some(reason),
            ..RawEvent::default()
        },
        Event::Restored => RawEvent {
            kind: "restored".into(),
            ..RawEvent::default()
        },
    }
}

/// What an edit function decided, as the JS layer's wrapper hands it back. The wrapper
/// never rejects: a rejection of the user's function is kept on the JS side under
/// `errorId`, and comes back to the caller unchanged.
#[napi(object)]
pub struct RawDecision {
    /// `'set' | 'delete' | 'keep' | 'error'`.
    pub kind: String,
    /// set: the new value.
    pub value: Option<Buffer>,
    /// error: the id of the rejection value kept by the JS layer.
    pub error_id: Option<u32>,
}

impl RawDecision {
    /// The core's edit, or the callback error carrying the rejection's id.
    pub fn into_edit(self) -> Result<Edit, Error> {
        match (self.kind.as_str(), self.value, self.error_id) {
            ("set", Some(value), _) => Ok(Edit::Set(Bytes::copy_from_slice(&value))),
            ("delete", _, _) => Ok(Edit::Delete),
            ("keep", _, _) => Ok(Edit::Keep),
            ("error", _, Some(id)) => Err(Error::callback(
                "the edit function failed",
                std::sync::Arc::new(CallbackId(id)),
            )),
            (kind, _, _) => Err(Error::invalid_argument(format!(
                "unknown edit decision {kind:?}"
            ))),
        }
    }
}

/// The outcome of a fenced edit.
#[napi(object, object_from_js = false)]
pub struct RawEditResult {
    /// What was read under the lock.
    pub previous: Option<RawValue>,
    /// `'set' | 'delete' | 'keep'`.
    pub kind: String,
    /// The key's new version after a set.
    #[napi(ts_type = "hlc.Hlc")]
    pub version: Option<Hlc>,
    /// The fencing token the write carried.
    #[napi(ts_type = "hlc.Hlc")]
    pub token: Hlc,
    /// Attempts made.
    pub attempts: u32,
}

impl From<EditOutcome> for RawEditResult {
    fn from(o: EditOutcome) -> Self {
        let kind = match o.edit {
            Edit::Set(_) => "set",
            Edit::Delete => "delete",
            Edit::Keep => "keep",
        };
        RawEditResult {
            previous: o.previous.map(RawValue::from),
            kind: kind.into(),
            version: o.version.map(Hlc::from),
            token: Hlc::from(o.token),
            attempts: o.attempts,
        }
    }
}

/// An optional argument: `None` for `undefined` / `null`.
fn present<'a>(
    env: &Env,
    value: Option<Unknown<'a>>,
    what: &str,
) -> napi::Result<Option<Unknown<'a>>> {
    match value {
        Some(v) if !args::is_absent(env, &v, what)? => Ok(Some(v)),
        _ => Ok(None),
    }
}

/// An optional duration in milliseconds (a number), converted by the core
/// ([`millis_to_duration`]: NaN, infinite or negative is refused); `name` is the option's
/// name in messages (`'expiryMs'`).
pub fn millis(env: &Env, value: Option<Unknown>, name: &str) -> napi::Result<Option<Duration>> {
    let Some(value) = present(env, value, name)? else {
        return Ok(None);
    };
    let wrong = || invalid_argument(env, format!("{name} must be a number of milliseconds"));
    if value.get_type().map_err(|_| wrong())? != ValueType::Number {
        return Err(wrong());
    }
    // SAFETY: the value was just checked to be a number.
    let ms = unsafe { value.cast::<f64>() }.map_err(|_| wrong())?;
    millis_to_duration(name, ms)
        .map(Some)
        .map_err(|e| to_js(env, &e))
}

/// An optional fencing token: an `hlc.Hlc` or its text.
pub fn token(env: &Env, value: Option<Unknown>) -> napi::Result<Option<mqstate::Hlc>> {
    present(env, value, "fencingToken")?
        .map(|v| hlc_arg(env, v, "fencingToken"))
        .transpose()
}

/// An optional text argument.
pub fn text(env: &Env, value: Option<Unknown>, what: &str) -> napi::Result<Option<String>> {
    present(env, value, what)?
        .map(|v| args::string(env, v, what))
        .transpose()
}

/// An optional boolean argument, `false` when left out.
pub fn flag(env: &Env, value: Option<Unknown>, what: &str) -> napi::Result<bool> {
    let Some(value) = present(env, value, what)? else {
        return Ok(false);
    };
    let wrong = || invalid_argument(env, format!("{what} must be a boolean"));
    if value.get_type().map_err(|_| wrong())? != ValueType::Boolean {
        return Err(wrong());
    }
    // SAFETY: the value was just checked to be a boolean.
    unsafe { value.cast::<bool>() }.map_err(|_| wrong())
}

/// A key or value argument, copied (the call outlives the JS view).
pub fn bytes(env: &Env, value: Unknown, what: &str) -> napi::Result<Bytes> {
    let arg = args::bytes(env, value, what)?;
    Ok(Bytes::copy_from_slice(arg.as_ref()))
}
