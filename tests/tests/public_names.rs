//! The public names of mqstate against those of the last release: every name of the C header
//! (functions with their signatures, types, struct fields, enum constants with their numbers,
//! macros) and of `core/vocabulary.json` (operations, options and their units, properties,
//! event fields, error classes, codes and numbers, the value lists), per language. The last
//! release's are committed in `core/public-names/VERSION.txt`, VERSION being the newest
//! `## [VERSION]` section of CHANGELOG.md. A name that was added, removed or changed since
//! then fails this test unless the `## [Unreleased]` section of CHANGELOG.md names it in
//! backticks (`mqstate_lock_release(…)`, `expiryMs`, `MqstateTimeoutError`).
//!
//! At a release, once `[Unreleased]` has become the version's section:
//! `MQSTATE_BLESS=1 cargo test -p mqstate-tests --test public_names` writes the new snapshot
//! (docs/releasing.md).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tests/ is inside the workspace")
        .to_path_buf()
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()))
}

/// A snapshot line: the name a CHANGELOG line must mention, a tab, what it is.
fn entry(name: &str, what: impl AsRef<str>) -> String {
    format!("{name}\t{}", what.as_ref())
}

/// The name part of a snapshot line.
fn name_of(line: &str) -> &str {
    line.split('\t').next().unwrap_or(line)
}

// ---- the C header ------------------------------------------------------------------------

/// The text without `/* … */` and `// …` comments.
fn strip_comments(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while !rest.is_empty() {
        if let Some(after) = rest.strip_prefix("/*") {
            rest = after.find("*/").map_or("", |end| &after[end + 2..]);
            out.push(' ');
        } else if let Some(after) = rest.strip_prefix("//") {
            rest = after.find('\n').map_or("", |end| &after[end..]);
        } else if let Some(after) = rest.strip_prefix('"') {
            // A string literal (a macro's value): copied as it is.
            let end = after.find('"').map_or(after.len(), |e| e + 1);
            out.push('"');
            out.push_str(&after[..end]);
            rest = &after[end..];
        } else {
            let c = rest.chars().next().expect("not empty");
            out.push(c);
            rest = &rest[c.len_utf8()..];
        }
    }
    out
}

