"""Shared helpers: where the conformance vectors live, and how to read them."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Iterable, List

import pytest

ROOT = Path(__file__).resolve().parents[2]


def vectors_dir() -> Path:
    """``$MQSTATE_VECTORS``, else the project's own copy in ``tests/vectors``."""
    override = os.environ.get("MQSTATE_VECTORS")
    return Path(override) if override else ROOT / "tests" / "vectors"


def load(name: str) -> Any:
    """A vector file, parsed. A missing file fails collection: vectors are not optional."""
    with open(vectors_dir() / name, encoding="utf-8") as f:
        return json.load(f)


def latin1(text: str) -> bytes:
    """A byte field of the vectors: one code point (<= U+00FF) per byte."""
    return text.encode("latin-1")


def cases(items: Iterable[Any], what: str, label: str = "name") -> List[Any]:
    """Every case of a list as pytest params, each named for its case."""
    params: List[Any] = []
    for i, case in enumerate(items):
        ident = case.get(label) if isinstance(case, dict) else None
        params.append(pytest.param(case, id=f"{what}[{i}] {ident}" if ident else f"{what}[{i}]"))
    assert params, f"{what} has no cases"
    return params



# ---- live infrastructure for the client tests ---------------------------------------

import uuid  # noqa: E402
from typing import Iterator  # noqa: E402

from live import LiveStore, Tap  # noqa: E402


@pytest.fixture(scope="session", params=["embedded", "mosquitto"])
def live(request: pytest.FixtureRequest) -> Iterator[LiveStore]:
    """A running store: mqstate serve with its embedded broker, and behind mosquitto."""
    store = LiveStore(request.param)
    yield store
    store.close()


@pytest.fixture(scope="session")
def embedded() -> Iterator[LiveStore]:
    """A running store with its embedded broker only."""
    store = LiveStore("embedded")
    yield store
    store.close()


@pytest.fixture
def fresh_mosquitto() -> Iterator[LiveStore]:
    """A store of its own behind mosquitto, for tests that restart things."""
    store = LiveStore("mosquitto")
    yield store
    store.close()


@pytest.fixture
def tap(live: LiveStore) -> Iterator[Tap]:
    """What clients publish on the request topic."""
    t = Tap(live.port)
    yield t
    t.close()


@pytest.fixture
def ns() -> str:
    """A key prefix unique to the test."""
    return f"py/{uuid.uuid4().hex}/"
