//! The README's status table, the header's `mqstate_status` enum and the core's error table
//! say the same thing: every status the header declares is a row of the README with its
//! number; every number below 200 is the core's row with its code, family and meaning, and
//! its header comment carries the code and family; the rest are C-only conditions.

use std::collections::BTreeMap;
use std::path::Path;

/// One `MQSTATE_STATUS_*` of the header: its number and its doc comment.
struct Declared {
    number: u32,
    comment: String,
}

fn read(relative: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(relative);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The `mqstate_status` enum of the committed header, constant → (number, comment).
fn header_statuses() -> BTreeMap<String, Declared> {
    let header = read("include/mqstate.h");
    let start = header
        .find("enum mqstate_status\n")
        .expect("enum mqstate_status");
    let body = &header[start..start + header[start..].find("};").expect("end of enum")];
    let mut out = BTreeMap::new();
    let mut comment = String::new();
    for line in body.lines().map(str::trim) {
        if line == "/**" {
            comment.clear();
        } else if let Some(text) = line.strip_prefix("* ") {
            if !comment.is_empty() {
                comment.push(' ');
            }
            comment.push_str(text.trim());
        } else if let Some((name, number)) = line.trim_end_matches(',').split_once(" = ")
            && let Some(name) = name.strip_prefix("MQSTATE_STATUS_")
        {
            let number = number.parse().expect("a number");
            let comment = std::mem::take(&mut comment);
            out.insert(name.to_owned(), Declared { number, comment });
        }
    }
    out
}

/// One row of the README's status table.
#[derive(Debug)]
struct Row {
    number: u32,
    constant: String,
    code: String,
    family: String,
    meaning: String,
}

fn readme_rows() -> Vec<Row> {
    let readme = read("README.md");
    let start = readme
        .find("### Statuses")
        .expect("a Statuses section in the README");
    readme[start..]
        .lines()
        .skip_while(|l| !l.starts_with("| number |"))
        .skip(2)
        .take_while(|l| l.starts_with('|'))
        .map(|line| {
            let cells: Vec<&str> = line.trim_matches('|').split(" | ").map(str::trim).collect();
            assert_eq!(cells.len(), 5, "a row of five cells: {line}");
            let unquote = |c: &str| c.trim_matches('`').to_owned();
            Row {
                number: cells[0]
                    .parse()
                    .unwrap_or_else(|_| panic!("a number: {line}")),
                constant: unquote(cells[1])
                    .trim_start_matches("MQSTATE_STATUS_")
                    .to_owned(),
                code: unquote(cells[2]),
                family: cells[3].to_owned(),
                meaning: cells[4].to_owned(),
            }
        })
        .collect()
}

/// The family word the README and header use for a parent class of the core's table.
fn family_of(parent: &str) -> &'static str {
    match parent {
        "StoreError" => "store",
        "ClockError" => "clock",
        "ConnectError" => "connect",
        _ => "—",
    }
}

#[test]
fn the_readme_lists_every_status_of_the_header_with_its_number() {
    let declared = header_statuses();
    let rows = readme_rows();
    assert!(
        declared.len() >= 34,
        "the header's statuses were read: {}",
        declared.len()
    );
    let listed: BTreeMap<&str, u32> = rows
        .iter()
        .map(|r| (r.constant.as_str(), r.number))
        .collect();
    assert_eq!(listed.len(), rows.len(), "no status listed twice");
    for (name, d) in &declared {
        assert_eq!(
            listed.get(name.as_str()),
            Some(&d.number),
            "README row of MQSTATE_STATUS_{name}"
        );
    }
    assert_eq!(
        rows.len(),
        declared.len(),
        "the README lists no status the header lacks"
    );
    assert!(
        rows.windows(2).all(|w| w[0].number < w[1].number),
        "rows in number order"
    );
}

#[test]
fn every_core_row_is_in_the_readme_and_the_header_with_its_code_family_and_meaning() {
    let declared = header_statuses();
    let rows = readme_rows();
    for info in mqstate::ERROR_TABLE {
        let row = rows
            .iter()
            .find(|r| r.number == info.number)
            .unwrap_or_else(|| panic!("README: no row for {} ({})", info.code, info.number));
        assert_eq!(row.code, info.code, "README name of {}", info.number);
        assert_eq!(
            row.family,
            family_of(info.parent),
            "README family of {}",
            info.code
        );
        if info.parent != "StoreError" {
            assert_eq!(
                row.meaning, info.description,
                "README meaning of {}",
                info.code
            );
        } else if info.code != "unknown_store_error" {
            assert!(
                row.meaning.starts_with('"'),
                "a store error quotes the service: {row:?}"
            );
        }
        let (_, d) = declared
            .iter()
            .find(|(_, d)| d.number == info.number)
            .unwrap_or_else(|| panic!("header: no status numbered {}", info.number));
        assert!(
            d.comment.starts_with(&format!("`{}`", info.code)),
            "the header comment of {} starts with its code: {}",
            info.code,
            d.comment
        );
        let family = family_of(info.parent);
        if family != "—" {
            assert!(
                d.comment.contains(&format!("({family} family)")),
                "{}: {}",
                info.code,
                d.comment
            );
        }
        assert!(
            !d.comment.contains("reserved"),
            "{} is returned, not reserved",
            info.code
        );
    }
}

#[test]
fn the_rest_is_success_and_the_c_only_conditions() {
    let rows = readme_rows();
    let declared = header_statuses();
    for row in &rows {
        if mqstate::ERROR_TABLE.iter().any(|i| i.number == row.number) {
            continue;
        }
        if row.number == 0 {
            assert_eq!((row.constant.as_str(), row.code.as_str()), ("OK", "ok"));
            continue;
        }
        assert!(
            row.number >= 200,
            "{row:?}: numbers below 200 belong to the core's table"
        );
        assert_eq!(row.family, "C only", "{row:?}");
        let d = &declared[&row.constant];
        assert!(
            d.comment.starts_with(&format!("`{}` (C only)", row.code)),
            "the header says {} is C only: {}",
            row.code,
            d.comment
        );
    }
}
