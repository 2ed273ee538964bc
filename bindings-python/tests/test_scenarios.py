"""The behaviour scenarios (``tests/scenarios/*.json``, format in its README) through the
public Python API: once through :class:`mqstate.AsyncClient`, once through
:class:`mqstate.Client`. Every file in the folder runs; none is named here."""

from __future__ import annotations

import asyncio
import json
import uuid
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, List, Optional, Set

import pytest

import mqstate
from live import LiveStore, free_port
from mqstate.testing import LocalStore

SCENARIOS = Path(__file__).resolve().parents[2] / "tests" / "scenarios"
FILES = sorted(SCENARIOS.glob("*.json"))


class ScenarioFailure(AssertionError):
    pass


def _value(step: Dict[str, Any]) -> Optional[bytes]:
    if "value" in step:
        return str(step["value"]).encode("utf-8")
    if "value_hex" in step:
        return bytes.fromhex(step["value_hex"])
    return None


def _ms(step: Dict[str, Any], name: str) -> Optional[float]:
    return None if name not in step else step[name] / 1000.0


class Runner:
    """Runs one scenario; ``blocking`` selects the client class (the blocking one runs its
    calls in a worker thread so that the runner itself stays async)."""

    def __init__(self, url: str, blocking: bool) -> None:
        self.url = url
        self.blocking = blocking
        self.prefix = f"scn/{uuid.uuid4().hex}/"
        self.clients: Dict[str, Any] = {}
        self.subs: Dict[str, Any] = {}
        self.locks: Dict[str, Any] = {}
        self.elections: Dict[str, Any] = {}
        self.vars: Dict[str, mqstate.Hlc] = {}
        # Scan pagers and the keys each returned so far.
        self.pagers: Dict[str, Any] = {}
        self.seen: Dict[str, List[bytes]] = {}

    async def call(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        if self.blocking:
            return await asyncio.to_thread(fn, *args, **kwargs)
        return await fn(*args, **kwargs)

    def key(self, step: Dict[str, Any], field: str = "key") -> str:
        key = str(step[field])
        return key if key == "" else self.prefix + key

    def set_key(self, step: Dict[str, Any]) -> Any:
        """A ``set`` step's key: ``key``, or ``key_hex`` (bytes), namespaced."""
        if "key_hex" in step:
            return self.prefix.encode() + bytes.fromhex(step["key_hex"])
        return self.key(step)

    def pattern(self, step: Dict[str, Any]) -> bytes:
        """A scan step's pattern (``pattern`` or ``pattern_hex``), namespaced; empty stays
        empty. The run prefix holds no glob metacharacter, so it matches itself."""
        raw = bytes.fromhex(step["pattern_hex"]) if "pattern_hex" in step else str(step["pattern"]).encode()
        return raw if raw == b"" else self.prefix.encode() + raw

    def expect_keys(self, step: Dict[str, Any], got: List[bytes]) -> None:
        """The scan expectations of ``step`` against the keys a scan returned."""
        prefix = self.prefix.encode()
        found: Set[bytes] = set()
        for key in got:
            if not isinstance(key, bytes):
                raise ScenarioFailure(f"key {key!r} is not bytes")
            if not key.startswith(prefix):
                raise ScenarioFailure(f"key {key!r} is outside this run")
            found.add(key[len(prefix):])
        if "keys" in step or "keys_hex" in step:
            want = {k.encode() for k in step.get("keys", [])} | {bytes.fromhex(h) for h in step.get("keys_hex", [])}
            if want != found:
                raise ScenarioFailure(f"keys {sorted(found)}, want {sorted(want)}")
        for key in step.get("includes", []):
            if key.encode() not in found:
                raise ScenarioFailure(f"{key} is missing")
        for key in step.get("excludes", []):
            if key.encode() in found:
                raise ScenarioFailure(f"{key} is listed")
        total = len(found)
        if (
            ("total" in step and total != step["total"])
            or ("min_total" in step and total < step["min_total"])
            or ("max_total" in step and total > step["max_total"])
        ):
            raise ScenarioFailure(f"{total} distinct keys")
        if step.get("no_repeats") is True and len(found) != len(got):
            raise ScenarioFailure(f"{len(got)} keys returned, {len(found)} distinct")

    async def scan_step(self, op: str, step: Dict[str, Any]) -> None:
        if op == "fill":
            client = self.client(step)
            value = _value(step)
            keys = [f"{self.prefix}{step['key_prefix']}{i:04d}" for i in range(step["count"])]
            if self.blocking:
                await asyncio.to_thread(lambda: [client.set(k, value) for k in keys])
            else:
                await asyncio.gather(*(client.set(k, value) for k in keys))
        elif op == "scan":
            pager = self.client(step).scan(self.pattern(step), timeout=_ms(step, "timeout_ms"))
            got: List[bytes]
            if self.blocking:
                got = await asyncio.to_thread(list, pager)
            else:
                got = [key async for key in pager]
            self.expect_keys(step, got)
        elif op == "scan_start":
            self.pagers[step["as"]] = self.client(step).scan(self.pattern(step))
            self.seen[step["as"]] = []
        elif op == "scan_page":
            pager = self.pagers[step["pager"]]
            page = await self.call(pager.next_page)
            if page is None:
                raise ScenarioFailure("the scan had already ended")
            self.seen[step["pager"]].extend(page)
            self.expect(step, "last", pager.done)
        else:
            pager = self.pagers[step["pager"]]
            while (page := await self.call(pager.next_page)) is not None:
                self.seen[step["pager"]].extend(page)
            self.expect_keys(step, self.seen[step["pager"]])

    def client(self, step: Dict[str, Any]) -> Any:
        return self.clients[step.get("client", "a")]

    def token(self, step: Dict[str, Any]) -> Any:
        if "fenced_by" in step:
            token = self.locks[step["fenced_by"]].fencing_token
            if token is None:
                raise mqstate.NotHeldError("the lock is not held")
            return token
        text = step.get("fencing_token")
        if text is None:
            return None
        return self.vars[text[1:]] if text.startswith("$") else text

    def check_version(self, step: Dict[str, Any], got: Optional[mqstate.Hlc]) -> None:
        want = step.get("version")
        if want == "none" and got is not None or want == "some" and got is None:
            raise ScenarioFailure(f"version {got}, want {want}")
        if isinstance(want, dict):
            ((how, var),) = want.items()
            other = self.vars[var]
            if got is None:
                raise ScenarioFailure(f"no version, want {how} {var}")
            order = got.cmp_time(other)
            if {"equal": order != 0, "newer": order <= 0, "older": order >= 0}[how]:
                raise ScenarioFailure(f"version {got} is not {how} than {var}={other}")
        for field in ("save_version", "save_token"):
            if field in step:
                if got is None:
                    raise ScenarioFailure(f"nothing to save as {step[field]}")
                self.vars[step[field]] = got

    def expect(self, step: Dict[str, Any], field: str, got: Any) -> None:
        if field in step and step[field] != got:
            raise ScenarioFailure(f"{field} {got!r}, want {step[field]!r}")

    async def connect(self, step: Dict[str, Any]) -> None:
        name = step.get("client", "a")
        url = self.url
        if step.get("target") == "closed_port":
            url = f"mqtt://127.0.0.1:{free_port()}"
        settings: Dict[str, Any] = dict(step.get("settings", {}))
        settings.setdefault("connect_timeout", 5)
        settings["client_id"] = f"scn-py-{name}-{uuid.uuid4().hex[:12]}"
        client: Any
        if self.blocking:
            client = await asyncio.to_thread(mqstate.Client, url, **settings)
        else:
            client = await mqstate.AsyncClient(url, **settings).connect()
        self.clients[name] = client

    async def step(self, step: Dict[str, Any]) -> None:
        op = step["op"]
        if op == "connect":
            await self.connect(step)
        elif op == "close":
            await self.call(self.client(step).close)
        elif op == "sleep":
            await asyncio.sleep(step["ms"] / 1000.0)
        elif op == "set":
            r = await self.call(
                self.client(step).set, self.set_key(step), _value(step),
                condition=step.get("condition"), expiry=_ms(step, "expiry_ms"),
                fencing_token=self.token(step), persist=step.get("persist", False),
                timeout=_ms(step, "timeout_ms"),
            )
            self.expect(step, "applied", r.applied)
            self.check_version(step, r.version)
        elif op == "get":
            got = await self.call(self.client(step).get, self.key(step), timeout=_ms(step, "timeout_ms"))
            if step.get("missing"):
                if got is not None:
                    raise ScenarioFailure(f"want missing, got {got}")
            elif _value(step) is not None:
                if got is None or got.value != _value(step):
                    raise ScenarioFailure(f"value {got}, want {_value(step)!r}")
            self.check_version(step, None if got is None else got.version)
        elif op == "del":
            n = await self.call(self.client(step).delete, self.key(step), fencing_token=self.token(step))
            self.expect(step, "count", n)
        elif op == "vdel":
            out = await self.call(
                self.client(step).vdel, self.key(step), _value(step), fencing_token=self.token(step)
            )
            self.expect(step, "outcome", out)
        elif op == "observe":
            client = self.client(step)
            if self.blocking:
                sub = await asyncio.to_thread(client.observe, self.key(step))
            else:
                sub = await client.observe(self.key(step))
            self.subs[step["as"]] = sub
        elif op == "unobserve":
            self.subs.pop(step["subscription"]).close()
        elif op in ("expect_notification", "expect_no_notification"):
            await self.notification(step)
        elif op == "lock":
            self.locks[step["as"]] = self.client(step).lock(
                self.key(step), holder=step.get("holder"), session_id=step.get("session_id"),
                auto_renew=_ms(step, "auto_renew_ms"),
            )
        elif op in ("try_acquire", "acquire", "renew", "release", "holder", "is_held", "edit"):
            await self.lock_step(op, step)
        elif op == "election":
            self.elections[step["as"]] = self.client(step).election(self.key(step, "name"), step["candidate"])
        elif op in ("campaign", "try_campaign", "resign", "leader", "is_leader"):
            await self.election_step(op, step)
        elif op in ("fill", "scan", "scan_start", "scan_page", "scan_rest"):
            await self.scan_step(op, step)
        else:
            raise ScenarioFailure(f"unknown op {op}")

    async def notification(self, step: Dict[str, Any]) -> None:
        sub = self.subs[step["subscription"]]
        if step["op"] == "expect_no_notification":
            window = step.get("for_ms", 300) / 1000.0
            try:
                event = await self.call(sub.next, timeout=window)
            except mqstate.MqstateTimeoutError:
                return
            if isinstance(event, mqstate.Change):
                raise ScenarioFailure(f"unexpected {event}")
            return
        wait = step.get("timeout_ms", 5000) / 1000.0
        while True:
            event = await self.call(sub.next, timeout=wait)
            if event is None:
                raise ScenarioFailure("the subscription ended")
            if isinstance(event, mqstate.Change):
                break
        kind = step.get("event")
        if kind is not None and event.kind != kind:
            raise ScenarioFailure(f"notified {event.kind}, want {kind}")
        want = _value(step)
        if kind == "set" and want is not None and event.value != want:
            raise ScenarioFailure(f"notified {event.value!r}, want {want!r}")
        self.check_version(step, event.version)

    async def lock_step(self, op: str, step: Dict[str, Any]) -> None:
        lock = self.locks[step["lock"]]
        lease = step.get("lease_ms", 5000) / 1000.0
        if op == "try_acquire":
            token = await self.call(lock.try_acquire, lease)
            self.expect(step, "acquired", token is not None)
            self.check_version(step, token)
        elif op == "acquire":
            token = await self.call(lock.acquire, lease, timeout=_ms(step, "timeout_ms"))
            self.check_version(step, token)
        elif op == "renew":
            token = await self.call(lock.renew)
            self.expect(step, "renewed", token is not None)
            self.check_version(step, token)
        elif op == "release":
            self.expect(step, "released", await self.call(lock.release))
        elif op == "is_held":
            self.expect(step, "held", lock.is_held)
        elif op == "holder":
            got = await self.call(lock.holder)
            want = self.locks[step["holder_of"]].holder_id if "holder_of" in step else step.get("holder")
            if got != want:
                raise ScenarioFailure(f"holder {got!r}, want {want!r}")
        else:
            action = step["action"]

            def decide(current: Optional[mqstate.Value]) -> Any:
                if action == "delete":
                    return mqstate.DELETE
                if action == "keep":
                    return mqstate.KEEP
                if "fail" in action:
                    raise mqstate.CallbackError(action["fail"])
                if "set" in action:
                    return action["set"]
                return (current.value if current else b"") + action["append"].encode()

            r = await self.call(
                lock.edit, self.key(step), decide, lease=lease,
                timeout=step.get("timeout_ms", 10000) / 1000.0,
            )
            self.check_version(step, r.version)

    async def election_step(self, op: str, step: Dict[str, Any]) -> None:
        e = self.elections[step["election"]]
        term = step.get("term_ms", 5000) / 1000.0
        if op == "campaign":
            self.check_version(step, await self.call(e.campaign, term, timeout=_ms(step, "timeout_ms")))
        elif op == "try_campaign":
            self.expect(step, "elected", await self.call(e.try_campaign, term))
        elif op == "resign":
            self.expect(step, "resigned", await self.call(e.resign))
        elif op == "is_leader":
            self.expect(step, "leader_now", e.is_leader)
        else:
            got = await self.call(e.leader)
            if got != step.get("leader"):
                raise ScenarioFailure(f"leader {got!r}, want {step.get('leader')!r}")

    async def run(self, scenario: Dict[str, Any]) -> None:
        steps: List[Dict[str, Any]] = scenario["steps"]
        client_ops = {
            "close", "set", "get", "del", "vdel", "observe", "lock", "election", "fill", "scan", "scan_start"
        }
        for name in sorted({s.get("client", "a") for s in steps if s["op"] in client_ops}):
            await self.connect({"client": name})
        try:
            for i, step in enumerate(steps):
                want = step.get("error")
                try:
                    await asyncio.wait_for(self.step(step), 60)
                except mqstate.MqstateError as e:
                    if e.code != want:
                        raise ScenarioFailure(f"step {i} {step}: raised {e.code} ({e}), want {want or 'success'}") from e
                    continue
                except ScenarioFailure as f:
                    raise ScenarioFailure(f"step {i} {step}: {f}") from None
                if want is not None:
                    raise ScenarioFailure(f"step {i} {step}: succeeded, want error {want}")
        finally:
            for client in self.clients.values():
                await self.call(client.close)


def test_there_are_scenarios() -> None:
    assert len(FILES) >= 40, FILES


@pytest.mark.parametrize("blocking", [False, True], ids=["AsyncClient", "Client"])
@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
def test_scenario(embedded: LiveStore, path: Path, blocking: bool) -> None:
    scenario = json.loads(path.read_text(encoding="utf-8"))
    asyncio.run(Runner(embedded.url, blocking).run(scenario))


def test_a_wrong_expectation_fails(embedded: LiveStore) -> None:
    scenario = json.loads((SCENARIOS / "set_then_get_returns_value_and_version.json").read_text())
    for step in scenario["steps"]:
        if step["op"] == "get":
            step["value"] = "not what was set"
    with pytest.raises(ScenarioFailure):
        asyncio.run(Runner(embedded.url, False).run(scenario))


# ---- the same scenarios against mqstate.testing.LocalStore ----------------------------


@pytest.fixture(scope="module")
def local_store() -> Iterator[LocalStore]:
    """One LocalStore for the module's scenarios (each runs under its own key prefix)."""
    with LocalStore() as store:
        yield store


#: Scenarios that only wait (for an expiry, a lease, a timeout): they say nothing about
#: the LocalStore that the others do not, and take most of the time.
SLOW_MS = 500


def _waits_ms(path: Path) -> int:
    steps = json.loads(path.read_text(encoding="utf-8"))["steps"]
    waited = 0
    for step in steps:
        waited += int(step.get("ms", 0) if step["op"] == "sleep" else 0)
        waited += int(step.get("for_ms", 0))
        waited += int(step.get("timeout_ms", 0)) if step.get("error") == "timeout" else 0
    return waited


LOCAL_FILES = [p for p in FILES if _waits_ms(p) < SLOW_MS]


def test_most_scenarios_run_against_a_local_store() -> None:
    assert len(LOCAL_FILES) >= len(FILES) * 3 // 4, [p.stem for p in FILES if p not in LOCAL_FILES]


@pytest.mark.parametrize("path", LOCAL_FILES, ids=[p.stem for p in LOCAL_FILES])
def test_scenario_on_a_local_store(local_store: LocalStore, path: Path) -> None:
    scenario = json.loads(path.read_text(encoding="utf-8"))
    asyncio.run(Runner(local_store.url, False).run(scenario))
