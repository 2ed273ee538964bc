//! One observed key in one allocation: the key's bytes (inline when short), what the
//! registry knows of it (registration, ordering baseline, last state) and the buffers of
//! its observers (the first one inline, further ones beside it).
//!
//! Memory is the point of this layout: a client may observe hundreds of thousands of keys,
//! nearly all of them idle with one observer. An idle key costs one allocation here (no
//! buffer: a queue's buffer is released when it is drained), a pointer in the registry's
//! index and a three-word [`Observer`](super::Observer).
//!
//! Each observer's buffer follows the overflow policy of [`observe`](super): at most
//! `capacity` events, the oldest discarded first and counted, the count handed out with the
//! next change (connection events leave it for the next change).

use std::collections::VecDeque;
use std::num::NonZeroU32;
use std::sync::{Mutex, MutexGuard};
use std::task::{Context, Poll, Waker};

use super::{KeyNotification, ObserverEvent};
use crate::hlc::Hlc;

/// An observer's id among its key's observers.
pub(crate) type ObserverId = NonZeroU32;

/// Keys up to this length are stored inside the entry.
const INLINE: usize = 22;

/// A key's bytes: inline when short, else on the heap.
enum KeyBytes {
    Inline { len: u8, bytes: [u8; INLINE] },
    Heap(Box<[u8]>),
}

impl KeyBytes {
    fn new(key: &[u8]) -> KeyBytes {
        match u8::try_from(key.len()) {
            Ok(len) if key.len() <= INLINE => {
                let mut bytes = [0; INLINE];
                bytes[..key.len()].copy_from_slice(key);
                KeyBytes::Inline { len, bytes }
            }
            _ => KeyBytes::Heap(key.into()),
        }
    }

    fn as_slice(&self) -> &[u8] {
        match self {
            KeyBytes::Inline { len, bytes } => &bytes[..usize::from(*len)],
            KeyBytes::Heap(bytes) => bytes,
        }
    }
}

/// One observer's buffer.
struct Slot {
    id: ObserverId,
    /// Boxed, and present only while events wait: an idle observer costs no buffer and
    /// only a pointer of its entry.
    #[expect(
        clippy::box_collection,
        reason = "one word inline instead of four: nearly every observer is idle"
    )]
    items: Option<Box<VecDeque<ObserverEvent>>>,
    /// Events discarded since the last change handed out.
    dropped: u64,
    waker: Option<Waker>,
}

impl Slot {
    fn new(id: ObserverId) -> Slot {
        Slot {
            id,
            items: None,
            dropped: 0,
            waker: None,
        }
    }

    /// Appends `event`; whether the oldest was discarded to make room.
    fn push(&mut self, capacity: usize, event: ObserverEvent, wake: &mut Vec<Waker>) -> bool {
        let items = self.items.get_or_insert_default();
        let full = items.len() >= capacity;
        if full {
            items.pop_front();
            self.dropped += 1;
        }
        items.push_back(event);
        wake.extend(self.waker.take());
        full
    }

    fn pop(&mut self) -> Option<ObserverEvent> {
        let items = self.items.as_mut()?;
        let mut event = items.pop_front()?;
        if items.is_empty() {
            // Idle observers hold no buffer.
            self.items = None;
        }
        if let ObserverEvent::Change(n) = &mut event {
            n.dropped_before = std::mem::take(&mut self.dropped);
        }
        Some(event)
    }
}

/// Bits of [`Inner::flags`].
mod flag {
    /// KEYNOTIFY accepted for this key on the current connection.
    pub(super) const REGISTERED: u8 = 1;
    /// A KEYNOTIFY was sent (it may have been applied even if its answer never came), so a
    /// STOP is owed when the last observer goes.
    pub(super) const STOP_OWED: u8 = 2;
    /// The last resynchronisation failed; observers were told.
    pub(super) const DEGRADED: u8 = 4;
    /// The client closed: streams end once drained.
    pub(super) const CLOSED: u8 = 8;
    /// The last state is known ([`LAST_SET`] says which).
    pub(super) const LAST_KNOWN: u8 = 16;
    /// The last known state is a value (whose hash is [`Inner::last_hash`](super::Inner)),
    /// not a deletion.
    pub(super) const LAST_SET: u8 = 32;
    /// The first registration completed: its GET gave the baseline.
    pub(super) const SETTLED: u8 = 64;
    /// The client's cache holds the key: its registration is wanted with no observer too.
    pub(super) const CACHED: u8 = 128;
}

