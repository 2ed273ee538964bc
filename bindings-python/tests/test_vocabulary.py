"""The public API matches the core's vocabulary (core/vocabulary.json): every operation of
every object (client, lock, election, subscription, pager) under its Python name, with
exactly the vocabulary's options as keyword arguments, typed by their unit, defaulting to
None (the core's default) — never a default of Python's own — and the same in the asyncio
and the blocking classes; every property as a read-only property of both classes; every
event's fields under their Python names. SET conditions, VDEL outcomes and lock states
carry the vocabulary's names.

A new option, operation, property or event field in the core fails here until Python
follows; a public member Python adds beyond the vocabulary must be listed in PYTHON_EXTRAS
(an event field in EVENT_EXTRAS), and told to the core."""

from __future__ import annotations

import asyncio
import dataclasses
import inspect
import json
import typing
from pathlib import Path
from typing import Any, Dict, List, Optional, Set, Tuple, Union

import pytest

import mqstate
from live import LiveStore
from mqstate import _events
from mqstate._calls import Seconds
from mqstate.client import Token

ROOT = Path(__file__).resolve().parents[2]
VOCABULARY: Dict[str, Any] = json.loads((ROOT / "core" / "vocabulary.json").read_text(encoding="utf-8"))

#: The Python classes of each object of the vocabulary: (asyncio, blocking).
OBJECTS: Dict[str, Tuple[type, type]] = {
    "client": (mqstate.AsyncClient, mqstate.Client),
    "lock": (mqstate.AsyncLock, mqstate.Lock),
    "election": (mqstate.AsyncElection, mqstate.Election),
    "subscription": (mqstate.AsyncSubscription, mqstate.Subscription),
    "pager": (mqstate.AsyncPager, mqstate.Pager),
}

#: What each unit is as a Python annotation.
UNIT_TYPES: Dict[str, Any] = {
    "duration": Optional[Seconds],
    "text": Optional[str],
    "bool": bool,
    "fencing_token": Token,
    "condition": Optional[str],
}

#: Public members Python has beyond the vocabulary's operations and properties: Python's
#: idiom (connect/from_env for the asyncio constructor; a subscription's `closed`, a
#: pager's `done` — proposed to the core as properties).
PYTHON_EXTRAS: Dict[str, Set[str]] = {
    "client": {"connect", "from_env"},
    "lock": set(),
    "election": set(),
    "subscription": {"closed"},
    "pager": {"done"},
}

OPERATIONS: List[Dict[str, Any]] = VOCABULARY["operations"]
PROPERTIES: List[Dict[str, Any]] = VOCABULARY["properties"]

#: The vocabulary's events and the Python classes that carry them.
EVENT_CLASSES: Dict[str, type] = {
    "change": mqstate.Change,
    "holder": mqstate.HolderChange,
    "status": mqstate.LockStatus,
    "degraded": mqstate.ConnectionEvent,
    "restored": mqstate.ConnectionEvent,
}

#: Fields Python's event classes have beyond the vocabulary's: the kind that tells
#: degraded from restored (one class for both), and the core's resync/drop markers.
EVENT_EXTRAS: Dict[type, Set[str]] = {
    mqstate.Change: {"resync", "dropped_before"},
    mqstate.HolderChange: {"version", "resync"},
    mqstate.LockStatus: set(),
    mqstate.ConnectionEvent: {"kind"},
}


def operations(owner: str) -> List[Dict[str, Any]]:
    return [op for op in OPERATIONS if op["owner"] == owner]


def options_of(method: Any) -> Dict[str, inspect.Parameter]:
    """A method's options: its parameters with a default (required ones are its operands)."""
    sig = inspect.signature(method)
    return {
        name: p for name, p in sig.parameters.items()
        if name != "self" and p.default is not inspect.Parameter.empty
    }


def public_members(cls: type) -> Set[str]:
    names: Set[str] = set()
    for klass in cls.__mro__:
        if klass is object:
            continue
        names |= {n for n in vars(klass) if not n.startswith("_")}
    return names


