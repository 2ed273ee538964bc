//! One journal record (see the format in [`super`]): encoding, checked decoding, and the
//! CRC-32 that guards it.

use bytes::Bytes;
use mqstate::Hlc;

use crate::state_machine::JournalOp;

/// Length and checksum, before the body.
const RECORD_HEAD: usize = 8;
const PUT: u8 = 1;
const REMOVE: u8 = 2;
const CLOCK: u8 = 3;

/// Where the record at `at` ends, if its length fits in the file.
pub(super) fn record_end(data: &[u8], at: usize) -> Option<usize> {
    let head = data.get(at..at + RECORD_HEAD)?;
    let body_len = u32::from_le_bytes([head[0], head[1], head[2], head[3]]) as usize;
    let end = at.checked_add(RECORD_HEAD)?.checked_add(body_len)?;
    (end <= data.len()).then_some(end)
}

/// The record at `at` and where the next begins; `None` if it is incomplete, fails its
/// checksum, or does not decode.
pub(super) fn read_record(data: &[u8], at: usize) -> Option<(JournalOp, usize)> {
    let end = record_end(data, at)?;
    let body = &data[at + RECORD_HEAD..end];
    // Cheap checks first: replay scans damaged stretches offset by offset.
    if !matches!(body.first(), Some(&PUT | &REMOVE | &CLOCK)) || body.len() < 5 {
        return None;
    }
    let crc = u32::from_le_bytes(data[at + 4..at + 8].try_into().ok()?);
    if crc32(body) != crc {
        return None;
    }
    Some((decode_body(body)?, end))
}

/// Appends the record of `op` to `out`.
pub(super) fn encode(op: &JournalOp, out: &mut Vec<u8>) {
    let head = out.len();
    out.extend_from_slice(&[0; RECORD_HEAD]);
    match op {
        JournalOp::Put {
            key,
            value,
            version,
            expires_at_ms,
            fencing_token,
        } => {
            out.push(PUT);
            put_field(out, key);
            put_field(out, value);
            put_field(out, version.to_string().as_bytes());
            match expires_at_ms {
                Some(deadline) => {
                    out.push(1);
                    out.extend_from_slice(&deadline.to_le_bytes());
                }
                None => out.push(0),
            }
            let token = fencing_token
                .as_ref()
                .map(Hlc::to_string)
                .unwrap_or_default();
            put_field(out, token.as_bytes());
        }
        JournalOp::Remove { key } => {
            out.push(REMOVE);
            put_field(out, key);
        }
        JournalOp::Clock { version } => {
            out.push(CLOCK);
            put_field(out, version.to_string().as_bytes());
        }
    }
    let body_len = (out.len() - head - RECORD_HEAD) as u32;
    let crc = crc32(&out[head + RECORD_HEAD..]);
    out[head..head + 4].copy_from_slice(&body_len.to_le_bytes());
    out[head + 4..head + 8].copy_from_slice(&crc.to_le_bytes());
}

fn put_field(out: &mut Vec<u8>, bytes: &[u8]) {
    out.extend_from_slice(&(bytes.len() as u32).to_le_bytes());
    out.extend_from_slice(bytes);
}

/// Reads a record body; `None` if it is not exactly one well-formed op.
fn decode_body(body: &[u8]) -> Option<JournalOp> {
    let mut r = Cursor(body);
    let op = match r.byte()? {
        PUT => {
            let key = Bytes::copy_from_slice(r.field()?);
            let value = Bytes::copy_from_slice(r.field()?);
            let version = r.hlc()?;
            let expires_at_ms = match r.byte()? {
                0 => None,
                1 => Some(u64::from_le_bytes(r.take(8)?.try_into().ok()?)),
                _ => return None,
            };
            let token = r.field()?;
            let fencing_token = if token.is_empty() {
                None
            } else {
                Some(Hlc::parse(std::str::from_utf8(token).ok()?).ok()?)
            };
            JournalOp::Put {
                key,
                value,
                version,
                expires_at_ms,
                fencing_token,
            }
        }
        REMOVE => JournalOp::Remove {
            key: Bytes::copy_from_slice(r.field()?),
        },
        CLOCK => JournalOp::Clock { version: r.hlc()? },
        _ => return None,
    };
    r.0.is_empty().then_some(op)
}

/// A reader over a record body.
struct Cursor<'a>(&'a [u8]);

impl<'a> Cursor<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        if self.0.len() < n {
            return None;
        }
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        Some(head)
    }

    fn byte(&mut self) -> Option<u8> {
        Some(self.take(1)?[0])
    }

    fn field(&mut self) -> Option<&'a [u8]> {
        let len = u32::from_le_bytes(self.take(4)?.try_into().ok()?);
        self.take(len as usize)
    }

    fn hlc(&mut self) -> Option<Hlc> {
        Hlc::parse(std::str::from_utf8(self.field()?).ok()?).ok()
    }
}

/// CRC-32 (ISO-HDLC: reflected polynomial 0xEDB88320, as zlib and PNG use).
fn crc32(data: &[u8]) -> u32 {
    const TABLE: [u32; 256] = {
        let mut table = [0u32; 256];
        let mut i = 0;
        while i < 256 {
            let mut c = i as u32;
            let mut k = 0;
            while k < 8 {
                c = if c & 1 != 0 {
                    0xEDB8_8320 ^ (c >> 1)
                } else {
                    c >> 1
                };
                k += 1;
            }
            table[i] = c;
            i += 1;
        }
        table
    };
    !data.iter().fold(!0u32, |c, &b| {
        TABLE[((c ^ u32::from(b)) & 0xFF) as usize] ^ (c >> 8)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crc32_check_value() {
        assert_eq!(crc32(b"123456789"), 0xCBF4_3926);
        assert_eq!(crc32(b""), 0);
    }

    #[test]
    fn bodies_round_trip_and_reject_trailing_bytes() {
        let op = JournalOp::Put {
            key: Bytes::from_static(b"k"),
            value: Bytes::new(),
            version: Hlc::parse("5:1:S").unwrap(),
            expires_at_ms: Some(9),
            fencing_token: Some(Hlc::parse("4:0:c").unwrap()),
        };
        let mut buf = Vec::new();
        encode(&op, &mut buf);
        assert_eq!(read_record(&buf, 0), Some((op, buf.len())));
        let mut body = buf[RECORD_HEAD..].to_vec();
        body.push(0);
        assert!(decode_body(&body).is_none());
    }
}
