//! The behaviour scenarios (`tests/scenarios/*.json`) through the binding layer
//! (`mqstate::bridge`), the one every language binding uses, against a live state store
//! with its embedded broker. Every file in the folder runs; none is named here. The format
//! is documented in `tests/scenarios/README.md`.
//!
//! A negative control proves the runner can fail: a scenario with one expectation changed
//! must be reported as failing.

mod support;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use mqstate::bridge::{
    ClientHandle, Decide, ElectionHandle, Event, LockHandle, Pager, Settings, Subscription,
};
use mqstate::codec::{KeyEvent, SetCondition};
use mqstate::lock::{Edit, LockOptions};
use mqstate::{
    DelOptions, Error, GetOptions, Hlc, ObserveOptions, ScanOptions, SetOptions, VdelOutcome,
};
use serde_json::Value;
use support::Env;

fn scenario_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios")
}

/// Every scenario file, sorted by name.
fn scenario_files() -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(scenario_dir())
        .expect("tests/scenarios exists")
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    files.sort();
    files
}

type Fail = String;

fn ms(step: &Value, name: &str) -> Option<Duration> {
    step.get(name)
        .and_then(Value::as_u64)
        .map(Duration::from_millis)
}

fn text<'a>(step: &'a Value, name: &str) -> Result<&'a str, Fail> {
    step.get(name)
        .and_then(Value::as_str)
        .ok_or_else(|| format!("missing text field {name:?}"))
}

fn hex(s: &str) -> Result<Vec<u8>, Fail> {
    mqstate::topics::hex_decode(s).map_err(|e| format!("bad hex {s:?}: {e}"))
}

/// The value of a step (`value` or `value_hex`), if it gives one.
fn value_of(step: &Value) -> Result<Option<Vec<u8>>, Fail> {
    if let Some(v) = step.get("value").and_then(Value::as_str) {
        return Ok(Some(v.as_bytes().to_vec()));
    }
    if let Some(h) = step.get("value_hex").and_then(Value::as_str) {
        return Ok(Some(hex(h)?));
    }
    Ok(None)
}

struct Run {
    store_url: String,
    prefix: String,
    clients: HashMap<String, ClientHandle>,
    subs: HashMap<String, Subscription>,
    locks: HashMap<String, LockHandle>,
    elections: HashMap<String, ElectionHandle>,
    versions: HashMap<String, Hlc>,
    /// Scan pagers and the keys each returned so far.
    pagers: HashMap<String, (Pager, Vec<Bytes>)>,
}

impl Run {
    /// A `set` step's key: `key`, or `key_hex` (bytes), namespaced.
    fn set_key(&self, step: &Value) -> Result<Bytes, Fail> {
        match step.get("key_hex").and_then(Value::as_str) {
            Some(h) => {
                let mut key = self.prefix.as_bytes().to_vec();
                key.extend(hex(h)?);
                Ok(Bytes::from(key))
            }
            None => self.key(step, "key"),
        }
    }

    /// A scan step's pattern (`pattern` or `pattern_hex`), namespaced (empty stays empty).
    fn pattern(&self, step: &Value) -> Result<Bytes, Fail> {
        let raw = match step.get("pattern_hex").and_then(Value::as_str) {
            Some(h) => hex(h)?,
            None => text(step, "pattern")?.as_bytes().to_vec(),
        };
        if raw.is_empty() {
            return Ok(Bytes::new());
        }
        let mut pattern = mqstate::glob::escape(self.prefix.as_bytes());
        pattern.extend(raw);
        Ok(Bytes::from(pattern))
    }

