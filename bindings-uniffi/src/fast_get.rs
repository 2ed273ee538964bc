//! The client-side cache's hits for the JVM, past uniffi's calling convention.
//!
//! Every uniffi call from Kotlin allocates a JNA `Structure` for its call status and marshals
//! it by reflection, and a byte array crosses as another one (a `RustBuffer`): tens of
//! microseconds for a call that returns a `bool`, which left a cached `get` at 7.7× an
//! uncached one (docs/benchmarks.md, "Client-side cache", has the measurement). A hit needs none of that: [`mqstate_uniffi_cache_get`] is a
//! plain C function of integers and byte arrays that JNA's direct mapping calls in about a
//! microsecond. The Kotlin layer (`Client.get`) asks it first, and goes to uniffi's
//! `get_after_miss` when it answers "go to the store".
//!
//! A client is named by a *reader id* ([`reader_of`], `Client.cache_reader()` in uniffi), a
//! number in a table of this module, never by a pointer: a stale or made-up id finds nothing
//! and the read goes to the store, which fails as a closed client's read does.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{LazyLock, RwLock};

use mqstate::bridge::ClientHandle;

/// The clients with a cache that a JVM reads from, by reader id.
static READERS: LazyLock<RwLock<HashMap<u64, ClientHandle>>> = LazyLock::new(Default::default);
static NEXT: AtomicU64 = AtomicU64::new(1);

/// Registers `store` (whose cache is on) and returns its reader id (never 0).
pub(crate) fn reader_of(store: &ClientHandle) -> u64 {
    let id = NEXT.fetch_add(1, Ordering::Relaxed);
    READERS
        .write()
        .unwrap_or_else(|e| e.into_inner())
        .insert(id, store.clone());
    id
}

/// Forgets a reader id (the client is gone).
pub(crate) fn forget(id: u64) {
    READERS
        .write()
        .unwrap_or_else(|e| e.into_inner())
        .remove(&id);
}

/// [`mqstate_uniffi_cache_get`]: go to the store (a miss, no such reader, a closed client).
pub const GO_TO_STORE: i64 = -1;
/// [`mqstate_uniffi_cache_get`]: a hit of a key cached as missing.
pub const HIT_MISSING: i64 = -2;
/// [`mqstate_uniffi_cache_get`]: the options are refused; the caller makes the read through
/// uniffi, which throws the error a miss would.
pub const BAD_OPTIONS: i64 = -3;

/// Writes a hit into `out` as `value length (u32 LE) | value | 0, or 1 | wall_ms (u64 LE) |
/// counter (u64 LE) | node id (the rest)`; returns its length, also when longer than `out`
/// (then nothing is written).
fn encode(value: &[u8], version: Option<&mqstate::Hlc>, out: &mut [u8]) -> i64 {
    let node = version.map_or(&[][..], |v| v.node_id().as_bytes());
    let len = 4
        + value.len()
        + 1
        + if version.is_some() {
            16 + node.len()
        } else {
            0
        };
    if len <= out.len() {
        let mut at = 0;
        let mut put = |bytes: &[u8]| {
            out[at..at + bytes.len()].copy_from_slice(bytes);
            at += bytes.len();
        };
        put(&(value.len() as u32).to_le_bytes());
        put(value);
        match version {
            None => put(&[0]),
            Some(v) => {
                put(&[1]);
                put(&v.wall_ms().to_le_bytes());
                put(&v.counter().to_le_bytes());
                put(node);
            }
        }
    }
    len as i64
}