fn is_ident_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// The identifiers of a piece of C (or of a backticked span), in order.
fn identifiers(text: &str) -> Vec<&str> {
    text.split(|c: char| !is_ident_char(c))
        .filter(|t| t.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_'))
        .collect()
}

/// Whitespace collapsed to single spaces, none inside parentheses' edges.
fn normalized(text: &str) -> String {
    text.split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .replace("( ", "(")
        .replace(" )", ")")
        .replace(" ,", ",")
}

/// The text between the first `open` and its matching `close`.
fn inside(text: &str, open: char, close: char) -> Option<&str> {
    let start = text.find(open)? + open.len_utf8();
    let mut depth = 1;
    for (i, c) in text[start..].char_indices() {
        if c == open {
            depth += 1;
        } else if c == close {
            depth -= 1;
            if depth == 0 {
                return Some(&text[start..start + i]);
            }
        }
    }
    None
}

/// Every public name of a cbindgen header, as snapshot lines.
fn c_entries(header: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let text = strip_comments(header);
    let mut code = String::new();
    for line in text.lines() {
        let t = line.trim_start();
        if let Some(define) = t.strip_prefix("#define ") {
            let name = define.split_whitespace().next().unwrap_or("");
            if name.starts_with("MQSTATE_") && name != "MQSTATE_H" {
                out.insert(entry(name, "c macro"));
            }
        } else if !t.starts_with('#') {
            code.push_str(line);
            code.push('\n');
        }
    }
    let code = code.replace("extern \"C\" {", " ");
    // Top-level declarations end with `;` outside braces (a stray `}` closes extern "C").
    let mut declarations = Vec::new();
    let (mut depth, mut start) = (0usize, 0usize);
    for (i, c) in code.char_indices() {
        match c {
            '{' => depth += 1,
            '}' if depth == 0 => start = i + 1,
            '}' => depth -= 1,
            ';' if depth == 0 => {
                declarations.push(normalized(&code[start..i]));
                start = i + 1;
            }
            _ => {}
        }
    }
    for d in declarations.iter().filter(|d| !d.is_empty()) {
        let ids = identifiers(d);
        if d.starts_with("enum ") && d.contains('{') {
            out.insert(entry(ids[1], "c type (enum)"));
            for constant in inside(d, '{', '}').unwrap_or("").split(',') {
                let constant = constant.trim();
                if let Some((name, value)) = constant.split_once('=') {
                    out.insert(entry(name.trim(), format!("c constant = {}", value.trim())));
                } else if !constant.is_empty() {
                    out.insert(entry(constant, "c constant"));
                }
            }
        } else if d.starts_with("typedef struct ") && d.contains('{') {
            let name = *ids.last().expect("a typedef names its type");
            out.insert(entry(name, "c type (struct)"));
            for field in inside(d, '{', '}').unwrap_or("").split(';') {
                if !field.trim().is_empty() {
                    out.insert(entry(name, format!("c field {}", normalized(field))));
                }
            }
        } else if let Some(pointer) = d.strip_prefix("typedef ").filter(|t| t.contains("(*")) {
            let name = identifiers(&pointer[pointer.find("(*").expect("checked") + 2..])[0];
            out.insert(entry(name, format!("c type (callback) {d}")));
        } else if d.starts_with("typedef ") {
            out.insert(entry(
                ids.last().expect("a typedef names its type"),
                "c type",
            ));
        } else if let Some(paren) = d.find('(') {
            let name = *identifiers(&d[..paren])
                .last()
                .expect("a function has a name");
            out.insert(entry(name, format!("c function {d}")));
        }
    }
    out
}

// ---- the vocabulary ----------------------------------------------------------------------

fn text<'a>(value: &'a serde_json::Value, key: &str) -> &'a str {
    value[key]
        .as_str()
        .unwrap_or_else(|| panic!("vocabulary: no text {key} in {value}"))
}

fn array<'a>(value: &'a serde_json::Value, key: &str) -> &'a [serde_json::Value] {
    value[key].as_array().map_or(&[], Vec::as_slice)
}

/// The per-language names of a vocabulary item: (language, name or list of names).
fn per_language(item: &serde_json::Value) -> Vec<(&str, Vec<&str>)> {
    item["names"]
        .as_object()
        .map(|names| {
            names
                .iter()
                .map(|(lang, n)| match n {
                    serde_json::Value::Array(list) => (
                        lang.as_str(),
                        list.iter().filter_map(|x| x.as_str()).collect(),
                    ),
                    other => (lang.as_str(), other.as_str().into_iter().collect()),
                })
                .collect()
        })
        .unwrap_or_default()
}

/// Every public name `core/vocabulary.json` describes, per language, as snapshot lines.
fn vocabulary_entries(v: &serde_json::Value) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for op in array(v, "operations") {
        let (owner, op_name) = (text(op, "owner"), text(op, "name"));
        for (lang, names) in per_language(op) {
            for n in names {
                out.insert(entry(n, format!("{lang} operation {owner}.{op_name}")));
            }
        }
        for option in array(op, "options") {
            let (name, unit) = (text(option, "name"), text(option, "unit"));
            for (lang, names) in per_language(option) {
                for n in names {
                    out.insert(entry(
                        n,
                        format!("{lang} option {name} ({unit}) of {owner}.{op_name}"),
                    ));
                }
            }
        }
    }
    for property in array(v, "properties") {
        let (owner, name) = (text(property, "owner"), text(property, "name"));
        for (lang, names) in per_language(property) {
            for n in names {
                out.insert(entry(n, format!("{lang} property {owner}.{name}")));
            }
        }
    }
    for event in array(v, "events") {
        let name = text(event, "name");
        out.insert(entry(name, "event"));
        for (lang, fields) in per_language(event) {
            for f in fields {
                out.insert(entry(f, format!("{lang} field of the {name} event")));
            }
        }
    }
    for error in array(v, "errors") {
        let (class, code) = (text(error, "class"), text(error, "code"));
        let number = error["number"].as_u64().unwrap_or_default();
        let parent = text(error, "parent");
        out.insert(entry(
            class,
            format!("error class of {code}, under {parent}"),
        ));
        out.insert(entry(code, format!("error code {number}")));
    }
    if let Some(base) = v["error_base_class"].as_str() {
        out.insert(entry(base, "error base class"));
    }
    for list in [
        "error_families",
        "set_conditions",
        "vdel_outcomes",
        "lock_states",
        "loss_reasons",
    ] {
        for item in array(v, list).iter().filter_map(|x| x.as_str()) {
            out.insert(entry(item, format!("one of {list}")));
        }
    }
    out
}

