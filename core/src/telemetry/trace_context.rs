//! W3C Trace Context (`traceparent`, `tracestate`): read strictly, so that a request never
//! carries a header a store or collector would reject, and hostile input is refused, never
//! a panic.

use crate::error::Error;

/// A `traceparent` read into its parts (W3C Trace Context, level 1).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TraceParent {
    /// The version byte (`00` today; a later version is read by its first four fields).
    pub version: u8,
    /// The trace id (never all zero).
    pub trace_id: [u8; 16],
    /// The id of the caller's span: the parent of the spans the request leads to (never all
    /// zero).
    pub parent_id: [u8; 8],
    /// The trace flags (bit 0: sampled).
    pub flags: u8,
}

impl TraceParent {
    /// Reads a `traceparent` header value: `VV-TTTTTTTTTTTTTTTTTTTTTTTTTTTTTTTT-PPPPPPPPPPPPPPPP-FF`,
    /// lower-case hex. `None` for anything else: upper-case hex, all-zero ids, version `ff`,
    /// a version-00 value with more after it.
    pub fn parse(text: &str) -> Option<TraceParent> {
        let b = text.as_bytes();
        if b.len() < 55 || b[2] != b'-' || b[35] != b'-' || b[52] != b'-' {
            return None;
        }
        let version = hex::<1>(&b[0..2])?[0];
        // Version 00 is exactly 55 characters; a later one may add fields after a dash.
        if version == 0xff || (version == 0 && b.len() != 55) || (b.len() > 55 && b[55] != b'-') {
            return None;
        }
        let trace_id = hex::<16>(&b[3..35])?;
        let parent_id = hex::<8>(&b[36..52])?;
        let flags = hex::<1>(&b[53..55])?[0];
        if trace_id == [0; 16] || parent_id == [0; 8] {
            return None;
        }
        Some(TraceParent {
            version,
            trace_id,
            parent_id,
            flags,
        })
    }

    /// Whether the caller sampled its trace (flag bit 0).
    pub fn sampled(&self) -> bool {
        self.flags & 1 == 1
    }

    /// The trace id in lower-case hex (32 characters).
    pub fn trace_id_hex(&self) -> String {
        lower_hex(&self.trace_id)
    }

    /// The parent span id in lower-case hex (16 characters).
    pub fn parent_id_hex(&self) -> String {
        lower_hex(&self.parent_id)
    }

    /// The header value (version 00).
    pub fn to_header(&self) -> String {
        format!(
            "00-{}-{}-{:02x}",
            self.trace_id_hex(),
            self.parent_id_hex(),
            self.flags
        )
    }
}

/// Lower-case hex, as W3C Trace Context writes ids (the topics' hex is upper case).
fn lower_hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// `N` bytes from `2N` lower-case hex digits.
fn hex<const N: usize>(digits: &[u8]) -> Option<[u8; N]> {
    fn nibble(d: u8) -> Option<u8> {
        match d {
            b'0'..=b'9' => Some(d - b'0'),
            b'a'..=b'f' => Some(d - b'a' + 10),
            _ => None,
        }
    }
    if digits.len() != 2 * N {
        return None;
    }
    let mut out = [0u8; N];
    for (i, pair) in digits.chunks_exact(2).enumerate() {
        out[i] = nibble(pair[0])? << 4 | nibble(pair[1])?;
    }
    Some(out)
}

/// The longest `tracestate` carried (W3C: 32 members of at most 256 characters each, and a
/// header of 512 characters is what every implementation must accept).
pub const MAX_TRACESTATE: usize = 512;

/// Whether a `tracestate` value is carried (and kept by a store): at most
/// [`MAX_TRACESTATE`] characters of printable ASCII. It is passed on, not interpreted.
pub fn tracestate_acceptable(value: &str) -> bool {
    value.len() <= MAX_TRACESTATE && value.bytes().all(|b| (0x20..0x7f).contains(&b))
}

/// The trace context of a caller's span, checked: what a request carries as the MQTT5 user
/// properties `traceparent` and `tracestate`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct TraceContext {
    parent: TraceParent,
    traceparent: String,
    tracestate: Option<String>,
}

