//! `mqstate_settings`: connection and client settings by name, through the core's one
//! settings table (the same names, parsing and messages as Python keyword arguments,
//! JavaScript options and Kotlin builders).

use std::ffi::c_char;
use std::sync::Mutex;

use mqstate::bridge::Settings;

use super::guard;
use crate::ffi::{out_arg, str_arg};
use crate::status::{boundary, mqstate_status};

/// Settings for `mqstate_client_connect` (opaque).
pub struct mqstate_settings {
    guarded: guard::Guarded<Mutex<Settings>>,
}

crate::handle!(mqstate_settings, Mutex<Settings>);

/// Resets `*out`, builds the settings, and stores them: on error `*out` is NULL.
fn make(
    out: *mut *mut mqstate_settings,
    build: impl FnOnce() -> Result<Settings, crate::status::Failure>,
) -> Result<(), crate::status::Failure> {
    let out = out_arg(out, std::ptr::null_mut(), "out")?;
    *out = guard::new(Mutex::new(build()?));
    Ok(())
}

/// Default settings (`localhost:1883`) in `*out`; free with `mqstate_settings_free`.
///
/// # Safety
/// `out` must be NULL or writable.
#[unsafe(no_mangle)]
pub extern "C" fn mqstate_settings_new(out: *mut *mut mqstate_settings) -> mqstate_status {
    boundary(|| make(out, || Ok(Settings::new())))
}

/// Settings from a `mqtt://` / `mqtts://` URL (query items are setting names).
///
/// # Safety
/// `url` must be NULL or a NUL-terminated string; `out` NULL or writable.
#[unsafe(no_mangle)]
pub extern "C" fn mqstate_settings_from_url(
    url: *const c_char,
    out: *mut *mut mqstate_settings,
) -> mqstate_status {
    boundary(|| {
        make(out, || {
            let url = str_arg(url, "url")?;
            Ok(Settings::from_url(url)?)
        })
    })
}

/// Settings from the Azure IoT Operations environment (`AIO_BROKER_HOSTNAME`, `AIO_MQTT_*`,
/// `AIO_TLS_*`, `AIO_SAT_FILE`).
///
/// # Safety
/// `out` must be NULL or writable.
#[unsafe(no_mangle)]
pub extern "C" fn mqstate_settings_from_env(out: *mut *mut mqstate_settings) -> mqstate_status {
    boundary(|| make(out, || Ok(Settings::from_env()?)))
}

/// Sets the setting `name` (e.g. `"client_id"`, `"keep_alive"`, `"request_timeout"`,
/// `"ca_file"`) to the text `value` (durations in seconds or with `ms`/`s`/`m`; booleans
/// `true`/`false`). An unknown name or a bad value is `MQSTATE_STATUS_INVALID_ARGUMENT`,
/// with a message naming the setting.
///
/// # Safety
/// `settings` must be a live handle; `name` and `value` NUL-terminated strings.
#[unsafe(no_mangle)]
pub extern "C" fn mqstate_settings_set(
    settings: *mut mqstate_settings,
    name: *const c_char,
    value: *const c_char,
) -> mqstate_status {
    boundary(|| {
        let settings = guard::enter(settings, "settings")?;
        let (name, value) = (str_arg(name, "name")?, str_arg(value, "value")?);
        settings
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .set(name, value)?;
        Ok(())
    })
}

/// Frees settings (NULL is ignored).
///
/// # Safety
/// `settings` must be NULL or a live handle, freed once.
#[unsafe(no_mangle)]
pub extern "C" fn mqstate_settings_free(settings: *mut mqstate_settings) {
    guard::close(settings, |_| {})
}
