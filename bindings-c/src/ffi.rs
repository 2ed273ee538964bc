//! The pointer discipline of the C layer in one place: checked conversion of C arguments
//! (byte ranges, NUL-terminated UTF-8 text, handles, out-parameters), copying text into a
//! caller's buffer, handle allocation, and the library-owned byte buffer [`mqstate_bytes`].
//!
//! Every other module goes through these helpers, so a null pointer or bad UTF-8 becomes
//! `MQSTATE_STATUS_INVALID_ARGUMENT` in exactly one way. They are safe functions over raw
//! pointers, as the exported functions are: each `# Safety` section below is the crate's
//! contract (lib.rs) as it reaches the helper, passed on by the exported function that
//! received the pointer. The `unsafe` of the C layer is here.

use std::ffi::{CStr, c_char};
use std::ptr;

use crate::status::{Failure, mqstate_status};

/// A byte buffer owned by the library, returned through an out-parameter.
///
/// `ptr` points to `len` bytes followed by one NUL byte (so a text result is also a C
/// string); it is never NULL for a result the library filled in, even when `len` is 0. Free
/// it with `mqstate_bytes_free`, which resets it to `{NULL, 0}`.
#[repr(C)]
#[derive(Debug)]
pub struct mqstate_bytes {
    /// The first byte; `ptr[len]` is 0.
    pub ptr: *mut u8,
    /// Number of bytes, not counting the trailing NUL.
    pub len: usize,
}

impl mqstate_bytes {
    /// The empty, unowned value out-parameters are reset to.
    pub(crate) const EMPTY: mqstate_bytes = mqstate_bytes {
        ptr: ptr::null_mut(),
        len: 0,
    };

    /// Takes ownership of `data`, adding the trailing NUL.
    pub(crate) fn from_vec(mut data: Vec<u8>) -> mqstate_bytes {
        let len = data.len();
        data.push(0);
        let ptr = Box::into_raw(data.into_boxed_slice()).cast::<u8>();
        mqstate_bytes { ptr, len }
    }
}

/// Frees a buffer filled in by the library and resets it to `{NULL, 0}`. NULL, and a buffer
/// already reset, are ignored, so freeing twice through the same struct is harmless.
///
/// # Safety
/// `bytes` must be NULL or point to a `mqstate_bytes` that is `{NULL, 0}` or was filled in by
/// an mqstate function and not modified since.
#[unsafe(no_mangle)]
pub extern "C" fn mqstate_bytes_free(bytes: *mut mqstate_bytes) {
    let _ = std::panic::catch_unwind(|| {
        let Some(bytes) = maybe_mut(bytes) else {
            return;
        };
        if !bytes.ptr.is_null() {
            let slice = ptr::slice_from_raw_parts_mut(bytes.ptr, bytes.len + 1);
            // SAFETY: ptr/len came from `mqstate_bytes::from_vec`, a boxed slice of len + 1.
            drop(unsafe { Box::from_raw(slice) });
        }
        *bytes = mqstate_bytes::EMPTY;
    });
}

/// The bytes `ptr[0..len]`; `ptr` may be NULL only when `len` is 0.
///
/// # Safety
/// A non-null `ptr` must point to `len` readable bytes that outlive `'a`.
pub(crate) fn bytes_arg<'a>(ptr: *const u8, len: usize, what: &str) -> Result<&'a [u8], Failure> {
    if len == 0 {
        return Ok(&[]);
    }
    if ptr.is_null() {
        return Err(Failure::invalid(format!(
            "{what} is NULL but its length is {len}"
        )));
    }
    // SAFETY: non-null, and the caller promises `len` readable bytes.
    Ok(unsafe { std::slice::from_raw_parts(ptr, len) })
}