    /// Checks the scan expectations of `step` against the keys a scan returned.
    fn expect_keys(&self, step: &Value, got: &[Bytes]) -> Result<(), Fail> {
        let mut found = std::collections::BTreeSet::new();
        for key in got {
            let bare = key
                .strip_prefix(self.prefix.as_bytes())
                .ok_or_else(|| format!("key {key:?} is outside this run"))?;
            found.insert(bare.to_vec());
        }
        let list = |field: &str| -> Result<Option<Vec<Vec<u8>>>, Fail> {
            let Some(items) = step.get(field) else {
                return Ok(None);
            };
            let items = items
                .as_array()
                .ok_or_else(|| format!("{field} is not a list"))?;
            items
                .iter()
                .map(|item| {
                    let t = item.as_str().ok_or_else(|| format!("{field}: not text"))?;
                    if field.ends_with("_hex") {
                        hex(t)
                    } else {
                        Ok(t.as_bytes().to_vec())
                    }
                })
                .collect::<Result<Vec<_>, Fail>>()
                .map(Some)
        };
        let (keys, keys_hex) = (list("keys")?, list("keys_hex")?);
        if keys.is_some() || keys_hex.is_some() {
            let want: std::collections::BTreeSet<Vec<u8>> =
                keys.into_iter().chain(keys_hex).flatten().collect();
            if want != found {
                return Err(format!(
                    "keys {:?}, want {:?}",
                    found
                        .iter()
                        .map(|k| k.escape_ascii().to_string())
                        .collect::<Vec<_>>(),
                    want.iter()
                        .map(|k| k.escape_ascii().to_string())
                        .collect::<Vec<_>>()
                ));
            }
        }
        for key in list("includes")?.unwrap_or_default() {
            if !found.contains(&key) {
                return Err(format!("{} is missing", key.escape_ascii()));
            }
        }
        for key in list("excludes")?.unwrap_or_default() {
            if found.contains(&key) {
                return Err(format!("{} is listed", key.escape_ascii()));
            }
        }
        let total = found.len() as u64;
        let bound = |f: &str| step.get(f).and_then(Value::as_u64);
        if bound("total").is_some_and(|t| t != total)
            || bound("min_total").is_some_and(|t| total < t)
            || bound("max_total").is_some_and(|t| total > t)
        {
            return Err(format!("{total} distinct keys"));
        }
        if step.get("no_repeats").and_then(Value::as_bool) == Some(true) && found.len() != got.len()
        {
            return Err(format!(
                "{} keys returned, {} distinct",
                got.len(),
                found.len()
            ));
        }
        Ok(())
    }
    /// The step's key, namespaced for this run (an empty key stays empty).
    fn key(&self, step: &Value, field: &str) -> Result<Bytes, Fail> {
        let key = text(step, field)?;
        if key.is_empty() {
            return Ok(Bytes::new());
        }
        Ok(Bytes::from(format!("{}{}", self.prefix, key)))
    }

    fn client(&self, step: &Value) -> Result<&ClientHandle, Fail> {
        let name = step.get("client").and_then(Value::as_str).unwrap_or("a");
        self.clients
            .get(name)
            .ok_or_else(|| format!("client {name:?} is not connected"))
    }

    /// The step's fencing token: `fenced_by` a lock (which must be held), or
    /// `fencing_token` (a variable or an HLC literal). `Ok(Err(_))` when the lock is not held.
    fn token(&self, step: &Value) -> Result<Result<Option<Hlc>, Error>, Fail> {
        if let Some(lock) = step.get("fenced_by").and_then(Value::as_str) {
            let lock = self.locks.get(lock).ok_or("no such lock")?;
            return Ok(lock
                .fencing_token()
                .map(Some)
                .ok_or_else(|| Error::new(mqstate::ErrorKind::NotHeld, "the lock is not held")));
        }
        self.token_field(step).map(Ok)
    }

    fn token_field(&self, step: &Value) -> Result<Option<Hlc>, Fail> {
        match step.get("fencing_token").and_then(Value::as_str) {
            None => Ok(None),
            Some(var) if var.starts_with('$') => self
                .versions
                .get(&var[1..])
                .cloned()
                .map(Some)
                .ok_or_else(|| format!("no variable {var}")),
            Some(literal) => Hlc::parse(literal)
                .map(Some)
                .map_err(|e| format!("bad HLC literal {literal:?}: {e}")),
        }
    }

