//! Fuzzes the hybrid logical clock parser: no input may panic; whatever parses prints in
//! the canonical padded form, which parses back to the same value; and the send tick of a
//! parsed value, when it succeeds, is strictly newer.

#![no_main]

use libfuzzer_sys::fuzz_target;
use mqstate::hlc::{DEFAULT_MAX_DRIFT_MS, Hlc};

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let Ok(hlc) = Hlc::parse(&text) else {
        return;
    };
    let canonical = hlc.to_string();
    assert_eq!(Hlc::parse(&canonical).as_ref(), Ok(&hlc));
    let rebuilt = Hlc::new(hlc.wall_ms(), hlc.counter(), hlc.node_id());
    assert_eq!(rebuilt.as_ref(), Ok(&hlc));
    if let Ok(next) = hlc.tick(hlc.wall_ms(), DEFAULT_MAX_DRIFT_MS) {
        assert!(next > hlc);
    }
});
