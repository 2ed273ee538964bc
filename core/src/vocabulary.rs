//! The vocabulary of the public API, decided once for every language: how a name is spelled
//! in each ([`option_name`], [`snake_case`], [`camel_case`]), the units and roles of
//! durations, the change kinds, the lock states and loss reasons, the closed message.
//!
//! The specification of every operation, option, property and event (test data, not
//! shipped) is `core/tests/vocabulary/spec.rs`; that test writes it with these rules as
//! `core/vocabulary.json` (committed; the test fails when the file drifts). Every
//! language's suite checks its public API against that file, in its own casing, so a rename
//! or a new option is made once and every binding's test says where it has not followed.
//!
//! Durations follow one rule per language ([`duration_style`]): a typed duration under the
//! bare name in Rust and Kotlin, seconds under the bare name in Python, milliseconds with
//! the unit in the name in Node (`expiryMs`) and C (`expiry_ms`) — so one option name never
//! means two units.
//!
//! Zero and "no limit" follow one rule too ([`DURATION_RULES`], [`duration_spellings`]):
//! every duration option has a [`DurationRole`]; a zero *bound* (a request's timeout) or a
//! zero *span* (an expiry, a lease) is refused with `invalid_argument`, a zero *wait* means
//! "do not wait" (look once, then `timeout` at once), and a wait that is not given has no
//! limit. C, which has no "not given" for a number, spells it 0 exactly where zero is
//! refused elsewhere, and spells a wait's "no limit" `MQSTATE_WAIT_FOREVER`.

/// A language mqstate speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Language {
    /// The `mqstate` crate.
    Rust,
    /// The `mqstate` package (PyO3).
    Python,
    /// The `mqstate` npm package (napi-rs).
    Node,
    /// `mqstate.h`.
    C,
    /// The uniffi binding's idiomatic Kotlin layer.
    Kotlin,
}

impl Language {
    /// Every language, in the order of the vocabulary's name maps.
    pub const ALL: [Language; 5] = [
        Language::Rust,
        Language::Python,
        Language::Node,
        Language::C,
        Language::Kotlin,
    ];

    /// Its key in `vocabulary.json`.
    pub fn key(self) -> &'static str {
        match self {
            Language::Rust => "rust",
            Language::Python => "python",
            Language::Node => "node",
            Language::C => "c",
            Language::Kotlin => "kotlin",
        }
    }
}

/// What an option's value is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unit {
    /// A duration (see [`duration_style`]).
    Duration,
    /// Text.
    Text,
    /// A boolean.
    Bool,
    /// A fencing token (an HLC, or its text).
    Token,
    /// A SET condition: `nx` or `nex`, any case ([`SetCondition::parse`](crate::codec::SetCondition::parse)).
    Condition,
    /// A count (a non-negative integer).
    Count,
    /// A state store error, by its code in the error table (`fencing_token_lower_version`).
    ErrorCode,
}

impl Unit {
    /// Its name in `vocabulary.json`.
    pub fn key(self) -> &'static str {
        match self {
            Unit::Duration => "duration",
            Unit::Text => "text",
            Unit::Bool => "bool",
            Unit::Token => "fencing_token",
            Unit::Condition => "condition",
            Unit::Count => "count",
            Unit::ErrorCode => "error_code",
        }
    }
}

/// How `language` takes a duration option.
pub fn duration_style(language: Language) -> &'static str {
    match language {
        Language::Rust => "std::time::Duration, under the bare name",
        Language::Python => "seconds (int or float) or datetime.timedelta, under the bare name",
        Language::Node => "milliseconds (number), the name ends in Ms",
        Language::C => "milliseconds (integer), the name ends in _ms",
        Language::Kotlin => "kotlin.time.Duration, under the bare name",
    }
}

/// What a duration option is for; it decides what zero and "not given" mean
/// ([`DURATION_RULES`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DurationRole {
    /// Bounds a request, or a call made of requests: the `timeout` of `set`, `get`,
    /// `delete`, `vdel`, `observe`, `scan` and `edit`, and the `request_timeout` and
    /// `connect_timeout` settings. A zero bound could never be met (it would race the answer),
    /// so it is refused.
    Bound,
    /// How long to wait for what others do: the `timeout` of a lock's `acquire`, an
    /// election's `campaign` and a subscription's `next`. Zero is "do not wait".
    Wait,
    /// A span of time the store or the client keeps: an expiry, a lease, a term, a renewal
    /// period. At least 1 ms.
    Span,
}

impl DurationRole {
    /// Every role, in the order of [`DURATION_RULES`].
    pub const ALL: [DurationRole; 3] =
        [DurationRole::Bound, DurationRole::Wait, DurationRole::Span];

    /// Its key in `vocabulary.json`.
    pub fn key(self) -> &'static str {
        match self {
            DurationRole::Bound => "bound",
            DurationRole::Wait => "wait",
            DurationRole::Span => "span",
        }
    }

    /// Its row of [`DURATION_RULES`].
    pub fn rule(self) -> &'static DurationRule {
        DURATION_RULES
            .iter()
            .find(|r| r.role == self)
            .expect("every role has a rule")
    }
}

