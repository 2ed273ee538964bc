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

const E1: Epoch = Epoch {
    connection: 1,
    generation: 0,
};

const UP: At = At {
    epoch: E1,
    connected: true,
    fresh: true,
    stale_ok: false,
};

/// What a read answers from the cache (`None`: a miss or a lapsed entry).
fn hit(s: &mut State, k: &[u8], at: At) -> Option<Change> {
    match s.lookup(k, at) {
        Lookup::Hit(change) => Some(change),
        Lookup::Lapsed | Lookup::Miss => None,
    }
}

fn key(k: &str) -> Bytes {
    Bytes::copy_from_slice(k.as_bytes())
}

/// A read that misses, registers, and gets `read` with nothing arriving meanwhile.
fn read_through(s: &mut State, k: &str, read: Change) -> Vec<Bytes> {
    assert_eq!(hit(s, k.as_bytes(), UP), None);
    let ticket = s.begin(&key(k), E1);
    s.fill(k.as_bytes(), ticket, E1, read, UP);
    s.take_released()
}

#[test]
fn a_filled_key_hits_until_a_newer_change_replaces_it() {
    let mut s = State::new(10, 1 << 20);
    read_through(&mut s, "k", set("a", 10));
    assert_eq!(hit(&mut s, b"k", UP), Some(set("a", 10)));
    s.apply(b"k", set("old", 9), true);
    s.apply(b"k", set("same", 10), true);
    assert_eq!(
        hit(&mut s, b"k", UP),
        Some(set("a", 10)),
        "older and equal versions lose"
    );
    s.apply(b"k", deleted(11), true);
    assert_eq!(hit(&mut s, b"k", UP), Some(deleted(11)));
    s.apply(b"k", set("b", 12), false);
    assert_eq!(hit(&mut s, b"k", UP), Some(set("b", 12)));
    assert_eq!(
        s.counters,
        Counters {
            hits: 4,
            misses: 1,
            evictions: 0,
            invalidations: 1,
            lapsed: 0,
        }
    );
}

#[test]
fn changes_that_arrive_during_the_fill_win_when_newer() {
    let mut s = State::new(10, 1 << 20);
    let t = s.begin(&key("k"), E1);
    s.apply(b"k", set("notified", 20), true);
    s.fill(b"k", t, E1, set("read", 19), UP);
    assert_eq!(hit(&mut s, b"k", UP), Some(set("notified", 20)));

    let t = s.begin(&key("j"), E1);
    s.apply(b"j", set("notified", 20), true);
    s.fill(b"j", t, E1, set("read", 21), UP);
    assert_eq!(hit(&mut s, b"j", UP), Some(set("read", 21)));
}

#[test]
fn a_missing_key_agrees_with_a_deletion_but_not_with_a_value() {
    let mut s = State::new(10, 1 << 20);
    let t = s.begin(&key("k"), E1);
    s.apply(b"k", deleted(5), true);
    s.fill(b"k", t, E1, missing(), UP);
    assert_eq!(
        hit(&mut s, b"k", UP),
        Some(missing()),
        "missing, with no version: the deletion's may be older than one read before"
    );

    let t = s.begin(&key("j"), E1);
    s.apply(b"j", set("x", 5), true);
    s.fill(b"j", t, E1, missing(), UP);
    assert_eq!(hit(&mut s, b"j", UP), None, "which came last is not known");
    assert_eq!(s.len(), 1);

    // Found missing: a versioned change cannot be ordered against that (it may be a late
    // notification of a write older than one read before), so the next read fills the entry
    // anew, keeping the newer of its GET and the change, without a new entry.
    read_through(&mut s, "m", missing());
    assert_eq!(hit(&mut s, b"m", UP), Some(missing()));
    s.apply(b"m", set("late", 1), true);
    assert_eq!(s.lookup(b"m", UP), Lookup::Miss);
    assert!(s.holds(b"m"), "the registration is kept");
    let t = s.begin(&key("m"), E1);
    s.fill(b"m", t, E1, set("now", 3), UP);
    assert_eq!(hit(&mut s, b"m", UP), Some(set("now", 3)));
    // A late notification of an older write, after a read that found the key missing: the
    // next read's GET wins.
    read_through(&mut s, "n", missing());
    s.apply(b"n", set("old", 2), true);
    let t = s.begin(&key("n"), E1);
    s.fill(b"n", t, E1, missing(), UP);
    assert_eq!(
        hit(&mut s, b"n", UP),
        None,
        "which came last is not known: not kept"
    );
}

