"""mqstate.testing.LocalStore (a store in this process, with faults on demand) and the pytest
plugin's fixtures, through the public Python API."""

from __future__ import annotations

import asyncio
import datetime
import threading
from typing import List

import pytest

import mqstate
from mqstate.testing import LocalStore

pytest_plugins = ["pytester"]


def test_start_url_port_stop() -> None:
    store = LocalStore.start()
    try:
        assert store.is_running
        assert store.url == f"mqtt://127.0.0.1:{store.port}"
        assert store.port > 0
        with mqstate.Client(store.url) as client:
            client.set("k", "v")
            assert store.keys() == [b"k"]
    finally:
        store.stop()
    assert not store.is_running
    store.stop()  # again: nothing
    with pytest.raises(mqstate.ClosedError, match="stopped"):
        store.keys()
    with pytest.raises(mqstate.ClosedError):
        store.cut_connections()
    with pytest.raises(mqstate.ClosedError):
        store.held_requests()
    with pytest.raises(mqstate.ClosedError):
        store.drop_notifications(1)
    with pytest.raises(mqstate.ClosedError):
        store.forget_registrations()
    with pytest.raises(mqstate.ClosedError):
        with store:
            pass


def test_a_store_not_started_refuses_calls() -> None:
    store = LocalStore()
    assert not store.is_running
    with pytest.raises(mqstate.ClosedError, match="not started"):
        store.url
    with pytest.raises(mqstate.ClosedError, match="not started"):
        store.get("k")
    store.stop()  # nothing to stop


def test_stores_share_nothing() -> None:
    with LocalStore() as a, LocalStore() as b:
        assert a.port != b.port
        with mqstate.Client(a.url) as client:
            client.set("only-in-a", "1")
        a.fail_next(5, "quota_exceeded")
        assert b.keys() == []
        with mqstate.Client(b.url) as client:
            assert client.set("k", "v").applied  # b has no fault armed
        assert a.keys() == [b"only-in-a"]


def test_get_is_shaped_like_the_clients_get(mqstate_store: LocalStore, mqstate_client: mqstate.Client) -> None:
    written = mqstate_client.set("k", b"\x00\xff")
    inside = mqstate_store.get("k")
    assert inside == mqstate_client.get("k")
    assert inside is not None and inside.value == b"\x00\xff" and inside.version == written.version
    assert mqstate_store.get(b"missing") is None


def test_keys_match_a_glob_in_byte_order(mqstate_store: LocalStore, mqstate_client: mqstate.Client) -> None:
    for key in ["b/2", "a/1", "b/1", "c"]:
        mqstate_client.set(key, "x")
    assert mqstate_store.keys() == [b"a/1", b"b/1", b"b/2", b"c"]
    assert mqstate_store.keys("b/*") == [b"b/1", b"b/2"]
    assert mqstate_store.keys(pattern=b"?") == [b"c"]


def test_clear_deletes_every_key_and_tells_observers(mqstate_store: LocalStore, mqstate_client: mqstate.Client) -> None:
    mqstate_client.set("a", "1")
    mqstate_client.set("b", "2", persist=True)
    with mqstate_client.observe("a") as changes:
        assert mqstate_store.clear() == 2
        change = changes.next(timeout=5)
        assert isinstance(change, mqstate.Change) and change.kind == "delete"
    assert mqstate_store.keys() == [] and mqstate_client.get("b") is None


def test_cut_connections_clients_resume(mqstate_store: LocalStore, mqstate_client: mqstate.Client) -> None:
    mqstate_client.set("k", "v")
    with mqstate_client.observe("k") as changes:
        assert mqstate_store.cut_connections() >= 1
        # The session was kept: the client resumes, its subscription still delivers.
        mqstate_client.set("k", "w")
        while True:
            event = changes.next(timeout=10)
            if isinstance(event, mqstate.Change):
                break
        assert event.value == b"w"
    value = mqstate_client.get("k")
    assert value is not None and value.text == "w"


