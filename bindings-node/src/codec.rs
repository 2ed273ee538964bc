//! `codec`: the state store's payloads, for an app that owns its MQTT connection.
//!
//! Encoders build request payloads (spec §3); `decodeResponse` and `decodeNotification`
//! read what the service sends (spec §4, §7); `decodeRequest` is the service side. All of
//! it is the core's codec: this module only converts arguments and results.

use std::num::NonZeroU64;

use bytes::Bytes;
use mqstate::codec::{KeyEvent, Notification, Request, Response, SetCondition};
use napi::bindgen_prelude::{Buffer, Env, Unknown};
use napi_derive::napi;

use crate::args::{self, ByteArg};
use crate::error::{invalid_argument, store_to_js, to_js};

/// Options of `encodeSet`.
#[napi(object, namespace = "codec")]
pub struct SetOptions {
    /// `'NX'`: only if the key does not exist; `'NEX'`: only if it does not exist or
    /// already holds this value (any case). Left out: set unconditionally.
    #[napi(ts_type = "'NX' | 'NEX' | 'nx' | 'nex'")]
    pub condition: Option<String>,
    /// `PX`: the key expires this many milliseconds after the SET (a positive integer).
    pub px_ms: Option<f64>,
}

/// Options of `encodeKeynotify`.
#[napi(object, namespace = "codec")]
pub struct KeynotifyOptions {
    /// `STOP`: end the registration instead of starting it.
    pub stop: Option<bool>,
}

/// A request payload decoded as the service reads it.
#[napi(object, namespace = "codec")]
pub struct DecodedRequest {
    /// The verb, as on the wire.
    #[napi(ts_type = "'SET' | 'GET' | 'DEL' | 'VDEL' | 'KEYNOTIFY' | 'SCAN'")]
    pub verb: String,
    /// The key (SCAN's pattern).
    pub key: Buffer,
    /// SET's and VDEL's value.
    pub value: Option<Buffer>,
    /// SET's condition, when it has one.
    #[napi(ts_type = "'NX' | 'NEX'")]
    pub condition: Option<String>,
    /// SET's expiry in milliseconds, when it has one.
    pub px_ms: Option<f64>,
    /// KEYNOTIFY's `STOP` (always present on KEYNOTIFY).
    pub stop: Option<bool>,
    /// SCAN's glob pattern (always present on SCAN).
    pub pattern: Option<Buffer>,
    /// SCAN's continuation token, when it asks for a page after the first.
    pub token: Option<Buffer>,
}

/// A response payload decoded by the client. A store error (`-ERR …`) is a value here,
/// not a throw: `kind` is `'error'` with `errorKind` and the exact `errorText`.
#[napi(object, namespace = "codec")]
pub struct DecodedResponse {
    /// Which form the response has.
    #[napi(ts_type = "'ok' | 'not_applied' | 'not_found' | 'value' | 'count' | 'keys' | 'error'")]
    pub kind: String,
    /// GET's value (`kind === 'value'`).
    pub value: Option<Buffer>,
    /// Keys deleted, or `0` for a STOP that found no registration (`kind === 'count'`).
    pub count: Option<f64>,
    /// One SCAN page's keys, possibly none (`kind === 'keys'`).
    pub keys: Option<Vec<Buffer>>,
    /// The continuation token of a SCAN page with more to come (`kind === 'keys'`); absent
    /// on the final page.
    pub token: Option<Buffer>,
    /// The store error's kind (`kind === 'error'`), `'unknown'` for a new text.
    pub error_kind: Option<String>,
    /// The store error's exact text (`kind === 'error'`).
    pub error_text: Option<String>,
}

/// A notification decoded from its topic and payload.
#[napi(object, namespace = "codec")]
pub struct DecodedNotification {
    /// The MQTT client id the notification is addressed to.
    pub client_id: String,
    /// The key that changed (from the topic).
    pub key: Buffer,
    /// What happened.
    #[napi(ts_type = "'set' | 'delete'")]
    pub kind: String,
    /// The new value (`kind === 'set'`).
    pub value: Option<Buffer>,
}

fn encode(env: &Env, request: Request<ByteArg>) -> napi::Result<Buffer> {
    request.validate().map_err(|e| to_js(env, &e))?;
    let mut out = Vec::with_capacity(request.encoded_len());
    request.encode_to(&mut out);
    Ok(out.into())
}

