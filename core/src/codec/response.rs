//! Response payloads (spec §4): decoding for clients, encoding for the service.
//!
//! The decoder is tolerant exactly where the public article and the service differ
//! (`-1` without a colon, `-ERR:` with one) and strict everywhere else: anything it does
//! not recognise is [`ErrorKind::Malformed`](crate::ErrorKind::Malformed), never a guess.

use bytes::Bytes;

use super::request::Verb;
use super::scan::ScanPage;
use super::store_error::StoreError;
use super::wire::{self, Reader};
use crate::error::Error;

/// A decoded response payload.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Response {
    /// `+OK`: SET applied; KEYNOTIFY (or STOP) accepted.
    Ok,
    /// `:-1` (or the article's `-1`): a SET condition failed, or a VDEL value differed.
    NotApplied,
    /// `$-1`: GET found no such key.
    NotFound,
    /// `$<len>`: GET's value (a zero-copy slice of the payload).
    Value(Bytes),
    /// `:<n>`: keys deleted by DEL/VDEL; `0` for a STOP that found no registration.
    Count(u64),
    /// `-ERR <text>`: a store error.
    Error(StoreError),
    /// `*1`/`*2`: one page of a SCAN (spec §3.1).
    Page(ScanPage),
}

impl Response {
    /// Decodes any response form.
    pub fn decode(payload: &Bytes) -> Result<Response, Error> {
        let mut reader = Reader::new(payload);
        let response =
            match reader.type_byte()? {
                b'+' => match reader.line()? {
                    b"OK" => Response::Ok,
                    _ => return Err(Error::malformed("unknown simple string")),
                },
                b':' => match reader.line()? {
                    b"-1" => Response::NotApplied,
                    digits => Response::Count(wire::parse_u64(digits).ok_or_else(|| {
                        Error::malformed("invalid count (neither -1 nor 0..2^64)")
                    })?),
                },
                b'$' => match reader.integer()? {
                    -1 => Response::NotFound,
                    n => {
                        let len = usize::try_from(n)
                            .map_err(|_| Error::malformed("negative blob length other than -1"))?;
                        Response::Value(reader.blob_body(len)?)
                    }
                },
                b'-' => decode_error_line(reader.line()?)?,
                b'*' => Response::Page(ScanPage::decode_after_type(&mut reader)?),
                _ => return Err(Error::malformed("unexpected response type byte")),
            };
        reader.finish()?;
        Ok(response)
    }

    /// Decodes a response to a request of `verb`, refusing forms that verb cannot receive
    /// (a value in answer to a SET, say).
    pub fn decode_for(verb: Verb, payload: &Bytes) -> Result<Response, Error> {
        let response = Response::decode(payload)?;
        if response.fits(verb) {
            Ok(response)
        } else {
            Err(Error::malformed(format!(
                "unexpected {} response to {verb}",
                response.kind_name()
            )))
        }
    }

    /// Whether a request of `verb` can receive this response.
    pub fn fits(&self, verb: Verb) -> bool {
        matches!(
            (verb, self),
            (_, Response::Error(_))
                | (Verb::Set, Response::Ok | Response::NotApplied)
                | (Verb::Get, Response::Value(_) | Response::NotFound)
                | (Verb::Del, Response::Count(_))
                | (Verb::VDel, Response::Count(_) | Response::NotApplied)
                | (Verb::KeyNotify, Response::Ok | Response::Count(_))
                | (Verb::Scan, Response::Page(_))
        )
    }

