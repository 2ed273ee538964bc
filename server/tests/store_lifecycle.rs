//! The store over time: the spec's version example, version ordering, the expiry timer
//! the adapter drives, and restoring from the journal.

use bytes::Bytes;
use mqstate::Hlc;
use mqstate::codec::{KeyEvent, Request, Response, SetCondition};
use mqstate_server::state_machine::{Invocation, JournalOp, Reply, StateMachine, StoreConfig};

const NOW: u64 = 1_696_374_425_000;

fn hlc(text: &str) -> Hlc {
    Hlc::parse(text).unwrap()
}

fn send(
    store: &mut StateMachine,
    now: u64,
    request: Request<&[u8]>,
    ts: &str,
    persist: bool,
) -> Reply {
    store.handle(
        now,
        Invocation {
            client_id: "watcher",
            payload: &request.encode(),
            timestamp: Some(ts),
            fencing_token: None,
            persist,
        },
    )
}

fn set(key: &'static [u8], value: &'static [u8], px: Option<u64>) -> Request<&'static [u8]> {
    Request::Set {
        key,
        value,
        condition: if px.is_some() {
            SetCondition::NotExistsOrEqual
        } else {
            SetCondition::Always
        },
        expiry_ms: px.and_then(std::num::NonZeroU64::new),
    }
}

#[test]
fn spec_example_equal_clocks() {
    let mut store = StateMachine::new(StoreConfig::default(), NOW);
    let reply = send(
        &mut store,
        NOW,
        set(b"k", b"v", None),
        "1696374425000:0:CLIENT",
        false,
    );
    assert_eq!(reply.response, Response::Ok);
    assert_eq!(reply.version, Some(hlc("1696374425000:1:StateStore")));
    // The next change at the same instant is newer still.
    let reply = send(
        &mut store,
        NOW,
        Request::Del { key: b"k" },
        "1696374425000:0:CLIENT",
        false,
    );
    assert_eq!(reply.version, Some(hlc("1696374425000:2:StateStore")));
}

#[test]
fn versions_of_a_key_only_grow_even_with_stale_client_clocks() {
    let mut store = StateMachine::new(StoreConfig::default(), NOW);
    let mut last: Option<Hlc> = None;
    for i in 0..50u64 {
        // Client clocks far behind, ahead (within the drift), and the time going backwards.
        let ts = format!("{}:{}:c{}", NOW - 30_000 + (i % 7) * 10_000, i % 3, i % 4);
        let now = NOW + 1000 - (i % 5) * 400;
        let reply = send(&mut store, now, set(b"k", b"v", None), &ts, false);
        let v = reply.version.unwrap();
        assert!(v > hlc(&ts), "{v} vs {ts}");
        assert!(last.as_ref().is_none_or(|l| v > *l), "{v} after {last:?}");
        last = Some(v);
    }
}

#[test]
fn the_expiry_timer_fires_on_time_once() {
    let mut store = StateMachine::new(StoreConfig::default(), NOW);
    let ts = format!("{NOW}:0:c");
    let notify = Request::KeyNotify {
        key: &b"lock"[..],
        stop: false,
    };
    assert_eq!(
        send(&mut store, NOW, notify, &ts, false).response,
        Response::Ok
    );
    let acquired = send(&mut store, NOW, set(b"lock", b"me", Some(1000)), &ts, true);
    assert_eq!(store.next_expiry_ms(), Some(NOW + 1000));
    // Renewal halfway moves the deadline; the old one does not fire.
    let later = format!("{}:0:c", NOW + 500);
    let renewed = send(
        &mut store,
        NOW + 500,
        set(b"lock", b"me", Some(1000)),
        &later,
        true,
    );
    assert_eq!(renewed.response, Response::Ok);
    assert_eq!(store.next_expiry_ms(), Some(NOW + 1500));
    let early = store.expire(NOW + 1000);
    assert!(early.notifications.is_empty() && early.journal.is_empty());
    assert_eq!(store.len(), 1);
    let fired = store.expire(NOW + 1500);
    assert_eq!(fired.journal.len(), 2, "{:?}", fired.journal);
    assert_eq!(
        fired.journal[0],
        JournalOp::Remove {
            key: Bytes::from_static(b"lock")
        }
    );
    assert!(matches!(fired.journal[1], JournalOp::Clock { .. }));
    assert_eq!(fired.notifications.len(), 1);
    let notice = &fired.notifications[0];
    assert_eq!(
        (notice.client_id.as_str(), &notice.key[..]),
        ("watcher", &b"lock"[..])
    );
    assert_eq!(notice.event, KeyEvent::Delete);
    assert!(notice.version > renewed.version.unwrap());
    assert!(renewed.notifications[0].version > acquired.version.unwrap());
    assert!(store.is_empty());
    assert_eq!(store.next_expiry_ms(), None);
    assert!(store.expire(NOW + 10_000).notifications.is_empty());
}

