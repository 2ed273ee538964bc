//! The harness of the store's table-driven tests: requests built with the core's codec,
//! run on a fresh store per row, with the response, its `__ts`, the notifications and the
//! journal ops checked against the row.

use std::num::NonZeroU64;

use bytes::Bytes;
use mqstate::Hlc;
use mqstate::codec::{KeyEvent, Request, Response, SetCondition};
use mqstate_server::state_machine::{Invocation, JournalOp, Reply, StateMachine, StoreConfig};

/// The service time every row starts at.
pub const NOW: u64 = 1_700_000_000_000;

/// The `__ts` a call carries.
#[derive(Clone)]
pub enum Ts {
    /// `{now}:0:{client}`, as a client whose clock agrees with the service.
    Default,
    Absent,
    Given(String),
}

/// One request: what to send, by whom, when.
#[derive(Clone)]
pub struct Call {
    now: u64,
    client: &'static str,
    request: Option<Request<&'static [u8]>>,
    raw: &'static [u8],
    ts: Ts,
    ft: Option<String>,
    persist: bool,
}

/// A step of a row's setup.
pub enum Op {
    Call(Call),
    /// The client disconnects; the store must report this many registrations dropped.
    Disconnect(&'static str, usize),
    /// The adapter's expiry timer fires; it must produce this many notifications.
    Expire(u64, usize),
}

impl From<Call> for Op {
    fn from(call: Call) -> Op {
        Op::Call(call)
    }
}

/// What `__ts` the answer must carry.
pub enum Version {
    /// None.
    None,
    /// A new version: newer than the request's `__ts` and every version seen before.
    New,
    /// The named key's current version (as a GET after the call reports it).
    Key(&'static str),
    /// The service clock's current value.
    Clock,
}

/// An expected notification event (for the call's key).
#[derive(Debug, PartialEq)]
pub enum Ev {
    Set(&'static str),
    Delete,
}

/// An expected journal op: `Put(key, value, expires_at_ms, has_token)` or `Remove(key)`.
#[derive(Debug, PartialEq)]
pub enum J {
    Put(&'static str, &'static str, Option<u64>, bool),
    Remove(&'static str),
}

pub fn call(request: Request<&'static [u8]>) -> Call {
    Call {
        now: NOW,
        client: "me",
        request: Some(request),
        raw: b"",
        ts: Ts::Default,
        ft: None,
        persist: false,
    }
}
pub fn set(key: &'static str, value: &'static str) -> Call {
    call(Request::Set {
        key: key.as_bytes(),
        value: value.as_bytes(),
        condition: SetCondition::Always,
        expiry_ms: None,
    })
}
pub fn get(key: &'static str) -> Call {
    call(Request::Get {
        key: key.as_bytes(),
    })
}
pub fn del(key: &'static str) -> Call {
    call(Request::Del {
        key: key.as_bytes(),
    })
}
pub fn vdel(key: &'static str, value: &'static str) -> Call {
    call(Request::VDel {
        key: key.as_bytes(),
        value: value.as_bytes(),
    })
}
pub fn notify(key: &'static str) -> Call {
    call(Request::KeyNotify {
        key: key.as_bytes(),
        stop: false,
    })
}
pub fn stop(key: &'static str) -> Call {
    call(Request::KeyNotify {
        key: key.as_bytes(),
        stop: true,
    })
}
pub fn raw(payload: &'static [u8]) -> Call {
    Call {
        request: None,
        raw: payload,
        ..get("unused")
    }
}

impl Call {
    pub fn condition(mut self, c: SetCondition) -> Call {
        if let Some(Request::Set { condition, .. }) = &mut self.request {
            *condition = c;
        }
        self
    }
    pub fn nx(self) -> Call {
        self.condition(SetCondition::NotExists)
    }
    pub fn nex(self) -> Call {
        self.condition(SetCondition::NotExistsOrEqual)
    }
    pub fn px(mut self, ms: u64) -> Call {
        if let Some(Request::Set { expiry_ms, .. }) = &mut self.request {
            *expiry_ms = NonZeroU64::new(ms);
        }
        self
    }
    pub fn ts(mut self, ts: &str) -> Call {
        self.ts = Ts::Given(ts.to_owned());
        self
    }
    pub fn no_ts(mut self) -> Call {
        self.ts = Ts::Absent;
        self
    }
    pub fn ft(mut self, ft: &str) -> Call {
        self.ft = Some(ft.to_owned());
        self
    }
    pub fn persist(mut self) -> Call {
        self.persist = true;
        self
    }
    pub fn at(mut self, now: u64) -> Call {
        self.now = now;
        self
    }
    pub fn by(mut self, client: &'static str) -> Call {
        self.client = client;
        self
    }
    pub fn key(&self) -> Option<&'static [u8]> {
        self.request.as_ref().map(|r| match r {
            Request::Set { key, .. }
            | Request::Get { key }
            | Request::Del { key }
            | Request::VDel { key, .. }
            | Request::KeyNotify { key, .. }
            | Request::Scan { pattern: key, .. } => *key,
        })
    }
    pub fn stamp(&self) -> Option<String> {
        match &self.ts {
            Ts::Default => Some(format!("{}:0:{}", self.now, self.client)),
            Ts::Absent => None,
            Ts::Given(ts) => Some(ts.clone()),
        }
    }
    pub fn run(&self, store: &mut StateMachine) -> Reply {
        let payload = match &self.request {
            Some(request) => request.encode(),
            None => Bytes::from_static(self.raw),
        };
        let stamp = self.stamp();
        store.handle(
            self.now,
            Invocation {
                client_id: self.client,
                payload: &payload,
                timestamp: stamp.as_deref(),
                fencing_token: self.ft.as_deref(),
                persist: self.persist,
            },
        )
    }
}

fn newest(seen: &mut Option<Hlc>, version: &Hlc) {
    if seen.as_ref().is_none_or(|s| version > s) {
        *seen = Some(version.clone());
    }
}

/// Runs one row on a fresh store; `Err` says what differed.
pub fn run_row(
    config: StoreConfig,
    setup: &[Op],
    call: &Call,
    response: &Response,
    version: &Version,
    notices: &[(&'static str, Ev)],
    journal: &[J],
) -> Result<(), String> {
    let mut store = StateMachine::new(config, NOW);
    let mut seen: Option<Hlc> = None;
    for (i, op) in setup.iter().enumerate() {
        match op {
            Op::Call(c) => {
                let reply = c.run(&mut store);
                if let Response::Error(e) = &reply.response {
                    return Err(format!("setup step {i} failed: {e}"));
                }
                reply.version.iter().for_each(|v| newest(&mut seen, v));
                reply
                    .notifications
                    .iter()
                    .for_each(|n| newest(&mut seen, &n.version));
            }
            Op::Disconnect(client, n) => {
                let dropped = store.client_disconnected(client);
                if dropped != *n {
                    return Err(format!("disconnect dropped {dropped}, not {n}"));
                }
            }
            Op::Expire(now, n) => {
                let expired = store.expire(*now);
                if expired.notifications.len() != *n {
                    return Err(format!("expire gave {:?}", expired.notifications));
                }
                expired
                    .notifications
                    .iter()
                    .for_each(|n| newest(&mut seen, &n.version));
            }
        }
    }
    let reply = call.run(&mut store);
    if &reply.response != response {
        return Err(format!(
            "response {:?}, expected {response:?}",
            reply.response
        ));
    }
    let got = reply.version.clone();
    match version {
        Version::None if got.is_some() => return Err(format!("unexpected __ts {got:?}")),
        Version::None => {}
        Version::New => {
            let v = got.clone().ok_or("no __ts")?;
            if v.node_id() != "StateStore" {
                return Err(format!("{v} is not the service's"));
            }
            if let Some(ts) = call.stamp().and_then(|t| Hlc::parse(&t).ok())
                && v.cmp_time(&ts).is_le()
            {
                return Err(format!("{v} is not newer than the request's {ts}"));
            }
            if let Some(seen) = &seen
                && v.cmp_time(seen).is_le()
            {
                return Err(format!("{v} is not newer than the earlier {seen}"));
            }
        }
        Version::Key(key) => {
            let current = get(key).no_ts().at(call.now).run(&mut store).version;
            if got.is_none() || got != current {
                return Err(format!("__ts {got:?}, the key's version is {current:?}"));
            }
        }
        Version::Clock => {
            if got.as_ref() != Some(store.clock()) {
                return Err(format!("__ts {got:?}, the clock is {}", store.clock()));
            }
        }
    }
    let key = call.key().unwrap_or_default();
    let mut events = Vec::new();
    for n in &reply.notifications {
        if n.key != key {
            return Err(format!("notice for the wrong key: {n:?}"));
        }
        if seen.as_ref().is_some_and(|s| n.version.cmp_time(s).is_le()) {
            return Err(format!("notice version {} is not new", n.version));
        }
        let mutated = matches!(reply.response, Response::Ok | Response::Count(1));
        if mutated && Some(&n.version) != got.as_ref() {
            return Err(format!(
                "notice version {} differs from the reply's",
                n.version
            ));
        }
        let ev = match &n.event {
            KeyEvent::Set(v) if v == "v" => Ev::Set("v"),
            KeyEvent::Set(v) => return Err(format!("unexpected value {v:?}")),
            KeyEvent::Delete => Ev::Delete,
        };
        events.push((n.client_id.clone(), ev));
    }
    let expected: Vec<(String, Ev)> = notices
        .iter()
        .map(|(c, e)| {
            (
                c.to_string(),
                if *e == Ev::Delete {
                    Ev::Delete
                } else {
                    Ev::Set("v")
                },
            )
        })
        .collect();
    if events != expected {
        return Err(format!("notices {events:?}, expected {expected:?}"));
    }
    let mut ops = Vec::new();
    for op in &reply.journal {
        ops.push(match op {
            JournalOp::Put {
                key,
                value,
                version,
                expires_at_ms,
                fencing_token,
            } => {
                if Some(version) != got.as_ref() {
                    return Err(format!(
                        "journal version {version} differs from the reply's"
                    ));
                }
                (
                    key.clone(),
                    Some((value.clone(), *expires_at_ms, fencing_token.is_some())),
                )
            }
            JournalOp::Remove { key } => (key.clone(), None),
            // A removal is followed by the clock record of its change's version (the reply's,
            // or an expiry's): checked here, not listed in the rows.
            JournalOp::Clock { .. } => {
                if !matches!(ops.last(), Some((_, None))) {
                    return Err("a clock record that does not follow a removal".to_owned());
                }
                continue;
            }
        });
    }
    let want: Vec<_> = journal
        .iter()
        .map(|j| match j {
            J::Put(k, v, exp, token) => (
                Bytes::from_static(k.as_bytes()),
                Some((Bytes::from_static(v.as_bytes()), *exp, *token)),
            ),
            J::Remove(k) => (Bytes::from_static(k.as_bytes()), None),
        })
        .collect();
    if ops != want {
        return Err(format!("journal {:?}, expected {journal:?}", reply.journal));
    }
    Ok(())
}
