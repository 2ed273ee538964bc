//! The specification of the public API's vocabulary, in one place for every language: each
//! object's operations with their options (name, unit, role of a duration, default), the
//! properties, and the events with their fields. Test data, not library code: `main.rs`
//! writes it as `core/vocabulary.json`, which every binding's suite checks its public API
//! against. The naming rules it relies on ([`option_name`], [`camel_case`], the duration
//! rules) are the library's, in `mqstate::vocabulary`.

use mqstate::vocabulary::{DurationRole, Language, Unit, camel_case, option_name};

/// One option of an operation.
#[derive(Clone, Copy, Debug)]
pub struct OptionSpec {
    /// The canonical (snake_case, unit-free) name.
    pub name: &'static str,
    /// Its unit.
    pub unit: Unit,
    /// For a duration, what it is for (which decides what zero means); `None` otherwise.
    pub role: Option<DurationRole>,
    /// What it is when not given, for people.
    pub default: &'static str,
    /// One line for people.
    pub description: &'static str,
}

/// The objects that have operations.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Owner {
    /// The client (a connection to the store).
    Client,
    /// A leased lock.
    Lock,
    /// A candidate in a leader election.
    Election,
    /// A stream of events (`observe`, `watch_holder`, `watch_status`, `watch_leader`).
    Subscription,
    /// A SCAN, page by page.
    Pager,
    /// An in-process emulated store for tests, with faults on demand
    /// ([`TESTING_OPERATIONS`]; `mqstate_server::testing::LocalStore` in Rust).
    LocalStore,
}

impl Owner {
    /// Its canonical name.
    pub fn key(self) -> &'static str {
        match self {
            Owner::Client => "client",
            Owner::Lock => "lock",
            Owner::Election => "election",
            Owner::Subscription => "subscription",
            Owner::Pager => "pager",
            Owner::LocalStore => "local_store",
        }
    }

    /// The prefix of its functions in C (`mqstate_scan_next` pages a SCAN,
    /// `mqstate_local_store_pause` pauses a local store).
    fn c_prefix(self) -> &'static str {
        match self {
            Owner::Pager => "scan",
            other => other.key(),
        }
    }
}

/// One operation of an object.
#[derive(Clone, Copy, Debug)]
pub struct Operation {
    /// The object it belongs to.
    pub owner: Owner,
    /// The canonical (snake_case) name.
    pub name: &'static str,
    /// Its options (keyword arguments, option-object fields, trailing parameters).
    pub options: &'static [OptionSpec],
    /// One line for people.
    pub description: &'static str,
}

const fn opt(
    name: &'static str,
    unit: Unit,
    default: &'static str,
    description: &'static str,
) -> OptionSpec {
    OptionSpec {
        name,
        unit,
        role: None,
        default,
        description,
    }
}

const fn duration(
    name: &'static str,
    role: DurationRole,
    default: &'static str,
    description: &'static str,
) -> OptionSpec {
    OptionSpec {
        name,
        unit: Unit::Duration,
        role: Some(role),
        default,
        description,
    }
}

const TIMEOUT: OptionSpec = duration(
    "timeout",
    DurationRole::Bound,
    "the client's request_timeout",
    "how long this call waits for its answer",
);
const FENCING_TOKEN: OptionSpec = opt(
    "fencing_token",
    Unit::Token,
    "none",
    "write fenced by a lock's token (__ft)",
);
const LEASE: OptionSpec = duration(
    "lease",
    DurationRole::Span,
    "the lock's lease (10 s)",
    "how long the lock is held unless renewed",
);
const TERM: OptionSpec = duration(
    "term",
    DurationRole::Span,
    "the election's term (10 s)",
    "how long leadership lasts unless renewed",
);
const WAIT: OptionSpec = duration(
    "timeout",
    DurationRole::Wait,
    "no limit (cancel to stop)",
    "how long to wait",
);

