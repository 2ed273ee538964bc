"""The pytest plugin of mqstate, registered by the package (entry point ``pytest11``): a
state store per test, and clients connected to it.

- ``mqstate_store``: a :class:`~mqstate.testing.LocalStore` started for the test and
  stopped after it;
- ``mqstate_client``: a :class:`~mqstate.Client` connected to it, closed after the test;
- ``mqstate_async_client``: an :class:`~mqstate.AsyncClient` connected to it, closed after
  the test (an async fixture: it needs an asyncio plugin such as pytest-asyncio).

::

    def test_counter(mqstate_client):
        mqstate_client.set("n", "1")
        assert mqstate_client.get("n").text == "1"

Disable it with ``-p no:mqstate``.
"""

from __future__ import annotations

import importlib
from typing import Any, AsyncIterator, Callable, Iterator

import pytest

from .client import AsyncClient, Client
from .testing import LocalStore


def _async_fixture() -> Callable[..., Any]:
    """pytest-asyncio's fixture decorator when it is installed (its strict mode, the
    default, takes async fixtures only through it), else pytest's (anyio's plugin and
    others take that)."""
    try:
        return importlib.import_module("pytest_asyncio").fixture  # type: ignore[no-any-return]
    except ImportError:
        return pytest.fixture


@pytest.fixture
def mqstate_store() -> Iterator[LocalStore]:
    """A :class:`~mqstate.testing.LocalStore` of this test's own, stopped after it.

    Function scope — one store per test — is the simplest isolation there is: no key, fault,
    pause or session leaks from one test into the next, and tests may restart or stop it.
    It is cheap: a store starts in about 1 ms and takes tens of KiB while it runs
    (docs/benchmarks.md, "LocalStore (Python)"). To share one store across a module or a
    session instead, write your own fixture with that scope around ``LocalStore()`` and
    call ``store.clear()`` between tests.
    """
    with LocalStore() as store:
        yield store


@pytest.fixture
def mqstate_client(mqstate_store: LocalStore) -> Iterator[Client]:
    """A blocking :class:`~mqstate.Client` connected to ``mqstate_store``, closed after the
    test."""
    with Client(mqstate_store.url) as client:
        yield client


@_async_fixture()
async def mqstate_async_client(mqstate_store: LocalStore) -> AsyncIterator[AsyncClient]:
    """An :class:`~mqstate.AsyncClient` connected to ``mqstate_store`` (on the test's event
    loop), closed after the test."""
    async with AsyncClient(mqstate_store.url) as client:
        yield client