#[test]
fn an_unversioned_change_removes_the_entry_and_releases_it() {
    let mut s = State::new(10, 1 << 20);
    read_through(&mut s, "k", set("a", 10));
    s.apply(b"k", missing(), false);
    assert_eq!(hit(&mut s, b"k", UP), None);
    assert_eq!(s.len(), 0);
    assert_eq!(s.take_released(), vec![key("k")]);
}

#[test]
fn a_refused_notification_forgets_the_entry() {
    let mut s = State::new(10, 1 << 20);
    read_through(&mut s, "k", set("a", 10));
    s.forget(b"k");
    assert_eq!(hit(&mut s, b"k", UP), None);
    assert_eq!(s.take_released(), vec![key("k")]);
    assert_eq!(s.counters.invalidations, 1);
}

#[test]
fn entries_answer_only_while_the_lease_holds_and_in_their_generation() {
    let mut s = State::new(10, 1 << 20);
    read_through(&mut s, "k", set("a", 10));
    let lapsed = At { fresh: false, ..UP };
    assert_eq!(s.lookup(b"k", lapsed), Lookup::Lapsed);
    assert!(s.current(b"k", E1));
    assert_eq!(s.counters.lapsed, 1);
    let failed = At {
        epoch: Epoch {
            generation: 1,
            ..E1
        },
        ..UP
    };
    assert_eq!(
        s.lookup(b"k", failed),
        Lookup::Miss,
        "a failed lease: read anew"
    );
    assert!(!s.current(b"k", failed.epoch));
    // Read anew: made again in the new generation, with no release in between.
    let t = s.begin(&key("k"), failed.epoch);
    s.fill(b"k", t, failed.epoch, set("b", 11), failed);
    assert_eq!(hit(&mut s, b"k", failed), Some(set("b", 11)));
    assert!(s.take_released().is_empty());
    // A fill begun before a failure keeps nothing.
    let t = s.begin(&key("j"), failed.epoch);
    let later = At {
        epoch: Epoch {
            generation: 2,
            ..E1
        },
        ..UP
    };
    s.fill(b"j", t, failed.epoch, set("x", 1), later);
    assert!(!s.holds(b"j"));
    assert_eq!(s.take_released(), vec![key("j")]);
}

#[test]
fn entries_serve_only_their_connection_and_a_cut_within_the_staleness_bound() {
    let mut s = State::new(10, 1 << 20);
    read_through(&mut s, "k", set("a", 10));
    let cut = At {
        connected: false,
        ..UP
    };
    assert_eq!(hit(&mut s, b"k", cut), None);
    let stale_ok = At {
        stale_ok: true,
        ..cut
    };
    assert_eq!(hit(&mut s, b"k", stale_ok), Some(set("a", 10)));
    let e2 = Epoch {
        connection: 2,
        generation: 0,
    };
    let next = At { epoch: e2, ..UP };
    assert_eq!(hit(&mut s, b"k", next), None);
    assert_eq!(s.retire(2), vec![key("k")]);
    assert_eq!((s.len(), s.bytes()), (0, 0));
}

#[test]
fn a_fill_across_a_cut_keeps_nothing() {
    let mut s = State::new(10, 1 << 20);
    let t = s.begin(&key("k"), E1);
    let cut = At {
        connected: false,
        ..UP
    };
    s.fill(b"k", t, E1, set("a", 1), cut);
    assert_eq!(s.len(), 0);
    let t = s.begin(&key("k"), E1);
    let e2 = Epoch {
        connection: 2,
        generation: 0,
    };
    s.fill(b"k", t, E1, set("a", 1), At { epoch: e2, ..UP });
    assert_eq!(s.len(), 0);
    assert_eq!(s.take_released(), vec![key("k"), key("k")]);
}

