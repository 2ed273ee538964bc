//! `mqstate_scan`: a SCAN (spec §3.1) as a caller-driven pager over the core's
//! [`Pager`]: `mqstate_client_scan` makes it (sending nothing), each `mqstate_scan_next`
//! asks for one page and blocks until it arrives, and the continuation token stays inside
//! the core. A page that fails (timeout, cancellation, lost connection) leaves the token
//! where it was: calling `mqstate_scan_next` again asks for the same page.
//!
//! Pages are owned `mqstate_scan_page` objects: a count and keys read by index, freed with
//! `mqstate_scan_page_free`.

use std::sync::Mutex;

use bytes::Bytes;
use mqstate::ScanOptions;
use mqstate::bridge::{Canceller, Pager};

use super::cancel::{mqstate_cancel, run};
use super::guard;
use super::handle::{enter_client, mqstate_client};
use super::timeout;
use crate::ffi::{bytes_arg, maybe, out_arg, put};
use crate::status::{boundary, mqstate_status};

/// The pager and the pages being fetched (cancelled when the pager is freed).
pub(crate) struct ScanState {
    pager: Pager,
    in_flight: Mutex<Vec<(u64, Canceller)>>,
    next_id: Mutex<u64>,
}

/// A SCAN in progress (opaque; thread-safe: calls from several threads are served one after
/// the other). Free it with `mqstate_scan_free`.
pub struct mqstate_scan {
    guarded: guard::Guarded<ScanState>,
}

crate::handle!(mqstate_scan, ScanState);

/// One page of keys (opaque), owned by the caller: read it with `mqstate_scan_page_count`
/// and `mqstate_scan_page_key`, free it with `mqstate_scan_page_free`.
pub struct mqstate_scan_page {
    keys: Vec<Bytes>,
}

/// Starts a scan of the keys matching the glob `pattern` (`pattern_len` bytes: `*` any run
/// of bytes, `?` one byte, `[abc]`, `[a-z]`, `[^a]` classes, `\` escapes the next byte;
/// matched byte-wise). Nothing is sent until the first `mqstate_scan_next`. On success
/// `*out` is a new pager, owned by the caller (free it with `mqstate_scan_free`); on error
/// `*out` is NULL. An empty pattern is `MQSTATE_STATUS_INVALID_ARGUMENT`. `timeout_ms` bounds
/// each page (0: the client's `request_timeout`; `MQSTATE_WAIT_FOREVER` is refused).
///
/// The pager keeps what it needs of the client: after `mqstate_client_close` it stays a
/// valid handle whose pages fail with `MQSTATE_STATUS_CLOSED` until it is freed.
///
/// # Safety
/// `client` must be a live client; `pattern` must point to `pattern_len` readable bytes (or
/// be NULL with length 0); `out` must be NULL or writable.
#[unsafe(no_mangle)]
pub extern "C" fn mqstate_client_scan(
    client: *const mqstate_client,
    pattern: *const u8,
    pattern_len: usize,
    timeout_ms: u32,
    out: *mut *mut mqstate_scan,
) -> mqstate_status {
    boundary(|| {
        let out = out_arg(out, std::ptr::null_mut(), "out")?;
        let store = enter_client(client)?;
        let pattern = bytes_arg(pattern, pattern_len, "pattern")?;
        // Each page's own timeout (a plain timeout, never "may have been applied": a SCAN
        // only reads); the wait in `mqstate_scan_next` has no limit of its own.
        let options = ScanOptions {
            timeout: timeout::request(timeout_ms)?,
        };
        let pager = store.scan(Bytes::copy_from_slice(pattern), options)?;
        *out = guard::new(ScanState {
            pager,
            in_flight: Mutex::new(Vec::new()),
            next_id: Mutex::new(0),
        });
        Ok(())
    })
}

/// A page of `keys` for C (free with `mqstate_scan_page_free`): the list type of every
/// function that returns keys.
pub(crate) fn new_page(keys: Vec<Bytes>) -> *mut mqstate_scan_page {
    Box::into_raw(Box::new(mqstate_scan_page { keys }))
}