/// Every operation of the public API, with its options.
pub const OPERATIONS: &[Operation] = &[
    Operation {
        owner: Owner::Client,
        name: "set",
        options: &[
            opt(
                "condition",
                Unit::Condition,
                "none",
                "nx: only if missing; nex: only if missing or equal",
            ),
            duration(
                "expiry",
                DurationRole::Span,
                "never",
                "the key expires this long after the SET (at least 1 ms)",
            ),
            FENCING_TOKEN,
            opt(
                "persist",
                Unit::Bool,
                "false",
                "ask the service to persist the value",
            ),
            TIMEOUT,
        ],
        description: "sets a key to a value",
    },
    Operation {
        owner: Owner::Client,
        name: "get",
        options: &[
            TIMEOUT,
            opt(
                "bypass_cache",
                Unit::Bool,
                "false",
                "read from the store even when the client's cache could answer",
            ),
        ],
        description: "a key's value and version, or nothing (from the client's cache when it is on and holds the key fresh)",
    },
    Operation {
        owner: Owner::Client,
        name: "delete",
        options: &[FENCING_TOKEN, TIMEOUT],
        description: "deletes a key: the number deleted (0 or 1)",
    },
    Operation {
        owner: Owner::Client,
        name: "vdel",
        options: &[FENCING_TOKEN, TIMEOUT],
        description: "deletes a key only if it holds a value: a VDEL outcome",
    },
    Operation {
        owner: Owner::Client,
        name: "observe",
        options: &[TIMEOUT],
        description: "a subscription of a key's changes",
    },
    Operation {
        owner: Owner::Client,
        name: "scan",
        options: &[TIMEOUT],
        description: "the keys matching a glob, page by page (the timeout is each page's)",
    },
    Operation {
        owner: Owner::Client,
        name: "lock",
        options: &[
            LEASE,
            opt(
                "holder",
                Unit::Text,
                "the client id",
                "the holder id written",
            ),
            opt(
                "session_id",
                Unit::Text,
                "none",
                "the holder id becomes holder:session_id",
            ),
            duration(
                "auto_renew",
                DurationRole::Span,
                "no automatic renewal",
                "renew this often after each acquire",
            ),
        ],
        description: "a leased lock on a key",
    },
    Operation {
        owner: Owner::Client,
        name: "election",
        options: &[
            TERM,
            opt(
                "session_id",
                Unit::Text,
                "none",
                "the candidate id becomes candidate:session_id",
            ),
            duration(
                "renew_every",
                DurationRole::Span,
                "a third of the term",
                "renew the term this often while leader",
            ),
        ],
        description: "a candidate in a leader election",
    },
    Operation {
        owner: Owner::Client,
        name: "cache_stats",
        options: &[],
        description: "the client-side cache's counters (cache_counters), or nothing when the cache is off",
    },
    Operation {
        owner: Owner::Client,
        name: "close",
        options: &[],
        description: "closes the connection (idempotent)",
    },
    Operation {
        owner: Owner::Lock,
        name: "try_acquire",
        options: &[LEASE],
        description: "tries once: the fencing token, or nothing when held by another",
    },
    Operation {
        owner: Owner::Lock,
        name: "acquire",
        options: &[LEASE, WAIT],
        description: "waits for the lock: the fencing token",
    },
    Operation {
        owner: Owner::Lock,
        name: "renew",
        options: &[],
        description: "renews the held lease: the new token, or nothing",
    },
    Operation {
        owner: Owner::Lock,
        name: "release",
        options: &[],
        description: "releases the lock: whether our hold was deleted",
    },
    Operation {
        owner: Owner::Lock,
        name: "holder",
        options: &[],
        description: "the current holder id, or nothing",
    },
    Operation {
        owner: Owner::Lock,
        name: "watch_holder",
        options: &[],
        description: "holder changes: the current holder, then each change",
    },
    Operation {
        owner: Owner::Lock,
        name: "watch_status",
        options: &[],
        description: "this lock's status: the current one, then each change",
    },
    Operation {
        owner: Owner::Lock,
        name: "edit",
        options: &[
            LEASE,
            duration(
                "timeout",
                DurationRole::Bound,
                "10 s",
                "how long the edit may take, retries included",
            ),
        ],
        description: "fenced read-decide-write of a key under the lock",
    },
    Operation {
        owner: Owner::Lock,
        name: "set_auto_renew",
        options: &[],
        description: "sets the automatic renewal period from the next acquire on (none: never)",
    },
    Operation {
        owner: Owner::Election,
        name: "campaign",
        options: &[TERM, WAIT],
        description: "waits to become leader: the leader's fencing token",
    },
    Operation {
        owner: Owner::Election,
        name: "try_campaign",
        options: &[TERM],
        description: "becomes leader if nobody is: whether leader now",
    },
    Operation {
        owner: Owner::Election,
        name: "resign",
        options: &[],
        description: "steps down: whether this candidate led",
    },
    Operation {
        owner: Owner::Election,
        name: "leader",
        options: &[],
        description: "the current leader's id, or nothing",
    },
    Operation {
        owner: Owner::Election,
        name: "watch_leader",
        options: &[],
        description: "leadership changes: the current leader, then each change",
    },
    Operation {
        owner: Owner::Election,
        name: "watch_status",
        options: &[],
        description: "this candidate's own status",
    },
    Operation {
        owner: Owner::Subscription,
        name: "next",
        options: &[duration(
            "timeout",
            DurationRole::Wait,
            "no limit",
            "how long to wait for an event (a timeout error then; no event is lost)",
        )],
        description: "the next event, waiting for it; nothing once the subscription ended",
    },
    Operation {
        owner: Owner::Subscription,
        name: "try_next",
        options: &[],
        description: "the next event if one is buffered, without waiting",
    },
    Operation {
        owner: Owner::Subscription,
        name: "close",
        options: &[],
        description: "ends the subscription (KEYNOTIFY STOP for the last observer of a key)",
    },
    Operation {
        owner: Owner::Pager,
        name: "next_page",
        options: &[],
        description: "the next page of keys (each page bounded by the scan's timeout), nothing after the last",
    },
];

