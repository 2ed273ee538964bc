//! Fixtures shared by the benchmarks in `benches/`: the exact frames every row measures,
//! built once, so that mqstate, the `redis-protocol` comparator and the memcpy floor all
//! work on identical bytes.
//!
//! The value bytes cycle through all 256 byte values, CR and LF included, so no codec can
//! profit from a value that happens to be text.

use bytes::Bytes;
use mqstate::codec::{KeyEvent, Request, Response, SetCondition};
use mqstate::topics;

/// The 16-byte key of every SET.
pub const KEY: &[u8; 16] = b"bench/key/000001";

/// The value sizes measured: 100 B, 1 KiB, 64 KiB.
pub const VALUE_SIZES: [usize; 3] = [100, 1024, 64 * 1024];

/// The client id in the notification topic.
pub const CLIENT_ID: &str = "bench-client";

/// A value of `len` bytes cycling through every byte value.
pub fn value(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i % 256) as u8).collect()
}

/// A short label for a size: `100B`, `1KiB`, `64KiB`.
pub fn size_label(len: usize) -> String {
    if len >= 1024 && len.is_multiple_of(1024) {
        format!("{}KiB", len / 1024)
    } else {
        format!("{len}B")
    }
}

/// `SET KEY value` (no condition, no expiry) as mqstate encodes it.
pub fn set_request(value: &[u8]) -> Bytes {
    Request::Set {
        key: &KEY[..],
        value,
        condition: SetCondition::Always,
        expiry_ms: None,
    }
    .encode()
}

/// The response to a GET that found `value`: `$<len>\r\n<value>\r\n`.
pub fn get_response(value: &[u8]) -> Bytes {
    Response::Value(Bytes::copy_from_slice(value)).encode()
}

/// A SET notification payload carrying `value`.
pub fn notification_payload(value: &[u8]) -> Bytes {
    KeyEvent::Set(Bytes::copy_from_slice(value)).encode()
}

/// The topic of a notification about [`KEY`] for [`CLIENT_ID`].
pub fn notification_topic() -> String {
    topics::notification_topic(CLIENT_ID, KEY)
}

#[cfg(test)]
mod tests {
    use super::*;
    use redis_protocol::resp3::decode::complete::decode_bytes;
    use redis_protocol::resp3::encode::complete::encode_borrowed;
    use redis_protocol::resp3::types::{BorrowedFrame, BytesFrame};

    fn blob(data: &[u8]) -> BorrowedFrame<'_> {
        BorrowedFrame::BlobString {
            data,
            attributes: None,
        }
    }

    /// The comparator's frames are byte-identical to mqstate's: the rows compare like
    /// with like.
    #[test]
    fn redis_protocol_sees_the_same_frames() {
        for len in VALUE_SIZES {
            let v = value(len);
            let args = [blob(b"SET"), blob(KEY), blob(&v)];
            let frame = BorrowedFrame::Array {
                data: &args,
                attributes: None,
            };
            let mut out = vec![0; frame.encode_len(false)];
            let n = encode_borrowed(&mut out, &frame, false).unwrap();
            assert_eq!(&out[..n], &set_request(&v)[..]);

            let response = get_response(&v);
            let (decoded, used) = decode_bytes(&response).unwrap().unwrap();
            assert_eq!(used, response.len());
            assert!(matches!(decoded, BytesFrame::BlobString { data, .. } if data[..] == v[..]));

            let payload = notification_payload(&v);
            let (decoded, used) = decode_bytes(&payload).unwrap().unwrap();
            assert_eq!(used, payload.len());
            let BytesFrame::Array { data, .. } = decoded else {
                panic!("not an array");
            };
            assert_eq!(data.len(), 4);
        }
    }

    #[test]
    fn labels() {
        assert_eq!(size_label(100), "100B");
        assert_eq!(size_label(1024), "1KiB");
        assert_eq!(size_label(65536), "64KiB");
    }
}
