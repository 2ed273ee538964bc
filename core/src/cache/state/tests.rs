use proptest::prelude::*;

use super::*;

fn v(ms: u64) -> Option<Hlc> {
    Some(Hlc::new(ms, 0, "store").unwrap())
}

fn set(value: &str, ms: u64) -> Change {
    Change {
        value: Some(Bytes::copy_from_slice(value.as_bytes())),
        version: v(ms),
    }
}

fn deleted(ms: u64) -> Change {
    Change {
        value: None,
        version: v(ms),
    }
}

fn missing() -> Change {
    Change {
        value: None,
        version: None,
    }
}

const UP: At = At {
    epoch: 1,
    connected: true,
    stale_ok: false,
};

fn key(k: &str) -> Bytes {
    Bytes::copy_from_slice(k.as_bytes())
}

/// A read that misses, registers, and gets `read` with nothing arriving meanwhile.
fn read_through(s: &mut State, k: &str, read: Change) -> Vec<Bytes> {
    assert_eq!(s.lookup(k.as_bytes(), UP), None);
    let (ticket, mut evicted) = s.begin(&key(k), 1);
    evicted.extend(s.fill(k.as_bytes(), ticket, 1, read, UP));
    evicted
}

#[test]
fn a_filled_key_hits_until_a_newer_change_replaces_it() {
    let mut s = State::new(10, 1 << 20);
    read_through(&mut s, "k", set("a", 10));
    assert_eq!(s.lookup(b"k", UP), Some(set("a", 10)));
    s.apply(b"k", set("old", 9), true);
    s.apply(b"k", set("same", 10), true);
    assert_eq!(
        s.lookup(b"k", UP),
        Some(set("a", 10)),
        "older and equal versions lose"
    );
    s.apply(b"k", deleted(11), true);
    assert_eq!(s.lookup(b"k", UP), Some(deleted(11)));
    s.apply(b"k", set("b", 12), false);
    assert_eq!(s.lookup(b"k", UP), Some(set("b", 12)));
    assert_eq!(
        s.counters,
        Counters {
            hits: 4,
            misses: 1,
            evictions: 0,
            invalidations: 1
        }
    );
}

#[test]
fn changes_that_arrive_during_the_fill_win_when_newer() {
    let mut s = State::new(10, 1 << 20);
    let (t, _) = s.begin(&key("k"), 1);
    s.apply(b"k", set("notified", 20), true);
    s.fill(b"k", t, 1, set("read", 19), UP);
    assert_eq!(s.lookup(b"k", UP), Some(set("notified", 20)));

    let (t, _) = s.begin(&key("j"), 1);
    s.apply(b"j", set("notified", 20), true);
    s.fill(b"j", t, 1, set("read", 21), UP);
    assert_eq!(s.lookup(b"j", UP), Some(set("read", 21)));
}

#[test]
fn a_missing_key_agrees_with_a_deletion_but_not_with_a_value() {
    let mut s = State::new(10, 1 << 20);
    let (t, _) = s.begin(&key("k"), 1);
    s.apply(b"k", deleted(5), true);
    s.fill(b"k", t, 1, missing(), UP);
    assert_eq!(s.lookup(b"k", UP), Some(deleted(5)));

    let (t, _) = s.begin(&key("j"), 1);
    s.apply(b"j", set("x", 5), true);
    s.fill(b"j", t, 1, missing(), UP);
    assert_eq!(s.lookup(b"j", UP), None, "which came last is not known");
    assert_eq!(s.len(), 1);

    // Found missing: any versioned change replaces it.
    read_through(&mut s, "m", missing());
    assert_eq!(s.lookup(b"m", UP), Some(missing()));
    s.apply(b"m", set("now", 1), true);
    assert_eq!(s.lookup(b"m", UP), Some(set("now", 1)));
}

#[test]
fn an_unversioned_change_removes_the_entry() {
    let mut s = State::new(10, 1 << 20);
    read_through(&mut s, "k", set("a", 10));
    s.apply(b"k", missing(), false);
    assert_eq!(s.lookup(b"k", UP), None);
    assert_eq!(s.len(), 0);
}

#[test]
fn entries_serve_only_their_connection_and_a_cut_within_the_staleness_bound() {
    let mut s = State::new(10, 1 << 20);
    read_through(&mut s, "k", set("a", 10));
    let cut = At {
        connected: false,
        ..UP
    };
    assert_eq!(s.lookup(b"k", cut), None);
    let stale_ok = At {
        stale_ok: true,
        ..cut
    };
    assert_eq!(s.lookup(b"k", stale_ok), Some(set("a", 10)));
    let next = At { epoch: 2, ..UP };
    assert_eq!(s.lookup(b"k", next), None);
    assert_eq!(s.retire(2), vec![key("k")]);
    assert_eq!((s.len(), s.bytes()), (0, 0));
}

#[test]
fn a_fill_across_a_cut_keeps_nothing() {
    let mut s = State::new(10, 1 << 20);
    let (t, _) = s.begin(&key("k"), 1);
    let cut = At {
        connected: false,
        ..UP
    };
    s.fill(b"k", t, 1, set("a", 1), cut);
    assert_eq!(s.len(), 0);
    let (t, _) = s.begin(&key("k"), 1);
    s.fill(b"k", t, 1, set("a", 1), At { epoch: 2, ..UP });
    assert_eq!(s.len(), 0);
}

