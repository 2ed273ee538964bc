//! RESP3 framing primitives shared by requests, responses and notifications.
//!
//! The reader works on a [`Bytes`] so that blob strings come back as zero-copy slices of
//! the payload. It never allocates from a length read off the wire: every length is checked
//! against the bytes that are really there before it is used.

use bytes::Bytes;

use crate::error::Error;

/// The longest decimal number the protocol needs: `-` and the 20 digits of `u64::MAX`.
pub(crate) const MAX_DIGITS: usize = 20;

/// A cursor over one payload.
pub(crate) struct Reader<'a> {
    buf: &'a Bytes,
    pos: usize,
}

impl<'a> Reader<'a> {
    pub(crate) fn new(buf: &'a Bytes) -> Self {
        Reader { buf, pos: 0 }
    }

    /// Bytes not yet consumed.
    pub(crate) fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }

    fn malformed(&self, what: &str) -> Error {
        Error::malformed(format!("{what} at byte {}", self.pos))
    }

    /// The next byte, consumed.
    pub(crate) fn type_byte(&mut self) -> Result<u8, Error> {
        let b = *self
            .buf
            .get(self.pos)
            .ok_or_else(|| self.malformed("unexpected end of payload"))?;
        self.pos += 1;
        Ok(b)
    }

    /// The bytes up to the next CR LF, consumed with the CR LF. A CR not followed by LF is
    /// malformed.
    pub(crate) fn line(&mut self) -> Result<&'a [u8], Error> {
        let rest = &self.buf[self.pos..];
        let cr = rest
            .iter()
            .position(|&b| b == b'\r')
            .ok_or_else(|| self.malformed("line without CR LF"))?;
        if rest.get(cr + 1) != Some(&b'\n') {
            return Err(self.malformed("CR not followed by LF"));
        }
        let buf: &'a Bytes = self.buf;
        let line = &buf[self.pos..self.pos + cr];
        self.pos += cr + 2;
        Ok(line)
    }

    /// A signed decimal integer line (after its type byte): `-?[0-9]+` then CR LF.
    pub(crate) fn integer(&mut self) -> Result<i64, Error> {
        let line = self.line()?;
        parse_i64(line).ok_or_else(|| Error::malformed("invalid decimal integer"))
    }

    /// A blob string's body of `len` bytes followed by CR LF.
    pub(crate) fn blob_body(&mut self, len: usize) -> Result<Bytes, Error> {
        if len > self.remaining() || self.remaining() - len < 2 {
            return Err(self.malformed("blob string longer than the payload"));
        }
        let end = self.pos + len;
        if &self.buf[end..end + 2] != b"\r\n" {
            return Err(self.malformed("blob string not followed by CR LF"));
        }
        let body = self.buf.slice(self.pos..end);
        self.pos = end + 2;
        Ok(body)
    }

    /// A complete non-null blob string: `$<len>\r\n<bytes>\r\n`.
    #[inline]
    pub(crate) fn blob(&mut self) -> Result<Bytes, Error> {
        if self.type_byte()? != b'$' {
            return Err(Error::malformed("expected a blob string"));
        }
        let len = self.integer()?;
        let len = usize::try_from(len).map_err(|_| Error::malformed("negative blob length"))?;
        self.blob_body(len)
    }

    /// An array header `*<n>\r\n`; `n` is checked against the bytes left, so callers can
    /// size buffers from it.
    pub(crate) fn array_header(&mut self) -> Result<usize, Error> {
        if self.type_byte()? != b'*' {
            return Err(Error::malformed("expected an array"));
        }
        let n = self.integer()?;
        let n = usize::try_from(n).map_err(|_| Error::malformed("negative array length"))?;
        // The shortest element, `$0\r\n\r\n`, has 6 bytes.
        if n > self.remaining() / 6 {
            return Err(self.malformed("array longer than the payload"));
        }
        Ok(n)
    }

    /// Succeeds only when the whole payload was consumed.
    pub(crate) fn finish(&self) -> Result<(), Error> {
        if self.remaining() == 0 {
            Ok(())
        } else {
            Err(self.malformed("trailing bytes"))
        }
    }
}

/// Parses `-?[0-9]{1,20}` without overflow; anything else is `None`.
pub(crate) fn parse_i64(text: &[u8]) -> Option<i64> {
    let (negative, digits) = match text.split_first() {
        Some((b'-', rest)) => (true, rest),
        _ => (false, text),
    };
    let magnitude = parse_u64(digits)?;
    if negative {
        0i64.checked_sub_unsigned(magnitude)
    } else {
        i64::try_from(magnitude).ok()
    }
}

/// Parses `[0-9]{1,20}` without overflow; anything else (sign, space, empty) is `None`.
pub(crate) fn parse_u64(digits: &[u8]) -> Option<u64> {
    if digits.is_empty() || digits.len() > MAX_DIGITS {
        return None;
    }
    let mut value: u64 = 0;
    for &d in digits {
        if !d.is_ascii_digit() {
            return None;
        }
        value = value.checked_mul(10)?.checked_add(u64::from(d - b'0'))?;
    }
    Some(value)
}