/// The operations of the local store for tests (owner [`Owner::LocalStore`]): starting and
/// stopping it, its faults, and looking inside it without a client. Every binding exposes them
/// under these names from its package's testing module; each call returns once it has taken
/// effect. Options listed with the default `required` are positional parameters.
pub const TESTING_OPERATIONS: &[Operation] = &[
    Operation {
        owner: Owner::LocalStore,
        name: "start",
        options: &[],
        description: "starts a store in this process on a free loopback port; returns once it answers",
    },
    Operation {
        owner: Owner::LocalStore,
        name: "stop",
        options: &[],
        description: "stops the store, closes its connections and removes its data; again does nothing",
    },
    Operation {
        owner: Owner::LocalStore,
        name: "cut_connections",
        options: &[],
        description: "resets every client connection now (sessions kept: clients resume, in-flight requests complete); how many it closed",
    },
    Operation {
        owner: Owner::LocalStore,
        name: "pause",
        options: &[duration(
            "duration",
            DurationRole::Span,
            "required",
            "how long the store answers nothing (at least 1 ms); what queued is answered after",
        )],
        description: "stops answering requests for a while, then answers what queued, in order",
    },
    Operation {
        owner: Owner::LocalStore,
        name: "restart",
        options: &[opt(
            "keep_data",
            Unit::Bool,
            "false",
            "keep the keys SET with persist (the others are always lost)",
        )],
        description: "what kill -9 and a restart do, on the same port: connections and sessions lost",
    },
    Operation {
        owner: Owner::LocalStore,
        name: "fail_next",
        options: &[
            opt("n", Unit::Count, "required", "how many requests fail"),
            opt(
                "error",
                Unit::ErrorCode,
                "required",
                "the state store error they get, by its code (e.g. fencing_token_lower_version)",
            ),
            opt(
                "command",
                Unit::Text,
                "any command",
                "only requests of this command (SET, GET, DEL, VDEL, KEYNOTIFY, SCAN; any case)",
            ),
        ],
        description: "answers the next n requests with a state store error, as the service sends it",
    },
    Operation {
        owner: Owner::LocalStore,
        name: "keys",
        options: &[opt(
            "pattern",
            Unit::Text,
            "*",
            "a glob over the keys (*, ?, [...], as SCAN's MATCH)",
        )],
        description: "the keys the store holds that match, in byte order",
    },
    Operation {
        owner: Owner::LocalStore,
        name: "get",
        options: &[],
        description: "a key's value and version, or nothing, read inside the store",
    },
    Operation {
        owner: Owner::LocalStore,
        name: "clear",
        options: &[],
        description: "deletes every key (notifying observers); how many it deleted",
    },
    Operation {
        owner: Owner::LocalStore,
        name: "held_requests",
        options: &[],
        description: "how many requests a pause holds now (wait for yours to arrive before a restart or a cut)",
    },
    Operation {
        owner: Owner::LocalStore,
        name: "drop_notifications",
        options: &[duration(
            "duration",
            DurationRole::Span,
            "required",
            "how long every notification is dropped unsent (at least 1 ms)",
        )],
        description: "a notification path gone silent: for a while no notification reaches anyone (requests are answered)",
    },
    Operation {
        owner: Owner::LocalStore,
        name: "dropped_notifications",
        options: &[],
        description: "how many notifications drop_notifications has dropped so far",
    },
    Operation {
        owner: Owner::LocalStore,
        name: "forget_registrations",
        options: &[],
        description: "every client's KEYNOTIFY registrations lost, connections up (a store restarted behind its broker); how many there were",
    },
];