def test_every_object_of_the_vocabulary_has_its_python_classes() -> None:
    owners = {op["owner"] for op in OPERATIONS} | {p["owner"] for p in PROPERTIES}
    assert owners == set(OBJECTS), f"objects Python lacks: {owners - set(OBJECTS)}; unknown: {set(OBJECTS) - owners}"


@pytest.mark.parametrize(
    "op", [pytest.param(op, id=f"{op['owner']}.{op['name']}") for op in OPERATIONS]
)
def test_operation_names_options_units_and_defaults(op: Dict[str, Any]) -> None:
    name = op["names"]["python"]
    want = {o["names"]["python"]: o for o in op["options"]}
    signatures = []
    for cls in OBJECTS[op["owner"]]:
        method = getattr(cls, name, None)
        assert callable(method), f"{cls.__name__}.{name} is missing"
        options = options_of(method)
        assert set(options) == set(want), f"{cls.__name__}.{name}: options {sorted(options)}, vocabulary {sorted(want)}"
        hints = typing.get_type_hints(method)
        for option, spec in want.items():
            param = options[option]
            assert param.kind is not inspect.Parameter.POSITIONAL_ONLY, option
            assert hints[option] == UNIT_TYPES[spec["unit"]], f"{cls.__name__}.{name}({option}): {hints[option]}"
            # The default is the core's: None (False for a flag), never a value of Python's.
            assert param.default is (False if spec["unit"] == "bool" else None), f"{cls.__name__}.{name}({option})"
        signatures.append([(p.name, p.kind, p.default) for p in inspect.signature(method).parameters.values()])
    assert signatures[0] == signatures[1], f"{name}: the asyncio and blocking signatures differ"


@pytest.mark.parametrize(
    "prop", [pytest.param(p, id=f"{p['owner']}.{p['name']}") for p in PROPERTIES]
)
def test_properties_are_read_only_properties(prop: Dict[str, Any]) -> None:
    name = prop["names"]["python"]
    for cls in OBJECTS[prop["owner"]]:
        attribute = inspect.getattr_static(cls, name, None)
        assert isinstance(attribute, property), f"{cls.__name__}.{name} is not a property"
        assert attribute.fset is None and attribute.fdel is None, f"{cls.__name__}.{name} is writable"
        assert "return" in typing.get_type_hints(attribute.fget), f"{cls.__name__}.{name} is untyped"


@pytest.mark.parametrize("owner", sorted(OBJECTS))
def test_no_public_member_beyond_the_vocabulary_and_the_listed_extras(owner: str) -> None:
    vocabulary = {op["names"]["python"] for op in operations(owner)}
    vocabulary |= {p["names"]["python"] for p in PROPERTIES if p["owner"] == owner}
    for cls in OBJECTS[owner]:
        extra = public_members(cls) - vocabulary - PYTHON_EXTRAS[owner]
        assert not extra, f"{cls.__name__} has public members the vocabulary lacks: {sorted(extra)}"


def test_durations_are_seconds_or_timedelta_under_the_bare_name() -> None:
    assert "seconds" in VOCABULARY["durations"]["python"]
    assert "timedelta" in VOCABULARY["durations"]["python"]
    for op in VOCABULARY["operations"]:
        for o in op["options"]:
            if o["unit"] == "duration":
                assert o["names"]["python"] == o["name"], "the bare name, as in Rust and Kotlin"
                assert not o["name"].endswith(("_ms", "Ms", "_s")), o["name"]


@pytest.mark.parametrize("event", [e["name"] for e in VOCABULARY["events"]])
def test_events_carry_the_vocabulary_fields(event: str) -> None:
    spec = next(e for e in VOCABULARY["events"] if e["name"] == event)
    cls = EVENT_CLASSES[event]
    fields = [f.name for f in dataclasses.fields(cls)]
    want = spec["names"]["python"]
    assert set(want) <= set(fields), f"{cls.__name__} lacks {set(want) - set(fields)}"
    # A class carrying several events (ConnectionEvent) has the fields of all of them.
    carried = {f for e in VOCABULARY["events"] if EVENT_CLASSES[e["name"]] is cls for f in e["names"]["python"]}
    extra = set(fields) - carried - EVENT_EXTRAS[cls]
    assert not extra, f"{cls.__name__} has fields the vocabulary lacks: {sorted(extra)}"
    # In the vocabulary's order (the extras may come in between).
    assert [f for f in fields if f in want] == want, f"{cls.__name__}: {fields}"


