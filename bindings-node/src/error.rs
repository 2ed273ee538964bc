//! The one error model of mqstate, as JavaScript sees it.
//!
//! Every error this addon throws is a plain JS `Error` whose `code` is the core's
//! [`ErrorKind::code`] (`'malformed'`, `'invalid_argument'`, `'clock_drift'`, a store kind
//! such as `'fencing_token_required'` …). Store errors also carry `storeKind` (the vector
//! name of the kind, `'unknown'` for a text this version does not know) and keep the
//! service's exact text as `message`. The code is taken from the kind, never from a
//! message.
//!
//! napi's own `Error<S>` can only carry a `code`, so the JS object is built here with the
//! extra properties and handed to napi as the value to throw (or, for the client's
//! Promises, to reject with, on the JS thread): `mayHaveApplied` when a sent request's
//! outcome is unknown, `rpc` with an RPC failure's details, and `callbackId` when a user's
//! edit function failed (the JS layer rethrows what that function threw).

use mqstate::codec::{StoreError, StoreErrorKind};
use mqstate::{Error, ErrorKind};
use napi::Status;
use napi::bindgen_prelude::{Env, JsObjectValue, JsValue, Object};
use napi_derive::napi;

/// The payload of a `callback` error: the id under which the JS layer keeps what the
/// user's edit function threw, so that the edit rejects with that very value.
pub struct CallbackId(pub u32);

/// Converts a core error into the JS error thrown for it.
pub fn to_js(env: &Env, err: &Error) -> napi::Error {
    let store_kind = match err.kind() {
        ErrorKind::Store(kind) => Some(kind),
        _ => None,
    };
    let plain = || napi::Error::new(Status::GenericFailure, err.message().to_owned());
    let object = (|| -> napi::Result<Object<'_>> {
        let mut object = fields(
            env,
            err.kind().code(),
            err.message(),
            store_kind,
            rpc_status(err),
        )?;
        if err.may_have_applied() {
            object.set_named_property("mayHaveApplied", true)?;
        }
        if let Some(rpc) = err.rpc_details() {
            let mut details = Object::new(env)?;
            details.set_named_property("status", u32::from(rpc.status))?;
            details.set_named_property("statusMessage", rpc.status_message.as_deref())?;
            details.set_named_property("propertyName", rpc.property_name.as_deref())?;
            details.set_named_property("propertyValue", rpc.property_value.as_deref())?;
            details.set_named_property("applicationError", rpc.application_error)?;
            details.set_named_property(
                "supportedMajorVersions",
                rpc.supported_major_versions.as_deref(),
            )?;
            details.set_named_property(
                "requestProtocolVersion",
                rpc.request_protocol_version.as_deref(),
            )?;
            object.set_named_property("rpc", details)?;
        }
        if let Some(CallbackId(id)) = err
            .callback_payload()
            .and_then(|p| p.downcast_ref::<CallbackId>())
        {
            object.set_named_property("callbackId", *id)?;
        }
        Ok(object)
    })();
    match object {
        Ok(object) => napi::Error::from(object.to_unknown()),
        Err(_) => plain(),
    }
}

/// Converts a store error (from the service-side request decoder) into the JS error
/// thrown for it: `code` and `storeKind` from the kind, `message` the exact text.
pub fn store_to_js(env: &Env, err: &StoreError) -> napi::Error {
    to_js(env, &Error::from(err.clone()))
}

/// An `invalid_argument` error about a value passed from JavaScript.
pub fn invalid_argument(env: &Env, message: impl Into<String>) -> napi::Error {
    to_js(env, &Error::invalid_argument(message.into()))
}

fn rpc_status(err: &Error) -> Option<u16> {
    match err.kind() {
        ErrorKind::Rpc(status) => Some(status),
        _ => None,
    }
}

/// The JS `Error` object with `code`, `storeKind` and `status`.
fn fields<'env>(
    env: &'env Env,
    code: &str,
    message: &str,
    store_kind: Option<StoreErrorKind>,
    rpc_status: Option<u16>,
) -> napi::Result<Object<'env>> {
    let mut object =
        env.create_error(napi::Error::new(Status::GenericFailure, message.to_owned()))?;
    object.set_named_property("code", code)?;
    if let Some(kind) = store_kind {
        object.set_named_property("storeKind", kind.as_str())?;
    }
    if let Some(status) = rpc_status {
        object.set_named_property("status", u32::from(status))?;
    }
    Ok(object)
}

/// Every stable error code a JS caller can see in `err.code`, as the core lists them
/// (`rpc_error` included).
#[napi(js_name = "errorCodes")]
pub fn error_codes() -> Vec<&'static str> {
    ErrorKind::all().map(ErrorKind::code).collect()
}

/// Every store error kind a JS caller can see in `err.storeKind` and in a decoded
/// response's `errorKind`.
#[napi(js_name = "storeErrorKinds")]
pub fn store_error_kinds() -> Vec<&'static str> {
    StoreErrorKind::ALL.iter().map(|k| k.as_str()).collect()
}