#[test]
fn least_recently_used_out_first_within_entries_and_bytes() {
    let mut s = State::new(2, 100);
    read_through(&mut s, "a", set("1", 1));
    read_through(&mut s, "b", set("2", 1));
    assert!(hit(&mut s, b"a", UP).is_some());
    assert_eq!(read_through(&mut s, "c", set("3", 1)), vec![key("b")]);
    assert!(hit(&mut s, b"a", UP).is_some());
    assert!(hit(&mut s, b"b", UP).is_none());
    // A value that grows past the byte bound pushes the others out.
    s.apply(b"c", set(&"x".repeat(98), 2), true);
    assert_eq!(s.take_released(), vec![key("a")]);
    // One larger than the whole cache is not kept.
    s.apply(b"c", set(&"x".repeat(100), 3), true);
    assert_eq!(s.take_released(), vec![key("c")]);
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
    /// The GET of the oldest fill in flight fails.
    Fail,
    /// The store changes key `k` (a SET, or a DEL when `delete`) and notifies; the
    /// notification is delivered after `delay` further steps (out of order when they cross).
    Write {
        k: usize,
        delete: bool,
        delay: usize,
    },
    /// The next notification due of key `k` carries a version the clock refuses.
    Refuse(usize),
    /// The lease fails: a new generation.
    LeaseFails,
    /// The connection is cut and comes back (a new epoch).
    Reconnect,
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        4 => (0..4usize).prop_map(Step::Read),
        3 => Just(Step::Answer),
        1 => Just(Step::Fail),
        4 => (0..4usize, any::<bool>(), 0..8usize).prop_map(|(k, delete, delay)| Step::Write { k, delete, delay }),
        1 => (0..4usize).prop_map(Step::Refuse),
        1 => Just(Step::LeaseFails),
        1 => Just(Step::Reconnect),
    ]
}

proptest! {
    /// Against a model store: whatever the order changes arrive in, a hit never answers a
    /// version older than one answered before for its key in the same connection (monotonic
    /// reads), never one older than the entry's registration could have missed, and the
    /// entry and byte counts stay within bounds and match what is held. And the client's
    /// registry (keys registered by a read's `begin`, given back when released or retired)
    /// holds a key exactly while the cache does.
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
        let mut epoch = E1;
        // Fills in flight: (key, ticket, epoch registered in).
        let mut fills: std::collections::VecDeque<(usize, u64, Epoch)> = Default::default();
        // Notifications in flight: (due step, key, change, connection sent on).
        let mut wire: Vec<(usize, usize, Change, u64)> = Vec::new();
        // Keys whose next notification is refused.
        let mut refuse = [false; 4];
        // The newest version each key answered in this connection.
        let mut answered: Vec<Option<Hlc>> = vec![None; 4];
        // The registry's record: keys the cache registered and has not given back.
        let mut registry: std::collections::BTreeSet<Bytes> = Default::default();
        for (i, st) in steps.into_iter().enumerate() {
            // Deliver due notifications of this connection (older ones are gone with it).
            let (due, later): (Vec<_>, Vec<_>) = wire.into_iter().partition(|n| n.0 <= i);
            wire = later;
            for (_, k, change, sent) in due {
                if sent == epoch.connection {
                    if std::mem::take(&mut refuse[k]) {
                        s.forget(keys[k].as_bytes());
                    } else {
                        s.apply(keys[k].as_bytes(), change, true);
                    }
                }
            }
            let at = At { epoch, connected: true, fresh: true, stale_ok: false };
            match st {
                Step::Read(k) => match s.lookup(keys[k].as_bytes(), at) {
                    Lookup::Hit(hit) => {
                        if let (Some(seen), Some(now)) = (&answered[k], &hit.version) {
                            prop_assert!(now.cmp_time(seen).is_ge(), "monotonic reads");
                        }
                        if hit.version.is_some() {
                            answered[k] = hit.version.clone();
                        }
                    }
                    Lookup::Lapsed => prop_assert!(false, "the lease holds"),
                    Lookup::Miss => {
                        let ticket = s.begin(&key(keys[k]), epoch);
                        registry.insert(key(keys[k]));
                        fills.push_back((k, ticket, epoch));
                    }
                },
                Step::Answer => {
                    if let Some((k, ticket, e)) = fills.pop_front() {
                        let read = store[k].clone();
                        let read = if read.value.is_none() { missing() } else { read };
                        // The read answers what the store said: later hits must not be older
                        // (notifications may arrive after this response, late).
                        if e == epoch && read.version.is_some()
                            && answered[k].as_ref().is_none_or(|a| read.version.as_ref().is_some_and(|r| r.cmp_time(a).is_gt()))
                        {
                            answered[k] = read.version.clone();
                        }
                        s.fill(keys[k].as_bytes(), ticket, e, read, at);
                    }
                }
                Step::Fail => {
                    if let Some((k, ticket, _)) = fills.pop_front() {
                        s.abandon(keys[k].as_bytes(), ticket);
                    }
                }
                Step::Write { k, delete, delay } => {
                    clock += 1;
                    store[k] = if delete { deleted(clock) } else { set(&format!("v{clock}"), clock) };
                    wire.push((i + 1 + delay, k, store[k].clone(), epoch.connection));
                }
                Step::Refuse(k) => refuse[k] = true,
                Step::LeaseFails => {
                    epoch.generation += 1;
                    answered = vec![None; 4];
                }
                Step::Reconnect => {
                    epoch = Epoch { connection: epoch.connection + 1, generation: epoch.generation };
                    for k in s.retire(epoch.connection) {
                        registry.remove(&k);
                    }
                    answered = vec![None; 4];
                }
            }
            // A release gives the registration back unless a read took the key again since
            // (the client checks under the key's operation lock).
            for k in s.take_released() {
                if !s.holds(&k) {
                    registry.remove(&k);
                }
            }
            let held: std::collections::BTreeSet<Bytes> = s.entries.keys().cloned().collect();
            prop_assert_eq!(&registry, &held, "registry cached <=> cache holds the key");
            prop_assert!(s.len() <= max_entries);
            let bytes: usize = s.entries.iter().map(|(k, e)| k.len() + match &e.slot {
                Slot::Known(c) => c.size(),
                Slot::Filling { .. } => 0,
            }).sum();
            prop_assert_eq!(bytes, s.bytes());
            prop_assert_eq!(s.order.len(), s.entries.len());
        }
        // Once every notification has arrived, every entry holds its key's last state.
        for (_, k, change, sent) in wire {
            if sent == epoch.connection && !refuse[k] {
                s.apply(keys[k].as_bytes(), change, true);
            } else if sent == epoch.connection {
                s.forget(keys[k].as_bytes());
            }
        }
        let at = At { epoch, connected: true, fresh: true, stale_ok: false };
        for (k, name) in keys.iter().enumerate() {
            if let Lookup::Hit(hit) = s.lookup(name.as_bytes(), at) {
                match (&hit.version, &store[k].version) {
                    (Some(h), Some(st)) => prop_assert_eq!(h, st, "{} is current", name),
                    (None, st) => prop_assert!(st.is_none() || store[k].value.is_none(), "{} found missing", name),
                    (Some(_), None) => prop_assert!(false, "a version the store never gave"),
                }
            }
        }
    }
}