/// A NUL-terminated UTF-8 string argument.
///
/// # Safety
/// A non-null `ptr` must point to a NUL-terminated string that outlives `'a`.
pub(crate) fn str_arg<'a>(ptr: *const c_char, what: &str) -> Result<&'a str, Failure> {
    if ptr.is_null() {
        return Err(Failure::invalid(format!("{what} is NULL")));
    }
    // SAFETY: non-null, and the caller promises a NUL-terminated string.
    let text = unsafe { CStr::from_ptr(ptr) };
    text.to_str()
        .map_err(|_| Failure::invalid(format!("{what} is not valid UTF-8")))
}

/// What a pointer argument the header lets be NULL points to; `None` for NULL.
///
/// # Safety
/// A non-null `ptr` must point to a live `T` for `'a` (the crate's contract: see lib.rs).
pub(crate) fn maybe<'a, T>(ptr: *const T) -> Option<&'a T> {
    // SAFETY: non-null pointers an exported function receives are valid (the contract).
    unsafe { ptr.as_ref() }
}

/// What a pointer argument the header lets be NULL points to, to write; `None` for NULL.
///
/// # Safety
/// A non-null `ptr` must point to a live `T`, not aliased, for `'a` (the crate's contract).
pub(crate) fn maybe_mut<'a, T>(ptr: *mut T) -> Option<&'a mut T> {
    // SAFETY: non-null pointers an exported function receives are valid (the contract).
    unsafe { ptr.as_mut() }
}

/// A handle argument (`const mqstate_x *`).
///
/// # Safety
/// A non-null `ptr` must point to a live handle of type `T` created by this library.
pub(crate) fn handle_arg<'a, T>(ptr: *const T, what: &str) -> Result<&'a T, Failure> {
    maybe(ptr).ok_or_else(|| Failure::invalid(format!("{what} is NULL")))
}

/// An out-parameter, reset to `empty` before anything else can fail, so that on error the
/// caller always finds the empty value there.
///
/// # Safety
/// A non-null `ptr` must point to writable memory for one `T` (its old value is overwritten
/// without being dropped).
pub(crate) fn out_arg<'a, T>(ptr: *mut T, empty: T, what: &str) -> Result<&'a mut T, Failure> {
    if ptr.is_null() {
        return Err(Failure::invalid(format!("{what} is NULL")));
    }
    // SAFETY: non-null and writable per the caller; `write` does not drop the old value.
    unsafe {
        ptr.write(empty);
        Ok(&mut *ptr)
    }
}

/// Moves `value` to the heap as a handle for C.
pub(crate) fn new_handle<T>(value: T) -> *mut T {
    Box::into_raw(Box::new(value))
}

/// Frees a handle made by [`new_handle`]; NULL is ignored.
///
/// # Safety
/// `ptr` must be NULL or a handle of type `T` from [`new_handle`] not yet freed.
pub(crate) fn free_handle<T>(ptr: *mut T) {
    if !ptr.is_null() {
        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            // SAFETY: per the caller, a live Box-allocated handle, freed once.
            drop(unsafe { Box::from_raw(ptr) });
        }));
    }
}

/// The text out-parameters `(buf, len, out_len)` of a function whose text is `text()`:
/// reset first — `*out_len` 0 and `buf` the empty string (when `len > 0`) — so that a
/// failure, of `text()` or of the arguments, leaves nothing stale; then [`write_text`].
///
/// # Safety
/// A non-null `buf` must point to `len` writable bytes; a non-null `out_len` must be writable.
pub(crate) fn text_out<T: AsRef<str>>(
    buf: *mut c_char,
    len: usize,
    out_len: *mut usize,
    text: impl FnOnce() -> Result<T, Failure>,
) -> Result<(), Failure> {
    if !out_len.is_null() {
        // SAFETY: non-null and writable per the caller.
        unsafe { out_len.write(0) };
    }
    if !buf.is_null() && len > 0 {
        // SAFETY: non-null with `len > 0` writable bytes per the caller.
        unsafe { buf.write(0) };
    }
    let text = text()?;
    write_text(text.as_ref(), buf, len, out_len)
}