def test_events_from_the_native_tuples() -> None:
    assert _events._event(("degraded", "why")) == mqstate.ConnectionEvent("degraded", "why")
    assert _events._event(("restored",)) == mqstate.ConnectionEvent("restored")


def test_the_cache_hit_yield_is_the_cores_number() -> None:
    from mqstate.client import CACHE_HIT_YIELD_EVERY

    assert CACHE_HIT_YIELD_EVERY == VOCABULARY["cache_hit_yield_every"]


def test_set_conditions_are_the_vocabulary_in_any_case() -> None:
    assert VOCABULARY["set_conditions"] == ["nx", "nex"]
    for condition in VOCABULARY["set_conditions"]:
        for spelling in (condition, condition.upper()):
            request = mqstate.decode_request(mqstate.encode_set(b"k", b"v", condition=spelling))
            assert request.condition == condition.upper()


def test_the_client_speaks_the_vocabulary(live: LiveStore, ns: str) -> None:
    with mqstate.Client(live.url) as c:
        # VDEL outcomes, every one of them.
        c.set(ns + "v", "a")
        outcomes = [c.vdel(ns + "v", "b"), c.vdel(ns + "v", "a"), c.vdel(ns + "v", "a")]
        assert outcomes == ["value_mismatch", "deleted", "not_found"]
        assert sorted(outcomes) == sorted(VOCABULARY["vdel_outcomes"])
        # Lock states and a loss reason.
        lock = c.lock(ns + "lock", lease=0.5)
        states: List[mqstate.LockStatus] = []
        with lock.watch_status() as status:
            states.append(status_next(status))
            lock.try_acquire()
            while states[-1].state != "lost":
                states.append(status_next(status))
        assert [s.state for s in states] == ["not_held", "held", "lost"] == VOCABULARY["lock_states"]
        assert states[-1].reason in VOCABULARY["loss_reasons"]
        assert states[1].lease == 0.5


def status_next(status: mqstate.Subscription[mqstate.LockStatus]) -> mqstate.LockStatus:
    event = status.next(timeout=10)
    assert event is not None
    return event


def test_default_lease_and_term_are_the_cores(live: LiveStore, ns: str) -> None:
    async def main() -> None:
        async with mqstate.AsyncClient(live.url) as a:
            lock = a.lock(ns + "lock")
            status = lock.watch_status()
            assert (await status.next(timeout=5)) == mqstate.LockStatus("not_held")
            await lock.try_acquire()
            held = await status.next(timeout=5)
            assert held is not None and held.lease == VOCABULARY["defaults_ms"]["lease"] / 1000
            status.close()
            await lock.release()

            election = a.election(ns + "election", "me")
            estatus = election.watch_status()
            assert (await estatus.next(timeout=5)) == mqstate.LockStatus("not_held")
            assert await election.try_campaign()
            leading = await estatus.next(timeout=5)
            assert leading is not None and leading.lease == VOCABULARY["defaults_ms"]["term"] / 1000
            estatus.close()
            await election.resign()

    asyncio.run(main())


def test_union_of_key_events_is_what_observe_is_typed_with() -> None:
    hints = typing.get_type_hints(mqstate.Client.observe)
    assert hints["return"] == mqstate.Subscription[Union[mqstate.Change, mqstate.ConnectionEvent]]
    hints = typing.get_type_hints(mqstate.AsyncClient.observe)
    assert hints["return"] == mqstate.AsyncSubscription[Union[mqstate.Change, mqstate.ConnectionEvent]]
    assert typing.get_type_hints(mqstate.Lock.watch_holder)["return"] == mqstate.Subscription[mqstate.HolderChange]
    assert typing.get_type_hints(mqstate.Election.watch_status)["return"] == mqstate.Subscription[mqstate.LockStatus]


# ---- the local store of mqstate.testing (testing_operations, testing_properties) ------

