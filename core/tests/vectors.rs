//! Runs every case of every conformance vector file (the project's own copy in
//! `tests/vectors/`; `MQSTATE_VECTORS` overrides the folder) through the public API, and
//! checks that the copy matches the shared originals (`../shared/vectors/` beside the
//! project root) whenever that folder exists.

use std::num::NonZeroU64;
use std::path::PathBuf;

use bytes::Bytes;
use mqstate::codec::{
    KeyEvent, Notification, Request, Response, SetCondition, StoreErrorKind, Verb,
};
use mqstate::hlc::Hlc;
use mqstate::{ErrorKind, topics};
use serde_json::Value;

fn vectors_dir() -> PathBuf {
    match std::env::var_os("MQSTATE_VECTORS") {
        Some(dir) => PathBuf::from(dir),
        None => PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/vectors"),
    }
}

/// The shared originals, beside the project root; absent in a bare clone.
fn shared_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/vectors")
}

/// The names and contents of the files of a vector folder, sorted by name.
fn folder(dir: &std::path::Path) -> Vec<(String, Vec<u8>)> {
    let mut files: Vec<(String, Vec<u8>)> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display()))
        .map(|entry| {
            let path = entry.expect("directory entry").path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            let bytes = std::fs::read(&path)
                .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
            (name, bytes)
        })
        .collect();
    files.sort();
    files
}

#[test]
fn the_project_copy_matches_the_shared_vectors() {
    let shared = shared_dir();
    if !shared.is_dir() {
        eprintln!(
            "no {}: a bare clone checks only its own copy",
            shared.display()
        );
        return;
    }
    let own = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/vectors");
    let (own, shared) = (folder(&own), folder(&shared));
    let names = |files: &[(String, Vec<u8>)]| files.iter().map(|f| f.0.clone()).collect::<Vec<_>>();
    assert_eq!(
        names(&own),
        names(&shared),
        "tests/vectors holds other files than ../shared/vectors: copy them over"
    );
    for ((name, mine), (_, theirs)) in own.iter().zip(&shared) {
        assert!(
            mine == theirs,
            "tests/vectors/{name} differs from ../shared/vectors/{name}: copy it over"
        );
    }
}

fn load(name: &str) -> Value {
    let path = vectors_dir().join(name);
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// A JSON string of code points ≤ U+00FF, one per byte.
fn latin1(v: &Value) -> Vec<u8> {
    v.as_str()
        .expect("byte field is a string")
        .chars()
        .map(|c| u8::try_from(u32::from(c)).expect("code point above U+00FF"))
        .collect()
}

fn cases<'a>(v: &'a Value, what: &str) -> &'a Vec<Value> {
    let list = v
        .as_array()
        .unwrap_or_else(|| panic!("{what} is not a list"));
    assert!(!list.is_empty(), "{what} has no cases");
    list
}

#[test]
fn requests() {
    let file = load("requests.json");
    for case in cases(&file, "requests.json") {
        let name = case["name"].as_str().unwrap();
        let cmd = &case["command"];
        let key = latin1(&cmd["key"]);
        let expected = latin1(&case["payload"]);
        let value = || latin1(&cmd["value"]);
        let request: Request<Vec<u8>> = match cmd["verb"].as_str().unwrap() {
            "SET" => Request::Set {
                key,
                value: value(),
                condition: match cmd["condition"].as_str() {
                    None => SetCondition::Always,
                    Some("NX") => SetCondition::NotExists,
                    Some("NEX") => SetCondition::NotExistsOrEqual,
                    Some(other) => panic!("{name}: condition {other}"),
                },
                expiry_ms: cmd["px_ms"].as_u64().map(|ms| NonZeroU64::new(ms).unwrap()),
            },
            "GET" => Request::Get { key },
            "DEL" => Request::Del { key },
            "VDEL" => Request::VDel {
                key,
                value: value(),
            },
            "KEYNOTIFY" => Request::KeyNotify {
                key,
                stop: cmd["stop"].as_bool().unwrap_or(false),
            },
            other => panic!("{name}: verb {other}"),
        };
        let encoded = request.encode();
        assert_eq!(&encoded[..], &expected[..], "{name}: encode");
        assert_eq!(request.encoded_len(), expected.len(), "{name}: encoded_len");
        // The service side decodes it back to the same request.
        let decoded = Request::decode(&Bytes::from(expected)).expect(name);
        assert_eq!(decoded.verb(), request.verb(), "{name}: decode verb");
        assert_eq!(decoded.encode(), encoded, "{name}: decode round trip");
    }
}

