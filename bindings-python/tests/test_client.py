"""Every method and option of both clients against a live store (embedded broker and
mosquitto), and every error a user can provoke, by class and code."""

from __future__ import annotations

import asyncio
import datetime
import json
import threading
import time
from pathlib import Path
from typing import Dict, List

import pytest

import mqstate
from live import LiveStore, free_port
from mqstate import errors

ROOT = Path(__file__).resolve().parents[2]


def test_blocking_set_get_delete_vdel(live: LiveStore, ns: str) -> None:
    with mqstate.Client(live.url) as c:
        assert c.get(ns + "k") is None
        first = c.set(ns + "k", "hello")
        assert first.applied and first and isinstance(first.version, mqstate.Hlc)
        got = c.get(ns + "k")
        assert got is not None and got.value == b"hello" and got.text == "hello"
        assert got.version == first.version
        assert c.set(ns + "k", b"other", condition="nx").applied is False
        again = c.set(ns + "k", bytearray(b"hello"), condition="nex")
        assert again.applied and again.version is not None and again.version > first.version
        assert c.vdel(ns + "k", "nope") == "value_mismatch"
        assert c.vdel(ns + "k", memoryview(b"hello")) == "deleted"
        assert c.vdel(ns + "k", "hello") == "not_found"
        c.set(ns + "k", "x")
        assert c.delete(ns + "k") == 1
        assert c.delete(ns + "k") == 0
        assert isinstance(c.client_id, str) and c.connected


def test_binary_values_and_str_keys_are_bytes_exact(live: LiveStore, ns: str) -> None:
    with mqstate.Client(live.url) as c:
        blob = bytes(range(256)) * 40
        c.set(ns + "ключ", blob)
        got = c.get((ns + "ключ").encode())
        assert got is not None and got.value == blob


def test_expiry_persist_timeout_and_fencing_options(live: LiveStore, ns: str) -> None:
    with mqstate.Client(live.url, request_timeout=5) as c:
        c.set(ns + "short", "v", expiry=datetime.timedelta(milliseconds=300))
        c.set(ns + "long", "v", expiry=30, persist=True, timeout=2.5)
        time.sleep(1.0)
        assert c.get(ns + "short") is None
        assert c.get(ns + "long", timeout=2) is not None
        lock = c.lock(ns + "lock", lease=5)
        token = lock.try_acquire()
        assert token is not None and lock.fencing_token == token
        c.set(ns + "fenced", "v", fencing_token=token)
        with pytest.raises(errors.FencingTokenRequiredError) as e:
            c.set(ns + "fenced", "w")
        assert e.value.code == "fencing_token_required"
        assert e.value.text == "a fencing token is required for this request"
        c.set(ns + "fenced", "w", fencing_token=str(token))
        assert c.delete(ns + "fenced", fencing_token=token) == 1
        lock.release()


def test_argument_errors(live: LiveStore, ns: str) -> None:
    with mqstate.Client(live.url) as c:
        with pytest.raises(errors.InvalidArgumentError):
            c.set("", "v")
        # Durations: the core's converter and floors, with the option's name.
        with pytest.raises(errors.InvalidArgumentError, match="expiry"):
            c.set(ns + "k", "v", expiry=0)
        with pytest.raises(errors.InvalidArgumentError, match="expiry"):
            c.set(ns + "k", "v", expiry=0.0001)  # under 1 ms: surely a unit mistake
        with pytest.raises(errors.InvalidArgumentError, match="expiry"):
            c.set(ns + "k", "v", expiry=-1)
        with pytest.raises(errors.InvalidArgumentError, match="timeout"):
            c.get(ns + "k", timeout=float("nan"))
        with pytest.raises(errors.InvalidArgumentError, match="timeout"):
            c.get(ns + "k", timeout=float("inf"))
        with pytest.raises(errors.InvalidArgumentError, match="expiry"):
            c.set(ns + "k", "v", expiry=datetime.timedelta(seconds=-1))
        with pytest.raises(TypeError, match="seconds .int or float. or datetime.timedelta, not str"):
            c.set(ns + "k", "v", expiry="10s")  # type: ignore[arg-type]
        with pytest.raises(TypeError, match="not bool"):
            c.get(ns + "k", timeout=True)
        with pytest.raises(errors.InvalidArgumentError, match="lease"):
            c.lock(ns + "lock", lease=0.0001).try_acquire()  # the floor is checked on use
        with pytest.raises(errors.InvalidArgumentError, match="lease"):
            c.lock(ns + "lock").try_acquire(lease=datetime.timedelta(microseconds=10))
        with pytest.raises(errors.InvalidArgumentError, match='condition must be "nx" or "nex"'):
            c.set(ns + "k", "v", condition="sometimes")
        assert c.set(ns + "cond", "v", condition="NX").applied
        assert not c.set(ns + "cond", "w", condition="Nx").applied
        assert c.set(ns + "cond", "v", condition="NEX").applied
        with pytest.raises(errors.MalformedError):
            c.set(ns + "k", "v", fencing_token="not-a-version")
        with pytest.raises(TypeError):
            c.set(ns + "k", 42)  # type: ignore[arg-type]
        with pytest.raises(errors.FencingTokenSkewError):
            c.set(ns + "k", "v", fencing_token="004102444800000:00000:future")