// ---- the CHANGELOG -----------------------------------------------------------------------

/// The `## [NAME]` sections of a changelog, in order: (NAME, body).
fn sections(changelog: &str) -> Vec<(&str, &str)> {
    let mut out = Vec::new();
    let mut starts: Vec<usize> = changelog
        .match_indices("\n## [")
        .map(|(i, _)| i + 1)
        .chain(changelog.starts_with("## [").then_some(0))
        .collect();
    starts.sort_unstable();
    for (k, &s) in starts.iter().enumerate() {
        let end = starts.get(k + 1).copied().unwrap_or(changelog.len());
        let heading = &changelog[s + 4..];
        let name = &heading[..heading.find(']').unwrap_or(0)];
        out.push((name, &changelog[s..end]));
    }
    out
}

/// The newest released version: the first section after `[Unreleased]`.
fn last_release(changelog: &str) -> Option<&str> {
    sections(changelog)
        .into_iter()
        .map(|(name, _)| name)
        .find(|name| *name != "Unreleased")
}

/// Every identifier inside a backticked span of the `[Unreleased]` section.
fn unreleased_names(changelog: &str) -> BTreeSet<String> {
    let body = sections(changelog)
        .into_iter()
        .find(|(name, _)| *name == "Unreleased")
        .map_or("", |(_, body)| body);
    body.split('`')
        .skip(1)
        .step_by(2)
        .flat_map(identifiers)
        .map(str::to_owned)
        .collect()
}

/// The lines added (`+`) or removed (`-`) since the snapshot whose name the CHANGELOG's
/// `[Unreleased]` section does not mention.
fn unexplained(
    released: &BTreeSet<String>,
    now: &BTreeSet<String>,
    named: &BTreeSet<String>,
) -> Vec<String> {
    let removed = released.difference(now).map(|l| format!("- {l}"));
    let added = now.difference(released).map(|l| format!("+ {l}"));
    removed
        .chain(added)
        .filter(|l| !named.contains(name_of(&l[2..])))
        .collect()
}

fn current_names(root: &Path) -> BTreeSet<String> {
    let header = read(&root.join("bindings-c/include/mqstate.h"));
    let vocabulary: serde_json::Value =
        serde_json::from_str(&read(&root.join("core/vocabulary.json")))
            .expect("core/vocabulary.json is JSON");
    let mut names = c_entries(&header);
    names.extend(vocabulary_entries(&vocabulary));
    names
}