impl TraceContext {
    /// From the header values. Fails with `invalid_argument` when `traceparent` is not a
    /// valid W3C value or `tracestate` is longer than [`MAX_TRACESTATE`] or holds characters
    /// a header cannot (control characters, non-ASCII). An empty `tracestate` is none.
    pub fn new(traceparent: &str, tracestate: Option<&str>) -> Result<TraceContext, Error> {
        let parent = TraceParent::parse(traceparent).ok_or_else(|| {
            Error::invalid_argument(format!(
                "not a W3C traceparent: {:?} (expected 00-<32 hex>-<16 hex>-<2 hex>, lower case, ids not all zero)",
                truncated(traceparent)
            ))
        })?;
        let tracestate = match tracestate.map(str::trim) {
            None | Some("") => None,
            Some(s) if tracestate_acceptable(s) => Some(s.to_owned()),
            Some(s) => {
                return Err(Error::invalid_argument(format!(
                    "not a tracestate carried here ({} characters): at most {MAX_TRACESTATE} of printable ASCII: {:?}",
                    s.len(),
                    truncated(s)
                )));
            }
        };
        Ok(TraceContext {
            parent,
            traceparent: traceparent.to_owned(),
            tracestate,
        })
    }

    /// The `traceparent` value, as given.
    pub fn traceparent(&self) -> &str {
        &self.traceparent
    }

    /// The `tracestate` value, if any.
    pub fn tracestate(&self) -> Option<&str> {
        self.tracestate.as_deref()
    }

    /// Its parts.
    pub fn parent(&self) -> &TraceParent {
        &self.parent
    }
}

fn truncated(s: &str) -> &str {
    match s.char_indices().nth(80) {
        Some((i, _)) => &s[..i],
        None => s,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const GOOD: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

    #[test]
    fn reads_the_spec_example() {
        let p = TraceParent::parse(GOOD).unwrap();
        assert_eq!(p.version, 0);
        assert_eq!(p.trace_id_hex(), "4bf92f3577b34da6a3ce929d0e0e4736");
        assert_eq!(p.parent_id_hex(), "00f067aa0ba902b7");
        assert!(p.sampled());
        assert_eq!(p.to_header(), GOOD);
    }

    #[test]
    fn refuses_what_the_spec_refuses() {
        for bad in [
            "",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0",
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra",
            "00_4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "0g-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01x",
        ] {
            assert!(TraceParent::parse(bad).is_none(), "{bad:?}");
        }
        // A later version may carry more, after a dash.
        let later = "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00-more";
        assert_eq!(TraceParent::parse(later).unwrap().version, 1);
    }

    #[test]
    fn a_context_checks_both_values() {
        let c = TraceContext::new(GOOD, Some(" vendor=a,other=b ")).unwrap();
        assert_eq!(c.traceparent(), GOOD);
        assert_eq!(c.tracestate(), Some("vendor=a,other=b"));
        assert_eq!(
            TraceContext::new(GOOD, Some("")).unwrap().tracestate(),
            None
        );
        let e = TraceContext::new("nope", None).unwrap_err();
        assert_eq!(e.kind().code(), "invalid_argument");
        assert!(e.message().contains("traceparent"), "{}", e.message());
        let long = "k=".to_owned() + &"v".repeat(MAX_TRACESTATE);
        assert!(TraceContext::new(GOOD, Some(&long)).is_err());
        assert!(TraceContext::new(GOOD, Some("k=v\n")).is_ok(), "trimmed");
        assert!(TraceContext::new(GOOD, Some("k=\u{7}v")).is_err());
        assert!(TraceContext::new(GOOD, Some("k=é")).is_err());
    }

    proptest! {
        #[test]
        fn any_text_is_read_or_refused_never_a_panic(s in ".{0,80}") {
            let _ = TraceContext::new(&s, Some(&s));
        }

        #[test]
        fn every_valid_value_reads_back(trace in any::<[u8; 16]>(), parent in any::<[u8; 8]>(), flags in any::<u8>()) {
            prop_assume!(trace != [0; 16] && parent != [0; 8]);
            let p = TraceParent { version: 0, trace_id: trace, parent_id: parent, flags };
            prop_assert_eq!(TraceParent::parse(&p.to_header()), Some(p));
        }
    }
}
