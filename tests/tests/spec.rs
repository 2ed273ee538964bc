//! The protocol inside the repository (`spec/protocol.md`): the same, byte for byte, as the
//! owners' copy beside the project (`../shared/spec/protocol.md`) whenever that exists, and
//! every "spec §N" reference of the repository's code and docs names one of its sections.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tests/ is inside the workspace")
        .to_path_buf()
}

fn spec() -> String {
    let path = root().join("spec/protocol.md");
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()))
}

/// The section numbers of the spec's headings: `## 3. Requests` is `3`, `### 3.1 SCAN` `3.1`.
fn sections(spec: &str) -> BTreeSet<String> {
    spec.lines()
        .filter_map(|line| {
            line.strip_prefix("## ")
                .or_else(|| line.strip_prefix("### "))
        })
        .filter_map(|title| {
            let number = title.split_whitespace().next()?.trim_end_matches('.');
            number
                .split('.')
                .all(|part| !part.is_empty() && part.bytes().all(|b| b.is_ascii_digit()))
                .then(|| number.to_owned())
        })
        .collect()
}

/// The section numbers cited as `spec §N` (or `spec §N.M`) in `text`.
fn references(text: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut rest = text;
    while let Some(at) = rest.find("spec §") {
        rest = &rest[at + "spec §".len()..];
        let number: String = rest
            .chars()
            .take_while(|c| c.is_ascii_digit() || *c == '.')
            .collect();
        let number = number.trim_end_matches('.').to_owned();
        if !number.is_empty() {
            found.push(number);
        }
    }
    found
}

/// The repository's text files where references live (build output and upstream's forks
/// left out).
fn files(dir: &Path, out: &mut Vec<PathBuf>) {
    const SKIP: &[&str] = &[
        "target",
        "node_modules",
        ".git",
        "third_party",
        ".venv",
        "dist",
    ];
    const EXTENSIONS: &[&str] = &[
        "rs", "py", "pyi", "js", "mjs", "ts", "mts", "kt", "c", "h", "cpp", "md", "sh", "toml",
    ];
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if path.is_dir() {
            if !SKIP.contains(&name.as_ref()) && !name.starts_with('.') {
                files(&path, out);
            }
        } else if path
            .extension()
            .is_some_and(|e| EXTENSIONS.contains(&e.to_string_lossy().as_ref()))
        {
            out.push(path);
        }
    }
}

#[test]
fn the_repository_copy_matches_the_shared_spec() {
    let shared = root().join("../shared/spec/protocol.md");
    let Ok(theirs) = std::fs::read_to_string(&shared) else {
        eprintln!(
            "no {}: a bare clone checks its own copy only",
            shared.display()
        );
        return;
    };
    assert!(
        spec() == theirs,
        "spec/protocol.md differs from {}: copy it (cp {} spec/protocol.md)",
        shared.display(),
        shared.display()
    );
}

#[test]
fn every_spec_reference_names_a_section_of_the_spec() {
    let known = sections(&spec());
    for expected in ["1", "2", "3", "3.1", "4", "5", "5.3", "6", "7", "8"] {
        assert!(
            known.contains(expected),
            "the spec has no section {expected}: {known:?}"
        );
    }
    let mut paths = Vec::new();
    files(&root(), &mut paths);
    let mut cited = 0;
    let mut dangling = Vec::new();
    // This file plants references to sections that do not exist.
    let this = root().join("tests/tests/spec.rs");
    for path in paths.iter().filter(|p| **p != this) {
        let Ok(text) = std::fs::read_to_string(path) else {
            continue;
        };
        for number in references(&text) {
            cited += 1;
            if !known.contains(&number) {
                dangling.push(format!(
                    "{}: spec §{number}",
                    path.strip_prefix(root()).unwrap_or(path).display()
                ));
            }
        }
    }
    assert!(
        cited > 50,
        "only {cited} references found: is the walk right?"
    );
    assert!(
        dangling.is_empty(),
        "references to no section of spec/protocol.md:\n{}",
        dangling.join("\n")
    );
}

#[test]
fn a_reference_to_a_missing_section_is_found() {
    let known = sections("## 1. Model\n### 1.1 Keys\ntext\n## 2. Transport\n");
    assert_eq!(
        known,
        BTreeSet::from(["1".into(), "1.1".into(), "2".into()])
    );
    assert_eq!(
        references("see spec §1.1, spec §2. and spec §9"),
        ["1.1", "2", "9"]
    );
    assert!(!known.contains("9"));
}