#[test]
fn every_public_name_change_since_the_last_release_is_in_the_changelog() {
    let root = root();
    let changelog = read(&root.join("CHANGELOG.md"));
    let version = last_release(&changelog).expect("CHANGELOG.md has a released section");
    let snapshot = root.join(format!("core/public-names/{version}.txt"));
    let now = current_names(&root);
    if std::env::var_os("MQSTATE_BLESS").is_some_and(|v| v == "1") {
        let mut text = format!(
            "# The public names of mqstate {version}: the C header and core/vocabulary.json.\n\
             # Written by `MQSTATE_BLESS=1 cargo test -p mqstate-tests --test public_names`.\n"
        );
        for line in &now {
            text.push_str(line);
            text.push('\n');
        }
        std::fs::create_dir_all(snapshot.parent().expect("a folder")).expect("mkdir");
        std::fs::write(&snapshot, text).expect("write the snapshot");
        return;
    }
    let released = std::fs::read_to_string(&snapshot).unwrap_or_else(|e| {
        panic!(
            "no snapshot of the public names of {version} ({}: {e}): at a release, write it with \
             `MQSTATE_BLESS=1 cargo test -p mqstate-tests --test public_names` (docs/releasing.md)",
            snapshot.display()
        )
    });
    let released: BTreeSet<String> = released
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .map(str::to_owned)
        .collect();
    let missing = unexplained(&released, &now, &unreleased_names(&changelog));
    assert!(
        missing.is_empty(),
        "public names changed since {version} ({}) with no CHANGELOG.md line naming them \
         (in backticks) under `## [Unreleased]`:\n{}\n\nAdd a line per change under \
         `## [Unreleased]` (a breaking one with its migration). At a release, once the \
         section is the version's, rewrite the snapshot with \
         `MQSTATE_BLESS=1 cargo test -p mqstate-tests --test public_names`.",
        snapshot.display(),
        missing.join("\n")
    );
}

// ---- the check itself --------------------------------------------------------------------

const HEADER: &str = r#"
#define MQSTATE_NO_TIMEOUT UINT32_MAX
#ifdef __cplusplus
extern "C" {
#endif // __cplusplus
/** A lock. */
typedef struct mqstate_lock mqstate_lock;
typedef struct mqstate_lock_options {
  /** The holder. */
  const char *holder;
  uint64_t lease_ms;
} mqstate_lock_options;
enum mqstate_vdel_outcome
#if defined(__cplusplus)
  : uint32_t
#endif
 {
  MQSTATE_VDEL_OUTCOME_NONE = 0,
  MQSTATE_VDEL_OUTCOME_DELETED = 1,
};
typedef void (*mqstate_release_fn)(void *ctx);
/** Releases the lock. */
mqstate_status mqstate_lock_release(const struct mqstate_lock *lock,
                                    bool *released);
#ifdef __cplusplus
}  // extern "C"
#endif  // __cplusplus
"#;

fn changelog_naming(names: &str) -> String {
    format!("# Changelog\n\n## [Unreleased]\n\n- {names}\n\n## [0.2.0] - 2026-11-26\n\n- `old`\n")
}

#[test]
fn the_header_reader_finds_every_kind_of_name() {
    let got = c_entries(HEADER);
    let want = [
        "MQSTATE_NO_TIMEOUT\tc macro",
        "mqstate_lock\tc type",
        "mqstate_lock_options\tc type (struct)",
        "mqstate_lock_options\tc field const char *holder",
        "mqstate_lock_options\tc field uint64_t lease_ms",
        "mqstate_vdel_outcome\tc type (enum)",
        "MQSTATE_VDEL_OUTCOME_NONE\tc constant = 0",
        "MQSTATE_VDEL_OUTCOME_DELETED\tc constant = 1",
        "mqstate_release_fn\tc type (callback) typedef void (*mqstate_release_fn)(void *ctx)",
        "mqstate_lock_release\tc function mqstate_status mqstate_lock_release(const struct mqstate_lock *lock, bool *released)",
    ];
    assert_eq!(got, want.iter().map(|s| s.to_string()).collect());
}

#[test]
fn the_real_header_and_vocabulary_are_read() {
    let now = current_names(&root());
    for want in [
        "MQSTATE_NO_TIMEOUT\tc macro",
        "MQSTATE_STATUS_OK\tc constant = 0",
        "mqstate_client\tc type",
        "node option expiry (duration) of client.set",
        "MqstateTimeoutError\terror class of timeout, under MqstateError",
    ] {
        assert!(
            now.iter().any(|l| l.contains(want)),
            "no {want:?} among the current names"
        );
    }
    assert!(
        now.iter()
            .any(|l| l.starts_with("mqstate_lock_release\tc function ")),
        "mqstate_lock_release is a function"
    );
    assert!(now.len() > 400, "only {} names read", now.len());
}

