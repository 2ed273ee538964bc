//! `mqstate_cache_stats`: the counters of a client's client-side cache (the core's
//! `mqstate::cache`, turned on by the `cache` settings), as `mqstate_client_cache_stats`
//! returns them. The struct's fields are the core's `CACHE_COUNTERS`, in that order
//! (`tests/vocabulary.rs` holds the header to it), copied from the core's `CacheStats` field
//! by field, by name (`mqstate::cache_stats_into!`).

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

mqstate::cache_stats_into!(mqstate_cache_stats);
