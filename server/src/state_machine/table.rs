//! The keys and values, laid out for memory: a store may hold millions of small keys, so
//! the per-key overhead is what decides how many fit.
//!
//! Each key is one 40-byte slot in an ordered set (a B-tree: SCAN walks the keys in order
//! from a continuation point, O(page) per request) plus one heap allocation holding the key and
//! the value back to back (copied out of the request packet, which would otherwise stay
//! alive with the key). The version is kept as its wall clock and counter, with the node id
//! as an index into a tiny table (every version the store issues carries the service's own
//! node id; restored ones may carry an earlier run's). The rare fields, a PX deadline and a
//! fencing token, live in a side map only for the keys that have them.
//!
//! 1 M keys of 16 + 16 bytes measure ≈ 130 bytes of overhead per key (docs/benchmarks.md).

use std::borrow::Borrow;
use std::cmp::Ordering;
use std::collections::{BTreeSet, HashMap};
use std::ops::Bound;

use bytes::Bytes;
use mqstate::Hlc;

/// A key's stored state, as the store reads and writes it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Entry {
    pub(crate) value: Bytes,
    pub(crate) version: Hlc,
    pub(crate) expires_at_ms: Option<u64>,
    pub(crate) fencing_token: Option<Hlc>,
    /// Set with `aio-persistence: true`: its changes go to the journal.
    pub(crate) persisted: bool,
}

/// What is left of a removed key: what its deletion needs.
#[derive(Debug)]
pub(crate) struct Removed {
    pub(crate) version: Hlc,
    pub(crate) expires_at_ms: Option<u64>,
    pub(crate) persisted: bool,
}

/// One key: 40 bytes.
struct Slot {
    /// The key, then the value.
    data: Box<[u8]>,
    wall_ms: u64,
    counter: u64,
    key_len: u32,
    /// Index into [`Table::nodes`].
    node: u16,
    persisted: bool,
    /// The key has an entry in [`Table::extras`].
    has_extras: bool,
}

impl Slot {
    fn key(&self) -> &[u8] {
        &self.data[..self.key_len as usize]
    }

    fn value(&self) -> &[u8] {
        &self.data[self.key_len as usize..]
    }
}

// A slot is its key as far as the set is concerned; ordering must match `[u8]`'s for
// `Borrow<[u8]>` lookups.
impl Ord for Slot {
    fn cmp(&self, other: &Slot) -> Ordering {
        self.key().cmp(other.key())
    }
}

impl PartialOrd for Slot {
    fn partial_cmp(&self, other: &Slot) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for Slot {
    fn eq(&self, other: &Slot) -> bool {
        self.key() == other.key()
    }
}

impl Eq for Slot {}

impl Borrow<[u8]> for Slot {
    fn borrow(&self) -> &[u8] {
        self.key()
    }
}

/// The fields few keys have.
#[derive(Debug, Default)]
struct Extras {
    expires_at_ms: Option<u64>,
    fencing_token: Option<Hlc>,
}

/// Every stored key.
#[derive(Default)]
pub(crate) struct Table {
    slots: BTreeSet<Slot>,
    extras: HashMap<Box<[u8]>, Extras>,
    /// The node ids of stored versions (a handful at most).
    nodes: Vec<Hlc>,
    /// The bytes of every key and value together.
    data_bytes: u64,
}

impl std::fmt::Debug for Table {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Table")
            .field("keys", &self.slots.len())
            .field("with_extras", &self.extras.len())
            .finish()
    }
}

/// A stored key, borrowed.
pub(crate) struct View<'a> {
    slot: &'a Slot,
    extras: Option<&'a Extras>,
    table: &'a Table,
}

impl View<'_> {
    pub(crate) fn value(&self) -> &[u8] {
        self.slot.value()
    }

    pub(crate) fn version(&self) -> Hlc {
        self.table.version(self.slot)
    }

    pub(crate) fn fencing_token(&self) -> Option<&Hlc> {
        self.extras.and_then(|e| e.fencing_token.as_ref())
    }

    pub(crate) fn persisted(&self) -> bool {
        self.slot.persisted
    }

    pub(crate) fn expires_at_ms(&self) -> Option<u64> {
        self.extras.and_then(|e| e.expires_at_ms)
    }
}

impl Table {
    pub(crate) fn len(&self) -> usize {
        self.slots.len()
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    /// The bytes of every key and value together.
    pub(crate) fn data_bytes(&self) -> u64 {
        self.data_bytes
    }

    pub(crate) fn get(&self, key: &[u8]) -> Option<View<'_>> {
        let slot = self.slots.get(key)?;
        let extras = if slot.has_extras {
            self.extras.get(key)
        } else {
            None
        };
        Some(View {
            slot,
            extras,
            table: self,
        })
    }