/// Whether a change of version `version` comes after `than` (a change without a version
/// counts as newer: nothing orders it).
fn newer(version: Option<&Hlc>, than: &Hlc) -> bool {
    version.is_none_or(|v| v.cmp_time(than).is_gt())
}

/// The last known state of a key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum LastState {
    /// Not known yet.
    Unknown,
    /// Deleted (or never set).
    Deleted,
    /// Set to a value with this hash (see [`Registry`](super::Registry): only the hash is
    /// kept, so an observed key does not hold its value).
    Set(u64),
}

struct Inner {
    /// The last delivered version: the ordering baseline.
    last_version: Option<Hlc>,
    first: Option<Slot>,
    /// Observers after the first (rare).
    #[expect(
        clippy::box_collection,
        reason = "one word inline instead of three: nearly every key has one observer"
    )]
    more: Option<Box<Vec<Slot>>>,
    last_hash: u64,
    next_id: ObserverId,
    flags: u8,
}

impl Inner {
    fn has(&self, bit: u8) -> bool {
        self.flags & bit != 0
    }

    /// Sets or clears `bit`; whether it was set.
    fn put(&mut self, bit: u8, on: bool) -> bool {
        let was = self.has(bit);
        if on {
            self.flags |= bit;
        } else {
            self.flags &= !bit;
        }
        was
    }

    fn slots_mut(&mut self) -> impl Iterator<Item = &mut Slot> {
        self.first
            .iter_mut()
            .chain(self.more.iter_mut().flat_map(|v| v.iter_mut()))
    }

    fn slot(&mut self, id: ObserverId) -> Option<&mut Slot> {
        self.slots_mut().find(|s| s.id == id)
    }

    fn observed(&self) -> bool {
        self.first.is_some() || self.more.as_ref().is_some_and(|v| !v.is_empty())
    }

    fn last(&self) -> LastState {
        match (self.has(flag::LAST_KNOWN), self.has(flag::LAST_SET)) {
            (false, _) => LastState::Unknown,
            (true, false) => LastState::Deleted,
            (true, true) => LastState::Set(self.last_hash),
        }
    }

    fn set_last(&mut self, last: LastState) {
        self.put(flag::LAST_KNOWN, last != LastState::Unknown);
        self.put(flag::LAST_SET, matches!(last, LastState::Set(_)));
        self.last_hash = match last {
            LastState::Set(hash) => hash,
            _ => 0,
        };
    }

    /// Takes the first registration's state (`last`, `version`) as the baseline unless a
    /// newer change was delivered meanwhile, and withdraws the changes delivered meanwhile
    /// that are not newer than it (see [`KeyEntry::registered`]).
    fn settle(&mut self, last: LastState, version: Option<Hlc>) {
        if let Some(baseline) = &version {
            for slot in self.slots_mut() {
                if let Some(items) = &mut slot.items {
                    items.retain(|e| {
                        !matches!(e, ObserverEvent::Change(n) if !newer(n.version.as_ref(), baseline))
                    });
                    if items.is_empty() {
                        slot.items = None;
                    }
                }
            }
        }
        let delivered_newer = match (&self.last_version, &version) {
            (Some(delivered), Some(baseline)) => newer(Some(delivered), baseline),
            (Some(_), None) => true,
            (None, _) => self.last() != LastState::Unknown,
        };
        if !delivered_newer {
            self.set_last(last);
            if last != LastState::Deleted {
                self.last_version = version;
            }
        }
    }

    /// Appends `event` to every observer's buffer; the wakers to wake once unlocked, and how
    /// many buffers discarded their oldest event to take it.
    fn push_all(&mut self, capacity: usize, event: &ObserverEvent) -> (Vec<Waker>, u64) {
        let (mut wake, mut dropped) = (Vec::new(), 0);
        for slot in self.slots_mut() {
            dropped += u64::from(slot.push(capacity, event.clone(), &mut wake));
        }
        (wake, dropped)
    }
}

/// One observed key (see the module documentation).
pub(crate) struct KeyEntry {
    key: KeyBytes,
    inner: Mutex<Inner>,
}

fn wake_all(wakers: Vec<Waker>) {
    for w in wakers {
        w.wake();
    }
}

