//! Hostile and unlucky inputs to the pure store (issue 9): a `__ts` that would exhaust the
//! shared clock, a key too long to be observed, a journal write that fails, and stored keys
//! and values that must not keep the request packet alive.

use bytes::Bytes;
use mqstate::codec::{Request, Response, SetCondition, StoreErrorKind};
use mqstate_server::state_machine::{Invocation, JournalOp, Reply, StateMachine, StoreConfig};

const NOW: u64 = 1_700_000_000_000;

fn store() -> StateMachine {
    StateMachine::new(StoreConfig::default(), NOW)
}

fn set(key: &[u8], value: &[u8]) -> Bytes {
    Request::Set {
        key,
        value,
        condition: SetCondition::Always,
        expiry_ms: None,
    }
    .encode()
}

fn run(store: &mut StateMachine, client: &str, payload: &Bytes, ts: &str, persist: bool) -> Reply {
    store.handle(
        NOW,
        Invocation {
            client_id: client,
            payload,
            timestamp: Some(ts),
            fencing_token: None,
            persist,
        },
    )
}

fn ts(client: &str) -> String {
    format!("{NOW}:0:{client}")
}

#[test]
fn a_timestamp_that_would_exhaust_the_clock_is_refused_and_others_are_served() {
    let mut s = store();
    // Just inside the drift, counter near the top.
    let hostile = format!("{}:{}:evil", NOW + 59_000, u64::MAX - 3);
    let reply = run(&mut s, "evil", &set(b"k", b"v"), &hostile, false);
    match &reply.response {
        Response::Error(e) => assert_eq!(e.kind(), StoreErrorKind::TimestampMalformed),
        other => panic!("hostile stamp accepted: {other:?}"),
    }
    assert!(reply.notifications.is_empty() && reply.journal.is_empty());
    // Everyone else is still served, for many requests in the same millisecond.
    for i in 0..100u32 {
        let key = format!("k{i}");
        let reply = run(&mut s, "me", &set(key.as_bytes(), b"v"), &ts("me"), false);
        assert_eq!(reply.response, Response::Ok, "request {i}");
    }
}

#[test]
fn a_large_but_safe_counter_is_still_accepted() {
    let mut s = store();
    let reply = run(
        &mut s,
        "c",
        &set(b"k", b"v"),
        &format!("{NOW}:1000000:c"),
        false,
    );
    assert_eq!(reply.response, Response::Ok);
    assert!(reply.version.unwrap().counter() > 1_000_000);
}

#[test]
fn keynotify_is_refused_for_a_key_whose_topic_would_not_fit() {
    let mut s = store();
    let long = vec![b'x'; 32_768];
    let payload = Request::KeyNotify {
        key: &long[..],
        stop: false,
    }
    .encode();
    let reply = run(&mut s, "watcher", &payload, &ts("watcher"), false);
    assert!(
        matches!(&reply.response, Response::Error(e) if e.text().contains("too long")),
        "{:?}",
        reply.response
    );
    // Nothing is registered: a SET of that key notifies nobody.
    let reply = run(&mut s, "writer", &set(&long, b"v"), &ts("writer"), false);
    assert_eq!(reply.response, Response::Ok);
    assert!(reply.notifications.is_empty());
    // A key that fits (with this client id) is still observable.
    let fits = vec![b'x'; 32_000];
    let payload = Request::KeyNotify {
        key: &fits[..],
        stop: false,
    }
    .encode();
    let reply = run(&mut s, "watcher", &payload, &ts("watcher"), false);
    assert_eq!(reply.response, Response::Ok);
}