#[test]
fn responses() {
    let file = load("responses.json");
    for case in cases(&file, "responses.json") {
        let name = case["name"].as_str().unwrap();
        let verb_name = case["verb"].as_str().unwrap();
        let verb = Verb::ALL
            .into_iter()
            .find(|v| v.as_str() == verb_name)
            .unwrap_or_else(|| panic!("{name}: verb {verb_name}"));
        let payload = Bytes::from(latin1(&case["payload"]));
        let expect = &case["expect"];
        let got = Response::decode_for(verb, &payload);
        let kind = expect["kind"].as_str().unwrap();
        if kind == "malformed" {
            let err = got.expect_err(name);
            assert_eq!(err.kind(), ErrorKind::Malformed, "{name}");
            continue;
        }
        let got = got.unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(got.kind_name(), kind, "{name}");
        match &got {
            Response::Value(v) => assert_eq!(&v[..], &latin1(&expect["value"])[..], "{name}"),
            Response::Count(n) => assert_eq!(Some(*n), expect["count"].as_u64(), "{name}"),
            Response::Error(e) => {
                let want = StoreErrorKind::from_name(expect["error_kind"].as_str().unwrap());
                assert_eq!(Some(e.kind()), want, "{name}");
                assert_eq!(e.text(), expect["error_text"].as_str().unwrap(), "{name}");
                // Into the one error model, the text kept exactly.
                let err = mqstate::Error::from(e.clone());
                assert_eq!(err.kind(), ErrorKind::Store(e.kind()), "{name}");
                assert_eq!(err.message(), e.text(), "{name}");
            }
            Response::Page(_) => panic!("{name}: a SCAN page in responses.json"),
            Response::Ok | Response::NotApplied | Response::NotFound => {}
        }
        if let Some(applied) = expect["applied"].as_bool() {
            assert_eq!(applied, got == Response::Ok, "{name}: applied");
        }
        // Re-encoding in the service's form decodes to the same response.
        assert_eq!(Response::decode(&got.encode()), Ok(got.clone()), "{name}");
    }
}

