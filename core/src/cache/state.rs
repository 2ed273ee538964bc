//! The cache's state machine, pure: entries by key, their order of use, the byte and entry
//! bounds, and the rules that decide what a read may answer. No clock is read and nothing is
//! sent here; [`Cache`](super::Cache) passes in the link's state and does the wire work.
//!
//! An entry belongs to one connection and one generation of the freshness lease (its
//! [`Epoch`]): the store drops a client's KEYNOTIFY registrations when its connection ends,
//! so what an entry says is kept fresh only while that connection lasts; and when the lease
//! fails ([`super::lease`]) notifications may have been lost, so entries of an earlier
//! generation never answer again (they are read from the store anew).
//!
//! Every entry removed is also listed in [`State::take_released`] (except when a read makes
//! it anew at once): its registration is then given back by the one path that does so, so
//! the client's registry holds a key for the cache exactly while the cache holds it.
//!
//! A read that misses makes a [`Slot::Filling`] entry *before* its KEYNOTIFY is sent, so
//! every change that arrives between the registration and the GET's answer is seen; the fill
//! then keeps the newer of the two by version ([`settle`]). Changes are ordered by version
//! (`__ts`): an older or equal version never replaces a newer one, and a change that cannot
//! be ordered (no version where one is needed) removes the entry instead of guessing.

use std::collections::{BTreeMap, HashMap};

use bytes::Bytes;

use crate::hlc::Hlc;

/// What a change, a read or an entry says of a key: its value (`None`: absent) and version.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Change {
    /// The value, or `None` when the key is absent.
    pub(crate) value: Option<Bytes>,
    /// Its version (`None`: a GET of a missing key carries none).
    pub(crate) version: Option<Hlc>,
}

impl Change {
    /// Bytes an entry holding this counts beside its key.
    fn size(&self) -> usize {
        self.value.as_ref().map_or(0, Bytes::len)
    }

    /// The same change with its value in an allocation of its own. A value read off the
    /// connection is a slice of the buffer its packet arrived in, which it would keep alive
    /// for as long as the entry lives (docs/benchmarks.md, "Memory per cached entry").
    fn compact(self) -> Change {
        Change {
            value: self.value.map(|v| Bytes::copy_from_slice(&v)),
            version: self.version,
        }
    }
}

/// What arrived for a key while its fill was in flight.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Seen {
    Nothing,
    /// The newest change by version.
    Newest(Change),
    /// A change without a version arrived: nothing can be ordered against it.
    Unordered,
}

impl Seen {
    fn merge(self, change: Change) -> Seen {
        match (self, change.version.is_some()) {
            (Seen::Unordered, _) | (_, false) => Seen::Unordered,
            (Seen::Nothing, true) => Seen::Newest(change),
            (Seen::Newest(seen), true) => {
                if newer(&change, &seen) {
                    Seen::Newest(change)
                } else {
                    Seen::Newest(seen)
                }
            }
        }
    }
}

/// Whether `change` comes after `than`; both carry versions (else `false`).
fn newer(change: &Change, than: &Change) -> bool {
    match (&change.version, &than.version) {
        (Some(v), Some(t)) => v.cmp_time(t).is_gt(),
        _ => false,
    }
}

/// What the fill's GET answered, against what arrived meanwhile: the state to keep, or
/// `None` when the two cannot be ordered (the key then stays out of the cache).
fn settle(read: Change, seen: Seen) -> Option<Change> {
    match seen {
        Seen::Nothing => Some(read),
        Seen::Unordered => None,
        Seen::Newest(change) => match &read.version {
            Some(_) if newer(&change, &read) => Some(change),
            Some(_) => Some(read),
            // A GET of a missing key carries no version: a deletion that arrived meanwhile
            // agrees with it, but its version may be older than one this client already
            // read (a notification can arrive after a later response), so the entry keeps
            // no version; a value does not agree, and which came last is not known.
            None if change.value.is_none() => Some(read),
            None => None,
        },
    }
}

/// The ticket of a [`Slot::Filling`] no read owns: the entry's state became unknown (see
/// [`State::apply`]) and the next read fills it (tickets count from 1).
const UNOWNED: u64 = 0;

enum Slot {
    /// A read registered the key and waits for its GET (`ticket` names that read, or none:
    /// [`UNOWNED`]); `seen` collects what arrives meanwhile.
    Filling { ticket: u64, seen: Seen },
    /// The key's state, kept fresh by notifications while the entry's connection lasts.
    Known(Change),
}

