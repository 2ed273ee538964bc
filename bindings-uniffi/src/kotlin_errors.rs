//! The Kotlin error classes, generated from the core's error table: one class per code of
//! [`ERROR_TABLE`] named by its `class_name`, deriving from its `parent` (the base
//! [`ERROR_BASE_CLASS`] or one of the [`ERROR_FAMILIES`]), and the function that picks the
//! class of a code. The file is committed (`kotlin/src/main/kotlin/mqstate/Errors.kt`, so
//! that it is visible to the compiler and the IDE like any source); the test below fails when
//! it differs from what the table generates, and rewrites it with `MQSTATE_BLESS=1`.

use std::fmt::Write as _;

use mqstate::{ERROR_BASE_CLASS, ERROR_FAMILIES, ERROR_TABLE};

/// Where the generated file is committed, from this crate's folder.
const COMMITTED: &str = "kotlin/src/main/kotlin/mqstate/Errors.kt";

/// The codes of `family`, for its comment.
fn members(family: &str) -> String {
    ERROR_TABLE
        .iter()
        .filter(|row| row.parent == family)
        .map(|row| format!("`{}`", row.code))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The text of `Errors.kt`.
pub(crate) fn render() -> String {
    let base = ERROR_BASE_CLASS;
    let mut out = String::new();
    let w = &mut out;
    let _ = write!(
        w,
        r#"// Generated from the core's error table (mqstate::ERROR_TABLE, also in core/vocabulary.json) by
// the Rust test `kotlin_errors::the_committed_classes_are_current` of mqstate-uniffi: do not
// edit. `MQSTATE_BLESS=1 scripts/lib/suites/kotlin` rewrites it.

package mqstate

/**
 * Every error of mqstate. [code] is the stable code of the core's error table ([errorTable]:
 * the same codes as Python's `e.code`, JavaScript's `err.code` and the C status names); the
 * class is the code's own ([InvalidArgumentError], [FencingTokenLowerVersionError], …), under
 * the families [StoreError], [ClockError] and [ConnectError] — the same class names in every
 * language. An instance of this class itself carries a code this version does not know.
 */
open class {base}(
    /** The stable code (`"timeout"`, `"fencing_token_required"`, …). */
    val code: String,
    /** What went wrong, for people (for a store error: the service's exact text). */
    val detail: String,
    /** Whether the request had been sent: the service may have applied it. */
    val mayHaveApplied: Boolean = false,
    cause: Throwable? = null,
) : Exception(detail, cause) {{
    companion object {{
        /** The error of [code], as an instance of the code's class. */
        fun of(code: String, detail: String, mayHaveApplied: Boolean = false, cause: Throwable? = null): {base} =
            when (code) {{
"#
    );
    for row in ERROR_TABLE.iter() {
        let _ = writeln!(
            w,
            "                \"{}\" -> {}(detail, mayHaveApplied, cause)",
            row.code, row.class_name
        );
    }
    let _ = write!(
        w,
        r#"                else -> {base}(code, detail, mayHaveApplied, cause)
            }}
    }}
}}
"#
    );
    for family in ERROR_FAMILIES {
        let _ = write!(
            w,
            r#"
/** The family of {}. */
open class {family}(code: String, detail: String, mayHaveApplied: Boolean = false, cause: Throwable? = null) :
    {base}(code, detail, mayHaveApplied, cause)
"#,
            members(family)
        );
    }
    for row in ERROR_TABLE.iter() {
        let _ = write!(
            w,
            r#"
/** `{}` ({}): {}. */
class {}(detail: String, mayHaveApplied: Boolean = false, cause: Throwable? = null) :
    {}("{}", detail, mayHaveApplied, cause)
"#,
            row.code, row.number, row.description, row.class_name, row.parent, row.code
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    #[test]
    fn the_committed_classes_are_current() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(COMMITTED);
        let generated = render();
        let committed = std::fs::read_to_string(&path).unwrap_or_default();
        if committed != generated {
            if std::env::var_os("MQSTATE_BLESS").is_some_and(|v| v == "1") {
                std::fs::write(&path, &generated).expect("write Errors.kt");
                return;
            }
            panic!(
                "{COMMITTED} differs from what the core's error table generates; rewrite it with \
                 MQSTATE_BLESS=1 cargo test -p mqstate-uniffi --lib kotlin_errors"
            );
        }
    }

    #[test]
    fn every_code_has_its_class_under_its_parent() {
        let text = render();
        for row in ERROR_TABLE.iter() {
            assert!(text.contains(&format!(
                "class {}(detail: String, mayHaveApplied: Boolean = false, cause: Throwable? = null) :\n    {}(\"{}\"",
                row.class_name, row.parent, row.code
            )));
            assert!(text.contains(&format!("\"{}\" -> {}(", row.code, row.class_name)));
        }
        for family in ERROR_FAMILIES {
            assert!(text.contains(&format!("open class {family}(")));
        }
    }
}
