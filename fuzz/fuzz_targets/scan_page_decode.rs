//! Fuzzes the SCAN page decoder (spec §3.1) and the glob matcher: no input may panic; a
//! decoded page re-encodes to a payload that decodes to the same page; and every key of a
//! page, escaped, is a pattern that matches that key and, with `*` after it, every longer
//! key that starts with it, while the first key used as a pattern never panics on the rest.

#![no_main]

use bytes::Bytes;
use libfuzzer_sys::fuzz_target;
use mqstate::codec::{Response, Verb};
use mqstate::glob;

fuzz_target!(|data: &[u8]| {
    let payload = Bytes::copy_from_slice(data);
    let Ok(Response::Page(page)) = Response::decode_for(Verb::Scan, &payload) else {
        return;
    };
    let encoded = Response::Page(page.clone()).encode();
    assert_eq!(encoded.len(), page.encoded_len());
    assert_eq!(
        Response::decode_for(Verb::Scan, &encoded),
        Ok(Response::Page(page.clone()))
    );
    for key in &page.keys {
        let exact = glob::escape(key);
        assert!(glob::matches(&exact, key));
        assert_eq!(glob::literal_prefix(&exact), &key[..]);
        let mut prefix = exact;
        prefix.push(b'*');
        let mut longer = key.to_vec();
        longer.extend_from_slice(page.token.as_deref().unwrap_or(b"x"));
        assert!(glob::matches(&prefix, &longer));
    }
    if let Some((pattern, keys)) = page.keys.split_first() {
        let prefix = glob::literal_prefix(pattern);
        for key in keys {
            // A match always starts with the pattern's literal prefix.
            if glob::matches(pattern, key) {
                assert!(key.starts_with(&prefix));
            }
        }
    }
});
