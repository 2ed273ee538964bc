"""The client-side cache (settings ``cache`` …, ``get(bypass_cache=)``, ``cache_stats()``)
against the in-process store and its faults: hits, others' writes arriving by notification,
and a cut, a restart and a lost session each making the next read go to the store."""

from __future__ import annotations

import asyncio
import time
from typing import Optional

import pytest

import mqstate
from mqstate.testing import LocalStore

#: A bound on anything that should happen, so a bug fails the test instead of hanging it.
BOUND = 20.0


def text(client: mqstate.Client, key: str) -> Optional[str]:
    value = client.get(key)
    return None if value is None else value.text


def until(client: mqstate.Client, key: str, want: Optional[str]) -> None:
    deadline = time.monotonic() + BOUND
    while (got := text(client, key)) != want:
        assert time.monotonic() < deadline, f"{key} still reads {got!r}, not {want!r}"
        time.sleep(0.005)


def test_reads_hit_and_others_writes_arrive_by_notification() -> None:
    with LocalStore() as store, mqstate.Client(store.url, cache=True) as reader, mqstate.Client(
        store.url
    ) as writer:
        writer.set("asset:1", "pump")
        assert [text(reader, "asset:1") for _ in range(50)] == ["pump"] * 50
        assert text(reader, "missing") is None
        assert text(reader, "missing") is None
        stats = reader.cache_stats()
        assert stats is not None
        assert (stats.hits, stats.misses, stats.entries) == (50, 2, 2), stats
        assert stats.bytes == len("asset:1pump") + len("missing")

        writer.set("asset:1", "valve")
        until(reader, "asset:1", "valve")
        writer.delete("asset:1")
        until(reader, "asset:1", None)
        after = reader.cache_stats()
        assert after is not None and after.misses == 2, f"by notification: {after}"
        assert after.invalidations >= 2

        past = reader.get("missing", bypass_cache=True)
        assert past is None
        assert reader.cache_stats() == after, "a read past the cache counts neither way"


def test_own_writes_are_read_at_once() -> None:
    with LocalStore() as store, mqstate.Client(store.url, cache=True) as client:
        client.set("k", "0")
        assert text(client, "k") == "0"
        for i in range(1, 30):
            written = client.set("k", str(i))
            value = client.get("k")
            assert value is not None and value.text == str(i)
            assert value.version == written.version
        client.delete("k")
        assert text(client, "k") is None
        stats = client.cache_stats()
        assert stats is not None and stats.misses == 1, stats


def test_asyncio_hits_need_no_await_of_the_store() -> None:
    async def main() -> None:
        with LocalStore() as store:
            async with mqstate.AsyncClient(store.url, cache_keys="hot:*") as client:
                await client.set("hot:1", "x")
                await client.set("cold", "y")
                for _ in range(20):
                    value = await client.get("hot:1")
                    assert value is not None and value.text == "x"
                    assert (await client.get("cold")) is not None
                stats = client.cache_stats()
                assert stats is not None
                assert (stats.hits, stats.misses, stats.entries) == (19, 1, 1), stats

    asyncio.run(main())


def test_a_hit_refuses_a_bad_timeout_as_a_miss_does() -> None:
    async def main() -> None:
        with LocalStore() as store:
            async with mqstate.AsyncClient(store.url, cache=True) as client:
                await client.set("k", "v")
                assert await client.get("k") is not None
                with pytest.raises(mqstate.InvalidArgumentError, match="timeout"):
                    await client.get("k", timeout=-1)
                assert await client.get("k", timeout=2) is not None

    asyncio.run(main())
    with LocalStore() as store, mqstate.Client(store.url, cache=True) as client:
        client.set("k", "v")
        assert text(client, "k") == "v"
        with pytest.raises(mqstate.InvalidArgumentError, match="timeout"):
            client.get("k", timeout=-1)
        stats = client.cache_stats()
        assert stats is not None and (stats.hits, stats.misses) == (0, 1), stats


def test_stats_are_none_without_a_cache() -> None:
    with LocalStore() as store, mqstate.Client(store.url) as client:
        client.set("k", "v")
        assert text(client, "k") == "v"
        assert client.cache_stats() is None


def test_bad_cache_settings_are_refused_naming_them() -> None:
    with pytest.raises(mqstate.InvalidArgumentError, match="cache_max_entries"):
        mqstate.Client("mqtt://127.0.0.1:1", cache_max_entries=0)
    with pytest.raises(mqstate.InvalidArgumentError, match="empty pattern"):
        mqstate.Client("mqtt://127.0.0.1:1", cache_keys="a,,b")


@pytest.mark.parametrize("fault", ["cut", "restart", "lost session"])
def test_a_cut_a_restart_and_a_lost_session_each_invalidate(fault: str) -> None:
    settings: dict[str, object] = {"cache": True}
    if fault == "lost session":
        settings["session_expiry"] = 0  # the session ends with each connection
    with LocalStore() as store, mqstate.Client(store.url, **settings) as reader, mqstate.Client(
        store.url
    ) as writer:
        writer.set("k", "old", persist=True)
        assert text(reader, "k") == "old"
        assert text(reader, "k") == "old"
        before = reader.cache_stats()
        assert before is not None and before.hits == 1
        if fault == "restart":
            store.restart(keep_data=True)
        else:
            store.cut_connections()
        # Written as soon as the writer is back: before, or while, the reader comes back.
        deadline = time.monotonic() + BOUND
        while True:
            try:
                writer.set("k", "new", persist=True)
                break
            except mqstate.MqstateError:
                assert time.monotonic() < deadline, "the writer did not come back"
                time.sleep(0.01)
        until(reader, "k", "new")
        after = reader.cache_stats()
        assert after is not None
        assert after.invalidations > before.invalidations, (before, after)
        assert after.misses > before.misses, "read from the store again"
