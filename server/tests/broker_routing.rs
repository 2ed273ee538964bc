//! The embedded broker's patched router (third_party/mqtt5/PATCHES.md): its trie of wildcard
//! filters must match exactly what the crate's own `topic_matches_filter` matches, for any
//! set of filters built by any sequence of inserts and removes.

use std::collections::BTreeSet;

use mqtt5::broker::topic_trie::TopicTrie;
use mqtt5::validation::topic_matches_filter;
use proptest::prelude::*;

/// A topic level from a small alphabet, so that generated filters and topics meet often.
fn level() -> impl Strategy<Value = String> {
    prop_oneof![
        Just(String::new()),
        Just("a".to_owned()),
        Just("b".to_owned()),
        Just("$SYS".to_owned()),
        Just("$x".to_owned()),
    ]
}

fn topic() -> impl Strategy<Value = String> {
    prop::collection::vec(level(), 1..5).prop_map(|levels| levels.join("/"))
}

/// A valid filter: levels, `+` anywhere, `#` only last.
fn filter() -> impl Strategy<Value = String> {
    (
        prop::collection::vec(prop_oneof![3 => level(), 2 => Just("+".to_owned())], 0..4),
        any::<bool>(),
    )
        .prop_filter_map("empty filter", |(mut levels, hash)| {
            if hash {
                levels.push("#".to_owned());
            }
            (!levels.is_empty()).then(|| levels.join("/"))
        })
}

fn matched(trie: &TopicTrie, topic: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    trie.matches(topic, |f| {
        assert!(out.insert(f.to_owned()), "{f} reported twice for {topic}");
    });
    out
}

proptest! {
    #[test]
    fn trie_matches_what_topic_matches_filter_matches(
        ops in prop::collection::vec((filter(), any::<bool>()), 0..40),
        topics in prop::collection::vec(topic(), 1..20),
    ) {
        let mut trie = TopicTrie::new();
        let mut model = BTreeSet::new();
        for (f, insert) in ops {
            if insert {
                prop_assert_eq!(trie.insert(&f), model.insert(f.clone()));
            } else {
                prop_assert_eq!(trie.remove(&f), model.remove(&f));
            }
            prop_assert_eq!(trie.len(), model.len());
        }
        for t in &topics {
            let expected: BTreeSet<String> =
                model.iter().filter(|f| topic_matches_filter(t, f)).cloned().collect();
            prop_assert_eq!(matched(&trie, t), expected, "topic {:?}", t);
        }
    }
}

#[test]
fn the_mqtt_examples() {
    let mut trie = TopicTrie::new();
    for f in [
        "sport/tennis/player1/#",
        "sport/#",
        "#",
        "+/tennis/#",
        "sport/+",
        "+",
        "+/+",
        "/+",
    ] {
        trie.insert(f);
    }
    let set = |v: &[&str]| v.iter().map(|s| (*s).to_owned()).collect::<BTreeSet<_>>();
    assert_eq!(
        matched(&trie, "sport/tennis/player1"),
        set(&["sport/tennis/player1/#", "sport/#", "#", "+/tennis/#"])
    );
    assert_eq!(matched(&trie, "sport"), set(&["sport/#", "#", "+"]));
    assert_eq!(
        matched(&trie, "sport/"),
        set(&["sport/#", "#", "sport/+", "+/+"])
    );
    assert_eq!(matched(&trie, "/finance"), set(&["#", "+/+", "/+"]));
    assert_eq!(matched(&trie, "$SYS/monitor/Clients"), set(&[]));
}
