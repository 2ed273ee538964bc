//! mqstate patch: an index of wildcard topic filters by level, so that finding the filters
//! a topic matches costs the levels of the topic and the filters it matches, not one
//! `topic_matches_filter` (two vector allocations) per filter the broker knows.
//!
//! Self-contained (std only): mqstate's server tests include this file by path and check it
//! against `topic_matches_filter` on generated filters and topics.

use std::collections::HashMap;

/// One level of the trie: the filters that end here, and the next levels by name
/// (`+` and `#` are names like any other here; matching gives them their meaning).
#[derive(Debug, Default)]
struct Node {
    children: HashMap<Box<str>, Node>,
    /// The filter that ends at this node, if one does.
    filter: Option<Box<str>>,
}

impl Node {
    fn is_empty(&self) -> bool {
        self.filter.is_none() && self.children.is_empty()
    }
}

/// A set of topic filters, matched against topic names by walking their levels.
#[derive(Debug, Default)]
pub struct TopicTrie {
    root: Node,
    len: usize,
}

impl TopicTrie {
    /// An empty set.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// How many filters the set holds.
    #[must_use]
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the set is empty.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Adds `filter`; returns false when it was already there.
    pub fn insert(&mut self, filter: &str) -> bool {
        let mut node = &mut self.root;
        for level in filter.split('/') {
            node = node.children.entry(Box::from(level)).or_default();
        }
        if node.filter.is_some() {
            return false;
        }
        node.filter = Some(Box::from(filter));
        self.len += 1;
        true
    }

    /// Removes `filter`, and the levels only it used; returns false when it was not there.
    pub fn remove(&mut self, filter: &str) -> bool {
        let levels: Vec<&str> = filter.split('/').collect();
        let removed = Self::remove_at(&mut self.root, &levels);
        if removed {
            self.len -= 1;
        }
        removed
    }

    fn remove_at(node: &mut Node, levels: &[&str]) -> bool {
        let Some((first, rest)) = levels.split_first() else {
            return node.filter.take().is_some();
        };
        let Some(child) = node.children.get_mut(*first) else {
            return false;
        };
        let removed = Self::remove_at(child, rest);
        if removed && child.is_empty() {
            node.children.remove(*first);
        }
        removed
    }

    /// Calls `found` with each filter of the set that `topic` matches (MQTT 5 §4.7: `+` is
    /// one level, `#` the rest including the parent level, and a topic starting with `$` is
    /// not matched by a filter starting with a wildcard). Each filter is reported once.
    pub fn matches<'a>(&'a self, topic: &str, mut found: impl FnMut(&'a str)) {
        let levels: Vec<&str> = topic.split('/').collect();
        let system = topic.starts_with('$');
        Self::visit(&self.root, &levels, 0, system, &mut found);
    }

    fn visit<'a>(
        node: &'a Node,
        levels: &[&str],
        depth: usize,
        system: bool,
        found: &mut impl FnMut(&'a str),
    ) {
        let wildcards = !(system && depth == 0);
        if wildcards {
            if let Some(filter) = node.children.get("#").and_then(|n| n.filter.as_deref()) {
                found(filter);
            }
        }
        let Some((level, rest)) = levels.split_first() else {
            if let Some(filter) = node.filter.as_deref() {
                found(filter);
            }
            return;
        };
        if wildcards {
            if let Some(plus) = node.children.get("+") {
                Self::visit(plus, rest, depth + 1, system, found);
            }
        }
        // A topic name has no wildcards; a level spelled `+` or `#` is not looked up twice.
        if *level != "+" && *level != "#" {
            if let Some(child) = node.children.get(*level) {
                Self::visit(child, rest, depth + 1, system, found);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::TopicTrie;

    fn matched(trie: &TopicTrie, topic: &str) -> Vec<String> {
        let mut out = Vec::new();
        trie.matches(topic, |f| out.push(f.to_owned()));
        out.sort();
        out
    }

    #[test]
    fn matches_by_the_mqtt_rules() {
        let mut trie = TopicTrie::new();
        for f in ["a/+/c", "a/#", "#", "+/b/c", "a/b", "$SYS/#", "+/+"] {
            assert!(trie.insert(f));
        }
        assert!(!trie.insert("a/#"));
        assert_eq!(matched(&trie, "a/b/c"), ["#", "+/b/c", "a/#", "a/+/c"]);
        assert_eq!(matched(&trie, "a"), ["#", "a/#"]);
        assert_eq!(matched(&trie, "a/b"), ["#", "+/+", "a/#", "a/b"]);
        assert_eq!(matched(&trie, "$SYS/x"), ["$SYS/#"]);
        assert!(trie.remove("a/#"));
        assert!(!trie.remove("a/#"));
        assert_eq!(matched(&trie, "a"), ["#"]);
        assert_eq!(trie.len(), 6);
    }
}
