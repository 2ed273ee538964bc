"""The client-side cache (settings ``cache`` …, ``get(bypass_cache=)``, ``cache_stats()``)
against the in-process store and its faults: hits, others' writes arriving by notification,
and a cut, a restart and a lost session each making the next read go to the store."""

from __future__ import annotations

import asyncio
import time
from typing import Optional, Tuple, Union

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


def stats(client: Union[mqstate.Client, mqstate.AsyncClient]) -> mqstate.CacheStats:
    got = client.cache_stats()
    assert got is not None, "the cache is on"
    return got


def settled(s: mqstate.CacheStats) -> Tuple[int, int]:
    """(hits, misses) as they would be with the lease always held: a read the lease sent to
    the store (``lease_misses``, before the first renewal came back) counted as the hit it
    would have been. Counts that depend on how fast the first renewal travels would be
    flaky."""
    return (s.hits + s.lease_misses, s.misses - s.lease_misses)


def until_hit(client: mqstate.Client, key: str) -> None:
    """Reads ``key`` until a read is answered from the cache (bounded): the lease is
    proven."""
    deadline = time.monotonic() + BOUND
    while True:
        before = stats(client).hits
        text(client, key)
        if stats(client).hits > before:
            return
        assert time.monotonic() < deadline, f"{key} never hit: {stats(client)}"
        time.sleep(0.002)


#: A lease bound no busy machine's renewal misses, for the tests that count hits and misses
#: exactly: a lease that failed would send a read to the store they do not count on. The
#: lease's own tests use short bounds (``FRESHNESS``).
STEADY = 30


def test_reads_hit_and_others_writes_arrive_by_notification() -> None:
    with LocalStore() as store, mqstate.Client(store.url, cache=True, cache_freshness=STEADY) as reader, mqstate.Client(
        store.url
    ) as writer:
        writer.set("asset:1", "pump")
        assert [text(reader, "asset:1") for _ in range(50)] == ["pump"] * 50
        assert text(reader, "missing") is None
        assert text(reader, "missing") is None
        counted = stats(reader)
        assert (settled(counted), counted.entries) == ((50, 2), 2), counted
        assert counted.lease_renewals >= 1, f"a renewal proves the lease: {counted}"
        assert counted.bytes == len("asset:1pump") + len("missing")

        writer.set("asset:1", "valve")
        until(reader, "asset:1", "valve")
        writer.delete("asset:1")
        until(reader, "asset:1", None)
        after = stats(reader)
        assert settled(after)[1] == 2, f"by notification: {after}"
        assert after.invalidations >= 2

        past = reader.get("missing", bypass_cache=True)
        assert past is None
        assert reader.cache_stats() == after, "a read past the cache counts neither way"


def test_own_writes_are_read_at_once() -> None:
    with LocalStore() as store, mqstate.Client(store.url, cache=True, cache_freshness=STEADY) as client:
        client.set("k", "0")
        assert text(client, "k") == "0"
        for i in range(1, 30):
            written = client.set("k", str(i))
            value = client.get("k")
            assert value is not None and value.text == str(i)
            assert value.version == written.version
        client.delete("k")
        assert text(client, "k") is None
        counted = stats(client)
        assert settled(counted)[1] == 1, counted


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
                counted = stats(client)
                assert (settled(counted), counted.entries) == ((19, 1), 1), counted

    asyncio.run(main())


def test_a_hit_refuses_a_bad_timeout_as_a_miss_does() -> None:
    async def main() -> None:
        with LocalStore() as store:
            async with mqstate.AsyncClient(store.url, cache=True, cache_freshness=STEADY) as client:
                await client.set("k", "v")
                assert await client.get("k") is not None
                with pytest.raises(mqstate.InvalidArgumentError, match="timeout"):
                    await client.get("k", timeout=-1)
                assert await client.get("k", timeout=2) is not None

    asyncio.run(main())
    with LocalStore() as store, mqstate.Client(store.url, cache=True, cache_freshness=STEADY) as client:
        client.set("k", "v")
        assert text(client, "k") == "v"
        with pytest.raises(mqstate.InvalidArgumentError, match="timeout"):
            client.get("k", timeout=-1)
        counted = stats(client)
        assert settled(counted) == (0, 1), counted


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
        until_hit(reader, "k")
        before = stats(reader)
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


def until_lease_failed(reader: mqstate.Client, key: str) -> None:
    """Reads ``key`` (whatever it answers) until the reader's lease has failed (bounded)."""
    deadline = time.monotonic() + BOUND
    while stats(reader).lease_failures == 0:
        assert time.monotonic() < deadline, f"the lease never failed: {stats(reader)}"
        text(reader, key)
        time.sleep(0.005)