def test_settings_errors_and_connect_errors() -> None:
    with pytest.raises(errors.InvalidArgumentError) as e:
        mqstate.Client("mqtt://127.0.0.1:1", keep_alive="soon")
    assert "keep_alive" in str(e.value)
    with pytest.raises(errors.InvalidArgumentError) as e:
        mqstate.AsyncClient(no_such_setting=1)
    assert "known: host" in str(e.value)
    with pytest.raises(errors.InvalidArgumentError):
        mqstate.Client("http://x")
    port = free_port()
    with pytest.raises(errors.ConnectRefusedError) as refused:
        mqstate.Client(f"mqtt://127.0.0.1:{port}", connect_timeout=5)
    assert isinstance(refused.value, ConnectionError) and refused.value.code == "connect_refused"
    with pytest.raises(errors.InvalidArgumentError):
        mqstate.Client.from_env()  # AIO_BROKER_HOSTNAME is not set


def test_settings_in_camel_case_and_their_text_grammar(live: LiveStore, ns: str) -> None:
    # The core maps camelCase names and parses every value as text, as in every language.
    with mqstate.Client(live.url, requestTimeout="2s", keepAlive=30, connect_timeout="500ms") as c:
        c.set(ns + "k", "v")
    with pytest.raises(errors.InvalidArgumentError, match="request_timeout|requestTimeout"):
        mqstate.Client(live.url, requestTimeout="soon")


def test_from_env(live: LiveStore, monkeypatch: pytest.MonkeyPatch, ns: str) -> None:
    monkeypatch.setenv("AIO_BROKER_HOSTNAME", "127.0.0.1")
    monkeypatch.setenv("AIO_BROKER_TCP_PORT", str(live.port))
    monkeypatch.setenv("AIO_MQTT_USE_TLS", "false")
    monkeypatch.setenv("AIO_MQTT_CLIENT_ID", "py-env-" + ns.replace("/", "-"))
    with mqstate.Client.from_env() as c:
        assert c.client_id.startswith("py-env-")
        c.set(ns + "k", "v")

    async def main() -> None:
        async with mqstate.AsyncClient.from_env(client_id="py-env-async-" + ns.replace("/", "-")) as a:
            assert (await a.get(ns + "k")) is not None

    asyncio.run(main())


def test_closed_clients_raise_closed(live: LiveStore, ns: str) -> None:
    closed = json.loads((ROOT / "core" / "vocabulary.json").read_text(encoding="utf-8"))["closed_message"]
    c = mqstate.Client(live.url)
    c.close()
    c.close()  # idempotent
    # The same words as every language (Node: "the client is closed").
    with pytest.raises(errors.ClosedError, match=f"^{closed}$"):
        c.get(ns + "k")
    # Entering a closed client raises, rather than failing at its first call.
    with pytest.raises(errors.ClosedError, match=f"^{closed}$"):
        with c:
            pass

    async def main() -> None:
        a = mqstate.AsyncClient(live.url)
        async with a:
            pass
        with pytest.raises(errors.ClosedError, match=f"^{closed}$"):
            await a.get(ns + "k")
        with pytest.raises(errors.ClosedError, match=f"^{closed}$"):
            async with a:
                pass

    asyncio.run(main())


def test_async_client_methods_and_closing(live: LiveStore, ns: str) -> None:
    async def main() -> None:
        client = mqstate.AsyncClient(live.url, request_timeout=datetime.timedelta(seconds=5))
        with pytest.raises(errors.ClosedError):
            await client.get(ns + "k")
        async with client:
            r = await client.set(ns + "k", "v", expiry=10)
            assert r.applied
            got = await client.get(ns + "k", timeout=3)
            assert got is not None and got.version == r.version
            assert await client.vdel(ns + "k", "v") == "deleted"
            assert await client.delete(ns + "k") == 0
        await client.close()
        with pytest.raises(errors.ClosedError):
            await client.set(ns + "k", "v")

    asyncio.run(main())


