//! SCAN (spec §3.1): one page of the keys that match a glob, and a continuation token.
//!
//! Keys are kept in byte order, so a page is a walk from the continuation point: the token
//! is the last key the previous page looked at (after a one-byte format tag), and each
//! request costs O(page), not O(all keys). A pattern's literal prefix (`sensor/` in
//! `sensor/*`) narrows the walk to the keys that start with it. A walk also stops after a
//! bounded number of keys looked at, returning a short (possibly empty) page with a
//! token, so a pattern that matches rarely never makes one request expensive.
//!
//! Guarantees, as Redis `SCAN`: a key present for the whole scan is returned exactly
//! once (the walk only moves forward through the order); a key added or deleted
//! meanwhile may or may not appear; the scan always ends. Expired keys are gone before
//! any request is handled, so they never appear.

use std::ops::Bound;

use bytes::Bytes;
use mqstate::codec::{Response, ScanPage, StoreError, StoreErrorKind};
use mqstate::glob;

use super::{Answer, StateMachine};

/// The first byte of every continuation token (a format version).
const TOKEN_TAG: u8 = b'k';

/// How many keys a walk looks at per key a page may hold.
const LOOK_AT_PER_KEY: usize = 8;

/// The fewest keys a walk may look at, whatever the page size.
const MIN_LOOK_AT: usize = 64;

