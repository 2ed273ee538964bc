//! A look inside the store without a request (no clock tick, no notification): a key's
//! whole state, pages of keys, the keys that look like locks, who observes what. For the
//! console of `mqstate serve --http` (docs/console.md) and for tests. Fire due expiries first
//! ([`StateMachine::expire`]), as a request would.

use std::ops::Bound;

use bytes::Bytes;
use mqstate::Hlc;
use mqstate::glob;

use super::StateMachine;

/// A key's stored state.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeyInfo {
    /// The key.
    pub key: Bytes,
    /// The value, or its first bytes (see [`KeyInfo::size`]).
    pub value: Bytes,
    /// The value's whole length in bytes.
    pub size: usize,
    /// Its version (a GET's `__ts`).
    pub version: Hlc,
    /// When a PX expiry deletes it (Unix ms), if it has one.
    pub expires_at_ms: Option<u64>,
    /// The fencing token that guards it, if a fenced SET wrote it.
    pub fencing_token: Option<Hlc>,
    /// SET with `aio-persistence: true`.
    pub persisted: bool,
}

/// One key of a listing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeySummary {
    /// The key.
    pub key: Bytes,
    /// The value's length in bytes.
    pub size: usize,
    /// When a PX expiry deletes it (Unix ms), if it has one.
    pub expires_at_ms: Option<u64>,
    /// SET with `aio-persistence: true`.
    pub persisted: bool,
    /// A fenced SET wrote it.
    pub fenced: bool,
}

/// A page of keys: see [`StateMachine::page`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct KeyPage {
    /// The keys, in byte order.
    pub keys: Vec<KeySummary>,
    /// Where the next page starts (after this key); `None` at the end.
    pub next: Option<Bytes>,
}

/// A key that looks like a lock or a leader election's: see [`StateMachine::locks`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LockInfo {
    /// The lock's key.
    pub key: Bytes,
    /// Its value: the holder id.
    pub holder: String,
    /// Its version: the fencing token the holder got.
    pub token: Hlc,
    /// When the lease runs out unless renewed (Unix ms).
    pub expires_at_ms: u64,
}

/// The longest value a lock's holder id may have, for [`StateMachine::locks`].
pub const MAX_HOLDER_LEN: usize = 256;

impl StateMachine {
    /// `key`'s state, its value cut to at most `max_value` bytes; `None` when absent.
    pub fn inspect(&self, key: &[u8], max_value: usize) -> Option<KeyInfo> {
        let entry = self.entries.get(key)?;
        let value = entry.value();
        Some(KeyInfo {
            key: Bytes::copy_from_slice(key),
            value: Bytes::copy_from_slice(&value[..value.len().min(max_value)]),
            size: value.len(),
            version: entry.version(),
            expires_at_ms: entry.expires_at_ms(),
            fencing_token: entry.fencing_token().cloned(),
            persisted: entry.persisted(),
        })
    }

    /// The keys that match the glob `pattern` (SCAN's syntax), in byte order, after `after`
    /// (from the start when `None`): at most `limit`, looking at no more than `look_at` keys,
    /// so a pattern that matches few of many keys answers a short page (even an empty one)
    /// with a [`next`](KeyPage::next) to go on from. The cost is O(`look_at`) whatever the
    /// store holds.
    pub fn page(
        &self,
        pattern: &[u8],
        after: Option<&[u8]>,
        limit: usize,
        look_at: usize,
    ) -> KeyPage {
        let limit = limit.max(1);
        let look_at = look_at.max(limit);
        let prefix = glob::literal_prefix(pattern);
        let start = match after {
            Some(after) if after >= &prefix[..] => Bound::Excluded(after),
            _ => Bound::Included(&prefix[..]),
        };
        let mut page = KeyPage::default();
        let mut looked_at = 0usize;
        for key in self.entries.keys_from(start) {
            if !key.starts_with(&prefix) {
                return page;
            }
            looked_at += 1;
            if glob::matches(pattern, key)
                && let Some(entry) = self.entries.get(key)
            {
                page.keys.push(KeySummary {
                    key: Bytes::copy_from_slice(key),
                    size: entry.value().len(),
                    expires_at_ms: entry.expires_at_ms(),
                    persisted: entry.persisted(),
                    fenced: entry.fencing_token().is_some(),
                });
            }
            if page.keys.len() >= limit || looked_at >= look_at {
                page.next = Some(Bytes::copy_from_slice(key));
                return page;
            }
        }
        page
    }