fn set_condition(env: &Env, value: Option<Unknown>) -> napi::Result<SetCondition> {
    let text = match value {
        Some(value) => Some(args::string(env, value, "option condition")?),
        None => None,
    };
    SetCondition::parse(text.as_deref()).map_err(|e| to_js(env, &e))
}

fn expiry(env: &Env, value: Option<Unknown>) -> napi::Result<Option<NonZeroU64>> {
    let Some(value) = value else { return Ok(None) };
    let ms = args::u64_arg(env, value, "option pxMs", false)?;
    match NonZeroU64::new(ms) {
        Some(ms) => Ok(Some(ms)),
        None => Err(invalid_argument(
            env,
            "option pxMs must be a positive integer",
        )),
    }
}

/// `SET key value [NX|NEX] [PX ms]` as a request payload.
#[napi(
    namespace = "codec",
    ts_args_type = "key: Uint8Array | string, value: Uint8Array | string, options?: SetOptions"
)]
pub fn encode_set(
    env: &Env,
    key: Unknown,
    value: Unknown,
    options: Option<Unknown>,
) -> napi::Result<Buffer> {
    let key = args::bytes(env, key, "key")?;
    let value = args::bytes(env, value, "value")?;
    let (condition, expiry_ms) = match args::options(env, options, "options")? {
        Some(o) => (
            set_condition(env, args::property(env, &o, "condition")?)?,
            expiry(env, args::property(env, &o, "pxMs")?)?,
        ),
        None => (SetCondition::Always, None),
    };
    let request = Request::Set {
        key,
        value,
        condition,
        expiry_ms,
    };
    encode(env, request)
}

/// `GET key` as a request payload.
#[napi(namespace = "codec", ts_args_type = "key: Uint8Array | string")]
pub fn encode_get(env: &Env, key: Unknown) -> napi::Result<Buffer> {
    let key = args::bytes(env, key, "key")?;
    encode(env, Request::Get { key })
}

/// `DEL key` as a request payload.
#[napi(namespace = "codec", ts_args_type = "key: Uint8Array | string")]
pub fn encode_del(env: &Env, key: Unknown) -> napi::Result<Buffer> {
    let key = args::bytes(env, key, "key")?;
    encode(env, Request::Del { key })
}

/// `VDEL key value` (delete only if the key holds `value`) as a request payload.
#[napi(
    namespace = "codec",
    ts_args_type = "key: Uint8Array | string, value: Uint8Array | string"
)]
pub fn encode_vdel(env: &Env, key: Unknown, value: Unknown) -> napi::Result<Buffer> {
    let key = args::bytes(env, key, "key")?;
    let value = args::bytes(env, value, "value")?;
    encode(env, Request::VDel { key, value })
}

/// `KEYNOTIFY key [STOP]` as a request payload.
#[napi(
    namespace = "codec",
    ts_args_type = "key: Uint8Array | string, options?: KeynotifyOptions"
)]
pub fn encode_keynotify(env: &Env, key: Unknown, options: Option<Unknown>) -> napi::Result<Buffer> {
    let key = args::bytes(env, key, "key")?;
    let stop = match args::options(env, options, "options")? {
        Some(o) => args::flag(env, &o, "stop")?,
        None => false,
    };
    encode(env, Request::KeyNotify { key, stop })
}

/// `SCAN pattern [token]` (spec §3.1) as a request payload: the first page without
/// `token`, each next page with the previous page's token. An empty pattern throws
/// (`code === 'invalid_argument'`).
#[napi(
    namespace = "codec",
    ts_args_type = "pattern: Uint8Array | string, options?: { token?: Uint8Array | string | null }"
)]
pub fn encode_scan(env: &Env, pattern: Unknown, options: Option<Unknown>) -> napi::Result<Buffer> {
    let pattern = args::bytes(env, pattern, "pattern")?;
    let token = match args::options(env, options, "options")? {
        Some(o) => match args::property(env, &o, "token")? {
            Some(t) => Some(args::bytes(env, t, "option token")?),
            None => None,
        },
        None => None,
    };
    encode(env, Request::Scan { pattern, token })
}