#[test]
fn stored_keys_and_values_do_not_point_into_the_request_packet() {
    let mut s = store();
    let payload = set(b"key", b"value");
    let reply = run(&mut s, "me", &payload, &ts("me"), false);
    assert_eq!(reply.response, Response::Ok);
    let get = Request::Get { key: &b"key"[..] }.encode();
    let reply = run(&mut s, "me", &get, &ts("me"), false);
    let Response::Value(value) = reply.response else {
        panic!("no value");
    };
    assert_eq!(value, Bytes::from_static(b"value"));
    let packet = payload.as_ptr() as usize..payload.as_ptr() as usize + payload.len();
    assert!(
        !packet.contains(&(value.as_ptr() as usize)),
        "the stored value shares the request packet's buffer"
    );
}

/// The journal refuses the write: the SET must not be applied in memory nor notified.
#[test]
fn a_persisted_set_whose_journal_write_fails_is_not_applied() {
    let mut s = store();
    let watch = Request::KeyNotify {
        key: &b"k"[..],
        stop: false,
    }
    .encode();
    run(&mut s, "watcher", &watch, &ts("watcher"), false);
    let payload = set(b"k", b"v");
    let mut written = Vec::new();
    let reply = s.handle_persisting(
        NOW,
        Invocation {
            client_id: "me",
            payload: &payload,
            timestamp: Some(&ts("me")),
            fencing_token: None,
            persist: true,
        },
        &mut |ops: &[JournalOp]| {
            written.extend_from_slice(ops);
            false
        },
    );
    assert!(reply.journal_failed);
    assert_eq!(written.len(), 1);
    assert!(reply.notifications.is_empty());
    let get = Request::Get { key: &b"k"[..] }.encode();
    assert_eq!(
        run(&mut s, "me", &get, &ts("me"), false).response,
        Response::NotFound
    );
    assert!(s.is_empty());
}

/// The same for a DEL of a persisted key: it stays.
#[test]
fn a_persisted_delete_whose_journal_write_fails_is_not_applied() {
    let mut s = store();
    run(&mut s, "me", &set(b"k", b"v"), &ts("me"), true);
    let del = Request::Del { key: &b"k"[..] }.encode();
    let reply = s.handle_persisting(
        NOW,
        Invocation {
            client_id: "me",
            payload: &del,
            timestamp: Some(&ts("me")),
            fencing_token: None,
            persist: false,
        },
        &mut |_: &[JournalOp]| false,
    );
    assert!(reply.journal_failed);
    assert_eq!(s.len(), 1);
    // And when the journal works, the write is applied and reported written.
    let reply = s.handle_persisting(
        NOW,
        Invocation {
            client_id: "me",
            payload: &del,
            timestamp: Some(&ts("me")),
            fencing_token: None,
            persist: false,
        },
        // The removal and the clock record of the deletion's version, in one write.
        &mut |ops: &[JournalOp]| matches!(ops, [JournalOp::Remove { .. }, JournalOp::Clock { .. }]),
    );
    assert!(!reply.journal_failed);
    assert_eq!(reply.response, Response::Count(1));
    assert!(s.is_empty());
}

/// A GET merges its stamp without issuing it; a PX expiry seconds later must not reuse that
/// stale value as the DELETE's version.
#[test]
fn the_delete_on_px_expiry_carries_a_fresh_version() {
    let mut s = store();
    let px = Request::Set {
        key: &b"k"[..],
        value: &b"v"[..],
        condition: SetCondition::Always,
        expiry_ms: std::num::NonZeroU64::new(5_000),
    }
    .encode();
    run(&mut s, "me", &px, &ts("me"), false);
    let watch = Request::KeyNotify {
        key: &b"k"[..],
        stop: false,
    }
    .encode();
    run(&mut s, "me", &watch, &ts("me"), false);
    let get = Request::Get { key: &b"k"[..] }.encode();
    run(&mut s, "me", &get, &ts("me"), false);
    let later = NOW + 5_000;
    let expired = s.expire(later);
    assert_eq!(expired.notifications.len(), 1);
    let version = &expired.notifications[0].version;
    assert_eq!(version.wall_ms(), later, "stale DELETE version {version}");
}
