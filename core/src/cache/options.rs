//! The plain data of the cache: its options, their defaults and its counters.

use std::time::Duration;

use bytes::Bytes;

use crate::error::Error;

/// The default bound on cached entries.
pub const DEFAULT_CACHE_MAX_ENTRIES: usize = 10_000;
/// The default bound on cached key and value bytes: 64 MiB.
pub const DEFAULT_CACHE_MAX_BYTES: usize = 64 << 20;
/// The default bound on a cached read's lag behind the store: 1 s.
pub const DEFAULT_CACHE_FRESHNESS: Duration = Duration::from_secs(1);
/// The shortest `freshness` accepted: a renewal must travel to the store and back within it.
const MIN_FRESHNESS: Duration = Duration::from_millis(10);

/// The client-side cache ([`ClientOptions::cache`](crate::ClientOptions::cache)): which keys,
/// how many, how far a cached read may lag the store, and how stale a read may be while
/// disconnected. See [`cache`](crate::cache) for
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
    /// The most a cached read may lag the store while connected, in any failure: an entry
    /// answers only within this long of the last proof that the store's notifications reach
    /// the client (the freshness lease, [`cache`](crate::cache)). Default 1 s; at least
    /// 10 ms, and best several round trips to the store (a renewal must arrive within it).
    pub freshness: Duration,
}

impl Default for CacheOptions {
    fn default() -> Self {
        CacheOptions {
            keys: vec![Bytes::from_static(b"*")],
            max_entries: DEFAULT_CACHE_MAX_ENTRIES,
            max_bytes: DEFAULT_CACHE_MAX_BYTES,
            max_staleness: Duration::ZERO,
            freshness: DEFAULT_CACHE_FRESHNESS,
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
        if self.freshness < MIN_FRESHNESS {
            return Err(Error::invalid_argument(format!(
                "cache_freshness must be at least {MIN_FRESHNESS:?} (got {:?})",
                self.freshness
            )));
        }
        Ok(())
    }
}

/// Glob patterns from the text of the `cache_keys` setting: separated by commas; a comma
/// inside a pattern is written `\,` (the glob's own escape, so the pattern then matches a
/// literal comma). Blanks around each pattern are trimmed (`"a*, b*"` is `a*` and `b*`); a
/// blank a pattern must keep at either end is escaped (`\ `).
pub fn parse_cache_keys(text: &str) -> Result<Vec<Bytes>, Error> {
    let bytes = text.as_bytes();
    let mut patterns = Vec::new();
    let mut start = 0;
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => i += 2,
            b',' => {
                patterns.push(trimmed(&bytes[start..i]));
                i += 1;
                start = i;
            }
            _ => i += 1,
        }
    }
    patterns.push(trimmed(&bytes[start.min(bytes.len())..]));
    if patterns.iter().any(|p| p.is_empty()) {
        return Err(Error::invalid_argument(format!(
            "setting cache_keys={text:?} has an empty pattern (separate glob patterns with single commas; write a comma inside one as \\,)"
        )));
    }
    Ok(patterns)
}

/// `pattern` without the blanks around it, except one escaped at its end (`a\ `).
fn trimmed(pattern: &[u8]) -> Bytes {
    let mut start = 0;
    let mut end = pattern.len();
    while start < end && pattern[start].is_ascii_whitespace() {
        start += 1;
    }
    while end > start && pattern[end - 1].is_ascii_whitespace() {
        // An escaped blank is the pattern's (an odd run of backslashes before it escapes it).
        let slashes = pattern[start..end - 1]
            .iter()
            .rev()
            .take_while(|&&b| b == b'\\')
            .count();
        if slashes % 2 == 1 {
            break;
        }
        end -= 1;
    }
    Bytes::copy_from_slice(&pattern[start..end])
}