    /// The keys that look like locks or leader elections — a key with a PX expiry whose
    /// value is UTF-8 text of at most [`MAX_HOLDER_LEN`] bytes, what `SET key holder NEX PX`
    /// leaves — soonest lease end first, at most `limit` of them (looking at no more than
    /// 16 times that many keys with an expiry).
    pub fn locks(&self, limit: usize) -> Vec<LockInfo> {
        self.expiries
            .iter()
            .take(limit.saturating_mul(16))
            .filter_map(|(deadline, key)| {
                let entry = self.entries.get(key)?;
                let value = entry.value();
                if value.is_empty() || value.len() > MAX_HOLDER_LEN {
                    return None;
                }
                let holder = std::str::from_utf8(value).ok()?;
                Some(LockInfo {
                    key: key.clone(),
                    holder: holder.to_owned(),
                    token: entry.version(),
                    expires_at_ms: *deadline,
                })
            })
            .take(limit)
            .collect()
    }

    /// The keys `client_id` observes (at most `limit`, in no order) and how many it observes.
    pub fn registrations_of(&self, client_id: &str, limit: usize) -> (Vec<Bytes>, usize) {
        self.watchers.of_client(client_id, limit)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state_machine::StoreConfig;
    use crate::state_machine::test_calls::call;
    use mqstate::codec::{Request, SetCondition};

    const NOW: u64 = 1_700_000_000_000;

    fn store_with(keys: &[(&str, &str, Option<u64>)]) -> StateMachine {
        let mut store = StateMachine::new(StoreConfig::default(), NOW);
        for (key, value, px) in keys {
            let request = Request::Set {
                key: key.as_bytes(),
                value: value.as_bytes(),
                condition: SetCondition::Always,
                expiry_ms: px.and_then(std::num::NonZeroU64::new),
            };
            let reply = call(&mut store, NOW, request);
            assert!(reply.version.is_some(), "{key}: {:?}", reply.response);
        }
        store
    }

    #[test]
    fn pages_walk_every_match_once_within_their_bounds() {
        let keys: Vec<(String, String)> = (0..50)
            .map(|i| (format!("k/{i:02}"), format!("v{i}")))
            .chain((0..50).map(|i| (format!("other/{i:02}"), "x".to_owned())))
            .collect();
        let refs: Vec<(&str, &str, Option<u64>)> = keys
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str(), None))
            .collect();
        let store = store_with(&refs);
        let mut seen = Vec::new();
        let mut after: Option<Bytes> = None;
        let mut pages = 0;
        loop {
            let page = store.page(b"k/*5", after.as_deref(), 2, 7);
            assert!(page.keys.len() <= 2);
            pages += 1;
            seen.extend(page.keys.iter().map(|k| k.key.clone()));
            match page.next {
                Some(next) => after = Some(next),
                None => break,
            }
            assert!(pages < 100, "the walk does not end");
        }
        let expected: Vec<Bytes> = (0..50)
            .filter(|i| i % 10 == 5)
            .map(|i| Bytes::from(format!("k/{i:02}")))
            .collect();
        assert_eq!(seen, expected);
        assert!(pages >= 50 / 7, "look_at bounds each page: {pages} pages");
        let all = store.page(b"*", None, 1000, 1000);
        assert_eq!(all.keys.len(), 100);
        assert_eq!(all.next, None);
        assert_eq!((&all.keys[0].key[..], all.keys[0].size), (&b"k/00"[..], 2));
        assert_eq!(
            (&all.keys[50].key[..], all.keys[50].size),
            (&b"other/00"[..], 1)
        );
    }

    #[test]
    fn inspect_cuts_the_value_and_locks_are_text_keys_with_an_expiry() {
        let big = "b".repeat(1000);
        let store = store_with(&[
            ("lock/a", "holder-1", Some(10_000)),
            ("cache/x", &big, Some(5_000)),
            ("plain", "v", None),
        ]);
        let info = store.inspect(b"cache/x", 10).unwrap();
        assert_eq!((info.value.len(), info.size), (10, 1000));
        assert_eq!(info.expires_at_ms, Some(NOW + 5_000));
        assert!(!info.persisted && info.fencing_token.is_none());
        assert_eq!(store.inspect(b"nope", 10), None);
        let locks = store.locks(10);
        assert_eq!(locks.len(), 1, "{locks:?}");
        assert_eq!(locks[0].holder, "holder-1");
        assert_eq!(locks[0].expires_at_ms, NOW + 10_000);
        assert_eq!(locks[0].token, store.inspect(b"lock/a", 0).unwrap().version);
    }
}