impl StateMachine {
    /// SCAN `pattern` from the position `token` names (the start when `None`).
    pub(super) fn scan(&self, pattern: &[u8], token: Option<&[u8]>) -> Result<Answer, StoreError> {
        let version = Some(self.clock.current().clone());
        let after = match token {
            None => None,
            Some([TOKEN_TAG, key @ ..]) => Some(key),
            // Not a token this store handed out.
            Some(_) => return Err(StoreErrorKind::SyntaxError.into()),
        };
        // An empty pattern matches only the empty key, which cannot exist.
        if pattern.is_empty() {
            return Ok((Response::Page(ScanPage::default()), version));
        }
        let prefix = glob::literal_prefix(pattern);
        let start = match after {
            Some(after) if after >= &prefix[..] => Bound::Excluded(after),
            _ => Bound::Included(&prefix[..]),
        };
        let max_keys = self.config.scan_page_keys.max(1);
        let max_bytes = self.config.scan_page_bytes.max(1);
        let look_at = max_keys.saturating_mul(LOOK_AT_PER_KEY).max(MIN_LOOK_AT);
        let mut page = ScanPage::default();
        let mut bytes = 0usize;
        let mut looked_at = 0usize;
        for key in self.entries.keys_from(start) {
            if !key.starts_with(&prefix) {
                // Keys with the prefix are contiguous in byte order: none follow.
                break;
            }
            looked_at += 1;
            if glob::matches(pattern, key) {
                page.keys.push(Bytes::copy_from_slice(key));
                bytes += key.len();
            }
            if page.keys.len() >= max_keys || bytes >= max_bytes || looked_at >= look_at {
                let mut token = Vec::with_capacity(1 + key.len());
                token.push(TOKEN_TAG);
                token.extend_from_slice(key);
                page.token = Some(Bytes::from(token));
                break;
            }
        }
        Ok((Response::Page(page), version))
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;
    use std::num::NonZeroU64;

    use bytes::Bytes;
    use mqstate::codec::{Request, Response, ScanPage, SetCondition, StoreErrorKind};

    use crate::state_machine::{StateMachine, StoreConfig};

    fn store(page: usize) -> StateMachine {
        let config = StoreConfig {
            scan_page_keys: page,
            ..StoreConfig::default()
        };
        StateMachine::new(config, 1_000)
    }

    fn call(store: &mut StateMachine, now: u64, request: Request<&[u8]>) -> Response {
        crate::state_machine::test_calls::call(store, now, request).response
    }

    fn set(store: &mut StateMachine, key: &[u8], px: Option<u64>) {
        let request = Request::Set {
            key,
            value: b"v",
            condition: SetCondition::Always,
            expiry_ms: px.and_then(NonZeroU64::new),
        };
        assert_eq!(call(store, 1_000, request), Response::Ok);
    }

    fn page(store: &mut StateMachine, now: u64, pattern: &[u8], token: Option<&Bytes>) -> ScanPage {
        let request = Request::Scan {
            pattern,
            token: token.map(|t| &t[..]),
        };
        match call(store, now, request) {
            Response::Page(page) => page,
            other => panic!("{other:?}"),
        }
    }

    /// Follows the tokens to the end; returns the keys and the number of pages.
    fn scan_all(store: &mut StateMachine, pattern: &[u8]) -> (Vec<Bytes>, usize) {
        let (mut keys, mut pages, mut token) = (Vec::new(), 0, None);
        loop {
            let p = page(store, 1_000, pattern, token.as_ref());
            pages += 1;
            keys.extend(p.keys);
            match p.token {
                Some(t) => token = Some(t),
                None => return (keys, pages),
            }
            assert!(pages < 10_000, "the scan does not end");
        }
    }

    #[test]
    fn an_empty_store_has_one_empty_final_page() {
        let mut s = store(10);
        assert_eq!(page(&mut s, 1_000, b"*", None), ScanPage::default());
    }

    #[test]
    fn pages_return_every_key_once_in_order() {
        let mut s = store(2);
        for k in ["e", "a", "d", "b", "c"] {
            set(&mut s, k.as_bytes(), None);
        }
        let (keys, pages) = scan_all(&mut s, b"*");
        assert_eq!(
            keys,
            [&b"a"[..], b"b", b"c", b"d", b"e"].map(Bytes::from_static)
        );
        assert_eq!(pages, 3);
    }

    #[test]
    fn a_prefix_pattern_walks_only_its_range() {
        let mut s = store(100);
        for i in 0..1_000 {
            set(&mut s, format!("a/{i:04}").as_bytes(), None);
        }
        set(&mut s, b"b/1", None);
        set(&mut s, b"b/2", None);
        // Far more "a/" keys than one walk may look at: a prefix scan never sees them.
        let p = page(&mut s, 1_000, b"b/*", None);
        assert_eq!(
            p.keys,
            [Bytes::from_static(b"b/1"), Bytes::from_static(b"b/2")]
        );
        assert!(p.is_last());
    }

    #[test]
    fn rare_matches_give_short_pages_with_a_token() {
        let mut s = store(2);
        for i in 0..200 {
            set(&mut s, format!("k{i:03}").as_bytes(), None);
        }
        let first = page(&mut s, 1_000, b"*199", None);
        assert!(first.keys.is_empty() && first.token.is_some(), "{first:?}");
        let (keys, _) = scan_all(&mut s, b"*199");
        assert_eq!(keys, [Bytes::from_static(b"k199")]);
    }

    #[test]
    fn expired_keys_never_appear() {
        let mut s = store(10);
        set(&mut s, b"short", Some(5));
        set(&mut s, b"long", None);
        let p = page(&mut s, 2_000, b"*", None);
        assert_eq!(p.keys, [Bytes::from_static(b"long")]);
    }

    #[test]
    fn keys_present_throughout_survive_changes_between_pages() {
        let mut s = store(3);
        for i in 0..30 {
            set(&mut s, format!("k{i:02}").as_bytes(), None);
        }
        let mut seen = Vec::new();
        let mut token = None;
        let mut round = 0;
        loop {
            let p = page(&mut s, 1_000, b"k*", token.as_ref());
            seen.extend(p.keys);
            // Between pages: delete an odd key ahead, add one behind and one ahead.
            let del = format!("k{:02}", 29 - 2 * round);
            let del = Request::Del {
                key: del.as_bytes(),
            };
            call(&mut s, 1_000, del);
            set(&mut s, format!("k{round:02}x").as_bytes(), None);
            round += 1;
            match p.token {
                Some(t) => token = Some(t),
                None => break,
            }
        }
        let seen: Vec<String> = seen
            .iter()
            .map(|k| String::from_utf8(k.to_vec()).unwrap())
            .collect();
        let unique: BTreeSet<&String> = seen.iter().collect();
        assert_eq!(unique.len(), seen.len(), "a key came twice: {seen:?}");
        // Even keys were never deleted: each was present throughout.
        for i in (0..30).step_by(2) {
            assert!(seen.contains(&format!("k{i:02}")), "k{i:02} lost: {seen:?}");
        }
        // Nothing invented: every key returned existed at some point.
        assert!(seen.iter().all(|k| k.starts_with('k')));
    }

    #[test]
    fn a_foreign_token_is_a_syntax_error() {
        let mut s = store(10);
        let request = Request::Scan {
            pattern: &b"*"[..],
            token: Some(&b"zzz"[..]),
        };
        match call(&mut s, 1_000, request) {
            Response::Error(e) => assert_eq!(e.kind(), StoreErrorKind::SyntaxError),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn pages_stop_at_their_byte_budget() {
        let mut s = StateMachine::new(
            StoreConfig {
                scan_page_keys: 1_000,
                scan_page_bytes: 100,
                ..StoreConfig::default()
            },
            1_000,
        );
        for i in 0..10 {
            set(&mut s, format!("{i}{}", "x".repeat(59)).as_bytes(), None);
        }
        let first = page(&mut s, 1_000, b"*", None);
        assert_eq!(first.keys.len(), 2);
        let (keys, _) = scan_all(&mut s, b"*");
        assert_eq!(keys.len(), 10);
    }
}