    /// Checks `version` against the step's expectation and saves it if asked.
    fn version(&mut self, step: &Value, got: Option<&Hlc>) -> Result<(), Fail> {
        if let Some(expect) = step.get("version") {
            let ok = match expect {
                Value::String(s) if s == "none" => got.is_none(),
                Value::String(s) if s == "some" => got.is_some(),
                Value::Object(rel) => {
                    let (how, var) = rel.iter().next().ok_or("empty version relation")?;
                    let var = var.as_str().ok_or("version variable must be text")?;
                    let other = self
                        .versions
                        .get(var)
                        .ok_or_else(|| format!("no variable {var}"))?;
                    let got = got.ok_or_else(|| format!("no version, want {how} {var}"))?;
                    let order = got.cmp_time(other);
                    match how.as_str() {
                        "equal" => order.is_eq(),
                        "newer" => order.is_gt(),
                        "older" => order.is_lt(),
                        other => return Err(format!("unknown relation {other:?}")),
                    }
                }
                other => return Err(format!("bad version expectation {other}")),
            };
            if !ok {
                return Err(format!("version {got:?} does not satisfy {expect}"));
            }
        }
        for field in ["save_version", "save_token"] {
            if let Some(var) = step.get(field).and_then(Value::as_str) {
                let v = got.ok_or_else(|| format!("nothing to save as {var}"))?;
                self.versions.insert(var.to_owned(), v.clone());
            }
        }
        Ok(())
    }

    fn expect_bool(step: &Value, field: &str, got: bool) -> Result<(), Fail> {
        match step.get(field).and_then(Value::as_bool) {
            Some(want) if want != got => Err(format!("{field}: got {got}, want {want}")),
            _ => Ok(()),
        }
    }

    async fn connect(&mut self, step: &Value) -> Result<(), Error> {
        let name = step.get("client").and_then(Value::as_str).unwrap_or("a");
        let url = match step.get("target").and_then(Value::as_str) {
            Some("closed_port") => {
                format!("mqtt://127.0.0.1:{}", mqstate_tests::free_port().unwrap())
            }
            _ => self.store_url.clone(),
        };
        let mut settings = Settings::from_url(&url)?;
        settings.set(
            "client_id",
            &format!("scn-{name}-{}", uuid::Uuid::new_v4().simple()),
        )?;
        settings.set("connect_timeout", "5")?;
        if let Some(Value::Object(extra)) = step.get("settings") {
            for (k, v) in extra {
                settings.set(k, v.as_str().unwrap_or(&v.to_string()))?;
            }
        }
        let store = ClientHandle::connect(settings).await?;
        self.clients.insert(name.to_owned(), store);
        Ok(())
    }

