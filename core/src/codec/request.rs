//! Request payloads (spec §3): encoding for clients, decoding for the service.
//!
//! [`Request`] is generic over its byte container so a client can encode borrowed slices
//! (`Request<&[u8]>`) without copying them first, while the service decodes into
//! zero-copy [`Bytes`] slices of the received payload.

use std::fmt;
use std::num::NonZeroU64;

use bytes::Bytes;

use super::store_error::StoreError;
use super::wire::{self, Reader};
use crate::error::Error;
use crate::error::StoreErrorKind;

/// The verbs of the state store.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Verb {
    /// `SET key value [NX|NEX] [PX ms]`
    Set,
    /// `GET key`
    Get,
    /// `DEL key`
    Del,
    /// `VDEL key value`
    VDel,
    /// `KEYNOTIFY key [STOP]`
    KeyNotify,
    /// `SCAN pattern [token]` (spec §3.1)
    Scan,
}

impl Verb {
    /// Every verb.
    pub const ALL: [Verb; 6] = [
        Verb::Set,
        Verb::Get,
        Verb::Del,
        Verb::VDel,
        Verb::KeyNotify,
        Verb::Scan,
    ];

    /// The verb as sent on the wire (upper case).
    pub fn as_str(self) -> &'static str {
        match self {
            Verb::Set => "SET",
            Verb::Get => "GET",
            Verb::Del => "DEL",
            Verb::VDel => "VDEL",
            Verb::KeyNotify => "KEYNOTIFY",
            Verb::Scan => "SCAN",
        }
    }

    /// Whether a request of this verb may change the store (or a registration): only such a
    /// request "may have been applied" when its answer is lost. GET and SCAN only read.
    pub fn changes_state(self) -> bool {
        !matches!(self, Verb::Get | Verb::Scan)
    }

    /// The verb spelled exactly `name` (upper case, as the service requires).
    pub fn from_wire(name: &[u8]) -> Option<Verb> {
        Verb::ALL
            .into_iter()
            .find(|v| v.as_str().as_bytes() == name)
    }
}

impl fmt::Display for Verb {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The condition of a SET.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum SetCondition {
    /// Set unconditionally.
    #[default]
    Always,
    /// `NX`: set only if the key does not exist.
    NotExists,
    /// `NEX`: set only if the key does not exist or already holds this same value.
    NotExistsOrEqual,
}

impl SetCondition {
    /// A condition as callers spell it in every language: `None` (set unconditionally),
    /// `"nx"` or `"nex"` in any case. Anything else is an invalid argument, with one
    /// message everywhere.
    pub fn parse(text: Option<&str>) -> Result<SetCondition, Error> {
        let Some(text) = text else {
            return Ok(SetCondition::Always);
        };
        if text.eq_ignore_ascii_case("nx") {
            Ok(SetCondition::NotExists)
        } else if text.eq_ignore_ascii_case("nex") {
            Ok(SetCondition::NotExistsOrEqual)
        } else {
            Err(Error::invalid_argument(format!(
                "condition must be \"nx\" or \"nex\" (in any case) or none, not {text:?}"
            )))
        }
    }

    /// The condition's name as bindings show it (`"nx"`, `"nex"`), `None` for a plain SET.
    pub fn name(self) -> Option<&'static str> {
        match self {
            SetCondition::Always => None,
            SetCondition::NotExists => Some("nx"),
            SetCondition::NotExistsOrEqual => Some("nex"),
        }
    }

    /// The option word on the wire, if any.
    pub fn as_wire(self) -> Option<&'static str> {
        match self {
            SetCondition::Always => None,
            SetCondition::NotExists => Some("NX"),
            SetCondition::NotExistsOrEqual => Some("NEX"),
        }
    }
}

/// A state store request. `B` holds keys and values: `Bytes` when decoded, any
/// `AsRef<[u8]>` (such as `&[u8]`) when encoding.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Request<B = Bytes> {
    /// Store `value` under `key`.
    Set {
        /// The key; must not be empty.
        key: B,
        /// The value; may be empty.
        value: B,
        /// NX / NEX.
        condition: SetCondition,
        /// `PX`: expire this many milliseconds after the SET.
        expiry_ms: Option<NonZeroU64>,
    },
    /// Read `key`.
    Get {
        /// The key.
        key: B,
    },
    /// Delete `key`.
    Del {
        /// The key.
        key: B,
    },
    /// Delete `key` if it holds `value`.
    VDel {
        /// The key.
        key: B,
        /// The value the key must hold.
        value: B,
    },
    /// Start (or with `stop`, end) notifications about `key` for the sending client.
    KeyNotify {
        /// The key.
        key: B,
        /// `STOP`: end the registration.
        stop: bool,
    },
    /// List one page of the keys that match a glob `pattern` (spec §3.1).
    Scan {
        /// The glob pattern (`*`, `?`, `[…]`, `[^…]`, `\` escapes), matched byte-wise.
        pattern: B,
        /// The previous page's continuation token, sent back byte for byte; `None` for
        /// the first page.
        token: Option<B>,
    },
}

