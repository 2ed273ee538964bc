//! Conversion of loosely typed JavaScript arguments into the core's types.
//!
//! The exports take `Unknown` wherever napi's own conversion would throw an error with one
//! of napi's status codes (`'InvalidArg'`, `'StringExpected'` …): converting here instead
//! keeps the promise that every thrown error carries an mqstate code, in this case
//! `'invalid_argument'`. The TypeScript declarations still name the accepted types (each
//! export sets `ts_arg_type`).

use mqstate::codec::Verb;
use napi::ValueType;
use napi::bindgen_prelude::{
    BigInt, Env, FromNapiValue, JsObjectValue, JsValue, Object, Uint8ArraySlice, Unknown,
};

use crate::error::invalid_argument;

/// The largest integer a JS number holds exactly (`Number.MAX_SAFE_INTEGER`).
const MAX_SAFE_INTEGER: f64 = 9_007_199_254_740_991.0;

/// Bytes passed from JavaScript: a string (sent as its UTF-8 encoding) or a borrowed view
/// of a `Uint8Array` / `Buffer` (no copy).
pub enum ByteArg<'env> {
    /// A JS string, as UTF-8.
    Text(String),
    /// A `Uint8Array` (a `Buffer` is one), borrowed for the duration of the call.
    View(Uint8ArraySlice<'env>),
}

impl AsRef<[u8]> for ByteArg<'_> {
    fn as_ref(&self) -> &[u8] {
        match self {
            ByteArg::Text(text) => text.as_bytes(),
            ByteArg::View(view) => view.as_ref(),
        }
    }
}

fn type_of(env: &Env, value: &Unknown, what: &str) -> napi::Result<ValueType> {
    value
        .get_type()
        .map_err(|_| invalid_argument(env, format!("{what}: cannot read the argument")))
}

/// A key, value or payload: `Buffer`, `Uint8Array` or `string`.
pub fn bytes<'env>(env: &Env, value: Unknown<'env>, what: &str) -> napi::Result<ByteArg<'env>> {
    let wrong = || {
        invalid_argument(
            env,
            format!("{what} must be a Buffer, Uint8Array or string"),
        )
    };
    match type_of(env, &value, what)? {
        ValueType::String => Ok(ByteArg::Text(string(env, value, what)?)),
        ValueType::Object => {
            let raw = value.value();
            // SAFETY: `raw` is the live argument value of the current call, on the JS thread;
            // the conversion checks that it is a Uint8Array and fails otherwise.
            let view = unsafe { Uint8ArraySlice::from_napi_value(raw.env, raw.value) };
            view.map(ByteArg::View).map_err(|_| wrong())
        }
        _ => Err(wrong()),
    }
}

/// A JS string.
pub fn string(env: &Env, value: Unknown, what: &str) -> napi::Result<String> {
    if type_of(env, &value, what)? != ValueType::String {
        return Err(invalid_argument(env, format!("{what} must be a string")));
    }
    // SAFETY: the value was just checked to be a string.
    unsafe { value.cast::<String>() }
        .map_err(|_| invalid_argument(env, format!("{what} is not a valid string")))
}

/// An unsigned 64-bit integer: a non-negative safe-integer `number`, a `bigint` that fits,
/// or (when `allow_text`) a string of decimal digits.
pub fn u64_arg(env: &Env, value: Unknown, what: &str, allow_text: bool) -> napi::Result<u64> {
    let range = || {
        invalid_argument(
            env,
            format!("{what} must be an integer from 0 to 18446744073709551615"),
        )
    };
    match type_of(env, &value, what)? {
        ValueType::Number => {
            // SAFETY: the value was just checked to be a number.
            let n = unsafe { value.cast::<f64>() }.map_err(|_| range())?;
            if n.is_finite() && n >= 0.0 && n.fract() == 0.0 && n <= MAX_SAFE_INTEGER {
                Ok(n as u64)
            } else {
                Err(invalid_argument(
                    env,
                    format!(
                        "{what} must be a non-negative integer number no larger than \
                         Number.MAX_SAFE_INTEGER (use a bigint beyond that)"
                    ),
                ))
            }
        }
        ValueType::BigInt => {
            // SAFETY: the value was just checked to be a bigint.
            let big = unsafe { value.cast::<BigInt>() }.map_err(|_| range())?;
            match (big.sign_bit, big.words.as_slice()) {
                (false, [word]) => Ok(*word),
                (_, [0]) => Ok(0),
                _ => Err(range()),
            }
        }
        ValueType::String if allow_text => {
            let text = string(env, value, what)?;
            if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
                return Err(range());
            }
            text.parse::<u64>().map_err(|_| range())
        }
        _ => Err(invalid_argument(
            env,
            if allow_text {
                format!("{what} must be a number, bigint or decimal string")
            } else {
                format!("{what} must be a number or bigint")
            },
        )),
    }
}

/// Whether an optional argument was left out (`undefined` or `null`).
pub fn is_absent(env: &Env, value: &Unknown, what: &str) -> napi::Result<bool> {
    Ok(matches!(
        type_of(env, value, what)?,
        ValueType::Undefined | ValueType::Null
    ))
}

/// An options object, or `None` when the argument was left out.
pub fn options<'env>(
    env: &Env,
    value: Option<Unknown<'env>>,
    what: &str,
) -> napi::Result<Option<Object<'env>>> {
    let Some(value) = value else { return Ok(None) };
    match type_of(env, &value, what)? {
        ValueType::Undefined | ValueType::Null => Ok(None),
        // SAFETY: the value was just checked to be an object.
        ValueType::Object => unsafe { value.cast::<Object>() }
            .map(Some)
            .map_err(|_| invalid_argument(env, format!("{what} must be an object"))),
        _ => Err(invalid_argument(env, format!("{what} must be an object"))),
    }
}

/// A property of an options object, or `None` when it is missing, `undefined` or `null`.
pub fn property<'env>(
    env: &Env,
    object: &Object<'env>,
    name: &str,
) -> napi::Result<Option<Unknown<'env>>> {
    let value: Unknown = object
        .get_named_property(name)
        .map_err(|_| invalid_argument(env, format!("cannot read option {name}")))?;
    if is_absent(env, &value, name)? {
        Ok(None)
    } else {
        Ok(Some(value))
    }
}

/// A boolean property of an options object, `false` when left out.
pub fn flag(env: &Env, object: &Object, name: &str) -> napi::Result<bool> {
    let Some(value) = property(env, object, name)? else {
        return Ok(false);
    };
    if type_of(env, &value, name)? != ValueType::Boolean {
        return Err(invalid_argument(
            env,
            format!("option {name} must be a boolean"),
        ));
    }
    // SAFETY: the value was just checked to be a boolean.
    unsafe { value.cast::<bool>() }
        .map_err(|_| invalid_argument(env, format!("option {name} must be a boolean")))
}

/// A verb named as on the wire (`'SET'`, `'GET'`, `'DEL'`, `'VDEL'`, `'KEYNOTIFY'`).
pub fn verb(env: &Env, value: Unknown, what: &str) -> napi::Result<Verb> {
    let name = string(env, value, what)?;
    Verb::from_wire(name.as_bytes()).ok_or_else(|| {
        invalid_argument(
            env,
            format!("{what} must be one of SET, GET, DEL, VDEL, KEYNOTIFY, SCAN, not {name:?}"),
        )
    })
}
