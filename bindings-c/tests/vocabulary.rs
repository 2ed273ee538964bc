//! The C API against `core/vocabulary.json`, the one description of mqstate's public surface:
//! every operation of every owner (client, lock, election, subscription, pager) is the
//! function of the header the vocabulary names, every option a parameter of it or a field
//! of its options struct under its C name (durations `_ms`), and no duration parameter or
//! option field is there that the vocabulary does not know; the cache counters are the
//! fields of `mqstate_cache_stats`, in order; every property is an accessor
//! of its owner's handle, every event field a `mqstate_sub_event_<field>` accessor; the
//! outcome, condition, event, lock-state and error names are the header's constants. The
//! local store's operations and properties (`testing_operations`, `testing_properties`) are
//! functions of the header the same way.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use serde_json::Value;

/// Duration parameters that are an operation's argument rather than an option (the
/// vocabulary lists options only), with the reason.
const ARGUMENTS: &[(&str, &str, &str)] = &[(
    "mqstate_lock_set_auto_renew",
    "period_ms",
    "the period is set_auto_renew's argument (Python `period`, Node `periodMs`)",
)];

/// Fields of a shared options struct that some of its functions refuse rather than use.
const REFUSED: &[(&str, &str, &str)] = &[
    (
        "mqstate_client_get",
        "fencing_token",
        "GET only reads: a token is refused",
    ),
    (
        "mqstate_client_observe",
        "fencing_token",
        "observe only reads: a token is refused",
    ),
    (
        "mqstate_client_observe",
        "bypass_cache",
        "only GET reads through the client-side cache",
    ),
    (
        "mqstate_client_delete",
        "bypass_cache",
        "only GET reads through the client-side cache",
    ),
    (
        "mqstate_client_vdel",
        "bypass_cache",
        "only GET reads through the client-side cache",
    ),
];

/// C's own cancellation: every blocking call may take a `mqstate_cancel` token (the other
/// languages cancel with their own idiom: asyncio, AbortSignal, coroutines); and C's own
/// trace context: a call carries the `traceparent`/`tracestate` the application gives it
/// (the other languages take it from their OpenTelemetry span, docs/telemetry.md).
const C_ONLY_FIELDS: &[&str] = &["cancel", "traceparent", "tracestate"];

