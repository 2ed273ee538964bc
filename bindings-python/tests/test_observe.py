"""Observation: order, STOP on exit / close / garbage collection (seen on the wire), slow
readers bounded, resynchronisation after a store restart, connection events."""

from __future__ import annotations

import asyncio
import datetime
import gc
import time

import mqstate
from live import LiveStore, Tap


def test_changes_arrive_in_order_with_their_versions(live: LiveStore, ns: str) -> None:
    with mqstate.Client(live.url) as c, c.observe(ns + "k") as changes:
        versions = [c.set(ns + "k", str(i)).version for i in range(20)]
        c.delete(ns + "k")
        seen = [changes.next(timeout=5) for _ in range(21)]
        assert [s.text for s in seen[:20] if isinstance(s, mqstate.Change)] == [
            str(i) for i in range(20)
        ]
        assert [s.version for s in seen[:20] if isinstance(s, mqstate.Change)] == versions
        last = seen[20]
        assert isinstance(last, mqstate.Change) and last.kind == "delete" and last.value is None


def test_stop_on_exit_close_and_gc(live: LiveStore, tap: Tap, ns: str) -> None:
    with mqstate.Client(live.url) as c:
        with c.observe(ns + "exit"):
            pass
        assert tap.wait_for(b"KEYNOTIFY", (ns + "exit").encode(), b"STOP")
        sub = c.observe(ns + "close")
        sub.close()
        assert sub.closed and sub.next(timeout=1) is None
        assert tap.wait_for(b"KEYNOTIFY", (ns + "close").encode(), b"STOP")
        sub = c.observe(ns + "gc")
        del sub
        gc.collect()
        assert tap.wait_for(b"KEYNOTIFY", (ns + "gc").encode(), b"STOP")

    async def main() -> None:
        async with mqstate.AsyncClient(live.url) as a:
            async with a.observe(ns + "async") as changes:
                await a.set(ns + "async", "v")
                async for change in changes:
                    assert isinstance(change, mqstate.Change) and change.text == "v"
                    break
            assert tap.wait_for(b"KEYNOTIFY", (ns + "async").encode(), b"STOP")

    asyncio.run(main())


def test_a_slow_reader_is_bounded_and_told_what_it_missed(live: LiveStore, ns: str) -> None:
    with mqstate.Client(live.url, observer_capacity=4) as c, c.observe(ns + "k") as changes:
        for i in range(50):
            c.set(ns + "k", str(i))
        time.sleep(0.5)
        seen = []
        while True:
            event = changes.try_next()
            if event is None:
                break
            seen.append(event)
        assert 1 <= len(seen) <= 8
        last = seen[-1]
        assert isinstance(last, mqstate.Change) and last.text == "49", "the newest is kept"
        dropped = sum(e.dropped_before for e in seen if isinstance(e, mqstate.Change))
        assert dropped + len(seen) == 50


def test_resync_after_a_store_restart(fresh_mosquitto: LiveStore, ns: str) -> None:
    with mqstate.Client(fresh_mosquitto.url) as c, mqstate.Client(fresh_mosquitto.url) as w:
        with c.observe(ns + "k") as changes:
            w.set(ns + "k", "before")
            first = changes.next(timeout=5)
            assert isinstance(first, mqstate.Change) and first.text == "before"
            fresh_mosquitto.restart_store()  # registrations are lost with the service
            # The mosquitto session survives; the client re-registers only after its own
            # reconnection, so restart the broker too to make the client reconnect.
            fresh_mosquitto.restart_broker()
            deadline = time.monotonic() + 20
            while time.monotonic() < deadline:
                try:
                    w.set(ns + "k", "after", timeout=1)
                    break
                except mqstate.MqstateError:
                    time.sleep(0.2)
            while True:
                event = changes.next(timeout=20)
                if isinstance(event, mqstate.Change) and event.text == "after":
                    break


def test_next_with_a_timeout_and_cancelled_waits_lose_no_event(live: LiveStore, ns: str) -> None:
    with mqstate.Client(live.url) as c, c.observe(ns + "k") as changes:
        try:
            changes.next(timeout=0.2)
            raise AssertionError("no event was expected")
        except mqstate.MqstateTimeoutError as e:
            assert "no event within" in str(e) and isinstance(e, TimeoutError)
        c.set(ns + "k", "after the timeout")
        event = changes.next(timeout=datetime.timedelta(seconds=5))
        assert isinstance(event, mqstate.Change) and event.text == "after the timeout"

    async def main() -> None:
        async with mqstate.AsyncClient(live.url) as a, a.observe(ns + "a") as events:
            waiting = asyncio.ensure_future(events.next())
            await asyncio.sleep(0.1)
            waiting.cancel()
            try:
                await waiting
            except asyncio.CancelledError:
                pass
            try:
                await events.next(timeout=0.1)
                raise AssertionError("no event was expected")
            except mqstate.MqstateTimeoutError:
                pass
            await a.set(ns + "a", "one")
            await a.set(ns + "a", "two")
            got = [await events.next(timeout=5) for _ in range(2)]
            assert [e.text for e in got if isinstance(e, mqstate.Change)] == ["one", "two"]

    asyncio.run(main())
