//! The one error model of mqstate, as JavaScript sees it.
//!
//! Every error this addon throws is an instance of the package's class for its code — the
//! class the core's error table names (`InvalidArgumentError`, `MalformedError`,
//! `FencingTokenRequiredError` …, generated into `lib/error-classes.js`, which the JS layer
//! registers here once with `useErrorClasses` at load) — whose `code` is the core's
//! [`ErrorKind::code`]. Store errors also carry `storeKind` (the vector name of the kind,
//! `'unknown'` for a text this version does not know) and keep the service's exact text as
//! `message`. The class and code are taken from the kind, never from a message. Before the
//! classes are registered (the generated loader used on its own) it is a plain `Error` with
//! the same properties.
//!
//! napi's own `Error<S>` can only carry a `code`, so the JS object is built here with the
//! extra properties and handed to napi as the value to throw (or, for the client's
//! Promises, to reject with, on the JS thread): `mayHaveApplied` when a sent request's
//! outcome is unknown, `rpc` with an RPC failure's details, and `callbackId` when a user's
//! edit function failed (the JS layer rethrows what that function threw).

use mqstate::codec::{StoreError, StoreErrorKind};
use mqstate::{Error, ErrorKind};
use napi::Status;
use napi::bindgen_prelude::{
    Env, Function, JsObjectValue, JsValue, Object, ObjectRef, Unknown, ValueType,
};
use napi_derive::napi;

/// The payload of a `callback` error: the id under which the JS layer keeps what the
/// user's edit function threw, so that the edit rejects with that very value.
pub struct CallbackId(pub u32);

/// The package's error classes by code, as registered by the JS layer (one per JS
/// environment: the addon's instance data).
struct ErrorClasses(ObjectRef<false>);

/// Registers the error classes: `classes[code]` is the class of each code, constructed
/// with the message. Errors thrown from then on are instances of them.
#[napi(
    js_name = "useErrorClasses",
    ts_args_type = "classes: Record<string, new (message: string) => Error>"
)]
pub fn use_error_classes(env: &Env, classes: Object) -> napi::Result<()> {
    let classes = ErrorClasses(classes.create_ref::<false>()?);
    // The reference goes with the environment (no N-API call while it is torn down).
    env.set_instance_data(classes, (), |_| {})
}

/// A new instance of the registered class of `code`, if there is one.
fn instance<'env>(env: &'env Env, code: &str, message: &str) -> napi::Result<Option<Object<'env>>> {
    let Some(classes) = env.get_instance_data::<ErrorClasses>()? else {
        return Ok(None);
    };
    let classes = classes.0.get_value(env)?;
    let class: Unknown = classes.get_named_property(code)?;
    if class.get_type()? != ValueType::Function {
        return Ok(None);
    }
    // SAFETY: the value was just checked to be a function.
    let class = unsafe { class.cast::<Function<String, Unknown>>() }?;
    let object = class.new_instance(message.to_owned())?;
    // SAFETY: `new` returns an object.
    Ok(Some(unsafe { object.cast::<Object>() }?))
}

/// Converts a core error into the JS error thrown for it.
pub fn to_js(env: &Env, err: &Error) -> napi::Error {
    match error_object(env, err) {
        Ok(object) => napi::Error::from(object.to_unknown()),
        Err(_) => napi::Error::new(Status::GenericFailure, err.message().to_owned()),
    }
}

/// The JS error object of `err`, with every property.
fn error_object<'env>(env: &'env Env, err: &Error) -> napi::Result<Object<'env>> {
    let code = err.kind().code();
    let mut object = match instance(env, code, err.message())? {
        Some(object) => object,
        None => {
            let error = napi::Error::new(Status::GenericFailure, err.message().to_owned());
            let mut object = env.create_error(error)?;
            object.set_named_property("code", code)?;
            object
        }
    };
    match err.kind() {
        ErrorKind::Store(kind) => object.set_named_property("storeKind", kind.as_str())?,
        ErrorKind::Rpc(status) => object.set_named_property("status", u32::from(status))?,
        _ => {}
    }
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