impl<B: AsRef<[u8]>> Request<B> {
    /// The verb.
    pub fn verb(&self) -> Verb {
        match self {
            Request::Set { .. } => Verb::Set,
            Request::Get { .. } => Verb::Get,
            Request::Del { .. } => Verb::Del,
            Request::VDel { .. } => Verb::VDel,
            Request::KeyNotify { .. } => Verb::KeyNotify,
            Request::Scan { .. } => Verb::Scan,
        }
    }

    /// The key; for SCAN, which names no key, its pattern (the first argument).
    pub fn key(&self) -> &[u8] {
        match self {
            Request::Set { key, .. }
            | Request::Get { key }
            | Request::Del { key }
            | Request::VDel { key, .. }
            | Request::KeyNotify { key, .. } => key.as_ref(),
            Request::Scan { pattern, .. } => pattern.as_ref(),
        }
    }

    /// The arguments in wire order (the verb first); `px` holds PX's digits.
    #[inline]
    fn args<'s>(&'s self, px: &'s mut [u8; wire::MAX_DIGITS]) -> ([&'s [u8]; 6], usize) {
        let mut args: [&[u8]; 6] = [&[]; 6];
        args[0] = self.verb().as_str().as_bytes();
        args[1] = self.key();
        let mut n = 2;
        let mut push = |arg: &'s [u8]| {
            args[n] = arg;
            n += 1;
        };
        match self {
            Request::Set {
                value,
                condition,
                expiry_ms,
                ..
            } => {
                push(value.as_ref());
                if let Some(word) = condition.as_wire() {
                    push(word.as_bytes());
                }
                if let Some(ms) = expiry_ms {
                    push(b"PX");
                    push(wire::format_decimal(ms.get(), px));
                }
            }
            Request::VDel { value, .. } => push(value.as_ref()),
            Request::KeyNotify { stop: true, .. } => push(b"STOP"),
            Request::Scan {
                token: Some(token), ..
            } => push(token.as_ref()),
            Request::Get { .. }
            | Request::Del { .. }
            | Request::KeyNotify { .. }
            | Request::Scan { .. } => {}
        }
        (args, n)
    }

    #[inline]
    fn len_of(args: &[&[u8]]) -> usize {
        wire::array_header_len(args.len())
            + args.iter().map(|a| wire::blob_len(a.len())).sum::<usize>()
    }

    #[inline]
    fn write(args: &[&[u8]], out: &mut Vec<u8>) {
        let mut w = wire::ArrayWriter::new(out, args.len());
        for arg in args {
            w.blob(arg);
        }
        w.finish();
    }

    /// The exact size of the encoded payload.
    #[inline]
    pub fn encoded_len(&self) -> usize {
        let mut px = [0u8; wire::MAX_DIGITS];
        let (args, n) = self.args(&mut px);
        Self::len_of(&args[..n])
    }

    /// Appends the payload to `out`.
    #[inline]
    pub fn encode_to(&self, out: &mut Vec<u8>) {
        let mut px = [0u8; wire::MAX_DIGITS];
        let (args, n) = self.args(&mut px);
        out.reserve(Self::len_of(&args[..n]));
        Self::write(&args[..n], out);
    }

    /// The payload, in one exactly-sized allocation.
    #[inline]
    pub fn encode(&self) -> Bytes {
        // Reserving on an empty Vec allocates exactly the encoded length.
        let mut out = Vec::new();
        self.encode_to(&mut out);
        Bytes::from(out)
    }

    /// Checks what the service would refuse before it is sent: an empty key (or, for
    /// SCAN, an empty pattern, which could match nothing).
    pub fn validate(&self) -> Result<(), Error> {
        if let Request::Scan { pattern, .. } = self {
            if pattern.as_ref().is_empty() {
                return Err(Error::invalid_argument("the pattern must not be empty"));
            }
            return Ok(());
        }
        if self.key().is_empty() {
            return Err(Error::invalid_argument("the key must not be empty"));
        }
        Ok(())
    }
}