    /// The stable snake_case name of the form (as in the shared conformance vectors).
    pub fn kind_name(&self) -> &'static str {
        match self {
            Response::Ok => "ok",
            Response::NotApplied => "not_applied",
            Response::NotFound => "not_found",
            Response::Value(_) => "value",
            Response::Count(_) => "count",
            Response::Error(_) => "error",
            Response::Page(_) => "keys",
        }
    }

    /// The exact size of the encoded payload.
    pub fn encoded_len(&self) -> usize {
        match self {
            Response::Ok => 5,
            Response::NotApplied | Response::NotFound => 5,
            Response::Value(v) => wire::blob_len(v.len()),
            Response::Count(n) => 1 + wire::decimal_len(*n) + 2,
            Response::Error(e) => 5 + e.text().len() + 2,
            Response::Page(page) => page.encoded_len(),
        }
    }

    /// Appends the payload to `out` (the service's forms: `:-1`, `-ERR <text>`).
    pub fn encode_to(&self, out: &mut Vec<u8>) {
        out.reserve(self.encoded_len());
        match self {
            Response::Ok => out.extend_from_slice(b"+OK\r\n"),
            Response::NotApplied => out.extend_from_slice(b":-1\r\n"),
            Response::NotFound => out.extend_from_slice(b"$-1\r\n"),
            Response::Value(v) => wire::put_blob(out, v),
            Response::Count(n) => {
                out.push(b':');
                wire::put_decimal(out, *n);
                out.extend_from_slice(b"\r\n");
            }
            Response::Error(e) => {
                out.extend_from_slice(b"-ERR ");
                out.extend_from_slice(e.text().as_bytes());
                out.extend_from_slice(b"\r\n");
            }
            Response::Page(page) => page.encode_to(out),
        }
    }

    /// The payload, in one exactly-sized allocation.
    pub fn encode(&self) -> Bytes {
        let mut out = Vec::with_capacity(self.encoded_len());
        self.encode_to(&mut out);
        Bytes::from(out)
    }
}

impl From<StoreError> for Response {
    fn from(e: StoreError) -> Response {
        Response::Error(e)
    }
}

/// The line after `-`: the article's `1` (not applied) or `ERR <text>` / `ERR: <text>`.
fn decode_error_line(line: &[u8]) -> Result<Response, Error> {
    if line == b"1" {
        return Ok(Response::NotApplied);
    }
    let text = line
        .strip_prefix(b"ERR: ")
        .or_else(|| line.strip_prefix(b"ERR "))
        .ok_or_else(|| Error::malformed("error line without ERR and a text"))?;
    if text.is_empty() {
        return Err(Error::malformed("error line without a text"));
    }
    Ok(Response::Error(StoreError::from_text(text)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::StoreErrorKind;

    #[test]
    fn encode_decode_every_form() {
        let forms = [
            Response::Ok,
            Response::NotApplied,
            Response::NotFound,
            Response::Value(Bytes::from_static(b"a\r\nb")),
            Response::Value(Bytes::new()),
            Response::Count(0),
            Response::Count(u64::MAX >> 1),
            Response::Error(StoreError::new(StoreErrorKind::QuotaExceeded)),
            Response::Error(StoreError::other("brand new")),
        ];
        for form in forms {
            let bytes = form.encode();
            assert_eq!(bytes.len(), form.encoded_len());
            assert_eq!(Response::decode(&bytes), Ok(form));
        }
    }

    #[test]
    fn verb_check() {
        let ok = Bytes::from_static(b"+OK\r\n");
        assert!(Response::decode_for(Verb::Set, &ok).is_ok());
        assert!(Response::decode_for(Verb::Get, &ok).is_err());
        let value = Bytes::from_static(b"$1\r\nx\r\n");
        assert!(Response::decode_for(Verb::Set, &value).is_err());
    }

    #[test]
    fn counts_are_u64_and_only_minus_one_is_negative() {
        let max = Response::Count(u64::MAX);
        assert_eq!(Response::decode(&max.encode()), Ok(max));
        assert!(Response::decode(&Bytes::from_static(b":18446744073709551616\r\n")).is_err());
        assert!(Response::decode(&Bytes::from_static(b":-2\r\n")).is_err());
        assert!(Response::decode(&Bytes::from_static(b":-0\r\n")).is_err());
    }
}