#[test]
fn many_expiries_fire_in_deadline_order() {
    let mut store = StateMachine::new(StoreConfig::default(), NOW);
    let ts = format!("{NOW}:0:c");
    for (key, px) in [(&b"c"[..], 30u64), (b"a", 10), (b"b", 20)] {
        let request = Request::Set {
            key,
            value: &b"v"[..],
            condition: SetCondition::Always,
            expiry_ms: std::num::NonZeroU64::new(px),
        };
        send(&mut store, NOW, request, &ts, false);
        let watch = Request::KeyNotify { key, stop: false };
        send(&mut store, NOW, watch, &ts, false);
    }
    assert_eq!(store.next_expiry_ms(), Some(NOW + 10));
    let fired = store.expire(NOW + 25);
    let keys: Vec<&[u8]> = fired.notifications.iter().map(|n| &n.key[..]).collect();
    assert_eq!(keys, [&b"a"[..], b"b"]);
    assert!(fired.notifications[0].version < fired.notifications[1].version);
    assert_eq!(store.next_expiry_ms(), Some(NOW + 30));
    assert_eq!(store.len(), 1);
}

#[test]
fn restore_skips_expired_entries_and_raises_the_clock() {
    let put = |key: &'static [u8], version: &str, expires_at_ms: Option<u64>| JournalOp::Put {
        key: Bytes::from_static(key),
        value: Bytes::from_static(b"v"),
        version: hlc(version),
        expires_at_ms,
        fencing_token: Some(hlc("5:0:holder")),
    };
    let mut store = StateMachine::new(StoreConfig::default(), NOW);
    // A version ahead of the service time (the clock was faster before the restart).
    let ahead = format!("{}:4:StateStore", NOW + 5000);
    store.restore(
        vec![
            put(b"live", &ahead, None),
            put(b"later", "1:0:StateStore", Some(NOW + 100)),
            put(b"gone", "1:0:StateStore", Some(NOW)),
            JournalOp::Remove {
                key: Bytes::from_static(b"x"),
            },
        ],
        NOW,
    );
    assert_eq!(store.len(), 2);
    assert_eq!(store.next_expiry_ms(), Some(NOW + 100));
    let get = |store: &mut StateMachine, key: &'static [u8]| {
        send(
            store,
            NOW,
            Request::Get { key },
            &format!("{NOW}:0:c"),
            false,
        )
    };
    assert_eq!(get(&mut store, b"gone").response, Response::NotFound);
    let live = get(&mut store, b"live");
    assert_eq!(live.response, Response::Value(Bytes::from_static(b"v")));
    assert_eq!(live.version, Some(hlc(&ahead)));
    // The restored token still fences; a write with it gets a version past the restored one.
    let ts = format!("{NOW}:0:c");
    let fenced = store.handle(
        NOW,
        Invocation {
            client_id: "c",
            payload: &set(b"live", b"w", None).encode(),
            timestamp: Some(&ts),
            fencing_token: Some("5:0:holder"),
            persist: false,
        },
    );
    assert_eq!(fenced.response, Response::Ok);
    let version = fenced.version.unwrap();
    assert!(version > hlc(&ahead));
    // Restored keys are persisted: overwriting without persistence removes them from the log,
    // with a clock record of the change's version.
    assert_eq!(
        fenced.journal,
        vec![
            JournalOp::Remove {
                key: Bytes::from_static(b"live")
            },
            JournalOp::Clock { version }
        ]
    );
}