/// What zero and "not given" mean for one [`DurationRole`], in every language.
#[derive(Clone, Copy, Debug)]
pub struct DurationRule {
    /// The role.
    pub role: DurationRole,
    /// Which options have it, for people.
    pub options: &'static str,
    /// What a zero duration does.
    pub zero: &'static str,
    /// What a duration that is not given means.
    pub not_given: &'static str,
}

/// The one rule for zero and for "not given", per [`DurationRole`].
pub const DURATION_RULES: [DurationRule; 3] = [
    DurationRule {
        role: DurationRole::Bound,
        options: "a request's timeout (set, get, delete, vdel, observe, scan), an edit's timeout, the request_timeout and connect_timeout settings",
        zero: "refused with invalid_argument; nothing is sent",
        not_given: "the default: the client's request_timeout (an edit: 10 s; connecting: connect_timeout)",
    },
    DurationRule {
        role: DurationRole::Wait,
        options: "the timeout of a lock's acquire, an election's campaign, a subscription's next",
        zero: "do not wait: one look now (one try of the lock or the leadership, a buffered event), else timeout at once",
        not_given: "no limit (cancel the call to stop it)",
    },
    DurationRule {
        role: DurationRole::Span,
        options: "expiry, lease, term, auto_renew, renew_every",
        zero: "refused with invalid_argument (at least 1 ms)",
        not_given: "the option's default",
    },
];

/// How `language` spells, for a duration option: not giving it (its default), a wait that
/// does not wait, and a wait without limit. One spelling each.
pub fn duration_spellings(language: Language) -> [&'static str; 3] {
    match language {
        Language::Rust => ["None", "Some(Duration::ZERO)", "None"],
        Language::Python => ["None (or leave it out)", "0", "None (or leave it out)"],
        Language::Node => ["leave it out (undefined)", "0", "leave it out (undefined)"],
        Language::C => [
            "0, wherever zero is refused in the other languages (bounds and spans: a zero-initialised options struct is the defaults)",
            "0",
            "MQSTATE_WAIT_FOREVER",
        ],
        Language::Kotlin => [
            "null (or leave it out)",
            "Duration.ZERO",
            "null (or leave it out)",
        ],
    }
}

/// How long a request keeps being sent again while the broker says that nobody is
/// subscribed to the state store's request topic (MQTT 5 PUBACK reason 0x10, "no matching
/// subscribers"), before it fails with `no_store`: long enough for a state store that
/// restarts behind its broker, far shorter than a request timeout.
pub const NO_STORE_WINDOW: std::time::Duration = std::time::Duration::from_secs(2);

/// The kinds of a change event (its `kind` field), spelled so in every language: Python's
/// and Node's strings, and what Kotlin's and Swift's `ChangeKind` print.
pub const CHANGE_KINDS: [&str; 2] = ["set", "delete"];

/// The counters of the client-side cache ([`CacheStats`](crate::CacheStats)), named so in
/// every language.
pub const CACHE_COUNTERS: [&str; 11] = [
    "hits",
    "misses",
    "evictions",
    "invalidations",
    "entries",
    "bytes",
    "lease_renewals",
    "lease_expiries",
    "lease_failures",
    "lease_misses",
    "refused",
];

/// A binding whose host answers a cache hit without yielding (Python's asyncio, Node's event
/// loop) yields to its event loop once every this many hits in a row, so that a loop of hits
/// cannot starve the tasks beside it (the core's own hits take a unit of tokio's cooperative
/// budget instead).
pub const CACHE_HIT_YIELD_EVERY: u32 = 64;

/// The message of any call on a client after it was closed (a `ClosedError`), the same
/// words in every language.
pub const CLOSED_MESSAGE: &str = "the client is closed";

/// A lock's states, and the reasons a held lock is lost.
pub const LOCK_STATES: [&str; 3] = ["not_held", "held", "lost"];
/// Why a held lock was lost.
pub const LOSS_REASONS: [&str; 3] = ["expired", "taken_over", "renewal_failed"];

/// `name` in snake_case: `requestTimeout` → `request_timeout` (snake_case stays).
pub fn snake_case(name: &str) -> String {
    let mut out = String::with_capacity(name.len() + 4);
    for c in name.chars() {
        if c.is_ascii_uppercase() {
            if !out.is_empty() {
                out.push('_');
            }
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

/// `name` in camelCase: `request_timeout` → `requestTimeout`.
pub fn camel_case(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    let mut upper = false;
    for c in name.chars() {
        if c == '_' {
            upper = true;
        } else if upper {
            out.push(c.to_ascii_uppercase());
            upper = false;
        } else {
            out.push(c);
        }
    }
    out
}

/// An option's name in `language`.
pub fn option_name(language: Language, name: &str, unit: Unit) -> String {
    let duration = unit == Unit::Duration;
    match language {
        Language::Rust | Language::Python => name.to_owned(),
        Language::Kotlin => camel_case(name),
        Language::Node if duration => format!("{}Ms", camel_case(name)),
        Language::Node => camel_case(name),
        Language::C if duration => format!("{name}_ms"),
        Language::C => name.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn casing_round_trips() {
        for name in ["request_timeout", "fencing_token", "get", "renew_every"] {
            assert_eq!(snake_case(&camel_case(name)), name);
        }
        assert_eq!(snake_case("requestTimeout"), "request_timeout");
        assert_eq!(snake_case("host"), "host");
    }
}