/// The connection (its CONNACK count) and the lease's generation an entry belongs to.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) struct Epoch {
    /// The link's CONNACK count when the entry's registration began.
    pub(crate) connection: u64,
    /// The lease's generation then.
    pub(crate) generation: u64,
}

/// What a read of the cache found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Lookup {
    /// The state to answer with.
    Hit(Change),
    /// The key's entry is current, but the lease does not let it answer now: read the store
    /// (the registration holds; no new one is needed).
    Lapsed,
    /// No current entry: register the key and read it (or wait for the read that does).
    Miss,
}

struct Entry {
    /// The connection and lease generation this entry's registration belongs to.
    epoch: Epoch,
    /// When it was last used (a counter).
    used: u64,
    /// The tick it is filed under in [`State::order`] (at most `used`).
    filed: u64,
    slot: Slot,
    /// Key and value bytes.
    size: usize,
}

/// Where the link is, as a read sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct At {
    /// The link's CONNACK count and the lease's generation now.
    pub(crate) epoch: Epoch,
    /// Connected now.
    pub(crate) connected: bool,
    /// The lease holds: entries may answer while connected.
    pub(crate) fresh: bool,
    /// Disconnected for no longer than `max_staleness`: entries of this epoch may answer.
    pub(crate) stale_ok: bool,
}

impl At {
    /// Whether an entry of this epoch that holds a state may answer now: connected with the
    /// lease holding, or disconnected within `max_staleness`.
    fn answers(&self) -> bool {
        (self.connected && self.fresh) || self.stale_ok
    }
}

/// The cache's counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Counters {
    pub(crate) hits: u64,
    pub(crate) misses: u64,
    pub(crate) evictions: u64,
    pub(crate) invalidations: u64,
    /// Reads of a current entry sent to the store because the lease did not hold.
    pub(crate) lapsed: u64,
}

/// Every entry, their order of use and the counters (see the module documentation).
pub(crate) struct State {
    entries: HashMap<Bytes, Entry>,
    /// Entries by the tick they are filed under: the least recently used first, once the
    /// entries used since they were filed are filed again (done lazily, when evicting).
    order: BTreeMap<u64, Bytes>,
    tick: u64,
    ticket: u64,
    bytes: usize,
    max_entries: usize,
    max_bytes: usize,
    /// Keys removed since [`State::take_released`] was last called.
    released: Vec<Bytes>,
    pub(crate) counters: Counters,
}

impl State {
    /// An empty cache of at most `max_entries` entries and `max_bytes` key and value bytes.
    pub(crate) fn new(max_entries: usize, max_bytes: usize) -> State {
        State {
            entries: HashMap::new(),
            order: BTreeMap::new(),
            tick: 0,
            ticket: 0,
            bytes: 0,
            max_entries: max_entries.max(1),
            max_bytes,
            released: Vec::new(),
            counters: Counters::default(),
        }
    }