import mqstate.testing  # noqa: E402
from mqstate.testing import LocalStore  # noqa: E402

TESTING_OPERATIONS: List[Dict[str, Any]] = VOCABULARY["testing_operations"]
TESTING_PROPERTIES: List[Dict[str, Any]] = VOCABULARY["testing_properties"]

#: What each unit of a testing option is as a Python annotation.
TESTING_UNIT_TYPES: Dict[str, Any] = {
    "duration": Seconds,
    "bool": bool,
    "count": int,
    "error_code": str,
    "text": Union[bytes, bytearray, memoryview, str],
}

#: Public members LocalStore has beyond the vocabulary: none.
TESTING_EXTRAS: Set[str] = set()


def test_the_local_store_is_the_only_testing_object() -> None:
    owners = {op["owner"] for op in TESTING_OPERATIONS} | {p["owner"] for p in TESTING_PROPERTIES}
    assert owners == {"local_store"}


@pytest.mark.parametrize("op", [pytest.param(op, id=op["name"]) for op in TESTING_OPERATIONS])
def test_local_store_operations_options_units_and_defaults(op: Dict[str, Any]) -> None:
    method = getattr(LocalStore, op["names"]["python"], None)
    assert callable(method), f"LocalStore.{op['names']['python']} is missing"
    params = {n: p for n, p in inspect.signature(method).parameters.items() if n not in ("self", "cls")}
    options = [o["names"]["python"] for o in op["options"]]
    # The vocabulary's options, in its order, after the operands (get's key).
    assert list(params)[len(params) - len(options):] == options, f"{op['name']}: {list(params)}"
    hints = typing.get_type_hints(method)
    for spec in op["options"]:
        name = spec["names"]["python"]
        param = params[name]
        assert param.kind is not inspect.Parameter.POSITIONAL_ONLY, name
        want = TESTING_UNIT_TYPES[spec["unit"]]
        default = spec["default"]
        if default == "required":
            assert param.default is inspect.Parameter.empty, f"{op['name']}({name}) must be required"
        elif spec["unit"] == "bool":
            assert param.default is (default == "true"), f"{op['name']}({name})"
        elif default == "*":
            assert param.default == "*", f"{op['name']}({name})"
        else:  # "any command": the core's default, None
            assert param.default is None, f"{op['name']}({name})"
            want = Optional[want]
        if spec["unit"] == "text" and name == "command":
            want = Optional[str]  # a verb's name, not bytes
        assert hints[name] == want, f"{op['name']}({name}): {hints[name]}, want {want}"


def test_local_store_durations_are_seconds_under_the_bare_name() -> None:
    for op in TESTING_OPERATIONS:
        for o in op["options"]:
            if o["unit"] == "duration":
                assert o["names"]["python"] == o["name"]
                hints = typing.get_type_hints(getattr(LocalStore, op["names"]["python"]))
                assert hints[o["name"]] == Seconds


def test_local_store_start_is_a_constructor() -> None:
    start = inspect.getattr_static(LocalStore, "start")
    assert isinstance(start, classmethod)
    assert typing.get_type_hints(LocalStore.start)["return"] == LocalStore


@pytest.mark.parametrize("prop", [pytest.param(p, id=p["name"]) for p in TESTING_PROPERTIES])
def test_local_store_properties_are_read_only(prop: Dict[str, Any]) -> None:
    attribute = inspect.getattr_static(LocalStore, prop["names"]["python"], None)
    assert isinstance(attribute, property), f"LocalStore.{prop['names']['python']} is not a property"
    assert attribute.fset is None and attribute.fdel is None
    assert "return" in typing.get_type_hints(attribute.fget)


def test_local_store_has_no_public_member_beyond_the_vocabulary() -> None:
    vocabulary = {op["names"]["python"] for op in TESTING_OPERATIONS}
    vocabulary |= {p["names"]["python"] for p in TESTING_PROPERTIES}
    extra = public_members(LocalStore) - vocabulary - TESTING_EXTRAS
    assert not extra, f"LocalStore has public members the vocabulary lacks: {sorted(extra)}"
    assert mqstate.testing.__all__ == ["LocalStore"]