    /// Stores `entry` under `key`; returns the old entry's PX deadline if it had one
    /// (`Some(None)`: there was an old entry without one).
    pub(crate) fn insert(&mut self, key: &[u8], entry: Entry) -> Option<Option<u64>> {
        let old = self.remove(key).map(|old| old.expires_at_ms);
        let mut data = Vec::with_capacity(key.len() + entry.value.len());
        data.extend_from_slice(key);
        data.extend_from_slice(&entry.value);
        let has_extras = entry.expires_at_ms.is_some() || entry.fencing_token.is_some();
        if has_extras {
            self.extras.insert(
                key.into(),
                Extras {
                    expires_at_ms: entry.expires_at_ms,
                    fencing_token: entry.fencing_token,
                },
            );
        }
        let node = self.node_index(&entry.version);
        self.data_bytes += data.len() as u64;
        self.slots.insert(Slot {
            data: data.into_boxed_slice(),
            wall_ms: entry.version.wall_ms(),
            counter: entry.version.counter(),
            // Keys come from MQTT packets (at most 256 MiB), so they always fit.
            key_len: u32::try_from(key.len()).unwrap_or(u32::MAX),
            node,
            persisted: entry.persisted,
            has_extras,
        });
        old
    }

    pub(crate) fn remove(&mut self, key: &[u8]) -> Option<Removed> {
        let slot = self.slots.take(key)?;
        self.data_bytes -= slot.data.len() as u64;
        let extras = if slot.has_extras {
            self.extras.remove(key)
        } else {
            None
        };
        Some(Removed {
            version: self.version(&slot),
            expires_at_ms: extras.and_then(|e| e.expires_at_ms),
            persisted: slot.persisted,
        })
    }

    /// The stored keys from `start` on, in byte order.
    pub(crate) fn keys_from<'a>(
        &'a self,
        start: Bound<&'a [u8]>,
    ) -> impl Iterator<Item = &'a [u8]> + 'a {
        self.slots
            .range::<[u8], _>((start, Bound::Unbounded))
            .map(Slot::key)
    }

    fn version(&self, slot: &Slot) -> Hlc {
        let proto = &self.nodes[usize::from(slot.node)];
        // The node id was valid when it was stored, so this cannot fail.
        Hlc::new(slot.wall_ms, slot.counter, proto.node_id()).unwrap_or_else(|_| proto.clone())
    }

    /// The index of `version`'s node id, added if new. Beyond `u16::MAX` distinct node ids
    /// (impossible: versions come from the service clock or the journal) the last is reused.
    fn node_index(&mut self, version: &Hlc) -> u16 {
        if let Some(i) = self
            .nodes
            .iter()
            .position(|n| n.node_id() == version.node_id())
        {
            return u16::try_from(i).unwrap_or(u16::MAX);
        }
        if self.nodes.len() > usize::from(u16::MAX) {
            return u16::MAX;
        }
        self.nodes.push(version.clone());
        u16::try_from(self.nodes.len() - 1).unwrap_or(u16::MAX)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_slot_is_40_bytes() {
        assert_eq!(std::mem::size_of::<Slot>(), 40);
    }

    #[test]
    fn round_trips_every_field() {
        let mut t = Table::default();
        assert_eq!(t.data_bytes(), 0);
        let entry = Entry {
            value: Bytes::from_static(b"v"),
            version: Hlc::new(5, 6, "S").unwrap(),
            expires_at_ms: Some(9),
            fencing_token: Some(Hlc::new(1, 2, "c").unwrap()),
            persisted: true,
        };
        assert_eq!(t.insert(b"k", entry.clone()), None);
        assert_eq!(t.data_bytes(), 2, "the key and the value");
        let view = t.get(b"k").unwrap();
        assert_eq!(view.value(), b"v");
        assert_eq!(view.version(), entry.version);
        assert_eq!(view.fencing_token(), entry.fencing_token.as_ref());
        assert!(view.persisted());
        let plain = Entry {
            expires_at_ms: None,
            fencing_token: None,
            version: Hlc::new(7, 0, "Other").unwrap(),
            ..entry
        };
        assert_eq!(t.insert(b"k", plain), Some(Some(9)));
        assert_eq!(t.get(b"k").unwrap().version().node_id(), "Other");
        assert!(t.get(b"k").unwrap().fencing_token().is_none());
        assert_eq!(t.data_bytes(), 2, "a replaced value is not counted twice");
        let removed = t.remove(b"k").unwrap();
        assert_eq!(t.data_bytes(), 0);
        assert_eq!(removed.expires_at_ms, None);
        assert!(t.is_empty() && t.extras.is_empty());
    }
}
