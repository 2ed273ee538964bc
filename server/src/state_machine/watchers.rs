//! KEYNOTIFY registrations: which clients observe which keys, indexed both ways so a
//! change finds its observers and a disconnect drops a client's registrations without a
//! scan of every key.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use bytes::Bytes;

/// The registrations of every client, indexed by key and by client.
///
/// Invariant: `(client, key)` is in `by_key[key]` exactly when it is in
/// `by_client[client]`, and neither map holds an empty collection.
#[derive(Debug, Default)]
pub(crate) struct Watchers {
    /// Observers of each key, in registration order (so notifications are deterministic).
    by_key: HashMap<Bytes, Vec<Arc<str>>>,
    /// Keys each client observes.
    by_client: HashMap<Arc<str>, HashSet<Bytes>>,
}

/// A registration was refused: the client already observes its maximum number of keys.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct TooManyRegistrations;

impl Watchers {
    /// Registers `client` for `key`. Registering twice is one registration. A client may
    /// hold at most `limit` registrations (its input cannot grow memory without bound).
    pub(crate) fn add(
        &mut self,
        client: &str,
        key: &Bytes,
        limit: Option<usize>,
    ) -> Result<(), TooManyRegistrations> {
        let (client, keys) = match self.by_client.get_key_value(client) {
            Some((name, keys)) => (Arc::clone(name), keys),
            None => (Arc::<str>::from(client), &HashSet::new()),
        };
        if keys.contains(key) {
            return Ok(());
        }
        if limit.is_some_and(|limit| keys.len() >= limit) {
            return Err(TooManyRegistrations);
        }
        self.by_client
            .entry(Arc::clone(&client))
            .or_default()
            .insert(key.clone());
        self.by_key.entry(key.clone()).or_default().push(client);
        Ok(())
    }

    /// Ends `client`'s registration for `key`; whether there was one.
    pub(crate) fn remove(&mut self, client: &str, key: &[u8]) -> bool {
        let Some(keys) = self.by_client.get_mut(client) else {
            return false;
        };
        if !keys.remove(key) {
            return false;
        }
        if keys.is_empty() {
            self.by_client.remove(client);
        }
        self.unlink(key, client);
        true
    }

    /// Drops every registration of `client`; how many there were.
    pub(crate) fn drop_client(&mut self, client: &str) -> usize {
        let Some(keys) = self.by_client.remove(client) else {
            return 0;
        };
        for key in &keys {
            self.unlink(key, client);
        }
        keys.len()
    }

    /// Drops every registration; how many there were.
    pub(crate) fn drop_all(&mut self) -> usize {
        let clients: Vec<Arc<str>> = self.by_client.keys().cloned().collect();
        clients.iter().map(|c| self.drop_client(c)).sum()
    }

    /// The clients observing `key`, in registration order.
    pub(crate) fn observers(&self, key: &[u8]) -> &[Arc<str>] {
        self.by_key.get(key).map_or(&[], Vec::as_slice)
    }

    /// The keys `client` observes (in no order) and how many there are.
    pub(crate) fn of_client(&self, client: &str, limit: usize) -> (Vec<Bytes>, usize) {
        self.by_client.get(client).map_or((Vec::new(), 0), |keys| {
            (keys.iter().take(limit).cloned().collect(), keys.len())
        })
    }

    /// The number of registrations held (every client, every key).
    #[cfg(test)]
    pub(crate) fn count(&self) -> usize {
        self.by_client.values().map(HashSet::len).sum()
    }

    fn unlink(&mut self, key: &[u8], client: &str) {
        if let Some(clients) = self.by_key.get_mut(key) {
            clients.retain(|c| &**c != client);
            if clients.is_empty() {
                self.by_key.remove(key);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(k: &'static str) -> Bytes {
        Bytes::from_static(k.as_bytes())
    }

    #[test]
    fn both_indexes_stay_in_step() {
        let mut w = Watchers::default();
        w.add("a", &key("k1"), None).unwrap();
        w.add("a", &key("k1"), None).unwrap();
        w.add("b", &key("k1"), None).unwrap();
        w.add("a", &key("k2"), None).unwrap();
        assert_eq!(w.count(), 3);
        let names: Vec<&str> = w.observers(b"k1").iter().map(|c| &**c).collect();
        assert_eq!(names, ["a", "b"]);
        assert!(w.remove("b", b"k1"));
        assert!(!w.remove("b", b"k1"));
        assert_eq!(w.drop_client("a"), 2);
        assert_eq!(w.count(), 0);
        assert!(w.by_key.is_empty() && w.by_client.is_empty());
    }

    #[test]
    fn the_limit_counts_distinct_keys() {
        let mut w = Watchers::default();
        w.add("a", &key("k1"), Some(1)).unwrap();
        w.add("a", &key("k1"), Some(1)).unwrap();
        assert_eq!(w.add("a", &key("k2"), Some(1)), Err(TooManyRegistrations));
        w.add("b", &key("k2"), Some(1)).unwrap();
        assert_eq!(w.count(), 2);
    }
}
