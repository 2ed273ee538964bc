//! The plain data of the cache: its options, their defaults and its counters.

use std::time::Duration;

use bytes::Bytes;

use crate::error::Error;

/// The default bound on cached entries.
pub const DEFAULT_CACHE_MAX_ENTRIES: usize = 10_000;
/// The default bound on cached key and value bytes: 64 MiB.
pub const DEFAULT_CACHE_MAX_BYTES: usize = 64 << 20;

/// The client-side cache ([`ClientOptions::cache`](crate::ClientOptions::cache)): which keys,
/// how many, and how stale a read may be while disconnected. See [`cache`](crate::cache) for
/// what a cached read may return.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CacheOptions {
    /// The keys cached: those matching any of these glob patterns (SCAN's syntax: `*`, `?`,
    /// `[…]`, `\` escapes). Default `*`: every key read, up to the bounds.
    pub keys: Vec<Bytes>,
    /// The most entries kept; the least recently read goes first. Default 10,000.
    pub max_entries: usize,
    /// The most key and value bytes kept; the least recently read goes first. A value larger
    /// than this is never cached. Default 64 MiB.
    pub max_bytes: usize,
    /// While disconnected, how long after the cut entries that were fresh at the cut may still
    /// answer. Default zero: a read while disconnected goes to the store (and fails, or waits
    /// for the connection, as an uncached read does).
    pub max_staleness: Duration,
}

impl Default for CacheOptions {
    fn default() -> Self {
        CacheOptions {
            keys: vec![Bytes::from_static(b"*")],
            max_entries: DEFAULT_CACHE_MAX_ENTRIES,
            max_bytes: DEFAULT_CACHE_MAX_BYTES,
            max_staleness: Duration::ZERO,
        }
    }
}

impl CacheOptions {
    /// Refuses options that could not cache anything.
    pub(crate) fn validate(&self) -> Result<(), Error> {
        if self.keys.is_empty() || self.keys.iter().any(|p| p.is_empty()) {
            return Err(Error::invalid_argument(
                "cache_keys must name at least one non-empty glob pattern",
            ));
        }
        if self.max_entries == 0 {
            return Err(Error::invalid_argument(
                "cache_max_entries must be positive",
            ));
        }
        if self.max_bytes == 0 {
            return Err(Error::invalid_argument("cache_max_bytes must be positive"));
        }
        Ok(())
    }
}

/// Glob patterns from the text of the `cache_keys` setting: separated by commas; a comma
/// inside a pattern is written `\,` (the glob's own escape, so the pattern then matches a
/// literal comma). Blanks around each pattern are kept: keys may hold them.
pub fn parse_cache_keys(text: &str) -> Result<Vec<Bytes>, Error> {
    let bytes = text.as_bytes();
    let mut patterns = Vec::new();
    let mut start = 0;
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => i += 2,
            b',' => {
                patterns.push(Bytes::copy_from_slice(&bytes[start..i]));
                i += 1;
                start = i;
            }
            _ => i += 1,
        }
    }
    patterns.push(Bytes::copy_from_slice(&bytes[start.min(bytes.len())..]));
    if patterns.iter().any(|p| p.is_empty()) {
        return Err(Error::invalid_argument(format!(
            "setting cache_keys={text:?} has an empty pattern (separate glob patterns with single commas; write a comma inside one as \\,)"
        )));
    }
    Ok(patterns)
}

/// The cache's counters ([`Client::cache_stats`](crate::Client::cache_stats)), named so in
/// every language ([`CACHE_COUNTERS`](crate::vocabulary::CACHE_COUNTERS)).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct CacheStats {
    /// Reads answered from the cache.
    pub hits: u64,
    /// Reads of cached keys that went to the store.
    pub misses: u64,
    /// Entries removed to stay within `max_entries` and `max_bytes`.
    pub evictions: u64,
    /// Entries changed or removed by something other than this client's own reads and
    /// writes: a notification, a cut, a lost session.
    pub invalidations: u64,
    /// Entries held now.
    pub entries: u64,
    /// Key and value bytes held now.
    pub bytes: u64,
}

impl CacheStats {
    /// The counters as `(name, value)`, in the order of
    /// [`CACHE_COUNTERS`](crate::vocabulary::CACHE_COUNTERS): what bindings convert.
    pub fn pairs(&self) -> [(&'static str, u64); 6] {
        let names = crate::vocabulary::CACHE_COUNTERS;
        [
            (names[0], self.hits),
            (names[1], self.misses),
            (names[2], self.evictions),
            (names[3], self.invalidations),
            (names[4], self.entries),
            (names[5], self.bytes),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cache_keys_split_on_unescaped_commas() {
        let p = parse_cache_keys(r"asset:*,thr\,esh*, spaced").unwrap();
        assert_eq!(p, [&b"asset:*"[..], br"thr\,esh*", b" spaced"]);
        assert!(crate::glob::matches(&p[1], b"thr,eshold"));
        assert_eq!(parse_cache_keys("*").unwrap(), [&b"*"[..]]);
        for bad in ["", "a,,b", "a,", ",a"] {
            let e = parse_cache_keys(bad).unwrap_err();
            assert!(e.message().contains("empty pattern"), "{bad:?}: {e}");
        }
    }
}