#[test]
fn scan() {
    let file = load("scan.json");
    for case in cases(&file["requests"], "scan.json requests") {
        let name = case["name"].as_str().unwrap();
        let cmd = &case["command"];
        assert_eq!(cmd["verb"], "SCAN", "{name}");
        let request: Request<Vec<u8>> = Request::Scan {
            pattern: latin1(&cmd["pattern"]),
            token: (!cmd["token"].is_null()).then(|| latin1(&cmd["token"])),
        };
        let expected = latin1(&case["payload"]);
        assert_eq!(&request.encode()[..], &expected[..], "{name}");
        assert_eq!(request.encoded_len(), expected.len(), "{name}");
        request.validate().unwrap_or_else(|e| panic!("{name}: {e}"));
        // The service decodes it back.
        let decoded = Request::decode(&Bytes::from(expected)).unwrap();
        assert_eq!(decoded.verb(), Verb::Scan, "{name}");
        assert_eq!(decoded.key(), request.key(), "{name}");
    }
    for case in cases(&file["responses"], "scan.json responses") {
        let name = case["name"].as_str().unwrap();
        assert_eq!(case["verb"], "SCAN", "{name}");
        let payload = Bytes::from(latin1(&case["payload"]));
        let expect = &case["expect"];
        let got = Response::decode_for(Verb::Scan, &payload);
        match expect["kind"].as_str().unwrap() {
            "malformed" => {
                let err = got.expect_err(name);
                assert_eq!(err.kind(), ErrorKind::Malformed, "{name}");
            }
            "keys" => {
                let Ok(Response::Page(page)) = &got else {
                    panic!("{name}: {got:?}");
                };
                let keys: Vec<Vec<u8>> = expect["keys"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(latin1)
                    .collect();
                let got_keys: Vec<Vec<u8>> = page.keys.iter().map(|k| k.to_vec()).collect();
                assert_eq!(got_keys, keys, "{name}");
                let token = (!expect["token"].is_null()).then(|| latin1(&expect["token"]));
                assert_eq!(page.token.as_ref().map(|t| t.to_vec()), token, "{name}");
                assert_eq!(page.is_last(), token.is_none(), "{name}");
                let again = got.clone().unwrap();
                assert_eq!(&again.encode()[..], &payload[..], "{name}: re-encoded");
            }
            "error" => {
                let Ok(Response::Error(e)) = &got else {
                    panic!("{name}: {got:?}");
                };
                let want = StoreErrorKind::from_name(expect["error_kind"].as_str().unwrap());
                assert_eq!(Some(e.kind()), want, "{name}");
                assert_eq!(e.text(), expect["error_text"].as_str().unwrap(), "{name}");
            }
            other => panic!("{name}: kind {other}"),
        }
    }
}

#[test]
fn notifications() {
    let file = load("notifications.json");
    for case in cases(&file, "notifications.json") {
        let name = case["name"].as_str().unwrap();
        let topic = case["topic"].as_str().unwrap();
        let payload = Bytes::from(latin1(&case["payload"]));
        let expect = &case["expect"];
        let got = Notification::decode(topic, &payload);
        match expect["kind"].as_str().unwrap() {
            "malformed" => {
                assert_eq!(got.expect_err(name).kind(), ErrorKind::Malformed, "{name}");
                continue;
            }
            kind => {
                let n = got.unwrap_or_else(|e| panic!("{name}: {e}"));
                assert_eq!(n.client_id, expect["client_id"].as_str().unwrap(), "{name}");
                assert_eq!(&n.key[..], &latin1(&expect["key"])[..], "{name}");
                match (kind, &n.event) {
                    ("set", KeyEvent::Set(v)) => {
                        assert_eq!(&v[..], &latin1(&expect["value"])[..], "{name}")
                    }
                    ("delete", KeyEvent::Delete) => {
                        assert_eq!(
                            &n.event.encode()[..],
                            b"*2\r\n$6\r\nNOTIFY\r\n$6\r\nDELETE\r\n"
                        )
                    }
                    _ => panic!("{name}: expected {kind}, got {:?}", n.event),
                }
                // Encoding gives a notification that decodes the same.
                let again = Notification::decode(&n.topic(), &n.event.encode()).unwrap();
                assert_eq!(again, n, "{name}");
            }
        }
    }
}

#[test]
fn topics_file() {
    let file = load("topics.json");
    assert_eq!(
        topics::REQUEST_TOPIC,
        file["request_topic"].as_str().unwrap()
    );
    for case in cases(&file["response_topic"], "response_topic") {
        let id = case["client_id"].as_str().unwrap();
        assert_eq!(topics::response_topic(id), case["topic"].as_str().unwrap());
    }
    for case in cases(&file["notification_filter"], "notification_filter") {
        let id = case["client_id"].as_str().unwrap();
        assert_eq!(
            topics::notification_filter(id),
            case["filter"].as_str().unwrap()
        );
    }
    for case in cases(&file["notification_topic"], "notification_topic") {
        let id = case["client_id"].as_str().unwrap();
        let key = latin1(&case["key"]);
        let topic = case["topic"].as_str().unwrap();
        assert_eq!(topics::notification_topic(id, &key), topic);
        assert_eq!(
            topics::parse_notification_topic(topic).unwrap(),
            (id.to_owned(), key)
        );
    }
    for case in cases(&file["response_topic_allowed"], "response_topic_allowed") {
        let topic = case["topic"].as_str().unwrap();
        let allowed = case["allowed"].as_bool().unwrap();
        let got = topics::check_response_topic(topic);
        assert_eq!(got.is_ok(), allowed, "{topic:?}");
        if let Err(e) = got {
            assert_eq!(e.kind(), ErrorKind::InvalidArgument);
        }
    }
}

fn clock_result(expect: &str, got: Result<Hlc, mqstate::Error>, name: &str) {
    match expect {
        "error:drift" => assert_eq!(got.unwrap_err().kind(), ErrorKind::ClockDrift, "{name}"),
        "error:overflow" => assert_eq!(got.unwrap_err().kind(), ErrorKind::ClockOverflow, "{name}"),
        text => {
            let want = Hlc::parse(text).unwrap();
            let got = got.unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_eq!(
                (got.wall_ms(), got.counter(), got.node_id()),
                (want.wall_ms(), want.counter(), want.node_id()),
                "{name}"
            );
        }
    }
}

#[test]
fn hlc() {
    let file = load("hlc.json");
    for case in cases(&file["parse"], "parse") {
        let text = case["text"].as_str().unwrap();
        let got = Hlc::parse(text);
        if case["ok"].as_bool().unwrap() {
            let h = got.unwrap_or_else(|e| panic!("{text:?}: {e}"));
            assert_eq!(Some(h.wall_ms()), case["wall_ms"].as_u64(), "{text}");
            assert_eq!(Some(h.counter()), case["counter"].as_u64(), "{text}");
            assert_eq!(Some(h.node_id()), case["node_id"].as_str(), "{text}");
        } else {
            assert_eq!(got.unwrap_err().kind(), ErrorKind::Malformed, "{text:?}");
        }
    }
    for case in cases(&file["format"], "format") {
        let h = Hlc::new(
            case["wall_ms"].as_u64().unwrap(),
            case["counter"].as_u64().unwrap(),
            case["node_id"].as_str().unwrap(),
        )
        .unwrap();
        assert_eq!(h.to_string(), case["text"].as_str().unwrap());
    }
    for case in cases(&file["compare"], "compare") {
        let a = Hlc::parse(case["a"].as_str().unwrap()).unwrap();
        let b = Hlc::parse(case["b"].as_str().unwrap()).unwrap();
        let want = match case["order"].as_str().unwrap() {
            "less" => std::cmp::Ordering::Less,
            "equal" => std::cmp::Ordering::Equal,
            "greater" => std::cmp::Ordering::Greater,
            other => panic!("order {other}"),
        };
        assert_eq!(a.cmp(&b), want, "{a} vs {b}");
        assert_eq!(b.cmp(&a), want.reverse(), "{b} vs {a}");
    }
    for case in cases(&file["tick"], "tick") {
        let name = case["name"].as_str().unwrap();
        let clock = Hlc::parse(case["clock"].as_str().unwrap()).unwrap();
        let got = clock.tick(
            case["now_ms"].as_u64().unwrap(),
            case["max_drift_ms"].as_u64().unwrap(),
        );
        clock_result(case["expect"].as_str().unwrap(), got, name);
    }
    for case in cases(&file["receive"], "receive") {
        let name = case["name"].as_str().unwrap();
        let clock = Hlc::parse(case["clock"].as_str().unwrap()).unwrap();
        let other = Hlc::parse(case["other"].as_str().unwrap()).unwrap();
        let got = clock.receive(
            &other,
            case["now_ms"].as_u64().unwrap(),
            case["max_drift_ms"].as_u64().unwrap(),
        );
        clock_result(case["expect"].as_str().unwrap(), got, name);
    }
}