    /// Entries held now (those being filled included).
    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }

    /// Key and value bytes held now.
    pub(crate) fn bytes(&self) -> usize {
        self.bytes
    }

    fn next_tick(&mut self) -> u64 {
        self.tick += 1;
        self.tick
    }

    /// The keys removed since the last call (evicted, invalidated, given up): their
    /// registrations are to be given back.
    pub(crate) fn take_released(&mut self) -> Vec<Bytes> {
        std::mem::take(&mut self.released)
    }

    /// A read of `key` (see [`Lookup`]).
    pub(crate) fn lookup(&mut self, key: &[u8], at: At) -> Lookup {
        let tick = self.tick + 1;
        let found = match self.entries.get_mut(key) {
            Some(e) if e.epoch == at.epoch => match &e.slot {
                Slot::Known(change) if at.answers() => {
                    e.used = tick;
                    Lookup::Hit(change.clone())
                }
                Slot::Known(_) => {
                    // Still a read of the key: the order of use counts it.
                    e.used = tick;
                    Lookup::Lapsed
                }
                Slot::Filling { .. } => Lookup::Miss,
            },
            _ => Lookup::Miss,
        };
        match found {
            Lookup::Hit(_) => {
                self.tick = tick;
                self.counters.hits += 1;
            }
            Lookup::Lapsed => {
                self.tick = tick;
                self.counters.misses += 1;
                if at.connected {
                    self.counters.lapsed += 1;
                }
            }
            Lookup::Miss => self.counters.misses += 1,
        }
        found
    }

    /// Whether `key` has an entry of `epoch` that holds a state.
    pub(crate) fn current(&self, key: &[u8], epoch: Epoch) -> bool {
        matches!(self.entries.get(key), Some(e) if e.epoch == epoch && matches!(e.slot, Slot::Known(_)))
    }

    /// What [`State::lookup`] would answer with, without counting or marking a use.
    pub(crate) fn peek(&self, key: &[u8], at: At) -> Option<Change> {
        match self.entries.get(key) {
            Some(e) if e.epoch == at.epoch && at.answers() => match &e.slot {
                Slot::Known(change) => Some(change.clone()),
                Slot::Filling { .. } => None,
            },
            _ => None,
        }
    }

    /// A read of `key` missed and registers it in `epoch`: the entry that will collect the
    /// changes arriving until the read's GET answers. Returns the read's ticket for
    /// [`State::fill`]; keys evicted to make room are released.
    pub(crate) fn begin(&mut self, key: &Bytes, epoch: Epoch) -> u64 {
        self.ticket += 1;
        let ticket = self.ticket;
        let tick = self.next_tick();
        match self.entries.get_mut(&key[..]) {
            // Another read of this epoch fills it, or filled it: this one takes over the
            // fill and keeps what arrived meanwhile.
            Some(e) if e.epoch == epoch => {
                e.used = tick;
                let seen = match std::mem::replace(
                    &mut e.slot,
                    Slot::Filling {
                        ticket,
                        seen: Seen::Nothing,
                    },
                ) {
                    Slot::Filling { seen, .. } => seen,
                    Slot::Known(change) => Seen::Nothing.merge(change),
                };
                e.slot = Slot::Filling { ticket, seen };
                let size = key.len();
                self.bytes = self.bytes - e.size + size;
                e.size = size;
                return ticket;
            }
            Some(_) => {
                // Of an older connection or lease generation: nothing it says holds any more.
                // Made anew at once (the registration is the new read's): not released.
                self.unlink(key);
                self.counters.invalidations += 1;
            }
            None => {}
        }
        self.insert(
            key.clone(),
            Entry {
                epoch,
                used: tick,
                filed: tick,
                slot: Slot::Filling {
                    ticket,
                    seen: Seen::Nothing,
                },
                size: key.len(),
            },
        );
        self.evict(Some(key));
        ticket
    }

    fn insert(&mut self, key: Bytes, entry: Entry) {
        self.bytes += entry.size;
        self.order.insert(entry.filed, key.clone());
        self.entries.insert(key, entry);
    }

    /// Removes `key`'s entry without releasing it; whether there was one.
    fn unlink(&mut self, key: &[u8]) -> bool {
        match self.entries.remove(key) {
            Some(e) => {
                self.order.remove(&e.filed);
                self.bytes -= e.size;
                true
            }
            None => false,
        }
    }

    /// Removes `key`'s entry and releases it; whether there was one.
    fn remove(&mut self, key: &[u8]) -> bool {
        let removed = self.unlink(key);
        if removed {
            self.released.push(Bytes::copy_from_slice(key));
        }
        removed
    }

    /// Whether `key` has an entry (fresh or being filled).
    pub(crate) fn holds(&self, key: &[u8]) -> bool {
        self.entries.contains_key(key)
    }

    /// The read with `ticket` failed: its entry goes, unless another read took the fill over
    /// or it was filled meanwhile.
    pub(crate) fn abandon(&mut self, key: &[u8], ticket: u64) {
        if matches!(self.entries.get(key), Some(e) if matches!(e.slot, Slot::Filling { ticket: t, .. } if t == ticket))
        {
            self.remove(key);
        }
    }

    /// Something arrived for `key` that cannot be applied (a notification whose version the
    /// client's clock refuses, an answer that cannot be trusted): its entry goes.
    pub(crate) fn forget(&mut self, key: &[u8]) {
        if self.remove(key) {
            self.counters.invalidations += 1;
        }
    }

    /// The read with `ticket` got `read` from the store in `epoch`, and the link is at `at`
    /// now. Keeps the newer of it and what arrived meanwhile, if the registration still
    /// holds.
    pub(crate) fn fill(&mut self, key: &[u8], ticket: u64, epoch: Epoch, read: Change, at: At) {
        let Some(e) = self.entries.get_mut(key) else {
            return;
        };
        if e.epoch != epoch {
            return;
        }
        if at.epoch != epoch || !at.connected {
            // The connection the registration belongs to ended, or the lease failed: what
            // arrived may be partial.
            if matches!(e.slot, Slot::Filling { ticket: t, .. } if t == ticket) {
                self.remove(key);
            }
            return;
        }
        match std::mem::replace(
            &mut e.slot,
            Slot::Filling {
                ticket: 0,
                seen: Seen::Nothing,
            },
        ) {
            Slot::Filling { ticket: t, seen } if t == ticket => match settle(read, seen) {
                Some(change) => self.keep(key, change),
                None => {
                    self.remove(key);
                }
            },
            // Another read took the fill over: this answer is one more change for it.
            Slot::Filling { ticket: t, seen } => {
                let seen = if read.version.is_some() {
                    seen.merge(read)
                } else {
                    seen
                };
                e.slot = Slot::Filling { ticket: t, seen };
            }
            Slot::Known(change) => {
                e.slot = Slot::Known(change);
                self.apply(key, read, false);
            }
        }
    }

    /// Makes `key`'s entry hold `change` (its entry exists).
    fn keep(&mut self, key: &[u8], change: Change) {
        let size = key.len() + change.size();
        if size > self.max_bytes {
            // Larger than the whole cache: read it from the store each time.
            self.remove(key);
            self.counters.evictions += 1;
            return;
        }
        let Some(e) = self.entries.get_mut(key) else {
            return;
        };
        self.bytes = self.bytes - e.size + size;
        e.size = size;
        e.slot = Slot::Known(change.compact());
        self.evict(Some(key));
    }

    /// A change of `key`: a notification (`notified`), or the store's answer to one of this
    /// client's own writes or reads. Applied when newer than the entry's state.
    pub(crate) fn apply(&mut self, key: &[u8], change: Change, notified: bool) {
        let Some(e) = self.entries.get_mut(key) else {
            return;
        };
        let current = match &mut e.slot {
            Slot::Filling { seen, .. } => {
                *seen = std::mem::replace(seen, Seen::Nothing).merge(change);
                return;
            }
            Slot::Known(current) => current,
        };
        if change.version.is_none() {
            // Nothing orders it against what the entry holds: forget the entry.
            if *current != change {
                self.forget(key);
            }
            return;
        }
        if current.version.is_none() {
            // The key was found missing, with no version to order against: the change may
            // be newer, or a notification that arrived after a later response (a store may
            // publish responses before notifications it queued earlier). The state is
            // unknown until the next read fills it, keeping the newer of its GET and this.
            let size = key.len();
            self.bytes = self.bytes - e.size + size;
            e.size = size;
            e.slot = Slot::Filling {
                ticket: UNOWNED,
                seen: Seen::Nothing.merge(change),
            };
            self.counters.invalidations += 1;
            return;
        }
        if !newer(&change, current) {
            return;
        }
        if notified {
            self.counters.invalidations += 1;
        }
        self.keep(key, change);
    }

    /// Removes every entry of a connection before `connection` (a new connection began:
    /// their registrations are gone, or are to be given back); returns their keys, which are
    /// not in [`State::take_released`] (whether a STOP is owed depends on the MQTT session).
    pub(crate) fn retire(&mut self, connection: u64) -> Vec<Bytes> {
        let old: Vec<Bytes> = self
            .entries
            .iter()
            .filter(|(_, e)| e.epoch.connection < connection)
            .map(|(k, _)| k.clone())
            .collect();
        for key in &old {
            self.unlink(key);
        }
        self.counters.invalidations += old.len() as u64;
        old
    }

    /// Evicts the least recently used entries (never `keep`, the entry being made) until
    /// within both bounds; they are released.
    fn evict(&mut self, keep: Option<&[u8]>) {
        let mut kept = None;
        while self.entries.len() > self.max_entries || self.bytes > self.max_bytes {
            let Some((filed, key)) = self.order.pop_first() else {
                break;
            };
            let Some(e) = self.entries.get_mut(&key) else {
                continue;
            };
            if keep == Some(&key[..]) {
                kept = Some((filed, key));
                continue;
            }
            if e.used > filed {
                // Used since it was filed: file it again, under its last use.
                e.filed = e.used;
                self.order.insert(e.used, key);
                continue;
            }
            let size = e.size;
            self.entries.remove(&key);
            self.bytes -= size;
            self.counters.evictions += 1;
            self.released.push(key);
        }
        if let Some((filed, key)) = kept {
            self.order.insert(filed, key);
        }
    }
}

#[cfg(test)]
mod tests;