/// The read-only properties of the local store for tests (owner [`Owner::LocalStore`]).
pub const TESTING_PROPERTIES: &[(Owner, &str, &str)] = &[
    (
        Owner::LocalStore,
        "url",
        "where clients connect: mqtt://127.0.0.1:PORT",
    ),
    (
        Owner::LocalStore,
        "port",
        "its TCP port (the same after a restart)",
    ),
    (
        Owner::LocalStore,
        "is_running",
        "whether it runs (false after stop, or a restart that failed)",
    ),
];

/// The read-only properties of each object, by canonical (snake_case) name.
pub const PROPERTIES: &[(Owner, &str, &str)] = &[
    (Owner::Client, "client_id", "the MQTT client id"),
    (
        Owner::Client,
        "connected",
        "whether the connection is up now",
    ),
    (Owner::Lock, "key", "the lock key"),
    (Owner::Lock, "holder_id", "the holder id this lock writes"),
    (Owner::Lock, "fencing_token", "the fencing token while held"),
    (Owner::Lock, "is_held", "whether the lock is held now"),
    (Owner::Election, "candidate_id", "this candidate's id"),
    (
        Owner::Election,
        "fencing_token",
        "the leader's fencing token while leading",
    ),
    (
        Owner::Election,
        "is_leader",
        "whether this candidate leads now",
    ),
];

/// A property's name in `language` (C: the accessor function's name).
pub fn property_name(language: Language, owner: Owner, name: &str) -> String {
    match language {
        Language::Rust | Language::Python => name.to_owned(),
        Language::Node | Language::Kotlin => camel_case(name),
        // `client_id` of the client is `mqstate_client_id`, not `mqstate_client_client_id`.
        Language::C if name.starts_with(&format!("{}_", owner.c_prefix())) => {
            format!("mqstate_{name}")
        }
        Language::C => format!("mqstate_{}_{name}", owner.c_prefix()),
    }
}

/// The units of event fields that are not plain values (the others are keys, values,
/// versions, ids and names).
pub const EVENT_FIELD_UNITS: &[(&str, Unit)] = &[("lease", Unit::Duration)];

/// An event field's name in `language`: the option rule ([`option_name`]), a duration's
/// unit in its name in Node and C.
pub fn event_field_name(language: Language, field: &str) -> String {
    let unit = EVENT_FIELD_UNITS
        .iter()
        .find(|(f, _)| *f == field)
        .map_or(Unit::Text, |(_, u)| *u);
    option_name(language, field, unit)
}

