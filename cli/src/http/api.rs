//! The console API's shapes and rules (docs/console.md): JSON answers and errors, bytes as
//! `{"b64", "text"}`, versions decoded, query strings, and who may do what — the token, the
//! origin and the host.

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};

use base64::Engine;
use base64::engine::general_purpose::{URL_SAFE, URL_SAFE_NO_PAD};
use bytes::Bytes;
use hyper::header::{CONTENT_TYPE, HOST, HeaderValue, ORIGIN};
use hyper::{HeaderMap, Response, StatusCode};
use mqstate::{Error, ErrorKind, Hlc};
use serde_json::{Value, json};

use super::{Body, whole};

/// The header that carries the token.
pub const TOKEN_HEADER: &str = "x-mqstate-token";

/// An answer that is not a success: its status, code and message.
#[derive(Debug)]
pub struct Refusal {
    pub status: StatusCode,
    pub code: &'static str,
    pub message: String,
}

impl Refusal {
    pub fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> Refusal {
        Refusal {
            status,
            code,
            message: message.into(),
        }
    }

    /// Bad input (`400 invalid_argument`).
    pub fn invalid(message: impl Into<String>) -> Refusal {
        Refusal::new(StatusCode::BAD_REQUEST, "invalid_argument", message)
    }

    pub fn response(&self) -> Response<Body> {
        json_response(
            self.status,
            &json!({"error": {"code": self.code, "message": self.message}}),
        )
    }
}

impl From<Error> for Refusal {
    /// A client's or the inspector's error: the code is the vocabulary's, the status says
    /// whose fault it is.
    fn from(e: Error) -> Refusal {
        let kind = e.kind();
        let status = match kind {
            ErrorKind::InvalidArgument => StatusCode::BAD_REQUEST,
            ErrorKind::Store(_) => StatusCode::CONFLICT,
            ErrorKind::Unsupported => StatusCode::NOT_IMPLEMENTED,
            _ if kind.is_retryable() || kind.is_connect() => StatusCode::SERVICE_UNAVAILABLE,
            ErrorKind::Closed | ErrorKind::Rpc(_) => StatusCode::SERVICE_UNAVAILABLE,
            _ => StatusCode::INTERNAL_SERVER_ERROR,
        };
        Refusal::new(status, e.kind().code(), e.to_string())
    }
}

/// A JSON answer.
pub fn json_response(status: StatusCode, value: &Value) -> Response<Body> {
    let mut response = Response::new(whole(value.to_string()));
    *response.status_mut() = status;
    response.headers_mut().insert(
        CONTENT_TYPE,
        HeaderValue::from_static("application/json; charset=utf-8"),
    );
    response
}

/// Bytes as base64url without padding: how the API names keys (`after`, `key_b64`).
pub fn b64(bytes: &[u8]) -> String {
    URL_SAFE_NO_PAD.encode(bytes)
}

/// Bytes as the API shows them: `{"b64": base64url, "text": UTF-8 if they are}`.
pub fn bytes_json(bytes: &[u8]) -> Value {
    let mut shown = json!({"b64": b64(bytes)});
    if let Ok(text) = std::str::from_utf8(bytes) {
        shown["text"] = Value::from(text);
    }
    shown
}

/// base64url, padding optional.
pub fn decode_b64(what: &str, text: &str) -> Result<Bytes, Refusal> {
    let engine = if text.ends_with('=') {
        &URL_SAFE
    } else {
        &URL_SAFE_NO_PAD
    };
    engine
        .decode(text)
        .map(Bytes::from)
        .map_err(|e| Refusal::invalid(format!("{what}: not base64url: {e}")))
}

/// A version, decoded.
pub fn version_json(version: &Hlc) -> Value {
    json!({
        "text": version.to_text(),
        "wall_ms": version.wall_ms(),
        "counter": version.counter(),
        "node": version.node_id(),
    })
}

/// A query string's parameters (percent-decoded; the last of a name wins).
pub fn query(query: Option<&str>) -> HashMap<String, String> {
    form_urlencoded::parse(query.unwrap_or_default().as_bytes())
        .into_owned()
        .collect()
}

