//! `topics`: the state store's topic names (spec §2, §7), hex encoding of client ids and
//! keys, and the response-topic check, straight from the core.

use napi::bindgen_prelude::{Buffer, Env, Unknown};
use napi_derive::napi;

use crate::args;
use crate::error::to_js;

/// The topic requests are published to.
#[napi(namespace = "topics")]
pub const REQUEST_TOPIC: &str = mqstate::topics::REQUEST_TOPIC;

/// Notification topics start with this; no response topic may.
#[napi(namespace = "topics")]
pub const NOTIFICATION_PREFIX: &str = mqstate::topics::NOTIFICATION_PREFIX;

/// A notification topic split into its parts.
#[napi(object, namespace = "topics")]
pub struct NotificationTopic {
    /// The MQTT client id the notification is addressed to.
    pub client_id: String,
    /// The key that changed.
    pub key: Buffer,
}

/// The default response topic of a client.
#[napi(namespace = "topics", ts_args_type = "clientId: string")]
pub fn response_topic(env: &Env, client_id: Unknown) -> napi::Result<String> {
    let client_id = args::string(env, client_id, "clientId")?;
    Ok(mqstate::topics::response_topic(&client_id))
}

/// The filter a client subscribes to (QoS 1) before its first KEYNOTIFY.
#[napi(namespace = "topics", ts_args_type = "clientId: string")]
pub fn notification_filter(env: &Env, client_id: Unknown) -> napi::Result<String> {
    let client_id = args::string(env, client_id, "clientId")?;
    Ok(mqstate::topics::notification_filter(&client_id))
}

/// The topic on which the service notifies `clientId` of changes to `key`.
#[napi(
    namespace = "topics",
    ts_args_type = "clientId: string, key: Uint8Array | string"
)]
pub fn notification_topic(env: &Env, client_id: Unknown, key: Unknown) -> napi::Result<String> {
    let client_id = args::string(env, client_id, "clientId")?;
    let key = args::bytes(env, key, "key")?;
    Ok(mqstate::topics::notification_topic(
        &client_id,
        key.as_ref(),
    ))
}

/// Splits a notification topic into client id and key. Throws `malformed`.
#[napi(namespace = "topics", ts_args_type = "topic: string")]
pub fn parse_notification_topic(env: &Env, topic: Unknown) -> napi::Result<NotificationTopic> {
    let topic = args::string(env, topic, "topic")?;
    let (client_id, key) =
        mqstate::topics::parse_notification_topic(&topic).map_err(|e| to_js(env, &e))?;
    Ok(NotificationTopic {
        client_id,
        key: key.into(),
    })
}

/// Throws `invalid_argument` for a response topic the service would disconnect the
/// client for (the request topic, the notification prefix, empty, wildcards).
#[napi(namespace = "topics", ts_args_type = "topic: string")]
pub fn check_response_topic(env: &Env, topic: Unknown) -> napi::Result<()> {
    let topic = args::string(env, topic, "topic")?;
    mqstate::topics::check_response_topic(&topic).map_err(|e| to_js(env, &e))
}

/// Whether `checkResponseTopic` accepts `topic`.
#[napi(namespace = "topics", ts_args_type = "topic: string")]
pub fn is_response_topic_allowed(env: &Env, topic: Unknown) -> napi::Result<bool> {
    let topic = args::string(env, topic, "topic")?;
    Ok(mqstate::topics::check_response_topic(&topic).is_ok())
}

/// Upper-case base-16, two digits per byte.
#[napi(namespace = "topics", ts_args_type = "bytes: Uint8Array | string")]
pub fn hex_encode(env: &Env, bytes: Unknown) -> napi::Result<String> {
    let bytes = args::bytes(env, bytes, "bytes")?;
    Ok(mqstate::topics::hex_encode(bytes.as_ref()))
}

/// Decodes base-16 in either case. Throws `malformed` for odd length or a non-hex digit.
#[napi(namespace = "topics", ts_args_type = "text: string")]
pub fn hex_decode(env: &Env, text: Unknown) -> napi::Result<Buffer> {
    let text = args::string(env, text, "text")?;
    let bytes = mqstate::topics::hex_decode(&text).map_err(|e| to_js(env, &e))?;
    Ok(bytes.into())
}