#[test]
fn least_recently_used_out_first_within_entries_and_bytes() {
    let mut s = State::new(2, 100);
    read_through(&mut s, "a", set("1", 1));
    read_through(&mut s, "b", set("2", 1));
    assert!(s.lookup(b"a", UP).is_some());
    assert_eq!(read_through(&mut s, "c", set("3", 1)), vec![key("b")]);
    assert!(s.lookup(b"a", UP).is_some());
    assert!(s.lookup(b"b", UP).is_none());
    // A value that grows past the byte bound pushes the others out.
    assert_eq!(s.apply(b"c", set(&"x".repeat(98), 2), true), vec![key("a")]);
    // One larger than the whole cache is not kept.
    assert_eq!(
        s.apply(b"c", set(&"x".repeat(100), 3), true),
        vec![key("c")]
    );
    assert_eq!((s.len(), s.bytes()), (0, 0));
    assert_eq!(s.counters.evictions, 3);
}

/// One step of a random history of one connection's cache.
#[derive(Clone, Debug)]
enum Step {
    /// A read of key `k` (misses begin a fill).
    Read(usize),
    /// The GET of the oldest fill in flight answers, with the store's state then.
    Answer,
    /// The store changes key `k` (a SET, or a DEL when `delete`) and notifies; the
    /// notification is delivered after `delay` further steps (out of order when they cross).
    Write {
        k: usize,
        delete: bool,
        delay: usize,
    },
    /// The connection is cut and comes back (a new epoch).
    Reconnect,
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        4 => (0..4usize).prop_map(Step::Read),
        3 => Just(Step::Answer),
        4 => (0..4usize, any::<bool>(), 0..4usize).prop_map(|(k, delete, delay)| Step::Write { k, delete, delay }),
        1 => Just(Step::Reconnect),
    ]
}

proptest! {
    /// Against a model store: whatever the order changes arrive in, a hit never answers a
    /// version older than one answered before for its key in the same connection (monotonic
    /// reads), never one older than the entry's registration could have missed, and the
    /// entry and byte counts stay within bounds and match what is held.
    #[test]
    fn hits_are_monotonic_and_never_older_than_the_store_at_registration(
        steps in proptest::collection::vec(step(), 1..80),
        max_entries in 1usize..5,
    ) {
        let keys = ["k0", "k1", "k2", "k3"];
        let mut s = State::new(max_entries, 1 << 20);
        // The store: each key's state and the last version given.
        let mut store: Vec<Change> = vec![missing(); 4];
        let mut clock = 0u64;
        let mut epoch = 1u64;
        // Fills in flight: (key, ticket, epoch, the store's version when registered).
        let mut fills: std::collections::VecDeque<(usize, u64, u64)> = Default::default();
        // Notifications in flight: (due step, key, change, epoch sent on).
        let mut wire: Vec<(usize, usize, Change, u64)> = Vec::new();
        // The newest version each key answered in this connection.
        let mut answered: Vec<Option<Hlc>> = vec![None; 4];
        for (i, st) in steps.into_iter().enumerate() {
            // Deliver due notifications of this connection (older ones are gone with it).
            let (due, later): (Vec<_>, Vec<_>) = wire.into_iter().partition(|n| n.0 <= i);
            wire = later;
            for (_, k, change, sent) in due {
                if sent == epoch {
                    s.apply(keys[k].as_bytes(), change, true);
                }
            }
            let at = At { epoch, connected: true, stale_ok: false };
            match st {
                Step::Read(k) => match s.lookup(keys[k].as_bytes(), at) {
                    Some(hit) => {
                        if let (Some(seen), Some(now)) = (&answered[k], &hit.version) {
                            prop_assert!(now.cmp_time(seen).is_ge(), "monotonic reads");
                        }
                        if hit.version.is_some() {
                            answered[k] = hit.version.clone();
                        }
                    }
                    None => {
                        let (ticket, _) = s.begin(&key(keys[k]), epoch);
                        fills.push_back((k, ticket, epoch));
                    }
                },
                Step::Answer => {
                    if let Some((k, ticket, e)) = fills.pop_front() {
                        let read = store[k].clone();
                        let read = if read.value.is_none() { missing() } else { read };
                        s.fill(keys[k].as_bytes(), ticket, e, read, at);
                    }
                }
                Step::Write { k, delete, delay } => {
                    clock += 1;
                    store[k] = if delete { deleted(clock) } else { set(&format!("v{clock}"), clock) };
                    wire.push((i + 1 + delay, k, store[k].clone(), epoch));
                }
                Step::Reconnect => {
                    epoch += 1;
                    s.retire(epoch);
                    answered = vec![None; 4];
                }
            }
            prop_assert!(s.len() <= max_entries);
            let held: usize = s.entries.iter().map(|(k, e)| k.len() + match &e.slot {
                Slot::Known(c) => c.size(),
                Slot::Filling { .. } => 0,
            }).sum();
            prop_assert_eq!(held, s.bytes());
            prop_assert_eq!(s.order.len(), s.entries.len());
        }
        // Once every notification has arrived, every entry holds its key's last state.
        for (_, k, change, sent) in wire {
            if sent == epoch {
                s.apply(keys[k].as_bytes(), change, true);
            }
        }
        let at = At { epoch, connected: true, stale_ok: false };
        for (k, name) in keys.iter().enumerate() {
            if let Some(hit) = s.lookup(name.as_bytes(), at) {
                match (&hit.version, &store[k].version) {
                    (Some(h), Some(st)) => prop_assert_eq!(h, st, "{} is current", name),
                    (None, st) => prop_assert!(st.is_none() || store[k].value.is_none(), "{} found missing", name),
                    (Some(_), None) => prop_assert!(false, "a version the store never gave"),
                }
            }
        }
    }
}