impl Request<Bytes> {
    /// Decodes a request payload as the service does, reporting the exact store error the
    /// service answers with: `syntax error` for anything that is not an array of blob
    /// strings or has bad options, `unknown command`, `wrong number of arguments`, and
    /// `the key length is zero`.
    pub fn decode(payload: &Bytes) -> Result<Request<Bytes>, StoreError> {
        let args =
            decode_args(payload).map_err(|_| StoreError::new(StoreErrorKind::SyntaxError))?;
        let (verb, args) = match args.split_first() {
            Some((verb, args)) => (verb, args),
            None => return Err(StoreErrorKind::SyntaxError.into()),
        };
        let verb = Verb::from_wire(verb).ok_or(StoreErrorKind::UnknownCommand)?;
        let arity_ok = match verb {
            Verb::Set => args.len() >= 2,
            Verb::Get | Verb::Del => args.len() == 1,
            Verb::VDel => args.len() == 2,
            Verb::KeyNotify | Verb::Scan => (1..=2).contains(&args.len()),
        };
        if !arity_ok {
            return Err(StoreErrorKind::WrongNumberOfArguments.into());
        }
        let key = args[0].clone();
        let request = match verb {
            Verb::Set => decode_set(key, args[1].clone(), &args[2..])?,
            Verb::Get => Request::Get { key },
            Verb::Del => Request::Del { key },
            Verb::VDel => Request::VDel {
                key,
                value: args[1].clone(),
            },
            Verb::KeyNotify => match args.get(1) {
                None => Request::KeyNotify { key, stop: false },
                Some(word) if word.as_ref() == b"STOP" => Request::KeyNotify { key, stop: true },
                Some(_) => return Err(StoreErrorKind::SyntaxError.into()),
            },
            // An empty pattern is no error for the service: it matches no key.
            Verb::Scan => {
                return Ok(Request::Scan {
                    pattern: key,
                    token: args.get(1).cloned(),
                });
            }
        };
        if request.key().is_empty() {
            return Err(StoreErrorKind::KeyLengthZero.into());
        }
        Ok(request)
    }
}

/// The options after `SET key value`: at most one condition, then at most one `PX ms`.
fn decode_set(key: Bytes, value: Bytes, mut options: &[Bytes]) -> Result<Request, StoreError> {
    let syntax = || StoreError::new(StoreErrorKind::SyntaxError);
    let mut condition = SetCondition::Always;
    if let Some((word, rest)) = options.split_first() {
        condition = match word.as_ref() {
            b"NX" => SetCondition::NotExists,
            b"NEX" => SetCondition::NotExistsOrEqual,
            _ => SetCondition::Always,
        };
        if condition != SetCondition::Always {
            options = rest;
        }
    }
    let mut expiry_ms = None;
    if let Some((word, rest)) = options.split_first() {
        if word.as_ref() != b"PX" {
            return Err(syntax());
        }
        let ms = rest.first().ok_or_else(syntax)?;
        let ms = wire::parse_u64(ms)
            .and_then(NonZeroU64::new)
            .ok_or_else(syntax)?;
        expiry_ms = Some(ms);
        options = &rest[1..];
    }
    if !options.is_empty() {
        return Err(syntax());
    }
    Ok(Request::Set {
        key,
        value,
        condition,
        expiry_ms,
    })
}

