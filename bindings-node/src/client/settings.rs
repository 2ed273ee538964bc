//! Connecting with settings by name: the JS layer turns an options object into
//! `(snake_case name, text)` pairs, and the core's [`Settings::set`] parses and validates
//! each one, so that every language accepts and refuses the same values with the same
//! messages.

use mqstate::bridge::{Settings, Store};
use mqstate::{Error, SETTINGS};
use napi::bindgen_prelude::{Env, Object};
use napi_derive::napi;

use napi::bindgen_prelude::ClassInstance;

use super::pending::{CancelHandle, promise};
use super::store::NativeStore;
use crate::error::to_js;

/// One row of the core's settings table.
#[napi(object, object_from_js = false)]
pub struct SettingRow {
    /// The core's (snake_case) name.
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
            name: s.name.into(),
            kind: s.value.name().into(),
            env: s.env.map(String::from),
            description: s.description.into(),
        })
        .collect()
}

fn build(
    url: Option<String>,
    from_env: bool,
    names: Vec<String>,
    values: Vec<String>,
) -> Result<Settings, Error> {
    let mut settings = match (url, from_env) {
        (Some(url), _) => Settings::from_url(&url)?,
        (None, true) => Settings::from_env()?,
        (None, false) => Settings::new(),
    };
    if names.len() != values.len() {
        return Err(Error::invalid_argument("one value per setting name"));
    }
    for (name, value) in names.iter().zip(&values) {
        settings.set(name, value)?;
    }
    Ok(settings)
}

/// Connects: from `url` (or the environment when `fromEnv`, or the defaults), then each
/// named setting in order. Resolves to a `NativeStore`.
#[napi(ts_return_type = "Promise<NativeStore>")]
pub fn connect<'env>(
    env: &'env Env,
    url: Option<String>,
    from_env: bool,
    names: Vec<String>,
    values: Vec<String>,
    cancel: Option<ClassInstance<CancelHandle>>,
) -> napi::Result<Object<'env>> {
    let settings = build(url, from_env, names, values).map_err(|e| to_js(env, &e))?;
    promise(env, Store::connect(settings), cancel, NativeStore::from)
}