/// Spec §5.4 across a restart: a persisted key deleted while versions ran ahead of the
/// wall clock (a client's `__ts` in the future) never gets an older version afterwards —
/// the removal's clock record raises the restarted clock (found by the history checker).
#[test]
fn a_deleted_key_never_gets_an_older_version_after_a_restart() {
    let mut store = StateMachine::new(StoreConfig::default(), NOW);
    let ahead = format!("{}:0:fast", NOW + 30_000);
    let created = send(&mut store, NOW, set(b"k", b"v", None), &ahead, true);
    assert_eq!(created.response, Response::Ok);
    let deleted = send(
        &mut store,
        NOW,
        Request::Del { key: &b"k"[..] },
        &ahead,
        false,
    );
    assert_eq!(deleted.response, Response::Count(1));
    let deletion = deleted.version.clone().unwrap();
    // What the journal would hold after compaction: the live puts (none) and the clock.
    let kept: Vec<JournalOp> = created
        .journal
        .into_iter()
        .chain(deleted.journal)
        .filter(|op| matches!(op, JournalOp::Clock { .. }))
        .collect();
    assert_eq!(
        kept,
        vec![JournalOp::Clock {
            version: deletion.clone()
        }]
    );
    let mut restarted = StateMachine::new(StoreConfig::default(), NOW + 100);
    restarted.restore(kept, NOW + 100);
    let honest = format!("{}:0:slow", NOW + 100);
    let again = send(
        &mut restarted,
        NOW + 100,
        set(b"k", b"w", None),
        &honest,
        true,
    );
    assert!(
        again.version.clone().unwrap() > deletion,
        "{:?} after a deletion at {deletion}",
        again.version
    );
}

/// `clear` (what `LocalStore::clear` runs): every key goes, fenced and persisted ones too;
/// observers get a DELETE with a version newer than the key's; persisted keys leave the
/// journal; registrations stay. `keys_matching` and `peek` read without a request.
#[test]
fn clear_deletes_every_key_as_its_owner_would() {
    let mut store = StateMachine::new(StoreConfig::default(), NOW);
    let ts = format!("{NOW}:0:watcher");
    send(&mut store, NOW, set(b"app/kept", b"1", None), &ts, true);
    send(&mut store, NOW, set(b"app/memory", b"2", None), &ts, false);
    let fenced = store.handle(
        NOW,
        Invocation {
            client_id: "watcher",
            payload: &set(b"lock", b"me", None).encode(),
            timestamp: Some(&ts),
            fencing_token: Some(&ts),
            persist: false,
        },
    );
    assert_eq!(fenced.response, Response::Ok);
    send(
        &mut store,
        NOW,
        Request::KeyNotify {
            key: &b"app/kept"[..],
            stop: false,
        },
        &ts,
        false,
    );
    assert_eq!(
        store.keys_matching(b"app/*"),
        vec![Bytes::from("app/kept"), Bytes::from("app/memory")]
    );
    let (value, version) = store.peek(b"app/kept").unwrap();
    assert_eq!(value, "1");

    let cleared = store.clear(NOW);
    assert!(store.is_empty());
    assert!(store.keys_matching(b"*").is_empty());
    assert_eq!(store.peek(b"lock"), None);
    let removed: Vec<&Bytes> = cleared
        .journal
        .iter()
        .filter_map(|op| match op {
            JournalOp::Remove { key } => Some(key),
            _ => None,
        })
        .collect();
    assert_eq!(
        removed,
        vec![&Bytes::from("app/kept")],
        "persisted keys only"
    );
    assert_eq!(cleared.notifications.len(), 1, "the one observed key");
    let notice = &cleared.notifications[0];
    assert_eq!(notice.key, "app/kept");
    assert_eq!(notice.event, KeyEvent::Delete);
    assert!(notice.version > version);
    // The registration stays: a new value is notified.
    let again = send(&mut store, NOW, set(b"app/kept", b"3", None), &ts, false);
    assert_eq!(again.notifications.len(), 1);
}