/// Defines [`CacheStats`], one `u64` field per counter in the order of
/// [`CACHE_COUNTERS`](crate::vocabulary::CACHE_COUNTERS), and the conversions to and from
/// that order: the fields are listed once, here.
macro_rules! cache_counters {
    ($d:tt $($(#[$doc:meta])* $name:ident,)*) => {
        /// The cache's counters ([`Client::cache_stats`](crate::Client::cache_stats)), named so
        /// in every language ([`CACHE_COUNTERS`](crate::vocabulary::CACHE_COUNTERS)).
        #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
        pub struct CacheStats {
            $($(#[$doc])* pub $name: u64,)*
        }

        impl CacheStats {
            /// The fields' names, in order (the same as `CACHE_COUNTERS`: a test checks it).
            #[cfg(test)]
            const NAMES: [&'static str; COUNTERS] = [$(stringify!($name)),*];

            /// The values in the order of [`CACHE_COUNTERS`](crate::vocabulary::CACHE_COUNTERS).
            fn values(&self) -> [u64; COUNTERS] {
                [$(self.$name),*]
            }

            /// The counters from their values in that order.
            fn from_values(values: [u64; COUNTERS]) -> CacheStats {
                let [$($name),*] = values;
                CacheStats { $($name),* }
            }
        }

        /// `mqstate::cache_stats_into!(T)`: `From<CacheStats>` for a binding's own struct
        /// `T` with a `u64` field of each counter's name, copied field by field, by name (a
        /// field missing on either side does not compile). For the bindings, whose structs
        /// must be written out for their generators (cbindgen, uniffi).
        #[doc(hidden)]
        #[macro_export]
        macro_rules! cache_stats_into {
            ($d target:ty) => {
                impl From<$d crate::CacheStats> for $d target {
                    fn from(stats: $d crate::CacheStats) -> Self {
                        Self { $($name: stats.$name),* }
                    }
                }
            };
        }
    };
}

/// How many counters the cache has.
const COUNTERS: usize = crate::vocabulary::CACHE_COUNTERS.len();

cache_counters! {
    $
    /// Reads answered from the cache.
    hits,
    /// Reads of cached keys that went to the store.
    misses,
    /// Entries removed to stay within `max_entries` and `max_bytes`.
    evictions,
    /// Entries changed or removed by something other than this client's own reads and
    /// writes: a notification, a cut, a lost session, a failed lease, a refused version.
    invalidations,
    /// Entries held now.
    entries,
    /// Key and value bytes held now.
    bytes,
    /// Renewals of the freshness lease sent (a SET of the client's canary key).
    lease_renewals,
    /// Times the lease ran out with no renewal on its way (nothing read for a while).
    lease_expiries,
    /// Times the lease failed (a renewal refused, lost or late; a backlog where the broker
    /// may have dropped a notification): every entry made before is read from the store
    /// again before it answers.
    lease_failures,
    /// Reads of cached keys sent to the store because the lease did not hold (counted in
    /// `misses` too).
    lease_misses,
    /// KEYNOTIFYs the store refused: those keys are read from the store, uncached, until the
    /// next connection.
    refused,
}

impl std::ops::Add for CacheStats {
    type Output = CacheStats;

    /// The counters of two caches together (several clients' in one report).
    fn add(self, other: CacheStats) -> CacheStats {
        let (a, b) = (self.values(), other.values());
        CacheStats::from_values(std::array::from_fn(|i| a[i] + b[i]))
    }
}

impl std::iter::Sum for CacheStats {
    fn sum<I: Iterator<Item = CacheStats>>(iter: I) -> CacheStats {
        iter.fold(CacheStats::default(), |a, b| a + b)
    }
}

impl CacheStats {
    /// The counters as `(name, value)`, in the order of
    /// [`CACHE_COUNTERS`](crate::vocabulary::CACHE_COUNTERS): what bindings convert.
    pub fn pairs(&self) -> [(&'static str, u64); COUNTERS] {
        let (names, values) = (crate::vocabulary::CACHE_COUNTERS, self.values());
        std::array::from_fn(|i| (names[i], values[i]))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stats_add_field_by_field_and_pair_with_their_names() {
        let one = CacheStats::from_values(std::array::from_fn(|i| i as u64));
        let two = CacheStats::from_values(std::array::from_fn(|i| 100 * i as u64));
        let sum: CacheStats = [one, two].into_iter().sum();
        assert_eq!(sum.values(), std::array::from_fn(|i| 101 * i as u64));
        assert_eq!(one.pairs()[6], ("lease_renewals", 6));
        assert_eq!(one.pairs()[10], ("refused", 10));
        assert_eq!(sum.refused, 1010);
        assert_eq!(CacheStats::NAMES, crate::vocabulary::CACHE_COUNTERS);
    }

    #[test]
    fn cache_keys_split_on_unescaped_commas() {
        let p = parse_cache_keys(r"asset:*,thr\,esh*, spaced ,kept\ ").unwrap();
        assert_eq!(p, [&b"asset:*"[..], br"thr\,esh*", b"spaced", br"kept\ "]);
        assert_eq!(parse_cache_keys("a*, b*").unwrap(), [&b"a*"[..], b"b*"]);
        assert!(crate::glob::matches(&p[1], b"thr,eshold"));
        assert_eq!(parse_cache_keys("*").unwrap(), [&b"*"[..]]);
        for bad in ["", "a,,b", "a,", ",a", "a, ,b", " "] {
            let e = parse_cache_keys(bad).unwrap_err();
            assert!(e.message().contains("empty pattern"), "{bad:?}: {e}");
        }
    }
}
