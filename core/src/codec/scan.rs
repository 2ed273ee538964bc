//! SCAN pages (spec §3.1): one page of keys and the continuation token of the next.
//!
//! A final page is `*1\r\n*<k>\r\n<k blob strings>`; a page with more to come adds the
//! token: `*2\r\n*<k>\r\n<k blob strings>$<n>\r\n<token>\r\n`. Anything else is malformed.

use bytes::Bytes;

use super::wire::{self, Reader};
use crate::error::Error;

/// One page of a SCAN: the keys it holds (possibly none) and, unless it is the last page,
/// the opaque token that asks for the next one.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct ScanPage {
    /// The keys of this page, as zero-copy slices of the payload.
    pub keys: Vec<Bytes>,
    /// The continuation token to send back byte for byte; `None` on the final page.
    pub token: Option<Bytes>,
}

impl ScanPage {
    /// Whether this is the last page of the scan.
    pub fn is_last(&self) -> bool {
        self.token.is_none()
    }

    /// Decodes a page after its outer array's type byte `*` was read.
    pub(crate) fn decode_after_type(reader: &mut Reader<'_>) -> Result<ScanPage, Error> {
        let elements = reader.integer()?;
        if !(1..=2).contains(&elements) {
            return Err(Error::malformed(
                "a SCAN page has one or two elements (keys, then a token)",
            ));
        }
        let n = reader.array_header()?;
        let mut keys = Vec::with_capacity(n);
        for _ in 0..n {
            keys.push(reader.blob()?);
        }
        let token = if elements == 2 {
            Some(reader.blob()?)
        } else {
            None
        };
        Ok(ScanPage { keys, token })
    }

    /// The exact size of the encoded payload.
    pub fn encoded_len(&self) -> usize {
        let elements = 1 + usize::from(self.token.is_some());
        wire::array_header_len(elements)
            + wire::array_header_len(self.keys.len())
            + self
                .keys
                .iter()
                .map(|k| wire::blob_len(k.len()))
                .sum::<usize>()
            + self.token.as_ref().map_or(0, |t| wire::blob_len(t.len()))
    }

    /// Appends the payload to `out`.
    pub fn encode_to(&self, out: &mut Vec<u8>) {
        out.reserve(self.encoded_len());
        out.push(b'*');
        wire::put_decimal(out, 1 + u64::from(self.token.is_some()));
        out.extend_from_slice(b"\r\n*");
        wire::put_decimal(out, self.keys.len() as u64);
        out.extend_from_slice(b"\r\n");
        for key in &self.keys {
            wire::put_blob(out, key);
        }
        if let Some(token) = &self.token {
            wire::put_blob(out, token);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::Response;

    #[test]
    fn pages_round_trip() {
        let pages = [
            ScanPage::default(),
            ScanPage {
                keys: vec![Bytes::from_static(b"a\r\nb"), Bytes::new()],
                token: Some(Bytes::from_static(b"\0\xff")),
            },
            ScanPage {
                keys: vec![],
                token: Some(Bytes::new()),
            },
        ];
        for page in pages {
            let mut out = Vec::new();
            page.encode_to(&mut out);
            assert_eq!(out.len(), page.encoded_len());
            let decoded = Response::decode(&Bytes::from(out)).unwrap();
            assert_eq!(decoded, Response::Page(page));
        }
    }

    #[test]
    fn an_array_of_three_is_malformed() {
        let bytes = Bytes::from_static(b"*3\r\n*0\r\n$1\r\nt\r\n$1\r\nx\r\n");
        assert!(Response::decode(&bytes).is_err());
    }
}