/// The arguments of a request: an array of one or more blob strings, nothing after it.
fn decode_args(payload: &Bytes) -> Result<Vec<Bytes>, Error> {
    let mut reader = Reader::new(payload);
    let n = reader.array_header()?;
    let mut args = Vec::with_capacity(n);
    for _ in 0..n {
        args.push(reader.blob()?);
    }
    reader.finish()?;
    Ok(args)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode(payload: &[u8]) -> Result<Request, StoreErrorKind> {
        Request::decode(&Bytes::copy_from_slice(payload)).map_err(|e| e.kind())
    }

    #[test]
    fn encode_matches_encoded_len() {
        let r: Request<&[u8]> = Request::Set {
            key: b"k",
            value: b"v",
            condition: SetCondition::NotExistsOrEqual,
            expiry_ms: NonZeroU64::new(12345),
        };
        let bytes = r.encode();
        assert_eq!(bytes.len(), r.encoded_len());
        let mut appended = b"prefix".to_vec();
        r.encode_to(&mut appended);
        assert_eq!(&appended[6..], &bytes[..]);
    }

    #[test]
    fn decoder_reports_the_service_error_kinds() {
        use StoreErrorKind::*;
        let cases: &[(&[u8], StoreErrorKind)] = &[
            (b"", SyntaxError),
            (b"*0\r\n", SyntaxError),
            (b"+OK\r\n", SyntaxError),
            (b"*1\r\n$3\r\nGET\r\nextra", SyntaxError),
            (b"*2\r\n$3\r\nget\r\n$1\r\nk\r\n", UnknownCommand),
            (b"*2\r\n$4\r\nPING\r\n$1\r\nk\r\n", UnknownCommand),
            (b"*1\r\n$3\r\nGET\r\n", WrongNumberOfArguments),
            (
                b"*3\r\n$3\r\nGET\r\n$1\r\nk\r\n$1\r\nx\r\n",
                WrongNumberOfArguments,
            ),
            (b"*2\r\n$3\r\nSET\r\n$1\r\nk\r\n", WrongNumberOfArguments),
            (b"*2\r\n$4\r\nVDEL\r\n$1\r\nk\r\n", WrongNumberOfArguments),
            (b"*1\r\n$9\r\nKEYNOTIFY\r\n", WrongNumberOfArguments),
            (
                b"*3\r\n$9\r\nKEYNOTIFY\r\n$1\r\nk\r\n$4\r\nstop\r\n",
                SyntaxError,
            ),
            (
                b"*4\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n$2\r\nXX\r\n",
                SyntaxError,
            ),
            (
                b"*4\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n$2\r\nPX\r\n",
                SyntaxError,
            ),
            (
                b"*5\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n$2\r\nPX\r\n$1\r\n0\r\n",
                SyntaxError,
            ),
            (
                b"*5\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n$2\r\nPX\r\n$3\r\n1.5\r\n",
                SyntaxError,
            ),
            (
                b"*5\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n$2\r\nNX\r\n$3\r\nNEX\r\n",
                SyntaxError,
            ),
            (b"*2\r\n$3\r\nGET\r\n$0\r\n\r\n", KeyLengthZero),
            (b"*3\r\n$3\r\nSET\r\n$0\r\n\r\n$1\r\nv\r\n", KeyLengthZero),
        ];
        for (payload, kind) in cases {
            assert_eq!(
                decode(payload),
                Err(*kind),
                "{:?}",
                String::from_utf8_lossy(payload)
            );
        }
    }

    #[test]
    fn conditions_parse_in_any_case_with_one_message() {
        assert_eq!(SetCondition::parse(None), Ok(SetCondition::Always));
        for (text, want) in [
            ("nx", SetCondition::NotExists),
            ("NX", SetCondition::NotExists),
            ("Nex", SetCondition::NotExistsOrEqual),
            ("NEX", SetCondition::NotExistsOrEqual),
        ] {
            assert_eq!(SetCondition::parse(Some(text)), Ok(want));
            assert_eq!(
                SetCondition::parse(want.name()),
                Ok(want),
                "names parse back"
            );
        }
        let err = SetCondition::parse(Some("XX")).unwrap_err();
        assert_eq!(err.kind(), crate::ErrorKind::InvalidArgument);
        assert!(err.message().contains("\"nx\" or \"nex\""), "{err}");
    }

    #[test]
    fn scan_round_trips_with_and_without_a_token() {
        for token in [None, Some(&b"\0\xffx"[..]), Some(&b""[..])] {
            let r: Request<&[u8]> = Request::Scan {
                pattern: b"a*",
                token,
            };
            let bytes = r.encode();
            assert_eq!(bytes.len(), r.encoded_len());
            let back = Request::decode(&bytes).unwrap();
            assert_eq!(back.verb(), Verb::Scan);
            assert_eq!(back.key(), b"a*");
            assert_eq!(
                back,
                Request::Scan {
                    pattern: Bytes::from_static(b"a*"),
                    token: token.map(Bytes::copy_from_slice),
                }
            );
        }
        assert_eq!(
            decode(b"*1\r\n$4\r\nSCAN\r\n"),
            Err(StoreErrorKind::WrongNumberOfArguments)
        );
        assert_eq!(
            decode(b"*4\r\n$4\r\nSCAN\r\n$1\r\n*\r\n$1\r\nt\r\n$1\r\nx\r\n"),
            Err(StoreErrorKind::WrongNumberOfArguments)
        );
        let empty: Request<&[u8]> = Request::Scan {
            pattern: b"",
            token: None,
        };
        assert!(empty.validate().is_err());
    }

    #[test]
    fn px_after_condition_decodes() {
        let r = decode(
            b"*6\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n$3\r\nNEX\r\n$2\r\nPX\r\n$2\r\n10\r\n",
        );
        assert_eq!(
            r,
            Ok(Request::Set {
                key: Bytes::from_static(b"k"),
                value: Bytes::from_static(b"v"),
                condition: SetCondition::NotExistsOrEqual,
                expiry_ms: NonZeroU64::new(10),
            })
        );
    }
}
