//! Connecting with settings by name: the JS layer hands over an options object's names
//! (the core's settings table in camelCase, or snake_case) and values, and the core
//! ([`Settings::from_pairs`]) parses and validates each one, so that every language accepts
//! and refuses the same values with the same messages. This module only turns JS values
//! into the core's text: a string as it is, a boolean or a count as its digits. A duration
//! is text only (`'500ms'`, `'2s'`; bare digits are seconds in every language): a JS number
//! there would read as milliseconds to a Node user, so it is refused.

use mqstate::bridge::{ClientHandle, Settings};
use mqstate::vocabulary::{camel_case, snake_case};
use mqstate::{SETTINGS, SettingType};
use napi::ValueType;
use napi::bindgen_prelude::{ClassInstance, Env, Object, Unknown};
use napi_derive::napi;

use super::native::NativeClient;
use super::pending::{CancelHandle, promise};
use crate::args;
use crate::error::{invalid_argument, to_js};

/// One row of the core's settings table.
#[napi(object, object_from_js = false)]
pub struct SettingRow {
    /// The name as the Node client takes it (camelCase).
    pub name: String,
    /// `'text' | 'path' | 'bool' | 'count' | 'duration'`.
    #[napi(js_name = "type")]
    pub kind: String,
    /// The Azure IoT Operations environment variable, if any.
    pub env: Option<String>,
    /// One line for people.
    pub description: String,
}

/// Every setting the core knows, in table order.
#[napi(js_name = "settingsTable")]
pub fn settings_table() -> Vec<SettingRow> {
    SETTINGS
        .iter()
        .map(|s| SettingRow {
            name: camel_case(s.name),
            kind: s.value.name().into(),
            env: s.env.map(String::from),
            description: s.description.into(),
        })
        .collect()
}

/// A setting's value as the core's text.
fn text(env: &Env, name: &str, value: Unknown) -> napi::Result<String> {
    let what = format!("setting {name}");
    match value
        .get_type()
        .map_err(|_| invalid_argument(env, format!("{what}: cannot read it")))?
    {
        ValueType::String => args::string(env, value, &what),
        ValueType::Boolean => {
            // SAFETY: the value was just checked to be a boolean.
            let b = unsafe { value.cast::<bool>() }.map_err(|e| invalid_argument(env, e.reason))?;
            Ok(b.to_string())
        }
        ValueType::Number => {
            // SAFETY: the value was just checked to be a number.
            let n = unsafe { value.cast::<f64>() }.map_err(|e| invalid_argument(env, e.reason))?;
            let snake = snake_case(name);
            let duration = SETTINGS
                .iter()
                .any(|s| s.name == snake && s.value == SettingType::Duration);
            if duration {
                return Err(invalid_argument(
                    env,
                    format!(
                        "{what} is a duration: give it as text, such as '{n}ms' or '{}s'",
                        n / 1000.0
                    ),
                ));
            }
            Ok(n.to_string())
        }
        _ => Err(invalid_argument(
            env,
            format!("{what} must be a string, number or boolean"),
        )),
    }
}

/// Connects: from `url` (or the environment when `fromEnv`, or the defaults), then each
/// named setting in order. Resolves to a `NativeClient`.
#[napi(
    ts_args_type = "url: string | undefined | null, fromEnv: boolean, names: Array<string>, values: Array<string | number | boolean>, cancel?: CancelHandle | undefined | null",
    ts_return_type = "Promise<NativeClient>"
)]
pub fn connect<'env>(
    env: &'env Env,
    url: Option<String>,
    from_env: bool,
    names: Vec<String>,
    values: Vec<Unknown>,
    cancel: Option<ClassInstance<CancelHandle>>,
) -> napi::Result<Object<'env>> {
    if names.len() != values.len() {
        return Err(invalid_argument(env, "one value per setting name"));
    }
    let mut pairs = Vec::with_capacity(names.len());
    for (name, value) in names.into_iter().zip(values) {
        let value = text(env, &name, value)?;
        pairs.push((name, value));
    }
    let settings =
        Settings::from_pairs(url.as_deref(), from_env, pairs).map_err(|e| to_js(env, &e))?;
    let (host, port) = (settings.connection.host.clone(), settings.connection.port);
    promise(env, ClientHandle::connect(settings), cancel, move |store| {
        NativeClient::with_server(store, host, port)
    })
}
