//! Table-driven tests of the pure store: one row per rule of spec §3–§7, each checking the
//! response, the `__ts` it carries, the notifications and the journal ops.

mod store_support;

use bytes::Bytes;
use mqstate::codec::{Response, StoreError, StoreErrorKind as E};
use mqstate_server::state_machine::StoreConfig;

use store_support::{
    Call, Ev, J, NOW, Op, Version, del, get, notify, raw, run_row, set, stop, vdel,
};

/// One rule: the steps that set the scene, the request under test, and what must come out.
struct Row {
    name: &'static str,
    max_keys: Option<usize>,
    setup: Vec<Op>,
    call: Call,
    response: Response,
    version: Version,
    notices: Vec<(&'static str, Ev)>,
    journal: Vec<J>,
}

fn ok() -> Response {
    Response::Ok
}

fn err(kind: E) -> Response {
    Response::Error(StoreError::new(kind))
}

fn value(v: &'static str) -> Response {
    Response::Value(Bytes::from_static(v.as_bytes()))
}

fn row(
    name: &'static str,
    setup: Vec<Op>,
    call: Call,
    response: Response,
    version: Version,
) -> Row {
    Row {
        name,
        max_keys: None,
        setup,
        call,
        response,
        version,
        notices: vec![],
        journal: vec![],
    }
}

impl Row {
    fn notices(mut self, notices: Vec<(&'static str, Ev)>) -> Row {
        self.notices = notices;
        self
    }

    fn journal(mut self, journal: Vec<J>) -> Row {
        self.journal = journal;
        self
    }

    fn max_keys(mut self, max: usize) -> Row {
        self.max_keys = Some(max);
        self
    }
}

/// The rules, one per line (kept unformatted so the table reads as a table).
#[rustfmt::skip]
fn rows() -> Vec<Row> {
    use Version::{Clock, Key, New, None as NoVersion};
    let t1 = format!("{}:0:lockA", NOW - 10);
    let t2 = format!("{}:0:lockB", NOW - 5);
    vec![
        // SET and its conditions (§3).
        row("set new key", vec![], set("k", "v"), ok(), New),
        row("set overwrites", vec![set("k", "a").into()], set("k", "b"), ok(), New),
        row("set empty value", vec![], set("k", ""), ok(), New),
        row("nx on missing key", vec![], set("k", "v").nx(), ok(), New),
        row("nx on existing key", vec![set("k", "a").into()], set("k", "b").nx(), Response::NotApplied, Key("k")),
        row("nex on missing key", vec![], set("k", "v").nex(), ok(), New),
        row("nex with equal value", vec![set("k", "v").into()], set("k", "v").nex(), ok(), New),
        row("nex with other value", vec![set("k", "a").into()], set("k", "b").nex(), Response::NotApplied, Key("k")),
        row("version newer than a stale ts", vec![set("k", "a").into()], set("k", "b").ts(&format!("{}:0:old", NOW - 50_000)), ok(), New),
        row("ts from the service's own node", vec![], set("k", "v").ts(&format!("{NOW}:9:StateStore")), ok(), New),
        // Timestamps (§4, §5).
        row("set without ts", vec![], set("k", "v").no_ts(), err(E::TimestampMissing), NoVersion),
        row("get without ts is fine", vec![set("k", "v").into()], get("k").no_ts(), value("v"), Key("k")),
        row("malformed ts on set", vec![], set("k", "v").ts("12:x:c"), err(E::TimestampMalformed), NoVersion),
        row("malformed ts on get", vec![], get("k").ts("nonsense"), err(E::TimestampMalformed), NoVersion),
        row("ts at the drift limit", vec![], set("k", "v").ts(&format!("{}:0:c", NOW + 60_000)), ok(), New),
        row("ts beyond the drift", vec![], set("k", "v").ts(&format!("{}:0:c", NOW + 60_001)), err(E::TimestampSkew), NoVersion),
        row("ts beyond the drift on del", vec![], del("k").ts(&format!("{}:0:c", NOW + 60_001)), err(E::TimestampSkew), NoVersion),
        row("counter that cannot advance", vec![], set("k", "v").ts(&format!("{NOW}:18446744073709551615:c")), err(E::TimestampMalformed), NoVersion),
        // Fencing tokens (§6).
        row("malformed ft", vec![], set("k", "v").ft("1:2"), err(E::TimestampMalformed), NoVersion),
        row("ft beyond the drift", vec![], set("k", "v").ft(&format!("{}:0:c", NOW + 60_001)), err(E::FencingTokenSkew), NoVersion),
        row("ft on get is ignored", vec![], get("k").ft("garbage"), Response::NotFound, NoVersion),
        row("fenced set without ft", vec![set("k", "a").ft(&t2).into()], set("k", "b"), err(E::FencingTokenRequired), NoVersion),
        row("fenced set with older ft", vec![set("k", "a").ft(&t2).into()], set("k", "b").ft(&t1), err(E::FencingTokenLowerVersion), NoVersion),
        row("fenced set with equal ft", vec![set("k", "a").ft(&t2).into()], set("k", "b").ft(&t2), ok(), New),
        row("fenced set with newer ft", vec![set("k", "a").ft(&t1).into()], set("k", "b").ft(&t2), ok(), New),
        row("set keeps the newer ft", vec![set("k", "a").ft(&t1).into(), set("k", "b").ft(&t2).into()], set("k", "c").ft(&t1), err(E::FencingTokenLowerVersion), NoVersion),
        row("fenced nx failing needs the ft first", vec![set("k", "a").ft(&t2).into()], set("k", "b").nx(), err(E::FencingTokenRequired), NoVersion),
        row("fenced del without ft", vec![set("k", "a").ft(&t2).into()], del("k"), err(E::FencingTokenRequired), NoVersion),
        row("fenced del with older ft", vec![set("k", "a").ft(&t2).into()], del("k").ft(&t1), err(E::FencingTokenLowerVersion), NoVersion),
        row("fenced del with newer ft", vec![set("k", "a").ft(&t1).into()], del("k").ft(&t2), Response::Count(1), New),
        row("fenced vdel without ft", vec![set("k", "a").ft(&t1).into()], vdel("k", "a"), err(E::FencingTokenRequired), NoVersion),
        row("fenced vdel with older ft", vec![set("k", "a").ft(&t2).into()], vdel("k", "a").ft(&t1), err(E::FencingTokenLowerVersion), NoVersion),
        row("fenced vdel with equal ft", vec![set("k", "a").ft(&t2).into()], vdel("k", "a").ft(&t2), Response::Count(1), New),
        row("fenced get needs no ft", vec![set("k", "a").ft(&t2).into()], get("k"), value("a"), Key("k")),
        row("a deleted key loses its token", vec![set("k", "a").ft(&t2).into(), del("k").ft(&t2).into()], set("k", "b"), ok(), New),
        row("ft on an unfenced key is fine", vec![set("k", "a").into()], del("k").ft(&t1), Response::Count(1), New),
        // GET, DEL, VDEL (§4).
        row("get hit", vec![set("k", "v").into()], get("k"), value("v"), Key("k")),
        row("get miss", vec![], get("k"), Response::NotFound, NoVersion),
        row("del hit", vec![set("k", "v").into()], del("k"), Response::Count(1), New),
        row("del miss", vec![], del("k"), Response::Count(0), Clock),
        row("vdel match", vec![set("k", "v").into()], vdel("k", "v"), Response::Count(1), New),
        row("vdel mismatch", vec![set("k", "v").into()], vdel("k", "w"), Response::NotApplied, Key("k")),
        row("vdel miss", vec![], vdel("k", "v"), Response::Count(0), Clock),
        row("del then get", vec![set("k", "v").into(), del("k").into()], get("k"), Response::NotFound, NoVersion),
        // Request errors exactly as the core's decoder reports them.
        row("empty key", vec![], raw(b"*3\r\n$3\r\nSET\r\n$0\r\n\r\n$1\r\nv\r\n"), err(E::KeyLengthZero), NoVersion),
        row("unknown command", vec![], raw(b"*2\r\n$4\r\nPING\r\n$1\r\nk\r\n"), err(E::UnknownCommand), NoVersion),
        row("lower-case verb", vec![], raw(b"*2\r\n$3\r\nget\r\n$1\r\nk\r\n"), err(E::UnknownCommand), NoVersion),
        row("wrong number of arguments", vec![], raw(b"*2\r\n$3\r\nSET\r\n$1\r\nk\r\n"), err(E::WrongNumberOfArguments), NoVersion),
        row("syntax error", vec![], raw(b"*1\r\n$3\r\nGET"), err(E::SyntaxError), NoVersion),
        row("bad option", vec![], raw(b"*4\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n$2\r\nXX\r\n"), err(E::SyntaxError), NoVersion),
        // Quota (§4, §8).
        row("quota refuses a new key", vec![set("a", "1").into()], set("b", "2"), err(E::QuotaExceeded), NoVersion).max_keys(1),
        row("quota allows an overwrite", vec![set("a", "1").into()], set("a", "2"), ok(), New).max_keys(1),
        row("quota frees on delete", vec![set("a", "1").into(), del("a").into()], set("b", "2"), ok(), New).max_keys(1),
        row("quota frees on expiry", vec![set("a", "1").px(10).into()], set("b", "2").at(NOW + 10), ok(), New).max_keys(1),
        row("failed nx is not a quota error", vec![set("a", "1").into()], set("a", "2").nx(), Response::NotApplied, Key("a")).max_keys(1),
        row("registrations are bounded too", vec![notify("a").into()], notify("b"), err(E::QuotaExceeded), NoVersion).max_keys(1),
        // KEYNOTIFY and notifications (§7).
        row("keynotify", vec![], notify("k"), ok(), NoVersion),
        row("keynotify twice", vec![notify("k").into()], notify("k"), ok(), NoVersion),
        row("stop a registration", vec![notify("k").into()], stop("k"), ok(), NoVersion),
        row("stop without registration", vec![], stop("k"), Response::Count(0), NoVersion),
        row("stop is per client", vec![notify("k").by("other").into()], stop("k"), Response::Count(0), NoVersion),
        row("set notifies every observer", vec![notify("k").by("a").into(), notify("k").by("b").into(), notify("x").by("c").into()], set("k", "v"), ok(), New)
            .notices(vec![("a", Ev::Set("v")), ("b", Ev::Set("v"))]),
        row("the writer is notified too", vec![notify("k").into()], set("k", "v"), ok(), New).notices(vec![("me", Ev::Set("v"))]),
        row("del notifies", vec![set("k", "v").into(), notify("k").by("a").into()], del("k"), Response::Count(1), New).notices(vec![("a", Ev::Delete)]),
        row("vdel notifies", vec![set("k", "v").into(), notify("k").by("a").into()], vdel("k", "v"), Response::Count(1), New).notices(vec![("a", Ev::Delete)]),
        row("failed vdel is silent", vec![set("k", "v").into(), notify("k").by("a").into()], vdel("k", "w"), Response::NotApplied, Key("k")),
        row("failed nx is silent", vec![set("k", "v").into(), notify("k").by("a").into()], set("k", "w").nx(), Response::NotApplied, Key("k")),
        row("del miss is silent", vec![notify("k").by("a").into()], del("k"), Response::Count(0), Clock),
        row("no notice after stop", vec![notify("k").by("a").into(), stop("k").by("a").into()], set("k", "v"), ok(), New),
        row("no notice after disconnect", vec![notify("k").by("a").into(), notify("j").by("a").into(), Op::Disconnect("a", 2)], set("k", "v"), ok(), New),
        row("others survive a disconnect", vec![notify("k").by("a").into(), notify("k").by("b").into(), Op::Disconnect("a", 1)], set("k", "v"), ok(), New)
            .notices(vec![("b", Ev::Set("v"))]),
        // PX expiry (§3, §6).
        row("not yet expired", vec![set("k", "v").px(100).into()], get("k").at(NOW + 99), value("v"), Key("k")),
        row("expired key is absent", vec![set("k", "v").px(100).into()], get("k").at(NOW + 100), Response::NotFound, NoVersion),
        row("expiry notifies before the request", vec![set("k", "v").px(100).into(), notify("k").by("a").into()], get("k").at(NOW + 100), Response::NotFound, NoVersion)
            .notices(vec![("a", Ev::Delete)]),
        row("nx after expiry", vec![set("k", "v").px(100).into()], set("k", "w").nx().at(NOW + 100), ok(), New),
        row("an expired lock loses its token", vec![set("k", "v").px(100).ft(&t2).into()], set("k", "w").at(NOW + 100), ok(), New),
        row("set without px clears the expiry", vec![set("k", "v").px(100).into(), set("k", "w").into()], get("k").at(NOW + 1000), value("w"), Key("k")),
        row("nex renews the expiry", vec![set("k", "v").px(100).into(), set("k", "v").nex().px(500).at(NOW + 50).into()], get("k").at(NOW + 400), value("v"), Key("k")),
        row("expire() fires on time", vec![set("k", "v").px(100).into(), notify("k").by("a").into(), Op::Expire(NOW + 100, 1)], get("k").at(NOW + 100), Response::NotFound, NoVersion),
        // Journal ops (persistence).
        row("persisted set", vec![], set("k", "v").persist(), ok(), New).journal(vec![J::Put("k", "v", None, false)]),
        row("persisted set with px and ft", vec![], set("k", "v").persist().px(30).ft(&t1), ok(), New).journal(vec![J::Put("k", "v", Some(NOW + 30), true)]),
        row("plain set is not logged", vec![], set("k", "v"), ok(), New),
        row("overwrite without persistence", vec![set("k", "v").persist().into()], set("k", "w"), ok(), New).journal(vec![J::Remove("k")]),
        row("overwrite with persistence", vec![set("k", "v").into()], set("k", "w").persist(), ok(), New).journal(vec![J::Put("k", "w", None, false)]),
        row("persisted key keeps its token", vec![set("k", "v").ft(&t1).into()], set("k", "w").persist().ft(&t1), ok(), New).journal(vec![J::Put("k", "w", None, true)]),
        row("del of a persisted key", vec![set("k", "v").persist().into()], del("k"), Response::Count(1), New).journal(vec![J::Remove("k")]),
        row("vdel of a persisted key", vec![set("k", "v").persist().into()], vdel("k", "v"), Response::Count(1), New).journal(vec![J::Remove("k")]),
        row("del of a plain key", vec![set("k", "v").into()], del("k"), Response::Count(1), New),
        row("expiry of a persisted key", vec![set("k", "v").persist().px(5).into()], get("k").at(NOW + 5), Response::NotFound, NoVersion).journal(vec![J::Remove("k")]),
        row("failed conditions are not logged", vec![set("k", "v").persist().into()], set("k", "w").persist().nx(), Response::NotApplied, Key("k")),
    ]
}

#[test]
fn every_rule() {
    let rows = rows();
    let mut failures = Vec::new();
    for row in &rows {
        let config = StoreConfig {
            max_keys: row.max_keys,
            ..StoreConfig::default()
        };
        let outcome = run_row(
            config,
            &row.setup,
            &row.call,
            &row.response,
            &row.version,
            &row.notices,
            &row.journal,
        );
        if let Err(why) = outcome {
            failures.push(format!("{}: {why}", row.name));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} rows failed:\n{}",
        failures.len(),
        rows.len(),
        failures.join("\n")
    );
}

#[test]
fn every_store_error_text_appears_in_the_table() {
    let texts: Vec<String> = rows()
        .iter()
        .filter_map(|r| match &r.response {
            Response::Error(e) => Some(e.text().to_owned()),
            _ => None,
        })
        .collect();
    // `not authorized` belongs to the adapter: authorization is not the store's business.
    for kind in E::ALL {
        if matches!(kind, E::NotAuthorized | E::Unknown) {
            continue;
        }
        let text = kind.text().unwrap();
        assert!(texts.iter().any(|t| t == text), "no row answers {text:?}");
    }
}