impl KeyEntry {
    /// An entry with no observer yet; `closed` when the client already closed.
    pub(crate) fn new(key: &[u8], closed: bool) -> KeyEntry {
        KeyEntry {
            key: KeyBytes::new(key),
            inner: Mutex::new(Inner {
                last_version: None,
                first: None,
                more: None,
                last_hash: 0,
                next_id: NonZeroU32::MIN,
                flags: if closed { flag::CLOSED } else { 0 },
            }),
        }
    }

    /// The key.
    pub(crate) fn key(&self) -> &[u8] {
        self.key.as_slice()
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Adds an observer: its id, and whether the key still needs its KEYNOTIFY.
    pub(crate) fn add_observer(&self) -> (ObserverId, bool) {
        let mut inner = self.lock();
        let mut id = inner.next_id;
        // Ids are unique among the key's observers (after 2³² observers of one key, the
        // count wraps and skips the ids still in use).
        while inner.slot(id).is_some() {
            id = id.checked_add(1).unwrap_or(NonZeroU32::MIN);
        }
        inner.next_id = id.checked_add(1).unwrap_or(NonZeroU32::MIN);
        if inner.first.is_none() {
            inner.first = Some(Slot::new(id));
        } else {
            inner.more.get_or_insert_default().push(Slot::new(id));
        }
        (id, !inner.has(flag::REGISTERED))
    }

    /// Removes observer `id` (and its buffer); `true` when it was the key's last.
    pub(crate) fn remove_observer(&self, id: ObserverId) -> bool {
        let mut inner = self.lock();
        if inner.first.as_ref().is_some_and(|s| s.id == id) {
            inner.first = inner.more.as_mut().and_then(|v| v.pop());
        } else if let Some(more) = inner.more.as_mut() {
            more.retain(|s| s.id != id);
        }
        if inner.more.as_ref().is_some_and(|v| v.is_empty()) {
            inner.more = None;
        }
        !inner.observed()
    }

    /// Whether any observer is left.
    #[cfg(test)]
    pub(crate) fn observed(&self) -> bool {
        self.lock().observed()
    }

    /// Whether the registration is wanted: by an observer, or by the cache.
    pub(crate) fn wanted(&self) -> bool {
        let inner = self.lock();
        inner.observed() || inner.has(flag::CACHED)
    }

    /// Records whether the client's cache holds the key.
    pub(crate) fn set_cached(&self, cached: bool) {
        self.lock().put(flag::CACHED, cached);
    }

    /// Whether a STOP is owed when the key is forgotten.
    pub(crate) fn owes_stop(&self) -> bool {
        let inner = self.lock();
        inner.has(flag::REGISTERED) || inner.has(flag::STOP_OWED)
    }

    /// Records that a KEYNOTIFY is about to be sent: from now on a STOP is owed.
    pub(crate) fn stop_owed(&self) {
        self.lock().put(flag::STOP_OWED, true);
    }

    /// Records that KEYNOTIFY was accepted, with the key's state read right after it
    /// (`last` and `version`). Observers that were told the key was degraded are told it is
    /// restored.
    ///
    /// The first time, that state is the baseline the observers start from: notifications
    /// that arrived meanwhile (the observe call has not returned yet, so nobody has read
    /// them) and are not newer than it are withdrawn — they were sent before the GET, for
    /// instance for a change made while a STOP of an earlier observation was still on its
    /// way, and the observers must only see later changes.
    pub(crate) fn registered(&self, capacity: usize, last: LastState, version: Option<Hlc>) {
        let mut inner = self.lock();
        inner.put(flag::REGISTERED, true);
        if !inner.put(flag::SETTLED, true) {
            inner.settle(last, version);
        }
        let wake = if inner.put(flag::DEGRADED, false) {
            inner.push_all(capacity, &ObserverEvent::Restored).0
        } else {
            Vec::new()
        };
        drop(inner);
        wake_all(wake);
    }

    /// Marks the key as needing KEYNOTIFY again; whether it is observed.
    pub(crate) fn unregister(&self) -> bool {
        let mut inner = self.lock();
        inner.put(flag::REGISTERED, false);
        inner.observed()
    }

    /// Observed but not registered on the current connection.
    pub(crate) fn needs_registration(&self) -> bool {
        let inner = self.lock();
        inner.observed() && !inner.has(flag::REGISTERED)
    }

    /// Tells the observers that the key could not be re-registered (once, until restored).
    pub(crate) fn degraded(&self, capacity: usize, reason: &str) {
        let mut inner = self.lock();
        if inner.put(flag::DEGRADED, true) {
            return;
        }
        let event = ObserverEvent::Degraded {
            reason: reason.to_owned(),
        };
        let (wake, _) = inner.push_all(capacity, &event);
        drop(inner);
        wake_all(wake);
    }

    /// Ends every observer's stream once drained.
    pub(crate) fn close(&self) {
        let mut inner = self.lock();
        inner.put(flag::CLOSED, true);
        let wake: Vec<Waker> = inner.slots_mut().filter_map(|s| s.waker.take()).collect();
        drop(inner);
        wake_all(wake);
    }

    /// The last known state (for resynchronisation) and version.
    pub(crate) fn last(&self) -> (LastState, Option<Hlc>) {
        let inner = self.lock();
        (inner.last(), inner.last_version.clone())
    }

    /// Delivers a change unless its version is not newer than the last one; `last` is the
    /// state it leaves the key in.
    pub(crate) fn deliver(
        &self,
        capacity: usize,
        n: KeyNotification,
        last: LastState,
    ) -> Option<u64> {
        let mut inner = self.lock();
        if let Some(prev) = &inner.last_version
            && !newer(n.version.as_ref(), prev)
        {
            tracing::debug!(version = ?n.version, last = %prev, "dropped a duplicate or late notification");
            return None;
        }
        if n.version.is_some() {
            inner.last_version.clone_from(&n.version);
        }
        inner.set_last(last);
        let (wake, dropped) = inner.push_all(capacity, &ObserverEvent::Change(n));
        drop(inner);
        wake_all(wake);
        Some(dropped)
    }

    /// Observer `id`'s next event, `None` once the client closed and the buffer is drained.
    pub(crate) fn poll_next(
        &self,
        id: ObserverId,
        cx: &mut Context<'_>,
    ) -> Poll<Option<ObserverEvent>> {
        let mut inner = self.lock();
        let closed = inner.has(flag::CLOSED);
        let Some(slot) = inner.slot(id) else {
            return Poll::Ready(None);
        };
        if let Some(event) = slot.pop() {
            return Poll::Ready(Some(event));
        }
        if closed {
            return Poll::Ready(None);
        }
        match &mut slot.waker {
            Some(w) if w.will_wake(cx.waker()) => {}
            w => *w = Some(cx.waker().clone()),
        }
        Poll::Pending
    }

    /// Observer `id`'s next event if one is buffered.
    pub(crate) fn try_next(&self, id: ObserverId) -> Option<ObserverEvent> {
        self.lock().slot(id)?.pop()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::KeyEvent;
    use bytes::Bytes;

    #[test]
    fn short_keys_are_inline_and_long_ones_are_not_cut() {
        for len in [1, INLINE, INLINE + 1, 300] {
            let key: Vec<u8> = (0..len).map(|i| i as u8).collect();
            let entry = KeyEntry::new(&key, false);
            assert_eq!(entry.key(), &key[..]);
            assert_eq!(matches!(entry.key, KeyBytes::Inline { .. }), len <= INLINE);
        }
    }

    #[test]
    fn an_idle_key_is_small() {
        // One allocation per observed key (see the module documentation): keep it (with
        // its reference counts) within glibc's 160-byte chunks, so that the whole cost of an
        // observed key stays well under 250 bytes (`bench/run client-memory`).
        let (entry, observer) = (
            std::mem::size_of::<KeyEntry>(),
            std::mem::size_of::<super::super::Observer>(),
        );
        eprintln!("KeyEntry {entry} B, Observer {observer} B");
        assert!(entry + 16 <= 144, "KeyEntry is {entry} bytes");
        assert!(observer <= 24, "Observer is {observer} bytes");
    }

    fn change(value: &str) -> KeyNotification {
        KeyNotification {
            key: Bytes::from_static(b"k"),
            event: KeyEvent::Set(Bytes::from(value.to_owned())),
            version: None,
            resync: false,
            dropped_before: 0,
        }
    }

    fn values(entry: &KeyEntry, id: ObserverId) -> Vec<(String, u64)> {
        std::iter::from_fn(|| entry.try_next(id))
            .filter_map(|e| match e {
                ObserverEvent::Change(n) => match n.event {
                    KeyEvent::Set(v) => {
                        Some((String::from_utf8(v.to_vec()).unwrap(), n.dropped_before))
                    }
                    KeyEvent::Delete => None,
                },
                _ => None,
            })
            .collect()
    }

    #[test]
    fn every_observer_gets_each_change_and_a_dropped_count_survives_connection_events() {
        let entry = KeyEntry::new(b"k", false);
        let (a, first) = entry.add_observer();
        let (b, second) = entry.add_observer();
        assert!(first && second, "not registered yet");
        for v in ["1", "2", "3"] {
            entry.deliver(2, change(v), LastState::Set(0));
        }
        entry.degraded(2, "cut");
        entry.deliver(2, change("4"), LastState::Set(0));
        // Capacity 2: "1", then "2" and "3", were pushed out by newer events.
        let events: Vec<ObserverEvent> = std::iter::from_fn(|| entry.try_next(a)).collect();
        assert_eq!(events.len(), 2);
        assert!(matches!(events[0], ObserverEvent::Degraded { .. }));
        match &events[1] {
            ObserverEvent::Change(n) => assert_eq!(n.dropped_before, 3, "1, 2 and 3 dropped"),
            other => panic!("unexpected {other:?}"),
        }
        assert_eq!(values(&entry, b), [("4".into(), 3)]);
        assert!(!entry.remove_observer(a), "b is left");
        assert!(entry.remove_observer(b), "the last one");
        assert!(!entry.observed());
    }

    fn versioned(value: &str, counter: u64) -> KeyNotification {
        KeyNotification {
            version: Some(Hlc::new(1_000, counter, "n").unwrap()),
            ..change(value)
        }
    }

    #[test]
    fn changes_not_newer_than_the_first_registration_are_withdrawn() {
        let entry = KeyEntry::new(b"k", false);
        let (id, _) = entry.add_observer();
        // Sent before the GET (e.g. while an earlier observation's STOP was on its way):
        entry.deliver(8, versioned("two", 5), LastState::Set(2));
        // Sent after it:
        entry.deliver(8, versioned("four", 9), LastState::Set(4));
        entry.registered(8, LastState::Set(3), Some(Hlc::new(1_000, 7, "n").unwrap()));
        assert_eq!(values(&entry, id), [("four".into(), 0)]);
        assert_eq!(
            entry.last().0,
            LastState::Set(4),
            "the newer change is the state"
        );
        entry.deliver(8, versioned("older", 8), LastState::Set(8));
        assert!(
            values(&entry, id).is_empty(),
            "not newer than the last delivered"
        );

        // Nothing newer came: the GET's state is the baseline, later ones are delivered.
        let entry = KeyEntry::new(b"k", false);
        let (id, _) = entry.add_observer();
        entry.deliver(8, versioned("two", 5), LastState::Set(2));
        entry.registered(8, LastState::Set(2), Some(Hlc::new(1_000, 5, "n").unwrap()));
        assert!(values(&entry, id).is_empty());
        entry.deliver(8, versioned("three", 6), LastState::Set(3));
        assert_eq!(values(&entry, id), [("three".into(), 0)]);
        // Later registrations (after a reconnection) withdraw nothing.
        entry.unregister();
        entry.deliver(8, versioned("five", 10), LastState::Set(5));
        entry.registered(
            8,
            LastState::Set(6),
            Some(Hlc::new(1_000, 11, "n").unwrap()),
        );
        assert_eq!(values(&entry, id), [("five".into(), 0)]);
    }

    #[test]
    fn removing_the_first_observer_keeps_the_others_buffers() {
        let entry = KeyEntry::new(b"k", false);
        let ids: Vec<ObserverId> = (0..3).map(|_| entry.add_observer().0).collect();
        entry.deliver(8, change("x"), LastState::Set(0));
        assert!(!entry.remove_observer(ids[0]));
        assert_eq!(values(&entry, ids[1]), [("x".into(), 0)]);
        assert_eq!(values(&entry, ids[2]), [("x".into(), 0)]);
        assert!(!entry.remove_observer(ids[2]));
        assert!(entry.remove_observer(ids[1]));
    }

    #[test]
    fn a_drained_buffer_is_released_and_close_ends_the_stream() {
        let entry = KeyEntry::new(b"k", false);
        let (id, _) = entry.add_observer();
        entry.deliver(8, change("x"), LastState::Set(0));
        assert_eq!(values(&entry, id).len(), 1);
        assert!(
            entry.lock().slot(id).is_some_and(|s| s.items.is_none()),
            "no buffer held while idle"
        );
        let mut cx = Context::from_waker(Waker::noop());
        assert!(entry.poll_next(id, &mut cx).is_pending());
        entry.close();
        assert!(matches!(entry.poll_next(id, &mut cx), Poll::Ready(None)));
    }
}