def test_thousand_concurrent_async_sets(live: LiveStore, ns: str) -> None:
    async def main() -> None:
        async with mqstate.AsyncClient(live.url) as c:
            results = await asyncio.gather(*(c.set(f"{ns}{i}", str(i)) for i in range(1000)))
            assert all(r.applied for r in results)
            versions = {str(r.version) for r in results}
            assert len(versions) == 1000
            got = await asyncio.gather(*(c.get(f"{ns}{i}") for i in range(0, 1000, 97)))
            assert [g.text for g in got if g] == [str(i) for i in range(0, 1000, 97)]

    asyncio.run(main())


def test_eight_threads_share_one_blocking_client(live: LiveStore, ns: str) -> None:
    failures: List[BaseException] = []
    with mqstate.Client(live.url) as c:

        def work(t: int) -> None:
            try:
                for i in range(50):
                    c.set(f"{ns}{t}/{i}", f"{t}:{i}")
                    got = c.get(f"{ns}{t}/{i}")
                    assert got is not None and got.text == f"{t}:{i}"
            except BaseException as e:  # noqa: BLE001 - reported below
                failures.append(e)

        threads = [threading.Thread(target=work, args=(t,)) for t in range(8)]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
    assert not failures, failures


def test_a_blocking_call_off_the_main_thread_returns_and_raises_the_same(
    live: LiveStore, ns: str
) -> None:
    # Off the main thread, where Python runs no signal handler, a call waits in one go
    # instead of in slices: its result and its errors must be those of the main thread.
    seen: Dict[str, object] = {}
    with mqstate.Client(live.url) as c:
        c.set(ns + "k", "v")

        def work() -> None:
            try:
                got = c.get(ns + "k")
                seen["get"] = got.text if got else None
                seen["missing"] = c.get(ns + "nothing")
                try:
                    c.set("", "x")
                except mqstate.InvalidArgumentError as e:
                    seen["error"] = type(e).__name__
            except BaseException as e:  # noqa: BLE001 - reported below
                seen["failure"] = e

        th = threading.Thread(target=work)
        th.start()
        th.join(30)
        assert not th.is_alive()
    assert seen == {"get": "v", "missing": None, "error": "InvalidArgumentError"}


def test_cancelling_an_asyncio_task_cancels_the_core_call(live: LiveStore, ns: str) -> None:
    async def main() -> None:
        async with mqstate.AsyncClient(live.url) as a, mqstate.AsyncClient(live.url) as b:
            held = a.lock(ns + "lock", lease=10)
            assert await held.try_acquire() is not None
            waiting = asyncio.ensure_future(b.lock(ns + "lock", lease=10).acquire())
            await asyncio.sleep(0.2)
            waiting.cancel()
            with pytest.raises(asyncio.CancelledError):
                await waiting
            assert await held.release()
            await asyncio.sleep(0.3)
            assert await held.holder() is None, "the cancelled acquire did not take the lock"

    asyncio.run(main())


def test_timeouts_are_timeout_errors(fresh_mosquitto: LiveStore, ns: str) -> None:
    with mqstate.Client(fresh_mosquitto.url) as c:
        fresh_mosquitto.stop_store()
        started = time.monotonic()
        with pytest.raises(errors.MqstateTimeoutError) as e:
            c.set(ns + "k", "v", timeout=0.5)
        assert isinstance(e.value, TimeoutError) and e.value.code == "timeout"
        # mosquitto routed it to nobody (PUBACK 0x10) every time: the timeout (shorter than
        # the no-store window) names the cause, and the write was never delivered.
        assert "no state store is subscribed" in str(e.value)
        assert not e.value.may_have_applied, "routed to nobody: not applied"
        assert time.monotonic() - started < 5
        fresh_mosquitto.start_store()


def test_no_call_outlives_its_timeout_across_store_and_broker_restarts(
    fresh_mosquitto: LiveStore, ns: str
) -> None:
    timeout = 2.0
    outcomes: List[str] = []
    late: List[float] = []
    with mqstate.Client(fresh_mosquitto.url, reconnect_max_delay=0.2) as c:

        def work(t: int) -> None:
            for i in range(40):
                started = time.monotonic()
                try:
                    c.set(f"{ns}{t}/{i}", "v", timeout=timeout)
                    outcomes.append("ok")
                except mqstate.MqstateError as e:
                    assert e.code in ("timeout", "connection_lost"), e
                    outcomes.append(e.code)
                took = time.monotonic() - started
                if took > timeout + 1.0:
                    late.append(took)

        threads = [threading.Thread(target=work, args=(t,)) for t in range(4)]
        for th in threads:
            th.start()
        time.sleep(0.3)
        fresh_mosquitto.restart_store()
        time.sleep(0.3)
        fresh_mosquitto.restart_broker()
        for th in threads:
            th.join()
        assert not late, f"calls outlived their timeout: {late}"
        assert "ok" in outcomes and len(outcomes) == 160
        # And the client recovers.
        c.set(ns + "after", "v", timeout=10)