#[test]
fn a_planted_rename_fails_until_the_changelog_names_it() {
    let released = c_entries(HEADER);
    let renamed = c_entries(&HEADER.replace("mqstate_lock_release", "mqstate_lock_let_go"));
    let none = unreleased_names(&changelog_naming("nothing about it"));
    let missing = unexplained(&released, &renamed, &none);
    assert_eq!(missing.len(), 2, "{missing:?}");
    assert!(
        missing[0].starts_with("- mqstate_lock_release\t"),
        "{missing:?}"
    );
    assert!(
        missing[1].starts_with("+ mqstate_lock_let_go\t"),
        "{missing:?}"
    );
    // Naming one side leaves the other.
    let one = unreleased_names(&changelog_naming("`mqstate_lock_let_go(lock, &released)`"));
    assert_eq!(unexplained(&released, &renamed, &one).len(), 1);
    // A line naming both, in the Unreleased section, explains the rename.
    let both = unreleased_names(&changelog_naming(
        "`mqstate_lock_release` is `mqstate_lock_let_go(lock, &released)`",
    ));
    assert!(unexplained(&released, &renamed, &both).is_empty());
    // A released section's mention does not count.
    let old = unreleased_names(&changelog_naming("x").replace("`old`", "`mqstate_lock_release`"));
    assert_eq!(unexplained(&released, &renamed, &old).len(), 2);
}

#[test]
fn a_changed_signature_number_or_field_is_a_change_of_its_name() {
    let released = c_entries(HEADER);
    let none = BTreeSet::new();
    let lost_argument =
        c_entries(&HEADER.replace("bool *released", "uint32_t timeout_ms, bool *released"));
    let names: Vec<_> = unexplained(&released, &lost_argument, &none)
        .iter()
        .map(|l| name_of(&l[2..]).to_owned())
        .collect();
    assert_eq!(names, ["mqstate_lock_release", "mqstate_lock_release"]);
    let renumbered = c_entries(&HEADER.replace("DELETED = 1", "DELETED = 2"));
    assert_eq!(unexplained(&released, &renumbered, &none).len(), 2);
    let new_field =
        c_entries(&HEADER.replace("uint64_t lease_ms;", "uint64_t lease_ms;\n  bool x;"));
    let missing = unexplained(&released, &new_field, &none);
    assert_eq!(missing, ["+ mqstate_lock_options\tc field bool x"]);
}

#[test]
fn a_planted_vocabulary_rename_fails_until_the_changelog_names_it() {
    let vocabulary = |node_name: &str| {
        serde_json::json!({
            "operations": [{"owner": "client", "name": "set", "names": {"node": "set"},
                "options": [{"name": "expiry", "unit": "duration", "names": {"node": node_name}}]}],
            "errors": [{"class": "MqstateTimeoutError", "code": "timeout", "number": 6, "parent": "MqstateError"}]
        })
    };
    let released = vocabulary_entries(&vocabulary("expiry"));
    let now = vocabulary_entries(&vocabulary("expiryMs"));
    let none = unreleased_names(&changelog_naming("Node: durations in ms"));
    assert_eq!(
        unexplained(&released, &now, &none),
        [
            "- expiry\tnode option expiry (duration) of client.set",
            "+ expiryMs\tnode option expiry (duration) of client.set"
        ]
    );
    let named = unreleased_names(&changelog_naming("Node: `expiry` is `expiryMs`"));
    assert!(unexplained(&released, &now, &named).is_empty());
}

#[test]
fn the_last_release_is_the_first_section_after_unreleased() {
    let changelog = "# Changelog\n\n## [Unreleased]\n\n- `a`\n\n## [0.2.0] - 2026-11-26\n\n- `b`\n\n## [0.1.0]\n";
    assert_eq!(last_release(changelog), Some("0.2.0"));
    assert_eq!(
        unreleased_names(changelog),
        ["a".to_owned()].into_iter().collect()
    );
}