    /// Runs one step: `Ok(Ok(()))` done, `Ok(Err(e))` the API failed with `e`, `Err(f)` the
    /// expectation failed (or the step is malformed).
    async fn step(&mut self, step: &Value) -> Result<Result<(), Error>, Fail> {
        let op = text(step, "op")?;
        macro_rules! api {
            ($e:expr) => {
                match $e {
                    Ok(v) => v,
                    Err(e) => return Ok(Err(e)),
                }
            };
        }
        match op {
            "connect" => return Ok(self.connect(step).await),
            "close" => api!(self.client(step)?.close().await),
            "sleep" => tokio::time::sleep(ms(step, "ms").unwrap_or_default()).await,
            "fill" => {
                let prefix = text(step, "key_prefix")?;
                let count = step
                    .get("count")
                    .and_then(Value::as_u64)
                    .ok_or("fill needs count")?;
                let value = Bytes::from(value_of(step)?.ok_or("fill needs a value")?);
                let client = self.client(step)?;
                let mut calls = Vec::new();
                for i in 0..count {
                    let key = format!("{}{prefix}{i:04}", self.prefix);
                    calls.push(client.set(key, value.clone(), SetOptions::default()));
                }
                for call in calls {
                    api!(call.await);
                }
            }
            "scan" => {
                let pattern = self.pattern(step)?;
                let options = ScanOptions {
                    timeout: ms(step, "timeout_ms"),
                };
                let pager = api!(self.client(step)?.scan(pattern, options));
                let mut keys = Vec::new();
                while let Some(page) = api!(pager.next_page().await) {
                    keys.extend(page);
                }
                self.expect_keys(step, &keys)?;
            }
            "scan_start" => {
                let pattern = self.pattern(step)?;
                let pager = api!(self.client(step)?.scan(pattern, ScanOptions::default()));
                self.pagers
                    .insert(text(step, "as")?.to_owned(), (pager, Vec::new()));
            }
            "scan_page" => {
                let (pager, seen) = self
                    .pagers
                    .get_mut(text(step, "pager")?)
                    .ok_or("no such pager")?;
                let page = api!(pager.next_page().await).ok_or("the scan had already ended")?;
                seen.extend(page);
                Self::expect_bool(step, "last", pager.is_done())?;
            }
            "scan_rest" => {
                let (pager, seen) = self
                    .pagers
                    .get_mut(text(step, "pager")?)
                    .ok_or("no such pager")?;
                while let Some(page) = api!(pager.next_page().await) {
                    seen.extend(page);
                }
                let seen = seen.clone();
                self.expect_keys(step, &seen)?;
            }
            "set" => {
                let key = self.set_key(step)?;
                let value = value_of(step)?.ok_or("set needs a value")?;
                let condition = match step.get("condition").and_then(Value::as_str) {
                    None => SetCondition::Always,
                    Some("nx") => SetCondition::NotExists,
                    Some("nex") => SetCondition::NotExistsOrEqual,
                    Some(c) => return Err(format!("unknown condition {c:?}")),
                };
                let options = SetOptions {
                    condition,
                    expiry: ms(step, "expiry_ms"),
                    fencing_token: api!(self.token(step)?),
                    persist: step
                        .get("persist")
                        .and_then(Value::as_bool)
                        .unwrap_or(false),
                    timeout: ms(step, "timeout_ms"),
                };
                let out = api!(self.client(step)?.set(key, value, options).await);
                Self::expect_bool(step, "applied", out.applied)?;
                self.version(step, out.version.as_ref())?;
            }
            "get" => {
                let key = self.key(step, "key")?;
                let options = GetOptions {
                    timeout: ms(step, "timeout_ms"),
                    ..GetOptions::default()
                };
                let got = api!(self.client(step)?.get(key, options).await);
                let missing = step.get("missing").and_then(Value::as_bool) == Some(true);
                match (&got, missing, value_of(step)?) {
                    (None, true, _) => {}
                    (Some(v), true, _) => return Err(format!("want missing, got {:?}", v.value)),
                    (None, false, Some(_)) => return Err("the key is missing".into()),
                    (Some(v), false, Some(want)) if v.value[..] != want[..] => {
                        return Err(format!("value {:?}, want {:?}", v.value, Bytes::from(want)));
                    }
                    _ => {}
                }
                self.version(step, got.and_then(|v| v.version).as_ref())?;
            }
            "del" => {
                let key = self.key(step, "key")?;
                let options = DelOptions {
                    fencing_token: api!(self.token(step)?),
                    timeout: ms(step, "timeout_ms"),
                };
                let n = api!(self.client(step)?.del(key, options).await);
                if let Some(want) = step.get("count").and_then(Value::as_u64)
                    && want != n
                {
                    return Err(format!("count {n}, want {want}"));
                }
            }
            "vdel" => {
                let key = self.key(step, "key")?;
                let value = value_of(step)?.ok_or("vdel needs a value")?;
                let options = DelOptions {
                    fencing_token: api!(self.token(step)?),
                    timeout: ms(step, "timeout_ms"),
                };
                let out = api!(self.client(step)?.vdel(key, value, options).await);
                let got = match out {
                    VdelOutcome::Deleted => "deleted",
                    VdelOutcome::NotFound => "not_found",
                    VdelOutcome::ValueMismatch => "value_mismatch",
                };
                if let Some(want) = step.get("outcome").and_then(Value::as_str)
                    && want != got
                {
                    return Err(format!("outcome {got}, want {want}"));
                }
            }
            "observe" => {
                let key = self.key(step, "key")?;
                let sub = api!(
                    self.client(step)?
                        .observe(key, ObserveOptions::default())
                        .await
                );
                self.subs.insert(text(step, "as")?.to_owned(), sub);
            }
            "unobserve" => {
                let name = text(step, "subscription")?;
                self.subs
                    .remove(name)
                    .ok_or("no such subscription")?
                    .close();
            }
            "expect_notification" => {
                let sub = self
                    .subs
                    .get(text(step, "subscription")?)
                    .ok_or("no such subscription")?;
                // The API's own wait (0: do not wait), so that its timeout is the step's error.
                let wait = ms(step, "timeout_ms").unwrap_or(Duration::from_secs(5));
                let n = loop {
                    match api!(sub.next_within(Some(wait)).await) {
                        Some(Event::Change(n)) => break n,
                        Some(_) => continue,
                        None => return Err("the subscription ended".into()),
                    }
                };
                match (step.get("event").and_then(Value::as_str), &n.event) {
                    (Some("set"), KeyEvent::Set(v)) => {
                        if let Some(want) = value_of(step)?
                            && v[..] != want[..]
                        {
                            return Err(format!(
                                "notified value {v:?}, want {:?}",
                                Bytes::from(want)
                            ));
                        }
                    }
                    (Some("delete"), KeyEvent::Delete) | (None, _) => {}
                    (want, got) => return Err(format!("notified {got:?}, want {want:?}")),
                }
                self.version(step, n.version.as_ref())?;
            }
            "expect_no_notification" => {
                let sub = self
                    .subs
                    .get(text(step, "subscription")?)
                    .ok_or("no such subscription")?;
                let window = ms(step, "for_ms").unwrap_or(Duration::from_millis(300));
                if let Ok(Some(Event::Change(n))) = tokio::time::timeout(window, sub.next()).await {
                    return Err(format!("unexpected notification {n:?}"));
                }
            }
            "lock" => {
                let key = self.key(step, "key")?;
                let options = LockOptions {
                    holder: step
                        .get("holder")
                        .and_then(Value::as_str)
                        .map(str::to_owned),
                    session_id: step
                        .get("session_id")
                        .and_then(Value::as_str)
                        .map(str::to_owned),
                    auto_renew: ms(step, "auto_renew_ms"),
                    lease: None,
                };
                let lock = api!(self.client(step)?.lock(key, options));
                self.locks.insert(text(step, "as")?.to_owned(), lock);
            }
            "try_acquire" | "acquire" | "renew" | "release" | "holder" | "is_held" | "edit" => {
                let lock = self
                    .locks
                    .get(text(step, "lock")?)
                    .ok_or("no such lock")?
                    .clone();
                let lease = ms(step, "lease_ms").or(Some(Duration::from_secs(5)));
                match op {
                    "try_acquire" => {
                        let token = api!(lock.try_acquire(lease).await);
                        Self::expect_bool(step, "acquired", token.is_some())?;
                        self.version(step, token.as_ref())?;
                    }
                    "acquire" => {
                        let token = api!(lock.acquire(lease, ms(step, "timeout_ms")).await);
                        self.version(step, Some(&token))?;
                    }
                    "renew" => {
                        let token = api!(lock.renew().await);
                        Self::expect_bool(step, "renewed", token.is_some())?;
                        self.version(step, token.as_ref())?;
                    }
                    "release" => {
                        let released = api!(lock.release().await);
                        Self::expect_bool(step, "released", released)?;
                    }
                    "is_held" => Self::expect_bool(step, "held", lock.is_held())?,
                    "holder" => {
                        let got = api!(lock.holder().await);
                        let want = match step.get("holder_of").and_then(Value::as_str) {
                            Some(other) => Some(
                                self.locks
                                    .get(other)
                                    .ok_or("no such lock")?
                                    .holder_id()
                                    .to_owned(),
                            ),
                            None => step
                                .get("holder")
                                .and_then(Value::as_str)
                                .map(str::to_owned),
                        };
                        if got != want {
                            return Err(format!("holder {got:?}, want {want:?}"));
                        }
                    }
                    _ => {
                        let key = self.key(step, "key")?;
                        let timeout = ms(step, "timeout_ms");
                        let decide = decision(step.get("action").ok_or("edit needs an action")?)?;
                        let out = api!(lock.edit(key, lease, timeout, decide).await);
                        self.version(step, out.version.as_ref())?;
                    }
                }
            }
            "election" => {
                let name = self.key(step, "name")?;
                let candidate = text(step, "candidate")?;
                let e = api!(
                    self.client(step)?
                        .election(name, candidate, LockOptions::default())
                );
                self.elections.insert(text(step, "as")?.to_owned(), e);
            }
            "campaign" | "try_campaign" | "resign" | "leader" | "is_leader" => {
                let e = self
                    .elections
                    .get(text(step, "election")?)
                    .ok_or("no such election")?
                    .clone();
                let term = ms(step, "term_ms").or(Some(Duration::from_secs(5)));
                match op {
                    "campaign" => {
                        let token = api!(e.campaign(term, ms(step, "timeout_ms")).await);
                        self.version(step, Some(&token))?;
                    }
                    "try_campaign" => {
                        let elected = api!(e.try_campaign(term).await);
                        Self::expect_bool(step, "elected", elected)?;
                    }
                    "resign" => {
                        let resigned = api!(e.resign().await);
                        Self::expect_bool(step, "resigned", resigned)?;
                    }
                    "is_leader" => Self::expect_bool(step, "leader_now", e.is_leader())?,
                    _ => {
                        let got = api!(e.leader().await);
                        let want = step
                            .get("leader")
                            .and_then(Value::as_str)
                            .map(str::to_owned);
                        if got != want {
                            return Err(format!("leader {got:?}, want {want:?}"));
                        }
                    }
                }
            }
            other => return Err(format!("unknown op {other:?}")),
        }
        Ok(Ok(()))
    }
}