/// The cache's answer to a GET of `key` for reader `reader` with the call's timeout
/// `timeout_seconds` (NaN: the client's), with no call into the store: [`GO_TO_STORE`] (-1),
/// [`HIT_MISSING`] (-2), [`BAD_OPTIONS`] (-3), or the length of the hit encoded into `out`
/// (see `encode`; when it exceeds `out_cap` nothing is written and the caller asks again with
/// room for it: that next call on the same thread answers the same hit, counted once). Never
/// unwinds: bad pointers or lengths answer [`GO_TO_STORE`].
///
/// # Safety
/// `key` must point at `key_len` readable bytes and `out` at `out_cap` writable ones (each
/// may be null when its length is 0).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn mqstate_uniffi_cache_get(
    reader: u64,
    key: *const u8,
    key_len: i32,
    timeout_seconds: f64,
    out: *mut u8,
    out_cap: i32,
) -> i64 {
    // The call's timeout (NaN: none), checked as a GET checks it: a hit refuses what a miss
    // would.
    let options = crate::values::GetOptions {
        timeout: (!timeout_seconds.is_nan()).then_some(crate::values::Seconds(timeout_seconds)),
        bypass_cache: false,
    };
    let Ok(options) = options.to_core() else {
        return BAD_OPTIONS;
    };
    let (Ok(key_len), Ok(out_cap)) = (usize::try_from(key_len), usize::try_from(out_cap)) else {
        return GO_TO_STORE;
    };
    if (key.is_null() && key_len > 0) || (out.is_null() && out_cap > 0) {
        return GO_TO_STORE;
    }
    let key = if key_len == 0 {
        &[][..]
    } else {
        // SAFETY: the caller promises `key_len` readable bytes at `key`, non-null (checked
        // above) since the length is not 0.
        unsafe { std::slice::from_raw_parts(key, key_len) }
    };
    let out = if out_cap == 0 {
        &mut [][..]
    } else {
        // SAFETY: the caller promises `out_cap` writable bytes at `out`, non-null (checked
        // above), not aliased by `key` (the JVM passes two arrays).
        unsafe { std::slice::from_raw_parts_mut(out, out_cap) }
    };
    // The hit a call before this one (on this thread, of this reader and key) took from the
    // cache but could not fit into its buffer: the caller asks again at once with room for
    // it, and a second look at the cache would count a second hit.
    let stashed = STASH.with(|s| {
        let mut s = s.borrow_mut();
        match s.take() {
            Some((r, k, v)) if r == reader && k == key => Some(v),
            _ => None,
        }
    });
    let hit = match stashed {
        Some(v) => Some(Some(v)),
        None => {
            let readers = READERS.read().unwrap_or_else(|e| e.into_inner());
            match readers.get(&reader) {
                Some(store) => store.get_cached(key, &options),
                None => None,
            }
        }
    };
    match hit {
        None => GO_TO_STORE,
        Some(None) => HIT_MISSING,
        Some(Some(v)) => {
            let n = encode(&v.value, v.version.as_ref(), out);
            if n as usize > out.len() {
                STASH.with(|s| *s.borrow_mut() = Some((reader, key.to_vec(), v)));
            }
            n
        }
    }
}

thread_local! {
    /// See [`mqstate_uniffi_cache_get`]: a hit waiting for a larger buffer.
    static STASH: std::cell::RefCell<Option<(u64, Vec<u8>, mqstate::Versioned)>> =
        const { std::cell::RefCell::new(None) };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hit_is_encoded_or_its_length_asked_for() {
        let hlc = mqstate::Hlc::parse("1700000000000:7:node-a").expect("an HLC");
        let mut out = [0u8; 64];
        let n = encode(b"pump", Some(&hlc), &mut out) as usize;
        assert_eq!(n, 4 + 4 + 1 + 16 + 6);
        assert_eq!(&out[..4], &4u32.to_le_bytes());
        assert_eq!(&out[4..8], b"pump");
        assert_eq!(out[8], 1);
        assert_eq!(&out[9..17], &1_700_000_000_000u64.to_le_bytes());
        assert_eq!(&out[17..25], &7u64.to_le_bytes());
        assert_eq!(&out[25..n], b"node-a");
        let mut small = [0u8; 8];
        assert_eq!(encode(b"pump", Some(&hlc), &mut small), n as i64);
        assert_eq!(small, [0u8; 8], "nothing written when it does not fit");
        assert_eq!(encode(b"", None, &mut out), 5);
    }

    #[test]
    fn unknown_readers_and_bad_arguments_go_to_the_store() {
        let mut out = [0u8; 16];
        // SAFETY: valid pointers and lengths, or null with length 0 / a negative length.
        unsafe {
            assert_eq!(
                mqstate_uniffi_cache_get(0, b"k".as_ptr(), 1, f64::NAN, out.as_mut_ptr(), 16),
                GO_TO_STORE
            );
            assert_eq!(
                mqstate_uniffi_cache_get(
                    u64::MAX,
                    std::ptr::null(),
                    0,
                    f64::NAN,
                    out.as_mut_ptr(),
                    16
                ),
                GO_TO_STORE
            );
            assert_eq!(
                mqstate_uniffi_cache_get(1, b"k".as_ptr(), -1, f64::NAN, out.as_mut_ptr(), 16),
                GO_TO_STORE
            );
            assert_eq!(
                mqstate_uniffi_cache_get(1, std::ptr::null(), 3, f64::NAN, out.as_mut_ptr(), 16),
                GO_TO_STORE
            );
        }
    }
}