/// The events a subscription yields, by name, with their fields.
pub const EVENTS: &[(&str, &[&str], &str)] = &[
    (
        "change",
        &["key", "kind", "value", "version"],
        "an observed key was set or deleted",
    ),
    (
        "holder",
        &["holder"],
        "a lock's holder (an election's leader) changed",
    ),
    (
        "status",
        &["state", "fencing_token", "lease", "reason"],
        "a lock's own status changed",
    ),
    (
        "degraded",
        &["reason"],
        "after a reconnection changes are missed until restored",
    ),
    (
        "restored",
        &[],
        "the subscription is restored after degraded",
    ),
];

/// An operation's name in `language` (C: the function's name).
pub fn operation_name(language: Language, owner: Owner, name: &str) -> String {
    // The objects a client makes are made by their own constructors in Rust and C.
    let made = owner == Owner::Client && (name == "lock" || name == "election");
    match language {
        Language::Rust if name == "delete" => "del".to_owned(),
        Language::Rust if made => format!("{}::with_options", camel_case(&format!("_{name}"))),
        Language::Rust | Language::Python => name.to_owned(),
        Language::Node | Language::Kotlin => camel_case(name),
        Language::C if made => format!("mqstate_{name}_new"),
        Language::C if owner == Owner::Pager && name == "next_page" => "mqstate_scan_next".into(),
        // Freeing a subscription ends it.
        Language::C if owner == Owner::Subscription && name == "close" => {
            "mqstate_subscription_free".into()
        }
        Language::C => format!("mqstate_{}_{name}", owner.c_prefix()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mqstate::vocabulary::{NO_STORE_WINDOW, duration_spellings};

    #[test]
    fn a_duration_name_never_means_two_units() {
        // Every language's name of a duration option either carries its unit or its type.
        for op in OPERATIONS {
            for o in op.options.iter().filter(|o| o.unit == Unit::Duration) {
                assert!(option_name(Language::Node, o.name, o.unit).ends_with("Ms"));
                assert!(option_name(Language::C, o.name, o.unit).ends_with("_ms"));
                assert_eq!(option_name(Language::Python, o.name, o.unit), o.name);
            }
        }
        assert_eq!(
            option_name(Language::Node, "auto_renew", Unit::Duration),
            "autoRenewMs"
        );
        assert_eq!(
            operation_name(Language::C, Owner::Lock, "try_acquire"),
            "mqstate_lock_try_acquire"
        );
        assert_eq!(
            operation_name(Language::Rust, Owner::Client, "delete"),
            "del"
        );
    }

    #[test]
    fn every_duration_option_has_a_role_and_only_waits_take_zero() {
        let mut waits = Vec::new();
        for op in OPERATIONS {
            for o in op.options {
                assert_eq!(o.unit == Unit::Duration, o.role.is_some(), "{}", o.name);
                if o.role == Some(DurationRole::Wait) {
                    waits.push((op.owner, op.name));
                }
            }
        }
        assert_eq!(
            waits,
            [
                (Owner::Lock, "acquire"),
                (Owner::Election, "campaign"),
                (Owner::Subscription, "next"),
            ]
        );
        for role in DurationRole::ALL {
            assert_eq!(role.rule().role, role);
        }
        assert!(DurationRole::Wait.rule().zero.starts_with("do not wait"));
        assert!(DurationRole::Bound.rule().zero.contains("invalid_argument"));
        assert!(NO_STORE_WINDOW < mqstate::DEFAULT_REQUEST_TIMEOUT / 2);
        for l in Language::ALL {
            let [_, no_wait, forever] = duration_spellings(l);
            assert_ne!(no_wait, forever, "{l:?}: do not wait and no limit differ");
        }
    }

    #[test]
    fn operations_are_unique_per_owner() {
        let mut seen = std::collections::HashSet::new();
        for op in OPERATIONS {
            assert!(seen.insert((op.owner, op.name)), "{} twice", op.name);
            let mut options = std::collections::HashSet::new();
            assert!(op.options.iter().all(|o| options.insert(o.name)));
        }
    }
}