/// Asks for the next page and waits for it, up to the scan's `timeout_ms` (see
/// `mqstate_client_scan`), cancellable from another thread through `cancel` (may be NULL).
///
/// - `MQSTATE_STATUS_OK` with `*page` set: the next page (it may hold no key while more
///   pages follow). The page is the caller's: free it with `mqstate_scan_page_free`.
/// - `MQSTATE_STATUS_OK` with `*page` NULL: the scan is done (the last page was returned
///   before); `mqstate_scan_is_done` says the same without asking.
/// - any other status: no page (`*page` is NULL), and the scan has not moved: calling again
///   asks for the same page (`MQSTATE_STATUS_TIMEOUT`, `_CANCELLED`, `_CONNECTION_LOST`,
///   `_CLOSED` once the client is closed, a store error …).
///
/// # Safety
/// `scan` must be a live pager; `cancel` NULL or a live token; `page` NULL or writable.
#[unsafe(no_mangle)]
pub extern "C" fn mqstate_scan_next(
    scan: *const mqstate_scan,
    cancel: *const mqstate_cancel,
    page: *mut *mut mqstate_scan_page,
) -> mqstate_status {
    boundary(|| {
        let out = out_arg(page, std::ptr::null_mut(), "page")?;
        let state = guard::enter(scan, "scan")?;
        let id = {
            let mut next = state.next_id.lock().unwrap_or_else(|e| e.into_inner());
            *next += 1;
            *next
        };
        let start = || {
            let call = state.pager.next_page();
            state
                .in_flight
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push((id, call.canceller()));
            call
        };
        let got = run(cancel, start);
        state
            .in_flight
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .retain(|(other, _)| *other != id);
        if let Some(keys) = got? {
            *out = new_page(keys);
        }
        Ok(())
    })
}

/// Whether the scan is done: its last page has been returned (false while a page is being
/// fetched, and for NULL).
///
/// # Safety
/// `scan` must be NULL or a live pager.
#[unsafe(no_mangle)]
pub extern "C" fn mqstate_scan_is_done(scan: *const mqstate_scan) -> bool {
    guard::enter(scan, "scan").is_ok_and(|s| s.pager.is_done())
}

/// Frees a pager (NULL is ignored). Pages being fetched on other threads end at once with
/// `MQSTATE_STATUS_CANCELLED`, and this waits for those calls to return. Pages already
/// returned stay valid (they are the caller's).
///
/// # Safety
/// `scan` must be NULL or a live pager, freed once; no call may start on it afterwards.
#[unsafe(no_mangle)]
pub extern "C" fn mqstate_scan_free(scan: *mut mqstate_scan) {
    guard::close(scan, |state| {
        let calls = std::mem::take(&mut *state.in_flight.lock().unwrap_or_else(|e| e.into_inner()));
        for (_, call) in calls {
            call.cancel();
        }
    })
}

/// The number of keys on the page (0 for NULL).
///
/// # Safety
/// `page` must be NULL or a live page.
#[unsafe(no_mangle)]
pub extern "C" fn mqstate_scan_page_count(page: *const mqstate_scan_page) -> usize {
    maybe(page).map_or(0, |p| p.keys.len())
}

/// The key at `index` (`*len` bytes, not NUL-terminated, binary-safe), borrowed from the
/// page and valid until it is freed; NULL (and `*len` 0) when `index` is not below
/// `mqstate_scan_page_count` or `page` is NULL. An empty key is a non-NULL pointer with
/// length 0.
///
/// # Safety
/// `page` must be NULL or a live page; `len` NULL or writable.
#[unsafe(no_mangle)]
pub extern "C" fn mqstate_scan_page_key(
    page: *const mqstate_scan_page,
    index: usize,
    len: *mut usize,
) -> *const u8 {
    let key = maybe(page).and_then(|p| p.keys.get(index));
    put(len, key.map_or(0, |k| k.len()));
    key.map_or(std::ptr::null(), |k| k.as_ptr())
}

/// Frees a page (NULL is ignored).
///
/// # Safety
/// `page` must be NULL or a live page, freed once.
#[unsafe(no_mangle)]
pub extern "C" fn mqstate_scan_page_free(page: *mut mqstate_scan_page) {
    crate::ffi::free_handle(page)
}
