"""Locks, fenced edits and elections through both clients."""

from __future__ import annotations

import asyncio
import threading
from typing import Optional

import pytest

import mqstate
from live import LiveStore
from mqstate import errors


def test_lock_lifecycle_and_context_manager(live: LiveStore, ns: str) -> None:
    with mqstate.Client(live.url) as a, mqstate.Client(live.url) as b:
        la = a.lock(ns + "lock", lease=5)
        lb = b.lock(ns + "lock", lease=5)
        token = la.try_acquire()
        assert token is not None and la.is_held and la.holder_id == a.client_id
        assert lb.try_acquire() is None
        assert lb.holder() == a.client_id
        renewed = la.renew()
        assert renewed is not None and renewed > token
        with pytest.raises(errors.MqstateTimeoutError):
            lb.acquire(timeout=0.3)
        assert lb.release() is False
        assert la.release() is True and not la.is_held
        with lb:
            assert lb.is_held and la.holder() == b.client_id
        assert la.holder() is None
        assert la.renew() is None


def test_lock_status_and_holder_streams(live: LiveStore, ns: str) -> None:
    with mqstate.Client(live.url) as c:
        lock = c.lock(ns + "lock", lease=5, session_id="s1")
        with lock.watch_status() as status, lock.watch_holder() as holders:
            assert status.next(timeout=5) == mqstate.LockStatus("not_held")
            first = holders.next(timeout=5)
            assert isinstance(first, mqstate.HolderChange) and first.holder is None
            lock.try_acquire()
            held = status.next(timeout=5)
            assert isinstance(held, mqstate.LockStatus) and held.state == "held"
            assert held.fencing_token == lock.fencing_token and held.lease == 5.0
            change = holders.next(timeout=5)
            assert isinstance(change, mqstate.HolderChange) and change.holder == f"{c.client_id}:s1"
            lock.release()
            assert status.next(timeout=5) == mqstate.LockStatus("not_held")


def test_auto_renew_keeps_the_lock(live: LiveStore, ns: str) -> None:
    with mqstate.Client(live.url) as a, mqstate.Client(live.url) as b:
        la = a.lock(ns + "lock", lease=1.0, auto_renew=0.25)
        assert la.try_acquire() is not None
        import time

        time.sleep(2.0)
        assert la.is_held and b.lock(ns + "lock").try_acquire() is None
        la.release()


def test_fenced_edits_from_threads_are_exact(live: LiveStore, ns: str) -> None:
    with mqstate.Client(live.url) as c:
        c.set(ns + "counter", "0")

        def work() -> None:
            with mqstate.Client(live.url) as mine:
                lock = mine.lock(ns + "lock", lease=2)
                for _ in range(10):
                    lock.edit(ns + "counter", lambda v: str(int(v.text) + 1) if v else "1", timeout=30)

        threads = [threading.Thread(target=work) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        got = c.get(ns + "counter")
        assert got is not None and got.text == "40"


def test_edit_functions_may_be_coroutines_and_their_exceptions_propagate(live: LiveStore, ns: str) -> None:
    class Refused(Exception):
        pass

    raised = Refused("no")

    async def main() -> None:
        async with mqstate.AsyncClient(live.url) as c:
            lock = c.lock(ns + "lock", lease=2)

            async def append(v: Optional[mqstate.Value]) -> bytes:
                await asyncio.sleep(0.01)
                return (v.value if v else b"") + b"+"

            r1 = await lock.edit(ns + "doc", append)
            r2 = await lock.edit(ns + "doc", append)
            assert (r1.kind, r2.kind) == ("set", "set") and r2.previous is not None
            assert (await c.get(ns + "doc")).value == b"++"  # type: ignore[union-attr]

            async def fail(v: Optional[mqstate.Value]) -> bytes:
                raise raised

            with pytest.raises(Refused) as info:
                await lock.edit(ns + "doc", fail)
            assert info.value is raised
            assert await lock.holder() is None, "released after the failure"
            kept = await lock.edit(ns + "doc", lambda v: mqstate.KEEP)
            assert kept.kind == "keep" and kept.version is None
            gone = await lock.edit(ns + "doc", lambda v: mqstate.DELETE)
            assert gone.kind == "delete" and await c.get(ns + "doc") is None
            with pytest.raises(TypeError):
                await lock.edit(ns + "doc", lambda v: 42)

    asyncio.run(main())


def test_elections(live: LiveStore, ns: str) -> None:
    with mqstate.Client(live.url) as a, mqstate.Client(live.url) as b:
        ea = a.election(ns + "election", "alpha", term=2)
        eb = b.election(ns + "election", "beta", term=2)
        with eb.watch_leader() as leaders:
            first = leaders.next(timeout=5)
            assert isinstance(first, mqstate.HolderChange) and first.holder is None
            assert ea.try_campaign() and ea.is_leader and ea.fencing_token is not None
            assert not eb.try_campaign()
            assert eb.leader() == "alpha"
            change = leaders.next(timeout=5)
            assert isinstance(change, mqstate.HolderChange) and change.holder == "alpha"
            with pytest.raises(errors.MqstateTimeoutError):
                eb.campaign(timeout=0.3)
            assert ea.resign() and not ea.is_leader
            with eb:
                assert eb.is_leader and ea.leader() == "beta"
            assert ea.leader() is None


def test_async_election_campaign_cancelled(live: LiveStore, ns: str) -> None:
    async def main() -> None:
        async with mqstate.AsyncClient(live.url) as a, mqstate.AsyncClient(live.url) as b:
            ea = a.election(ns + "e", "alpha", term=5)
            eb = b.election(ns + "e", "beta", term=5)
            async with ea:
                assert ea.is_leader
                task = asyncio.ensure_future(eb.campaign())
                await asyncio.sleep(0.2)
                task.cancel()
                with pytest.raises(asyncio.CancelledError):
                    await task
            await asyncio.sleep(0.3)
            assert not eb.is_leader and await eb.leader() is None

    asyncio.run(main())