/// The bytes named `name` (text) or `name_b64` in query parameters or a JSON object;
/// `None` when neither is given.
pub fn bytes_param(
    name: &str,
    text: Option<&str>,
    b64: Option<&str>,
) -> Result<Option<Bytes>, Refusal> {
    match (text, b64) {
        (Some(_), Some(_)) => Err(Refusal::invalid(format!(
            "give {name} or {name}_b64, not both"
        ))),
        (Some(text), None) => Ok(Some(Bytes::copy_from_slice(text.as_bytes()))),
        (None, Some(b64)) => decode_b64(&format!("{name}_b64"), b64).map(Some),
        (None, None) => Ok(None),
    }
}

/// A non-empty key from `key` / `key_b64`.
pub fn key_param(text: Option<&str>, b64: Option<&str>) -> Result<Bytes, Refusal> {
    match bytes_param("key", text, b64)? {
        Some(key) if !key.is_empty() => Ok(key),
        Some(_) => Err(Refusal::invalid("the key must not be empty")),
        None => Err(Refusal::invalid("give the key: key (text) or key_b64")),
    }
}

/// Who may ask what: the console's rules (docs/console.md, "Safety").
pub struct Guard {
    token: String,
    /// Bound to a loopback address: reads need no token, and only loopback hosts are served.
    loopback: bool,
}

impl Guard {
    pub fn new(bound: SocketAddr, token: String) -> Guard {
        Guard {
            token,
            loopback: bound.ip().is_loopback(),
        }
    }

    /// Whether reads need the token (the listener is not on loopback).
    pub fn token_for_reads(&self) -> bool {
        !self.loopback
    }

    /// Checks a request for the page itself, which holds no data and must open from the
    /// URL `serve` prints (its token is in the fragment, which browsers never send): on
    /// loopback, its `Host` must be a loopback name (a page on a rebound DNS name must not
    /// reach the API through it); elsewhere anyone may load it.
    pub fn check_host(&self, headers: &HeaderMap) -> Result<(), Refusal> {
        if !self.loopback {
            return Ok(());
        }
        let host = headers
            .get(HOST)
            .and_then(|h| h.to_str().ok())
            .unwrap_or_default();
        if loopback_host(host) {
            return Ok(());
        }
        Err(Refusal::new(
            StatusCode::FORBIDDEN,
            "forbidden",
            format!(
                "Host {host:?} is not a loopback name: the console answers only 127.0.0.1, \
                 localhost or [::1] while it listens on loopback"
            ),
        ))
    }

    /// Checks a read of the API: [`Guard::check_host`]'s rule, and off loopback the token
    /// (the header, or `token=` in the query: a browser's EventSource sends no headers).
    pub fn check_read(
        &self,
        headers: &HeaderMap,
        query_token: Option<&str>,
    ) -> Result<(), Refusal> {
        self.check_host(headers)?;
        if self.loopback {
            return Ok(());
        }
        let given = headers
            .get(TOKEN_HEADER)
            .and_then(|t| t.to_str().ok())
            .or(query_token);
        self.check_token(given)
    }

    /// Checks a write or fault: the token in its header, a JSON body, and an `Origin` (when
    /// the browser sends one) that is the console's own.
    pub fn check_write(&self, headers: &HeaderMap) -> Result<(), Refusal> {
        self.check_read(headers, None)?;
        if let Some(origin) = headers.get(ORIGIN) {
            let host = headers
                .get(HOST)
                .and_then(|h| h.to_str().ok())
                .unwrap_or_default();
            let own = format!("http://{host}");
            if origin.to_str().ok() != Some(own.as_str()) {
                return Err(Refusal::new(
                    StatusCode::FORBIDDEN,
                    "forbidden",
                    format!("Origin {origin:?} is not the console's own ({own})"),
                ));
            }
        }
        self.check_token(headers.get(TOKEN_HEADER).and_then(|t| t.to_str().ok()))?;
        let json = headers
            .get(CONTENT_TYPE)
            .and_then(|c| c.to_str().ok())
            .is_some_and(|c| c.trim_start().starts_with("application/json"));
        if !json {
            return Err(Refusal::new(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                "invalid_argument",
                "writes and faults are JSON: send Content-Type: application/json",
            ));
        }
        Ok(())
    }

    fn check_token(&self, given: Option<&str>) -> Result<(), Refusal> {
        match given {
            Some(given) if same(given.trim().as_bytes(), self.token.as_bytes()) => Ok(()),
            Some(_) => Err(Refusal::new(
                StatusCode::UNAUTHORIZED,
                "unauthorized",
                "the token is not this server's (see the line `mqstate serve` printed at start-up)",
            )),
            None => Err(Refusal::new(
                StatusCode::UNAUTHORIZED,
                "unauthorized",
                format!(
                    "this needs the token `mqstate serve` printed at start-up, in the \
                     {TOKEN_HEADER} header"
                ),
            )),
        }
    }
}