def test_fail_next_answers_with_the_named_error(mqstate_store: LocalStore, mqstate_client: mqstate.Client) -> None:
    mqstate_client.set("k", "v")
    mqstate_store.fail_next(2, "fencing_token_lower_version", command="set")
    assert mqstate_client.get("k") is not None  # a GET is not a SET: answered
    for _ in range(2):
        with pytest.raises(mqstate.FencingTokenLowerVersionError):
            mqstate_client.set("k", "w")
    assert mqstate_client.set("k", "w").applied
    mqstate_store.fail_next(1, "quota_exceeded")  # any command
    with pytest.raises(mqstate.QuotaExceededError):
        mqstate_client.delete("k")
    mqstate_store.fail_next(3, "quota_exceeded")
    mqstate_store.fail_next(0, "quota_exceeded")  # disarms
    assert mqstate_client.delete("k") == 1


@pytest.mark.parametrize(
    "error, command", [("timeout", None), ("nope", None), ("", None), ("quota_exceeded", "PUT")]
)
def test_fail_next_refuses_what_the_service_cannot_answer(
    mqstate_store: LocalStore, error: str, command: str
) -> None:
    with pytest.raises(mqstate.InvalidArgumentError):
        mqstate_store.fail_next(1, error, command)


def test_pause_holds_answers_then_gives_them(mqstate_store: LocalStore, mqstate_client: mqstate.Client) -> None:
    mqstate_client.set("k", "v")
    mqstate_store.pause(datetime.timedelta(seconds=0.5))
    with pytest.raises(mqstate.MqstateTimeoutError):
        mqstate_client.get("k", timeout=0.1)
    value = mqstate_client.get("k", timeout=10)  # answered once the pause ends
    assert value is not None and value.text == "v"


@pytest.mark.parametrize("duration", [0, 0.0001, -1, float("nan")])
def test_pause_refuses_less_than_a_millisecond(mqstate_store: LocalStore, duration: float) -> None:
    with pytest.raises(mqstate.InvalidArgumentError):
        mqstate_store.pause(duration)


@pytest.mark.parametrize("duration", [0, 0.0001, -1, float("nan")])
def test_drop_notifications_refuses_less_than_a_millisecond(
    mqstate_store: LocalStore, duration: float
) -> None:
    with pytest.raises(mqstate.InvalidArgumentError):
        mqstate_store.drop_notifications(duration)
    assert mqstate_store.dropped_notifications() == 0


def test_drop_notifications_silences_observers_for_a_while(
    mqstate_store: LocalStore, mqstate_client: mqstate.Client
) -> None:
    with mqstate_client.observe("k") as changes:
        mqstate_store.drop_notifications(datetime.timedelta(seconds=0.5))
        mqstate_client.set("k", "lost")
        for _ in range(4000):
            if mqstate_store.dropped_notifications() == 1:
                break
            threading.Event().wait(0.005)
        assert mqstate_store.dropped_notifications() == 1
        with pytest.raises(mqstate.MqstateTimeoutError):
            changes.next(timeout=0.1)  # the notification was dropped
        threading.Event().wait(0.6)  # the mute's span: this test is about it passing
        mqstate_client.set("k", "seen")
        change = changes.next(timeout=10)
        assert isinstance(change, mqstate.Change) and change.value == b"seen", change
    assert mqstate_store.dropped_notifications() == 1


def test_forget_registrations_counts_and_silences_them(
    mqstate_store: LocalStore, mqstate_client: mqstate.Client
) -> None:
    with mqstate_client.observe("a") as a, mqstate_client.observe("b"):
        assert mqstate_store.forget_registrations() == 2
        assert mqstate_store.forget_registrations() == 0
        mqstate_client.set("a", "unseen")
        with pytest.raises(mqstate.MqstateTimeoutError):
            a.next(timeout=0.2)  # nothing tells the client


def test_pause_takes_seconds_not_booleans(mqstate_store: LocalStore) -> None:
    with pytest.raises(TypeError):
        mqstate_store.pause(True)  # bool is an int to mypy, not to the binding