/// The decision of an `edit` step.
fn decision(action: &Value) -> Result<Decide, Fail> {
    let action = action.clone();
    match &action {
        Value::String(s) if s == "delete" || s == "keep" => {}
        Value::Object(o)
            if o.contains_key("append") || o.contains_key("set") || o.contains_key("fail") => {}
        other => return Err(format!("unknown edit action {other}")),
    }
    Ok(Arc::new(move |previous| {
        let action = action.clone();
        Box::pin(async move {
            let field = |name: &str| action.get(name).and_then(Value::as_str).map(str::to_owned);
            if action == "delete" {
                return Ok(Edit::Delete);
            }
            if action == "keep" {
                return Ok(Edit::Keep);
            }
            if let Some(message) = field("fail") {
                return Err(Error::callback(message.clone(), Arc::new(message)));
            }
            if let Some(v) = field("set") {
                return Ok(Edit::Set(Bytes::from(v)));
            }
            let mut v = previous.map(|p| p.value.to_vec()).unwrap_or_default();
            v.extend_from_slice(field("append").unwrap_or_default().as_bytes());
            Ok(Edit::Set(v.into()))
        })
    }))
}

/// Runs one scenario; `Err` names the failing step and why.
async fn run_scenario(url: &str, scenario: &Value) -> Result<(), Fail> {
    let mut run = Run {
        store_url: url.to_owned(),
        prefix: format!("scn/{}/", uuid::Uuid::new_v4().simple()),
        clients: HashMap::new(),
        subs: HashMap::new(),
        locks: HashMap::new(),
        elections: HashMap::new(),
        versions: HashMap::new(),
        pagers: HashMap::new(),
    };
    let steps = scenario["steps"].as_array().ok_or("no steps")?;
    // Connect every client a step uses (a `connect` step connects its own).
    const CLIENT_OPS: [&str; 11] = [
        "close",
        "set",
        "get",
        "del",
        "vdel",
        "observe",
        "lock",
        "election",
        "fill",
        "scan",
        "scan_start",
    ];
    let mut names: Vec<&str> = steps
        .iter()
        .filter(|s| {
            s.get("op")
                .and_then(Value::as_str)
                .is_some_and(|op| CLIENT_OPS.contains(&op))
        })
        .map(|s| s.get("client").and_then(Value::as_str).unwrap_or("a"))
        .collect();
    names.sort();
    names.dedup();
    for name in names {
        run.connect(&serde_json::json!({ "client": name }))
            .await
            .map_err(|e| format!("connecting client {name}: {e}"))?;
    }
    let outcome = async {
        for (i, step) in steps.iter().enumerate() {
            let want_error = step.get("error").and_then(Value::as_str);
            let result = tokio::time::timeout(Duration::from_secs(60), run.step(step))
                .await
                .map_err(|_| format!("step {i} {step}: hung for 60 s"))?
                .map_err(|f| format!("step {i} {step}: {f}"))?;
            match (result, want_error) {
                (Ok(()), None) => {}
                (Err(e), Some(code)) if e.code() == code => {}
                (Err(e), want) => {
                    return Err(format!(
                        "step {i} {step}: failed with {} ({e}), want {}",
                        e.code(),
                        want.unwrap_or("success")
                    ));
                }
                (Ok(()), Some(code)) => {
                    return Err(format!("step {i} {step}: succeeded, want error {code}"));
                }
            }
        }
        Ok(())
    }
    .await;
    for store in run.clients.values() {
        let _ = store.close().await;
    }
    outcome
}