/// Number of decimal digits of `n`.
#[inline]
pub(crate) fn decimal_len(mut n: u64) -> usize {
    let mut len = 1;
    while n >= 10 {
        n /= 10;
        len += 1;
    }
    len
}

/// Writes `n` in decimal into `buf` without going through `fmt`; returns the digits.
#[inline]
pub(crate) fn format_decimal(n: u64, buf: &mut [u8; MAX_DIGITS]) -> &[u8] {
    let mut i = buf.len();
    let mut n = n;
    loop {
        i -= 1;
        buf[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    &buf[i..]
}

/// Appends `n` in decimal.
#[inline]
pub(crate) fn put_decimal(out: &mut Vec<u8>, n: u64) {
    out.extend_from_slice(format_decimal(n, &mut [0u8; MAX_DIGITS]));
}

/// Writes a RESP array of blob strings with few copies: framing bytes (the array header,
/// each element's `$<len>\r\n`, the previous element's closing CR LF) and short elements
/// are staged on the stack and appended in one piece; long elements are copied once.
pub(crate) struct ArrayWriter<'a> {
    out: &'a mut Vec<u8>,
    stage: [u8; STAGE],
    staged: usize,
}

/// Room for framing and short elements.
const STAGE: usize = 192;
/// Elements up to this long are staged instead of copied on their own.
const SHORT: usize = 64;
/// The most framing one element adds: CR LF, `$`, 20 digits, CR LF.
const FRAMING: usize = 2 + 1 + MAX_DIGITS + 2;

impl<'a> ArrayWriter<'a> {
    /// Starts an array of `n` elements.
    #[inline]
    pub(crate) fn new(out: &'a mut Vec<u8>, n: usize) -> Self {
        let mut w = ArrayWriter {
            out,
            stage: [0; STAGE],
            staged: 0,
        };
        w.stage[0] = b'*';
        w.staged = 1;
        w.stage_decimal(n as u64);
        w.stage_crlf();
        w
    }

    #[inline]
    fn stage_crlf(&mut self) {
        self.stage[self.staged] = b'\r';
        self.stage[self.staged + 1] = b'\n';
        self.staged += 2;
    }

    /// Writes the digits straight into the stage, last digit first.
    #[inline]
    fn stage_decimal(&mut self, mut n: u64) {
        let len = decimal_len(n);
        let mut i = self.staged + len;
        while i > self.staged {
            i -= 1;
            self.stage[i] = b'0' + (n % 10) as u8;
            n /= 10;
        }
        self.staged += len;
    }

    #[inline]
    fn flush(&mut self) {
        self.out.extend_from_slice(&self.stage[..self.staged]);
        self.staged = 0;
    }

    /// Appends one blob string element.
    #[inline]
    pub(crate) fn blob(&mut self, bytes: &[u8]) {
        if self.staged + FRAMING + SHORT > STAGE {
            self.flush();
        }
        self.stage[self.staged] = b'$';
        self.staged += 1;
        self.stage_decimal(bytes.len() as u64);
        self.stage_crlf();
        if bytes.len() <= SHORT {
            self.stage[self.staged..self.staged + bytes.len()].copy_from_slice(bytes);
            self.staged += bytes.len();
        } else {
            self.flush();
            self.out.extend_from_slice(bytes);
        }
        self.stage_crlf();
    }

    /// Appends what is still staged.
    #[inline]
    pub(crate) fn finish(mut self) {
        self.flush();
    }
}

/// Encoded size of a blob string holding `len` bytes.
#[inline]
pub(crate) fn blob_len(len: usize) -> usize {
    1 + decimal_len(len as u64) + 2 + len + 2
}

/// Appends a blob string `$<len>\r\n<bytes>\r\n`.
#[inline]
pub(crate) fn put_blob(out: &mut Vec<u8>, bytes: &[u8]) {
    out.push(b'$');
    put_decimal(out, bytes.len() as u64);
    out.extend_from_slice(b"\r\n");
    out.extend_from_slice(bytes);
    out.extend_from_slice(b"\r\n");
}

/// Encoded size of an array header for `n` elements.
#[inline]
pub(crate) fn array_header_len(n: usize) -> usize {
    1 + decimal_len(n as u64) + 2
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decimal_round_trip() {
        for n in [0u64, 9, 10, 99, 100, 12345, u64::MAX] {
            let mut out = Vec::new();
            put_decimal(&mut out, n);
            assert_eq!(out, n.to_string().as_bytes());
            assert_eq!(decimal_len(n), out.len());
            assert_eq!(parse_u64(&out), Some(n));
        }
    }

    #[test]
    fn integers_are_strict() {
        assert_eq!(parse_i64(b"-1"), Some(-1));
        assert_eq!(parse_i64(b"-9223372036854775808"), Some(i64::MIN));
        assert_eq!(parse_i64(b"9223372036854775808"), None);
        for bad in [
            &b""[..],
            b"-",
            b"+1",
            b" 1",
            b"1 ",
            b"1.0",
            b"18446744073709551616",
        ] {
            assert_eq!(parse_i64(bad), None, "{bad:?}");
        }
    }
}