fn payload(env: &Env, value: Unknown) -> napi::Result<Bytes> {
    let bytes = args::bytes(env, value, "payload")?;
    Ok(Bytes::copy_from_slice(bytes.as_ref()))
}

/// Decodes a request payload as the service does. Throws the store error the service
/// would answer with (`code` e.g. `'syntax_error'`, `storeKind`, exact text as `message`).
#[napi(namespace = "codec", ts_args_type = "payload: Uint8Array | string")]
pub fn decode_request(env: &Env, payload: Unknown) -> napi::Result<DecodedRequest> {
    let payload = self::payload(env, payload)?;
    let request = Request::decode(&payload).map_err(|e| store_to_js(env, &e))?;
    let mut out = DecodedRequest {
        verb: request.verb().as_str().to_owned(),
        key: request.key().to_vec().into(),
        value: None,
        condition: None,
        px_ms: None,
        stop: None,
        pattern: None,
        token: None,
    };
    match request {
        Request::Set {
            value,
            condition,
            expiry_ms,
            ..
        } => {
            out.value = Some(value.to_vec().into());
            out.condition = condition.as_wire().map(str::to_owned);
            out.px_ms = expiry_ms.map(|ms| ms.get() as f64);
        }
        Request::VDel { value, .. } => out.value = Some(value.to_vec().into()),
        Request::KeyNotify { stop, .. } => out.stop = Some(stop),
        Request::Scan { pattern, token } => {
            out.pattern = Some(pattern.to_vec().into());
            out.token = token.map(|t| t.to_vec().into());
        }
        Request::Get { .. } | Request::Del { .. } => {}
    }
    Ok(out)
}

/// Decodes a response payload; with `verb`, also refuses forms that verb cannot receive.
/// A malformed payload throws (`code === 'malformed'`); a store error does not.
#[napi(
    namespace = "codec",
    ts_args_type = "payload: Uint8Array | string, verb?: 'SET' | 'GET' | 'DEL' | 'VDEL' | 'KEYNOTIFY' | 'SCAN'"
)]
pub fn decode_response(
    env: &Env,
    payload: Unknown,
    verb: Option<Unknown>,
) -> napi::Result<DecodedResponse> {
    let payload = self::payload(env, payload)?;
    let verb = match verb {
        Some(v) if !args::is_absent(env, &v, "verb")? => Some(args::verb(env, v, "verb")?),
        _ => None,
    };
    let response = match verb {
        Some(verb) => Response::decode_for(verb, &payload),
        None => Response::decode(&payload),
    }
    .map_err(|e| to_js(env, &e))?;
    let mut out = DecodedResponse {
        kind: response.kind_name().to_owned(),
        value: None,
        count: None,
        keys: None,
        token: None,
        error_kind: None,
        error_text: None,
    };
    match response {
        Response::Value(v) => out.value = Some(v.to_vec().into()),
        Response::Count(n) => out.count = Some(n as f64),
        Response::Error(e) => {
            out.error_kind = Some(e.kind().as_str().to_owned());
            out.error_text = Some(e.text().to_owned());
        }
        Response::Page(page) => {
            out.keys = Some(page.keys.iter().map(|k| k.to_vec().into()).collect());
            out.token = page.token.map(|t| t.to_vec().into());
        }
        Response::Ok | Response::NotApplied | Response::NotFound => {}
    }
    Ok(out)
}

/// Decodes a notification from the topic it arrived on and its payload. A bad topic or
/// payload throws (`code === 'malformed'`).
#[napi(
    namespace = "codec",
    ts_args_type = "topic: string, payload: Uint8Array | string"
)]
pub fn decode_notification(
    env: &Env,
    topic: Unknown,
    payload: Unknown,
) -> napi::Result<DecodedNotification> {
    let topic = args::string(env, topic, "topic")?;
    let payload = self::payload(env, payload)?;
    let n = Notification::decode(&topic, &payload).map_err(|e| to_js(env, &e))?;
    let (kind, value) = match n.event {
        KeyEvent::Set(v) => ("set", Some(v.to_vec().into())),
        KeyEvent::Delete => ("delete", None),
    };
    Ok(DecodedNotification {
        client_id: n.client_id,
        key: n.key.to_vec().into(),
        kind: kind.to_owned(),
        value,
    })
}
