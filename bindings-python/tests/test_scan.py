"""SCAN through both clients: iteration, pages, the end, binary keys, argument errors, and
pages that time out or are cancelled leaving the pager usable (retried from its token)."""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys
import time
from typing import List

import pytest

import mqstate
from live import LiveStore
from mqstate import errors

#: The emulator's default page size (keys); more keys than this need several pages.
PAGE = 500


def fill(client: mqstate.Client, ns: str, n: int) -> List[bytes]:
    keys = [f"{ns}k/{i:04d}".encode() for i in range(n)]
    for key in keys:
        client.set(key, "v")
    return keys


def test_blocking_iteration_and_pages(live: LiveStore, ns: str) -> None:
    with mqstate.Client(live.url) as c:
        keys = fill(c, ns, PAGE + 20)
        c.set(ns + "other", "v")
        got = list(c.scan(ns + "k/*"))
        assert sorted(got) == keys and len(got) == len(keys)
        assert all(isinstance(k, bytes) for k in got)

        pager = c.scan((ns + "k/*").encode())
        assert isinstance(pager, mqstate.Pager) and not pager.done
        first = pager.next_page()
        assert first is not None and 0 < len(first) <= PAGE and not pager.done
        rest: List[bytes] = []
        while (page := pager.next_page()) is not None:
            rest.extend(page)
        assert pager.done
        assert sorted(first + rest) == keys
        # After the last page: None, every time, and iteration yields nothing.
        assert pager.next_page() is None and pager.next_page() is None
        assert list(pager) == []


def test_async_iteration_and_pages(live: LiveStore, ns: str) -> None:
    async def main() -> None:
        async with mqstate.AsyncClient(live.url) as c:
            await asyncio.gather(*(c.set(f"{ns}a/{i}", "v") for i in range(30)))
            got = [key async for key in c.scan(ns + "a/*")]
            assert sorted(got) == sorted(f"{ns}a/{i}".encode() for i in range(30))
            pager = c.scan(ns + "a/1*")
            assert isinstance(pager, mqstate.AsyncPager)
            page = await pager.next_page()
            assert page is not None and sorted(page) == sorted(
                f"{ns}a/{i}".encode() for i in [1] + list(range(10, 20))
            )
            assert pager.done
            assert await pager.next_page() is None
            assert [k async for k in pager] == []
            assert [k async for k in c.scan(ns + "none/*")] == []

    asyncio.run(main())


def test_binary_keys_and_patterns(live: LiveStore, ns: str) -> None:
    with mqstate.Client(live.url) as c:
        odd = ns.encode() + b"bin/\r\n\x00\xff"
        plain = ns.encode() + b"bin/A"
        c.set(odd, "1")
        c.set(plain, "2")
        assert sorted(c.scan(ns.encode() + b"bin/*")) == sorted([odd, plain])
        assert list(c.scan(bytearray(ns.encode() + b"bin/\r\n*"))) == [odd]
        assert list(c.scan(memoryview(ns.encode() + b"bin/\r\n\x00?"))) == [odd]
        assert list(c.scan(ns + "bin/\\A")) == [plain]


def test_empty_pattern_and_bad_arguments(live: LiveStore) -> None:
    with mqstate.Client(live.url) as c:
        for pattern in ("", b""):
            with pytest.raises(errors.InvalidArgumentError) as e:
                c.scan(pattern)
            assert e.value.code == "invalid_argument"
        with pytest.raises(errors.InvalidArgumentError):
            c.scan("x*", timeout=-1)
        with pytest.raises(TypeError):
            c.scan(42)  # type: ignore[arg-type]
    c.close()
    with pytest.raises(errors.ClosedError):
        c.scan("x*")

    async def main() -> None:
        async with mqstate.AsyncClient(live.url) as a:
            with pytest.raises(errors.InvalidArgumentError):
                a.scan("")

    asyncio.run(main())


def test_failed_and_cancelled_pages_leave_the_pager_usable(fresh_mosquitto: LiveStore, ns: str) -> None:
    """A page that times out or is cancelled is asked for again from the same token: after
    the store comes back (empty, refilled with the same keys) the scan continues where the
    first page ended, without repeating it."""
    with mqstate.Client(fresh_mosquitto.url) as c:
        keys = fill(c, ns, PAGE + 50)
        pager = c.scan(ns + "k/*", timeout=0.5)
        first = pager.next_page()
        assert first is not None and len(first) == PAGE and not pager.done

        fresh_mosquitto.stop_store()
        for _ in range(2):
            with pytest.raises(errors.MqstateTimeoutError) as e:
                pager.next_page()
            assert isinstance(e.value, TimeoutError) and e.value.code == "timeout"
            assert not pager.done

        async def cancelled_page() -> None:
            async with mqstate.AsyncClient(fresh_mosquitto.url) as a:
                apager = a.scan(ns + "k/*", timeout=30)
                task = asyncio.ensure_future(apager.next_page())
                await asyncio.sleep(0.2)
                task.cancel()
                with pytest.raises(asyncio.CancelledError):
                    await task
                assert not apager.done

        asyncio.run(cancelled_page())

        fresh_mosquitto.start_store()
        fill(c, ns, PAGE + 50)
        rest = list(pager)
        assert pager.done
        assert len(rest) == 50, "the scan restarted instead of continuing from its token"
        assert sorted(first + rest) == keys



CTRL_C_PAGE = r"""
import signal, sys, time, mqstate
# Python leaves SIGINT ignored when it starts ignored (a background job of a shell).
signal.signal(signal.SIGINT, signal.default_int_handler)
c = mqstate.Client(sys.argv[1])
pager = c.scan("ctrl-c/*", timeout=30)
print("waiting", flush=True)
try:
    pager.next_page()
except KeyboardInterrupt:
    print(f"interrupted {time.monotonic()!r} done={pager.done}", flush=True)
    c.close()
    sys.exit(0)
sys.exit(3)
"""


def test_ctrl_c_interrupts_a_page_and_keeps_the_pager(fresh_mosquitto: LiveStore) -> None:
    fresh_mosquitto.stop_store()  # the page is never answered
    proc = subprocess.Popen(
        [sys.executable, "-c", CTRL_C_PAGE, fresh_mosquitto.url],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == b"waiting"
    time.sleep(0.3)
    sent = time.monotonic()  # CLOCK_MONOTONIC: the same clock in both processes
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    caught, done = out.decode().split("interrupted ")[1].split()
    assert float(caught) - sent < 2.0, f"the page noticed Ctrl-C after {float(caught) - sent:.2f} s"
    assert done == "done=False"
