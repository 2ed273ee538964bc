//! The SET condition for C: the `mqstate_set_condition` enum, and its text as every
//! language spells it — parsed and named by the core (`SetCondition::parse`, `::name`), so
//! C reads `"nx"`/`"NEX"` from a configuration file with the same rule and the same message
//! as Python, Node and Kotlin.

use std::ffi::c_char;

use mqstate::codec::SetCondition;

use crate::ffi::{put, str_arg};
use crate::status::{Failure, boundary, mqstate_status};

/// The condition of a SET (spec §3). Passed to `mqstate_encode_set` as a `uint32_t`.
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum mqstate_set_condition {
    /// Set unconditionally.
    Always = 0,
    /// `NX`: only if the key does not exist.
    Nx = 1,
    /// `NEX`: only if the key does not exist or already holds the same value.
    Nex = 2,
}

impl mqstate_set_condition {
    /// The C value of a core condition.
    pub(crate) fn of(condition: SetCondition) -> mqstate_set_condition {
        match condition {
            SetCondition::Always => mqstate_set_condition::Always,
            SetCondition::NotExists => mqstate_set_condition::Nx,
            SetCondition::NotExistsOrEqual => mqstate_set_condition::Nex,
        }
    }
}

/// The core condition of a C value; a number that is none is `invalid_argument`.
pub(crate) fn condition_arg(condition: u32) -> Result<SetCondition, Failure> {
    [
        SetCondition::Always,
        SetCondition::NotExists,
        SetCondition::NotExistsOrEqual,
    ]
    .into_iter()
    .find(|c| mqstate_set_condition::of(*c) as u32 == condition)
    .ok_or_else(|| Failure::invalid(format!("{condition} is not a mqstate_set_condition")))
}

/// Parses a condition as every language spells it: `"nx"` or `"nex"` in any case, or NULL
/// for a plain SET (`MQSTATE_SET_CONDITION_ALWAYS`). Any other text is
/// `MQSTATE_STATUS_INVALID_ARGUMENT` with the core's one message, and `*out` is
/// `MQSTATE_SET_CONDITION_ALWAYS`.
///
/// # Safety
/// `text` must be NULL or a NUL-terminated string; `out` NULL or writable.
#[unsafe(no_mangle)]
pub extern "C" fn mqstate_set_condition_parse(
    text: *const c_char,
    out: *mut u32,
) -> mqstate_status {
    boundary(|| {
        put(out, mqstate_set_condition::Always as u32);
        let text = match text.is_null() {
            true => None,
            false => Some(str_arg(text, "text")?),
        };
        let condition = SetCondition::parse(text)?;
        put(out, mqstate_set_condition::of(condition) as u32);
        Ok(())
    })
}

/// The name of a condition as every language shows it (`"nx"`, `"nex"`), a static
/// NUL-terminated string; NULL for `MQSTATE_SET_CONDITION_ALWAYS` and for a number that is
/// no condition.
#[unsafe(no_mangle)]
pub extern "C" fn mqstate_set_condition_name(condition: u32) -> *const c_char {
    static NAMES: std::sync::OnceLock<Vec<(u32, std::ffi::CString)>> = std::sync::OnceLock::new();
    let names = NAMES.get_or_init(|| {
        [SetCondition::NotExists, SetCondition::NotExistsOrEqual]
            .into_iter()
            .filter_map(|c| {
                let name = std::ffi::CString::new(c.name()?).ok()?;
                Some((mqstate_set_condition::of(c) as u32, name))
            })
            .collect()
    });
    names
        .iter()
        .find(|(n, _)| *n == condition)
        .map_or(std::ptr::null(), |(_, name)| name.as_ptr())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::CStr;

    #[test]
    fn parses_and_names_like_the_core() {
        let mut out = 99u32;
        for (text, want) in [(c"nx", 1), (c"NEX", 2), (c"Nx", 1)] {
            let st = mqstate_set_condition_parse(text.as_ptr(), &mut out);
            assert_eq!((st, out), (mqstate_status::Ok, want));
        }
        let st = mqstate_set_condition_parse(c"xx".as_ptr(), &mut out);
        assert_eq!((st, out), (mqstate_status::InvalidArgument, 0));
        let st = mqstate_set_condition_parse(std::ptr::null(), &mut out);
        assert_eq!((st, out), (mqstate_status::Ok, 0));
        // SAFETY: the names are static NUL-terminated strings.
        let name = |c| unsafe { CStr::from_ptr(mqstate_set_condition_name(c)) };
        assert_eq!(name(1).to_str().unwrap(), "nx");
        assert_eq!(name(2).to_str().unwrap(), "nex");
        assert!(mqstate_set_condition_name(0).is_null());
        assert!(mqstate_set_condition_name(7).is_null());
        assert!(condition_arg(3).is_err());
    }
}