fn read(relative: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(relative);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn vocabulary() -> Value {
    serde_json::from_str(&read("../core/vocabulary.json")).expect("vocabulary.json is JSON")
}

/// The header without its comments.
fn header_code() -> String {
    let header = read("include/mqstate.h");
    let mut out = String::with_capacity(header.len());
    let mut rest = header.as_str();
    while let Some(start) = rest.find("/*") {
        out.push_str(&rest[..start]);
        let end = rest[start..].find("*/").expect("a closed comment");
        rest = &rest[start + end + 2..];
    }
    out.push_str(rest);
    out.lines()
        .map(|l| l.split("//").next().unwrap_or(""))
        .collect::<Vec<_>>()
        .join("\n")
}

/// A declaration's last identifier: `const struct mqstate_client *client` → `client`.
fn last_ident(decl: &str) -> String {
    let decl = decl.trim().trim_end_matches(';');
    let name: String = decl
        .chars()
        .rev()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
        .collect();
    name.chars().rev().collect()
}

/// Every function of the header: name → its parameters as (type, name).
fn functions(code: &str) -> BTreeMap<String, Vec<(String, String)>> {
    let mut out = BTreeMap::new();
    for statement in code.split(';') {
        let statement = statement.trim();
        let Some(open) = statement.find('(') else {
            continue;
        };
        if statement.starts_with('#') || statement.contains('{') || !statement.ends_with(')') {
            continue;
        }
        let name = last_ident(&statement[..open]);
        if !name.starts_with("mqstate_") || statement.contains("typedef") {
            continue;
        }
        let params = &statement[open + 1..statement.len() - 1];
        let params = params
            .split(',')
            .map(str::trim)
            .filter(|p| !p.is_empty() && *p != "void")
            .map(|p| {
                let name = last_ident(p);
                (p[..p.len() - name.len()].trim().to_owned(), name)
            })
            .collect();
        out.insert(name, params);
    }
    out
}

/// Every struct with fields: name → field names.
fn structs(code: &str) -> BTreeMap<String, Vec<String>> {
    let mut out = BTreeMap::new();
    let mut rest = code;
    while let Some(start) = rest.find("typedef struct ") {
        rest = &rest[start + "typedef struct ".len()..];
        let Some(open) = rest.find('{') else { break };
        let semicolon = rest.find(';').unwrap_or(usize::MAX);
        if semicolon < open {
            continue; // an opaque handle
        }
        let name = rest[..open].trim().to_owned();
        let close = rest.find('}').expect("a closed struct");
        let fields = rest[open + 1..close]
            .split(';')
            .map(last_ident)
            .filter(|f| !f.is_empty())
            .collect();
        out.insert(name, fields);
        rest = &rest[close..];
    }
    out
}

/// What a function takes as options: its parameter names and its options struct's fields.
fn takes(
    function: &str,
    functions: &BTreeMap<String, Vec<(String, String)>>,
    structs: &BTreeMap<String, Vec<String>>,
) -> (BTreeSet<String>, BTreeSet<String>) {
    let params = functions
        .get(function)
        .unwrap_or_else(|| panic!("the header declares no {function}"));
    let names = params.iter().map(|(_, n)| n.clone()).collect();
    let mut fields = BTreeSet::new();
    for (ty, _) in params {
        if let Some(s) = ty.split_whitespace().find(|w| w.ends_with("_options")) {
            fields.extend(structs[s].iter().cloned());
        }
    }
    (names, fields)
}

#[test]
fn every_operation_is_a_function_with_its_options_under_their_c_names() {
    let vocabulary = vocabulary();
    let code = header_code();
    let (functions, structs) = (functions(&code), structs(&code));
    let operations = vocabulary["operations"].as_array().expect("operations");
    assert!(operations.len() >= 20, "the vocabulary was read");
    let owners: BTreeSet<&str> = operations
        .iter()
        .map(|op| op["owner"].as_str().unwrap())
        .collect();
    assert_eq!(
        owners,
        BTreeSet::from(["client", "election", "lock", "pager", "subscription"]),
        "every owner is checked"
    );
    for op in operations {
        let function = op["names"]["c"].as_str().unwrap();
        assert!(function.starts_with("mqstate_"), "{function}");
        let (params, fields) = takes(function, &functions, &structs);
        let mut known = BTreeSet::new();
        for option in op["options"].as_array().unwrap() {
            let c_name = option["names"]["c"].as_str().unwrap();
            let duration = option["unit"] == "duration";
            assert_eq!(
                duration,
                c_name.ends_with("_ms"),
                "{function}: {c_name}: durations are _ms"
            );
            known.insert(c_name.to_owned());
            assert!(
                params.contains(c_name) || fields.contains(c_name),
                "{function} takes no option {c_name}"
            );
        }
        // Nothing more: no duration parameter and no options field the vocabulary lacks.
        for extra in params.iter().filter(|p| p.ends_with("_ms")).chain(&fields) {
            let refused = REFUSED.iter().any(|(f, o, _)| *f == function && o == extra);
            let argument = ARGUMENTS
                .iter()
                .any(|(f, a, _)| *f == function && a == extra);
            assert!(
                known.contains(extra)
                    || refused
                    || argument
                    || C_ONLY_FIELDS.contains(&extra.as_str()),
                "{function} has an option the vocabulary does not know: {extra}"
            );
        }
    }
}

#[test]
fn every_testing_operation_is_a_function_with_its_options_under_their_c_names() {
    let vocabulary = vocabulary();
    let code = header_code();
    let (functions, structs) = (functions(&code), structs(&code));
    let operations = vocabulary["testing_operations"]
        .as_array()
        .expect("testing_operations");
    assert!(operations.len() >= 9, "the vocabulary was read");
    for op in operations {
        assert_eq!(op["owner"], "local_store", "{op}");
        let function = op["names"]["c"].as_str().unwrap();
        assert!(function.starts_with("mqstate_local_store_"), "{function}");
        let (params, fields) = takes(function, &functions, &structs);
        assert!(fields.is_empty(), "{function} takes no options struct");
        let mut known = BTreeSet::new();
        for option in op["options"].as_array().unwrap() {
            let c_name = option["names"]["c"].as_str().unwrap();
            assert_eq!(
                option["unit"] == "duration",
                c_name.ends_with("_ms"),
                "{function}: {c_name}: durations are _ms"
            );
            assert!(params.contains(c_name), "{function} takes no {c_name}");
            known.insert(c_name.to_owned());
        }
        for extra in params.iter().filter(|p| p.ends_with("_ms")) {
            assert!(
                known.contains(extra),
                "{function} has a duration the vocabulary does not know: {extra}"
            );
        }
        // Every operation but start works on a store (start makes one).
        if op["name"] != "start" {
            assert_eq!(
                first_handle(function, &functions),
                "mqstate_local_store",
                "{function} works on a store"
            );
        }
    }
    // The one C-only function: the handle's release (stop keeps the handle).
    assert!(functions.contains_key("mqstate_local_store_free"));
}

#[test]
fn every_testing_property_is_an_accessor_of_the_store() {
    let vocabulary = vocabulary();
    let functions = functions(&header_code());
    let properties = vocabulary["testing_properties"]
        .as_array()
        .expect("testing_properties");
    assert!(properties.len() >= 3, "the vocabulary was read");
    for property in properties {
        let function = property["names"]["c"].as_str().unwrap();
        assert_eq!(
            first_handle(function, &functions),
            format!("mqstate_{}", property["owner"].as_str().unwrap()),
            "{function} reads a store"
        );
        assert_eq!(
            functions[function].len(),
            1,
            "{function} takes only the store"
        );
    }
}

/// The handle type a function takes first: `const struct mqstate_lock *` → `mqstate_lock`.
fn first_handle(function: &str, functions: &BTreeMap<String, Vec<(String, String)>>) -> String {
    let params = functions
        .get(function)
        .unwrap_or_else(|| panic!("the header declares no {function}"));
    let (ty, _) = params
        .first()
        .unwrap_or_else(|| panic!("{function} takes no handle"));
    ty.split_whitespace()
        .find(|w| w.starts_with("mqstate_"))
        .unwrap_or_else(|| panic!("{function} takes {ty} first"))
        .trim_end_matches('*')
        .to_owned()
}

#[test]
fn every_property_is_an_accessor_of_its_owner() {
    let vocabulary = vocabulary();
    let functions = functions(&header_code());
    let properties = vocabulary["properties"].as_array().expect("properties");
    assert!(properties.len() >= 9, "the vocabulary was read");
    for property in properties {
        let owner = property["owner"].as_str().unwrap();
        let function = property["names"]["c"].as_str().unwrap();
        assert_eq!(
            first_handle(function, &functions),
            format!("mqstate_{owner}"),
            "{function} reads a {owner}"
        );
        let params = &functions[function];
        assert!(
            params[1..]
                .iter()
                .all(|(ty, _)| ty.ends_with('*') && !ty.starts_with("const")),
            "{function}: a property takes nothing but out-parameters: {params:?}"
        );
    }
}

#[test]
fn every_event_field_is_an_accessor_of_the_event() {
    let vocabulary = vocabulary();
    let functions = functions(&header_code());
    let mut fields = 0;
    for event in vocabulary["events"].as_array().unwrap() {
        let names = event["names"]["c"].as_array().expect("C field names");
        assert_eq!(names.len(), event["fields"].as_array().unwrap().len());
        for field in names {
            let function = format!("mqstate_sub_event_{}", field.as_str().unwrap());
            assert_eq!(
                first_handle(&function, &functions),
                "mqstate_sub_event",
                "{function} reads an event"
            );
            fields += 1;
        }
    }
    assert!(fields >= 10, "the vocabulary was read");
}

#[test]
fn the_cache_counters_are_the_fields_of_mqstate_cache_stats_in_order() {
    let vocabulary = vocabulary();
    let code = header_code();
    let counters: Vec<&str> = vocabulary["cache_counters"]
        .as_array()
        .expect("cache_counters")
        .iter()
        .map(|c| c.as_str().unwrap())
        .collect();
    assert!(counters.len() >= 6, "the vocabulary was read");
    assert_eq!(
        structs(&code)["mqstate_cache_stats"],
        counters,
        "mqstate_cache_stats's fields are cache_counters, in order (the order is the header's \
         promise; the binding copies them by name)"
    );
    // Each a uint64_t.
    let start = code
        .find("typedef struct mqstate_cache_stats {")
        .expect("the header declares mqstate_cache_stats");
    let body = &code[start..start + code[start..].find('}').expect("a closed struct")];
    for counter in counters {
        assert!(
            body.contains(&format!("uint64_t {counter};")),
            "mqstate_cache_stats.{counter} is a uint64_t"
        );
    }
    // The operation's out-parameters: whether the cache is on, and the counters.
    let params = &functions(&code)["mqstate_client_cache_stats"];
    let types: Vec<&str> = params.iter().map(|(ty, _)| ty.as_str()).collect();
    assert_eq!(
        types,
        [
            "const struct mqstate_client *",
            "bool *",
            "struct mqstate_cache_stats *"
        ],
        "{params:?}"
    );
}

/// The header's enum constants.
fn constants(code: &str) -> BTreeMap<String, u64> {
    code.lines()
        .filter_map(|l| {
            let (name, value) = l.trim().trim_end_matches(',').split_once(" = ")?;
            Some((name.trim().to_owned(), value.trim().parse().ok()?))
        })
        .filter(|(name, _): &(String, u64)| name.starts_with("MQSTATE_"))
        .collect()
}

fn upper(name: &str) -> String {
    name.to_ascii_uppercase()
}

#[test]
fn names_and_numbers_are_the_header_constants() {
    let vocabulary = vocabulary();
    let constants = constants(&header_code());
    let has = |name: String| {
        assert!(constants.contains_key(&name), "the header has no {name}");
    };
    for outcome in vocabulary["vdel_outcomes"].as_array().unwrap() {
        has(format!(
            "MQSTATE_VDEL_OUTCOME_{}",
            upper(outcome.as_str().unwrap())
        ));
    }
    for condition in vocabulary["set_conditions"].as_array().unwrap() {
        has(format!(
            "MQSTATE_SET_CONDITION_{}",
            upper(condition.as_str().unwrap())
        ));
    }
    for state in vocabulary["lock_states"].as_array().unwrap() {
        has(format!(
            "MQSTATE_SUB_EVENT_TYPE_{}",
            upper(state.as_str().unwrap())
        ));
    }
    for event in vocabulary["events"].as_array().unwrap() {
        match event["name"].as_str().unwrap() {
            "change" => ["KEY_SET", "KEY_DELETED"]
                .into_iter()
                .for_each(|t| has(format!("MQSTATE_SUB_EVENT_TYPE_{t}"))),
            "status" => {} // the lock states, above
            other => has(format!("MQSTATE_SUB_EVENT_TYPE_{}", upper(other))),
        }
    }
    for error in vocabulary["errors"].as_array().unwrap() {
        let name = format!("MQSTATE_STATUS_{}", upper(error["code"].as_str().unwrap()));
        assert_eq!(
            constants.get(&name),
            error["number"].as_u64().as_ref(),
            "{name}"
        );
    }
}

#[test]
fn the_readme_states_the_core_defaults() {
    let vocabulary = vocabulary();
    let readme = read("README.md");
    let start = readme.find("### Durations").expect("a Durations section");
    let section = &readme[start..start + readme[start..].find("\n## ").unwrap_or(0)];
    for (what, phrase) in [
        (
            "request_timeout",
            "`request_timeout` setting ({} s unless set)",
        ),
        ("edit_timeout", "the core's edit timeout ({} s)"),
        ("lease", "else {} s"),
    ] {
        let ms = vocabulary["defaults_ms"][what].as_u64().expect(what);
        let phrase = phrase.replace("{}", &(ms / 1000).to_string());
        assert!(
            section.contains(&phrase),
            "the Durations section says {phrase:?}"
        );
    }
}
