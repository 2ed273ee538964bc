//! `mqstate_cache_stats`: the counters of a client's client-side cache (the core's
//! `mqstate::cache`, turned on by the `cache` settings), as `mqstate_client_cache_stats`
//! returns them. The struct's fields are the core's `CACHE_COUNTERS`, in that order
//! (`tests/vocabulary.rs` holds the header to it), and are filled by position from
//! `CacheStats::pairs()`, which lists them in the same order.

use mqstate::CacheStats;

/// The counters of a client's client-side cache (`mqstate_client_cache_stats`), named as in
/// every mqstate language (`cache_counters` in core/vocabulary.json). A snapshot: ask again
/// for newer counts.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct mqstate_cache_stats {
    /// Reads answered from the cache.
    pub hits: u64,
    /// Reads of cached keys that went to the store.
    pub misses: u64,
    /// Entries removed to stay within `cache_max_entries` and `cache_max_bytes`.
    pub evictions: u64,
    /// Entries changed or removed by something other than this client's own reads and
    /// writes: a notification, a cut, a lost session.
    pub invalidations: u64,
    /// Entries held now.
    pub entries: u64,
    /// Key and value bytes held now.
    pub bytes: u64,
    /// Renewals of the freshness lease sent.
    pub lease_renewals: u64,
    /// Times the lease ran out with no renewal on its way (nothing read for a while).
    pub lease_expiries: u64,
    /// Times the lease failed (a renewal refused, lost or late; a notification backlog):
    /// every entry made before is read from the store again before it answers.
    pub lease_failures: u64,
    /// Reads of cached keys sent to the store because the lease did not hold (counted in
    /// `misses` too).
    pub lease_misses: u64,
    /// KEYNOTIFYs the store refused: those keys are read from the store, uncached, until the
    /// next connection.
    pub refused: u64,
}

impl From<CacheStats> for mqstate_cache_stats {
    fn from(stats: CacheStats) -> Self {
        // By position: the core's order of the counters is the order of this struct's fields.
        let [
            hits,
            misses,
            evictions,
            invalidations,
            entries,
            bytes,
            lease_renewals,
            lease_expiries,
            lease_failures,
            lease_misses,
            refused,
        ] = stats.pairs().map(|(_, value)| value);
        mqstate_cache_stats {
            hits,
            misses,
            evictions,
            invalidations,
            entries,
            bytes,
            lease_renewals,
            lease_expiries,
            lease_failures,
            lease_misses,
            refused,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_counter_lands_in_its_field() {
        let core = CacheStats {
            hits: 1,
            misses: 2,
            evictions: 3,
            invalidations: 4,
            entries: 5,
            bytes: 6,
            lease_renewals: 7,
            lease_expiries: 8,
            lease_failures: 9,
            lease_misses: 10,
            refused: 11,
        };
        let c = mqstate_cache_stats::from(core);
        let fields = [
            c.hits,
            c.misses,
            c.evictions,
            c.invalidations,
            c.entries,
            c.bytes,
            c.lease_renewals,
            c.lease_expiries,
            c.lease_failures,
            c.lease_misses,
            c.refused,
        ];
        assert_eq!(fields, core.pairs().map(|(_, v)| v));
        assert_eq!(fields, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]);
    }
}