fn load(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap();
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_scenario_passes_through_the_binding_layer() {
    let env = Env::embedded().await;
    let url = env.fixture.url();
    let files = scenario_files();
    assert!(
        files.len() >= 40,
        "at least 40 scenarios, found {}",
        files.len()
    );
    let mut tasks = tokio::task::JoinSet::new();
    for path in files {
        let url = url.clone();
        tasks.spawn(async move {
            let scenario = load(&path);
            let name = path.file_stem().unwrap().to_string_lossy().into_owned();
            (name, run_scenario(&url, &scenario).await)
        });
    }
    let (mut passed, mut failures) = (0, Vec::new());
    while let Some(joined) = tasks.join_next().await {
        match joined.unwrap() {
            (_, Ok(())) => passed += 1,
            (name, Err(why)) => failures.push(format!("{name}: {why}")),
        }
    }
    failures.sort();
    println!("scenarios: {passed} passed, {} failed", failures.len());
    assert!(
        failures.is_empty(),
        "failed scenarios:\n{}",
        failures.join("\n")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_expectation_makes_a_scenario_fail() {
    let env = Env::embedded().await;
    let url = env.fixture.url();
    let mut scenario = load(&scenario_dir().join("set_then_get_returns_value_and_version.json"));
    run_scenario(&url, &scenario)
        .await
        .expect("the scenario as written passes");
    // Change one expected value: the runner must notice.
    let steps = scenario["steps"].as_array_mut().unwrap();
    let get = steps
        .iter_mut()
        .find(|s| s["op"] == "get")
        .expect("the scenario has a get");
    get["value"] = Value::from("not what was set");
    let err = run_scenario(&url, &scenario).await.unwrap_err();
    assert!(err.contains("want"), "{err}");
    // And an expected error that does not happen.
    let steps = scenario["steps"].as_array_mut().unwrap();
    steps[0]["error"] = Value::from("fencing_token_required");
    assert!(run_scenario(&url, &scenario).await.is_err());
}