def test_restart_fails_a_held_request_with_connection_lost(
    mqstate_store: LocalStore, mqstate_client: mqstate.Client
) -> None:
    mqstate_client.set("k", "v")
    assert mqstate_store.held_requests() == 0
    mqstate_store.pause(datetime.timedelta(seconds=5))
    outcome: List[object] = []

    def read() -> None:
        try:
            outcome.append(mqstate_client.get("k", timeout=10))
        except mqstate.MqstateError as e:
            outcome.append(e)

    reader = threading.Thread(target=read)
    reader.start()
    # Restarted before the request arrives, the store would answer it after the reconnect.
    for _ in range(4000):
        if mqstate_store.held_requests() == 1:
            break
        threading.Event().wait(0.005)
    assert mqstate_store.held_requests() == 1, "the pause never held the request"
    mqstate_store.restart()
    reader.join(20)
    assert len(outcome) == 1 and isinstance(outcome[0], mqstate.ConnectionLostError), outcome
    assert mqstate_store.held_requests() == 0


@pytest.mark.parametrize("keep_data", [True, False])
def test_restart_keeps_only_persisted_keys_when_asked(
    mqstate_store: LocalStore, mqstate_client: mqstate.Client, keep_data: bool
) -> None:
    kept = mqstate_client.set("persisted", "1", persist=True)
    mqstate_client.set("volatile", "2")
    port = mqstate_store.port
    mqstate_store.restart(keep_data=keep_data)
    assert mqstate_store.is_running and mqstate_store.port == port
    if keep_data:
        assert mqstate_store.keys() == [b"persisted"]
        inside = mqstate_store.get("persisted")
        assert inside is not None and inside.version == kept.version
    else:
        assert mqstate_store.keys() == []
    # The client reconnects by itself.
    assert mqstate_client.set("after", "3").applied
    mqstate_store.restart()  # default: nothing kept
    assert mqstate_store.keys() == []


def test_async_with_and_calls_from_a_coroutine() -> None:
    async def main() -> List[bytes]:
        async with LocalStore() as store:
            async with mqstate.AsyncClient(store.url) as client:
                await client.set("k", "v")
                assert store.cut_connections() >= 1
                assert (await client.get("k")) == store.get("k")
                return store.keys()

    assert asyncio.run(main()) == [b"k"]


def test_calls_from_several_threads(mqstate_store: LocalStore, mqstate_client: mqstate.Client) -> None:
    errors: List[BaseException] = []

    def work(i: int) -> None:
        try:
            mqstate_client.set(f"t/{i}", "x")
            assert mqstate_store.get(f"t/{i}") is not None
            mqstate_store.cut_connections()
        except BaseException as e:  # reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert len(mqstate_store.keys("t/*")) == 4


def test_the_plugin_is_registered_by_the_package(request: pytest.FixtureRequest) -> None:
    import mqstate.pytest_plugin

    assert request.config.pluginmanager.get_plugin("mqstate") is mqstate.pytest_plugin


def test_fixtures_one_store_per_test_stopped_after(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_inner="""
        import pytest
        import mqstate

        seen = []

        def test_sync(mqstate_store, mqstate_client):
            assert mqstate_client.set("k", "v").applied
            assert mqstate_store.keys() == [b"k"]
            seen.append(mqstate_store)

        @pytest.mark.asyncio
        async def test_async(mqstate_store, mqstate_async_client):
            assert mqstate_store.keys() == []  # a store of its own
            await mqstate_async_client.set("a", "1")
            assert mqstate_store.keys() == [b"a"]
            seen.append(mqstate_store)

        def test_both_stopped_and_distinct():
            assert len(seen) == 2 and seen[0] is not seen[1]
            assert not seen[0].is_running and not seen[1].is_running
        """
    )
    result = pytester.runpytest("-p", "no:cacheprovider", "-o", "asyncio_default_fixture_loop_scope=function")
    result.assert_outcomes(passed=3)