#[test]
fn a_late_notification_never_takes_a_key_found_missing_below_what_was_read() {
    // The history checker's find (reader-stop, the emulator answering a GET before the
    // notifications it had queued): v10 read, the entry removed, the key found missing,
    // then the late notification of an older write (v5) arrives.
    let mut s = State::new(10, 1 << 20);
    read_through(&mut s, "k", set("new", 10));
    s.forget(b"k");
    read_through(&mut s, "k", missing());
    s.apply(b"k", set("old", 5), true);
    assert_eq!(s.lookup(b"k", UP), Lookup::Miss, "not v5 after v10");
    // Nor through a late deletion, then the late write.
    s.take_released();
    s.forget(b"k");
    let t = s.begin(&key("k"), E1);
    s.apply(b"k", deleted(4), true);
    s.fill(b"k", t, E1, missing(), UP);
    s.apply(b"k", set("old", 5), true);
    assert_eq!(s.lookup(b"k", UP), Lookup::Miss, "not v5 after v10");
}

#[test]
fn a_read_while_the_lease_does_not_hold_still_counts_as_a_use() {
    // Least recently *read*: a read that went to the store because the lease did not hold
    // is a read (the bug: the bounds test evicted the key it had just read).
    let mut s = State::new(2, 1 << 20);
    read_through(&mut s, "a", set("1", 1));
    read_through(&mut s, "b", set("2", 1));
    assert_eq!(s.lookup(b"a", At { fresh: false, ..UP }), Lookup::Lapsed);
    assert_eq!(read_through(&mut s, "c", set("3", 1)), vec![key("b")]);
}
