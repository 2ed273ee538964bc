//! mqstate patch: the router's subscriptions by filter, indexed so that no operation on the
//! hot paths walks every subscription the broker holds.
//!
//! Upstream 0.49.0 keeps `HashMap<filter, Vec<Subscription>>` and, per published message,
//! runs `topic_matches_filter` over every wildcard filter; per connect with clean start and
//! per session end it walks every filter to strip one client. With a few thousand clients
//! (each mqstate client holds a wildcard filter of its own) every request paid for every
//! client the broker knew. Here the same map carries two indexes kept in step with it:
//! a [`TopicTrie`] of the wildcard filters (matching costs the topic's levels and the
//! filters matched) and, per client id, the filters it has subscriptions on (stripping or
//! filtering one client costs that client's filters).

use std::collections::HashMap;

use super::router::Subscription;
use super::topic_trie::TopicTrie;

/// Subscriptions by topic filter (without any `$share/group/` prefix), with a per-client
/// index and, for a map of wildcard filters, a trie.
#[derive(Debug)]
pub(crate) struct SubscriptionMap {
    by_filter: HashMap<String, Vec<Subscription>>,
    /// Client id → filter → how many of the client's subscriptions are on that filter.
    by_client: HashMap<String, HashMap<String, usize>>,
    /// The filters, by level: present for the map of wildcard filters.
    trie: Option<TopicTrie>,
}

impl SubscriptionMap {
    /// A map of filters without wildcards, matched by equality.
    pub(crate) fn exact() -> Self {
        Self {
            by_filter: HashMap::new(),
            by_client: HashMap::new(),
            trie: None,
        }
    }

    /// A map of wildcard filters, matched through a trie.
    pub(crate) fn wildcard() -> Self {
        Self {
            trie: Some(TopicTrie::new()),
            ..Self::exact()
        }
    }

    /// How many filters hold at least one subscription.
    pub(crate) fn len(&self) -> usize {
        self.by_filter.len()
    }

    /// The subscriptions on `filter`.
    pub(crate) fn get(&self, filter: &str) -> Option<&Vec<Subscription>> {
        self.by_filter.get(filter)
    }

    /// Calls `found` with each filter that `topic` matches and its subscriptions: the filter
    /// equal to the topic in an exact map, every matching filter in a wildcard map.
    pub(crate) fn matching<'a>(
        &'a self,
        topic: &str,
        mut found: impl FnMut(&'a String, &'a Vec<Subscription>),
    ) {
        match &self.trie {
            None => {
                if let Some((filter, subs)) = self.by_filter.get_key_value(topic) {
                    found(filter, subs);
                }
            }
            Some(trie) => trie.matches(topic, |filter| {
                if let Some((filter, subs)) = self.by_filter.get_key_value(filter) {
                    found(filter, subs);
                }
            }),
        }
    }

    /// Adds `subscription` on `filter`, or replaces the one with the same identity (client,
    /// share group, flow); returns true when it was added.
    pub(crate) fn upsert(&mut self, filter: &str, subscription: Subscription) -> bool {
        let subs = if let Some(subs) = self.by_filter.get_mut(filter) {
            subs
        } else {
            if let Some(trie) = &mut self.trie {
                trie.insert(filter);
            }
            self.by_filter.entry(filter.to_owned()).or_default()
        };
        if let Some(existing) = subs
            .iter_mut()
            .find(|s| s.identity() == subscription.identity())
        {
            *existing = subscription;
            return false;
        }
        *self
            .by_client
            .entry(subscription.client_id.clone())
            .or_default()
            .entry(filter.to_owned())
            .or_default() += 1;
        subs.push(subscription);
        true
    }

    /// Removes the subscriptions of `client_id` on `filter` that `remove` picks; returns how
    /// many were removed.
    pub(crate) fn remove_from(
        &mut self,
        client_id: &str,
        filter: &str,
        mut remove: impl FnMut(&Subscription) -> bool,
    ) -> usize {
        let Some(subs) = self.by_filter.get_mut(filter) else {
            return 0;
        };
        let before = subs.len();
        subs.retain(|s| s.client_id != client_id || !remove(s));
        let removed = before - subs.len();
        if subs.is_empty() {
            self.by_filter.remove(filter);
            if let Some(trie) = &mut self.trie {
                trie.remove(filter);
            }
        }
        if removed > 0 {
            self.unindex(client_id, filter, removed);
        }
        removed
    }

    /// Keeps only the subscriptions of `client_id` for which `keep(filter, subscription)` is
    /// true; returns the filters it lost subscriptions on. Costs the client's filters only.
    pub(crate) fn retain_client(
        &mut self,
        client_id: &str,
        mut keep: impl FnMut(&str, &Subscription) -> bool,
    ) -> Vec<String> {
        let filters: Vec<String> = match self.by_client.get(client_id) {
            Some(filters) => filters.keys().cloned().collect(),
            None => return Vec::new(),
        };
        let mut touched = Vec::new();
        for filter in filters {
            if self.remove_from(client_id, &filter, |s| !keep(&filter, s)) > 0 {
                touched.push(filter);
            }
        }
        touched
    }

    /// Removes every subscription of `client_id`.
    pub(crate) fn strip_client(&mut self, client_id: &str) {
        self.retain_client(client_id, |_, _| false);
    }

    /// How many subscriptions `client_id` holds.
    pub(crate) fn count_for_client(&self, client_id: &str) -> usize {
        self.by_client
            .get(client_id)
            .map_or(0, |filters| filters.values().sum())
    }

    /// The client ids holding at least one subscription.
    pub(crate) fn client_ids(&self) -> impl Iterator<Item = &String> {
        self.by_client.keys()
    }

    fn unindex(&mut self, client_id: &str, filter: &str, removed: usize) {
        let Some(filters) = self.by_client.get_mut(client_id) else {
            return;
        };
        if let Some(count) = filters.get_mut(filter) {
            *count = count.saturating_sub(removed);
            if *count == 0 {
                filters.remove(filter);
            }
        }
        if filters.is_empty() {
            self.by_client.remove(client_id);
        }
    }
}