/// Compares in time that does not depend on where they differ.
fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |d, (x, y)| d | (x ^ y)) == 0
}

/// Whether a `Host` header names a loopback host (with or without a port).
fn loopback_host(host: &str) -> bool {
    let name = match host.strip_prefix('[') {
        Some(rest) => rest.split(']').next().unwrap_or_default(),
        None => host.rsplit_once(':').map_or(host, |(name, _)| name),
    };
    name.eq_ignore_ascii_case("localhost")
        || name.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.insert(*name, HeaderValue::from_str(value).unwrap());
        }
        map
    }

    #[test]
    fn hosts_origins_and_tokens() {
        for host in [
            "127.0.0.1:80",
            "localhost",
            "LOCALHOST:1",
            "[::1]:8080",
            "127.9.9.9",
        ] {
            assert!(loopback_host(host), "{host}");
        }
        for host in [
            "evil.example:80",
            "",
            "10.0.0.1:80",
            "[::2]:1",
            "localhost.evil",
        ] {
            assert!(!loopback_host(host), "{host}");
        }
        let guard = Guard::new("127.0.0.1:9".parse().unwrap(), "t0k".into());
        let ok = [
            ("host", "127.0.0.1:9"),
            ("x-mqstate-token", "t0k"),
            ("content-type", "application/json"),
        ];
        assert!(guard.check_read(&headers(&ok[..1]), None).is_ok());
        assert!(guard.check_write(&headers(&ok)).is_ok());
        let rebound = guard.check_read(&headers(&[("host", "evil.example")]), None);
        assert_eq!(rebound.unwrap_err().status, StatusCode::FORBIDDEN);
        let no_token = guard.check_write(&headers(&[ok[0], ok[2]])).unwrap_err();
        assert_eq!(no_token.status, StatusCode::UNAUTHORIZED);
        let wrong = guard
            .check_write(&headers(&[ok[0], ("x-mqstate-token", "t0x"), ok[2]]))
            .unwrap_err();
        assert_eq!(wrong.status, StatusCode::UNAUTHORIZED);
        let form = guard
            .check_write(&headers(&[ok[0], ok[1], ("content-type", "text/plain")]))
            .unwrap_err();
        assert_eq!(form.status, StatusCode::UNSUPPORTED_MEDIA_TYPE);
        let cross = [ok[0], ok[1], ok[2], ("origin", "http://evil.example")];
        assert_eq!(
            guard.check_write(&headers(&cross)).unwrap_err().status,
            StatusCode::FORBIDDEN
        );
        let own = [ok[0], ok[1], ok[2], ("origin", "http://127.0.0.1:9")];
        assert!(guard.check_write(&headers(&own)).is_ok());
        let open = Guard::new("0.0.0.0:9".parse().unwrap(), "t0k".into());
        assert!(open.token_for_reads());
        assert!(
            open.check_host(&headers(&[("host", "box:9")])).is_ok(),
            "the page opens"
        );
        assert!(
            guard
                .check_host(&headers(&[("host", "evil.example")]))
                .is_err()
        );
        assert!(
            open.check_read(&headers(&[("host", "box:9")]), None)
                .is_err()
        );
        assert!(
            open.check_read(&headers(&[("host", "box:9")]), Some("t0k"))
                .is_ok()
        );
    }

    #[test]
    fn bytes_round_trip_as_base64url() {
        let shown = bytes_json(b"\xff\x00k");
        assert!(shown.get("text").is_none(), "not UTF-8: no text");
        let b64 = shown["b64"].as_str().unwrap();
        assert_eq!(&decode_b64("k", b64).unwrap()[..], b"\xff\x00k");
        assert_eq!(bytes_json(b"k/1")["text"], "k/1");
        assert_eq!(
            &decode_b64("k", "aw==").unwrap()[..],
            b"k",
            "padding accepted"
        );
        assert!(decode_b64("k", "!!").is_err());
        assert!(key_param(Some(""), None).is_err());
        assert!(key_param(Some("a"), Some("YQ")).is_err());
        assert_eq!(&key_param(None, Some("YQ")).unwrap()[..], b"a");
    }
}