/// Copies `text` and a NUL into the caller's buffer `buf` of `len` bytes, after storing the
/// text's length (without the NUL) in `*out_len` when `out_len` is not NULL. A buffer shorter
/// than the length plus one is `MQSTATE_STATUS_BUFFER_TOO_SMALL` (nothing more is written to
/// it); `buf` may be NULL only with `len` 0, to ask for the length.
///
/// # Safety
/// A non-null `buf` must point to `len` writable bytes; a non-null `out_len` must be writable.
pub(crate) fn write_text(
    text: &str,
    buf: *mut c_char,
    len: usize,
    out_len: *mut usize,
) -> Result<(), Failure> {
    if !out_len.is_null() {
        // SAFETY: non-null and writable per the caller.
        unsafe { out_len.write(text.len()) };
    }
    if buf.is_null() && len > 0 {
        return Err(Failure::invalid("buf is NULL but len is not 0"));
    }
    if len <= text.len() {
        return Err(Failure::new(
            mqstate_status::BufferTooSmall,
            format!(
                "the buffer holds {len} bytes; {} are needed (text and NUL)",
                text.len() + 1
            ),
        ));
    }
    // SAFETY: `buf` is non-null here (len > text.len() >= 0) with `len` writable bytes, and
    // text.len() + 1 <= len.
    unsafe {
        ptr::copy_nonoverlapping(text.as_ptr(), buf.cast::<u8>(), text.len());
        *buf.add(text.len()) = 0;
    }
    Ok(())
}

/// A copy of `bytes` with a trailing NUL, for a handle to own (its length is one more).
pub(crate) fn with_nul(bytes: &[u8]) -> Box<[u8]> {
    let mut v = Vec::with_capacity(bytes.len() + 1);
    v.extend_from_slice(bytes);
    v.push(0);
    v.into_boxed_slice()
}

/// The start of `bytes`, for an info struct that borrows it.
pub(crate) fn bytes_ptr(bytes: &[u8]) -> *const u8 {
    bytes.as_ptr()
}

/// Checks a non-null info out-pointer (the info is written whole once built).
pub(crate) fn out_ptr<T>(out: *mut T) -> Result<*mut T, Failure> {
    if out.is_null() {
        Err(Failure::invalid("out is NULL"))
    } else {
        Ok(out)
    }
}

/// Writes an optional scalar out-pointer.
///
/// # Safety
/// `out` must be NULL or writable.
pub(crate) fn put<T>(out: *mut T, value: T) {
    if !out.is_null() {
        // SAFETY: non-null and writable per the caller.
        unsafe { out.write(value) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_round_trip_and_double_free() {
        let mut b = mqstate_bytes::from_vec(b"abc".to_vec());
        assert_eq!(b.len, 3);
        // SAFETY: b was just filled in; ptr has len + 1 bytes.
        assert_eq!(unsafe { std::slice::from_raw_parts(b.ptr, 4) }, b"abc\0");
        mqstate_bytes_free(&mut b);
        mqstate_bytes_free(&mut b);
        mqstate_bytes_free(ptr::null_mut());
        assert!(b.ptr.is_null());
        let empty = mqstate_bytes::from_vec(Vec::new());
        assert!(!empty.ptr.is_null());
    }

    #[test]
    fn write_text_reports_the_needed_length() {
        let mut buf = [1 as c_char; 4];
        let mut needed = 0usize;
        let small = write_text("abcd", buf.as_mut_ptr(), 4, &mut needed);
        assert_eq!(small.unwrap_err().status, mqstate_status::BufferTooSmall);
        assert_eq!(needed, 4);
        assert_eq!(buf, [1; 4]);
        write_text("abc", buf.as_mut_ptr(), 4, &mut needed).unwrap();
        assert_eq!(buf, [97, 98, 99, 0]);
    }
}
