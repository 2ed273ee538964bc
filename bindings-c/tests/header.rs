//! Header drift check: `include/mqstate.h` (committed) must equal what cbindgen generates
//! from the current source (build.rs writes it to `OUT_DIR`). Run with `MQSTATE_BLESS=1` to
//! rewrite the committed header after an intended API change.

use std::path::Path;

#[test]
fn committed_header_matches_the_generated_one() {
    let generated = Path::new(env!("OUT_DIR")).join("mqstate.h");
    let committed = Path::new(env!("CARGO_MANIFEST_DIR")).join("include/mqstate.h");
    let want = std::fs::read_to_string(&generated)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", generated.display()));
    if std::env::var_os("MQSTATE_BLESS").is_some_and(|v| v == "1") {
        std::fs::write(&committed, &want)
            .unwrap_or_else(|e| panic!("cannot write {}: {e}", committed.display()));
        return;
    }
    let have = std::fs::read_to_string(&committed).unwrap_or_default();
    if have != want {
        let first = have
            .lines()
            .zip(want.lines())
            .position(|(a, b)| a != b)
            .unwrap_or_else(|| have.lines().count().min(want.lines().count()));
        panic!(
            "{} is out of date (first difference at line {}); regenerate it with \
             `MQSTATE_BLESS=1 cargo test -p mqstate-c --test header` and commit it",
            committed.display(),
            first + 1
        );
    }
}