def lag_of(reader: mqstate.Client, writer: mqstate.Client, key: str, freshness: float) -> float:
    """Writes "new" to ``key`` with ``writer`` and reads it from ``reader`` until it reads
    "new": every read that answers "old" must have begun less than ``freshness`` after the
    write was acknowledged. Returns the longest such lag."""
    writer.set(key, "new")
    acknowledged = time.monotonic()
    lag = 0.0
    while True:
        began = time.monotonic()
        got = text(reader, key)
        if got == "new":
            return lag
        assert got == "old", f"{key} read {got!r}"
        lag = max(lag, began - acknowledged)
        assert began - acknowledged < freshness, (
            f"a cached read lagged {began - acknowledged:.3f} s behind the store "
            f"(bound {freshness} s): {stats(reader)}"
        )
        assert time.monotonic() - acknowledged < BOUND, "never read the new value"
        time.sleep(0.002)


#: The freshness bound of the lease tests: short, so that a lagging read shows.
FRESHNESS = 0.3


def warm_reader(store: LocalStore, freshness: float) -> Tuple[mqstate.Client, mqstate.Client]:
    """A reader of "k" ("old", cached, the lease proven) and a writer."""
    reader = mqstate.Client(store.url, cache=True, cache_freshness=freshness)
    writer = mqstate.Client(store.url)
    writer.set("k", "old")
    until_hit(reader, "k")
    return reader, writer


def test_a_silent_notification_path_is_noticed_within_the_bound() -> None:
    with LocalStore() as store:
        reader, writer = warm_reader(store, FRESHNESS)
        with reader, writer:
            # Everything the store publishes is lost for 2 s: the write's notification, and
            # the lease's renewals.
            store.drop_notifications(2)
            lag_of(reader, writer, "k", FRESHNESS)
            assert store.dropped_notifications() >= 1
            until_lease_failed(reader, "k")
            assert stats(reader).lease_misses >= 1, "reads went to the store meanwhile"
            # Once the path is back, the key is registered anew and writes arrive again.
            time.sleep(2)  # the mute's span: this test is about it passing
            until_hit(reader, "k")
            writer.set("k", "newer")
            until(reader, "k", "newer")
            until_hit(reader, "k")


def test_a_store_that_lost_its_registrations_is_noticed_within_the_bound() -> None:
    with LocalStore() as store:
        reader, writer = warm_reader(store, FRESHNESS)
        with reader, writer:
            # The store restarted behind its broker: connections up, registrations gone.
            assert store.forget_registrations() >= 2, "k and the canary"
            lag_of(reader, writer, "k", FRESHNESS)
            until_lease_failed(reader, "k")
            # Registered anew on the next reads: changes come by notification again.
            until_hit(reader, "k")
            misses = stats(reader).misses
            writer.set("k", "newer")
            until(reader, "k", "newer")
            until_hit(reader, "k")
            after = stats(reader)
            assert after.misses - misses <= after.lease_misses + 1, (
                f"the change came by notification, not by reading the store each time: {after}"
            )


def test_an_idle_cache_sends_nothing_and_renews_when_read_again() -> None:
    freshness = 0.2
    with LocalStore() as store:
        reader, writer = warm_reader(store, freshness)
        with reader, writer:
            time.sleep(freshness)  # this test is about time passing with nothing read
            idle = stats(reader)
            time.sleep(freshness * 5)
            after = stats(reader)
            assert after.lease_renewals == idle.lease_renewals, "no renewal while nothing is read"
            # The first read after finds the lease expired, goes to the store, and renews.
            assert text(reader, "k") == "old"
            counted = stats(reader)
            # It expired (or, on a machine too busy for the renewal sent as the warm-up ended to
            # come back within the bound, failed): either way the read went to the store.
            assert (counted.hits, counted.misses) == (after.hits, after.misses + 1), counted
            assert counted.lease_renewals == after.lease_renewals + 1, counted
            assert (counted.lease_expiries + counted.lease_failures
                    == after.lease_expiries + after.lease_failures + 1), counted
            until_hit(reader, "k")


def test_a_loop_of_async_hits_yields_to_the_tasks_beside_it() -> None:
    from mqstate.client import CACHE_HIT_YIELD_EVERY

    async def main() -> None:
        with LocalStore() as store:
            # A long lease: every read of the loop is a hit, none awaits the store.
            async with mqstate.AsyncClient(store.url, cache=True, cache_freshness=60) as client:
                await client.set("k", "v")
                deadline = time.monotonic() + BOUND
                while True:
                    before = stats(client).hits
                    await client.get("k")
                    if stats(client).hits > before:
                        break
                    assert time.monotonic() < deadline, f"never hit: {stats(client)}"
                    await asyncio.sleep(0.002)
                ran = asyncio.Event()

                async def beside() -> None:
                    ran.set()

                task = asyncio.get_running_loop().create_task(beside())
                hits = stats(client).hits
                reads = 0
                while not ran.is_set():
                    await client.get("k")
                    reads += 1
                    assert reads <= CACHE_HIT_YIELD_EVERY, (
                        f"{reads} hits in a row and the task beside never ran"
                    )
                assert stats(client).hits - hits == reads, f"every read a hit: {stats(client)}"
                await task

    asyncio.run(main())
