"""OpenTelemetry (``mqstate.telemetry``): spans and metrics through the application's own
OpenTelemetry SDK, read back with its in-memory exporter and reader; the trace context on
the wire; and nothing imported when OpenTelemetry is absent."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import threading
from typing import Any, Iterator, List, Tuple

import pytest
from opentelemetry import metrics, trace
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

import mqstate
from mqstate import telemetry
from mqstate.testing import LocalStore
from live import LiveStore

N = telemetry.NAMES
EXPORTER = InMemorySpanExporter()
READER = InMemoryMetricReader()


@pytest.fixture(scope="module", autouse=True)
def providers() -> Iterator[None]:
    """The SDK's providers, once per process (OpenTelemetry refuses a second global one)."""
    if not isinstance(trace.get_tracer_provider(), TracerProvider):
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(EXPORTER))
        trace.set_tracer_provider(provider)
        metrics.set_meter_provider(MeterProvider(metric_readers=[READER]))
    yield


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    EXPORTER.clear()
    yield EXPORTER
    telemetry.configure(record_keys=False)


def ours(exporter: InMemorySpanExporter) -> List[ReadableSpan]:
    return [
        s for s in exporter.get_finished_spans()
        if s.instrumentation_scope is not None and s.instrumentation_scope.name == "mqstate"
    ]


def test_each_call_is_a_client_span_child_of_the_callers(spans: InMemorySpanExporter) -> None:
    app = trace.get_tracer("app")
    with LocalStore() as store, mqstate.Client(store.url) as client:
        with app.start_as_current_span("handle request") as parent:
            client.set("tel/k", "v")
            assert client.get("tel/k") is not None
            client.vdel("tel/k", "other")
            client.delete("tel/k")
        got = ours(spans)
        assert [s.name for s in got] == ["SET", "GET", "VDEL", "DEL"]
        for s in got:
            assert s.kind == SpanKind.CLIENT
            assert s.parent is not None and s.parent.span_id == parent.get_span_context().span_id
            assert s.context.trace_id == parent.get_span_context().trace_id
            attributes = dict(s.attributes or {})
            assert attributes[N["DB_SYSTEM_NAME"]] == N["DB_SYSTEM"]
            assert attributes[N["DB_OPERATION_NAME"]] == s.name
            assert attributes[N["SERVER_ADDRESS"]] == "127.0.0.1"
            assert attributes[N["SERVER_PORT"]] == int(store.url.rsplit(":", 1)[1])
            assert N["KEY"] not in attributes, "no key values unless asked"
            assert N["ERROR_TYPE"] not in attributes
            assert s.status.status_code != StatusCode.ERROR


def test_keys_only_when_asked(spans: InMemorySpanExporter) -> None:
    telemetry.configure(record_keys=True)
    with LocalStore() as store, mqstate.Client(store.url) as client:
        client.set(b"tel/\xffbin", "v")
    (span,) = ours(spans)
    assert (span.attributes or {})[N["KEY"]] == "tel/\\xffbin"


def test_a_failed_call_carries_its_error_type(spans: InMemorySpanExporter) -> None:
    with LocalStore() as store, mqstate.Client(store.url) as client:
        with pytest.raises(mqstate.InvalidArgumentError):
            client.set("tel/k", "v", expiry=-1)
        store.fail_next(1, "fencing_token_lower_version")
        with pytest.raises(mqstate.MqstateError) as refused:
            client.set("tel/k", "v")
    first, second = ours(spans)
    assert (first.attributes or {})[N["ERROR_TYPE"]] == "invalid_argument"
    assert first.status.status_code == StatusCode.ERROR
    assert (second.attributes or {})[N["ERROR_TYPE"]] == refused.value.code == "fencing_token_lower_version"


def test_a_cache_hit_makes_no_span(spans: InMemorySpanExporter) -> None:
    with LocalStore() as store, mqstate.Client(store.url, cache=True) as client:
        client.set("tel/c", "v")
        client.get("tel/c")
        before = len(ours(spans))
        for _ in range(10):
            assert client.get("tel/c") is not None
        stats = client.cache_stats()
        assert stats is not None and stats.hits >= 10
    assert len(ours(spans)) == before


def test_the_request_carries_the_span_context(live: LiveStore, spans: InMemorySpanExporter) -> None:
    if live.kind != "mosquitto":
        pytest.skip("the wire is tapped on mosquitto")
    seen: List[List[Tuple[str, str]]] = []
    got = threading.Event()
    import paho.mqtt.client as paho
    from paho.mqtt.enums import CallbackAPIVersion

    tap = paho.Client(CallbackAPIVersion.VERSION2, protocol=paho.MQTTv5)
    subscribed = threading.Event()
    tap.on_subscribe = lambda *_: subscribed.set()

    def on_message(_c: Any, _u: Any, message: Any) -> None:
        props = getattr(message.properties, "UserProperty", [])
        seen.append(list(props))
        if any(k == "traceparent" for k, _ in props):
            got.set()

    tap.on_message = on_message
    tap.connect("127.0.0.1", live.port)
    tap.subscribe(mqstate.topics.REQUEST_TOPIC, qos=1)
    tap.loop_start()
    try:
        assert subscribed.wait(10)
        with mqstate.Client(live.url) as client:
            client.set("tel/wire", "v")
        assert got.wait(10), seen
    finally:
        tap.loop_stop()
        tap.disconnect()
    (span,) = [s for s in ours(spans) if s.name == "SET"]
    context = span.context
    want = f"00-{context.trace_id:032x}-{context.span_id:016x}-{int(context.trace_flags):02x}"
    carried = dict(next(p for p in seen if any(k == "traceparent" for k, _ in p)))
    assert carried["traceparent"] == want


def test_async_calls_follow_the_tasks_context(spans: InMemorySpanExporter) -> None:
    app = trace.get_tracer("app")

    async def main(url: str) -> Tuple[int, int]:
        async with mqstate.AsyncClient(url) as client:
            async def one(i: int) -> int:
                with app.start_as_current_span(f"task {i}") as parent:
                    await client.set(f"tel/a{i}", "v")
                    return parent.get_span_context().span_id
            a, b = await asyncio.gather(one(1), one(2))
            return a, b

    with LocalStore() as store:
        a, b = asyncio.run(main(store.url))
    parents = sorted(s.parent.span_id for s in ours(spans) if s.parent is not None)
    assert parents == sorted([a, b])


def test_metrics_use_the_cores_names_and_units(spans: InMemorySpanExporter) -> None:
    with LocalStore() as store, mqstate.Client(store.url, cache=True) as client:
        client.set("tel/m", "v")
        client.get("tel/m")
        client.get("tel/m")
        client_id = client.client_id
        data = READER.get_metrics_data()
    assert data is not None
    found = {
        m.name: m
        for rm in data.resource_metrics
        for sm in rm.scope_metrics
        if sm.scope.name == "mqstate"
        for m in sm.metrics
    }
    duration = found[N["CALL_DURATION"]]
    assert duration.unit == "s"
    operations = {dict(p.attributes or {})[N["DB_OPERATION_NAME"]] for p in duration.data.data_points}
    assert {"SET", "GET"} <= operations
    for name, unit, _kind, source, _description in telemetry.METRICS:
        if source == "call":
            continue
        assert name in found, f"{name} not reported"
        assert found[name].unit == unit
    hits = [getattr(p, "value") for p in found["mqstate.cache.hits"].data.data_points
            if dict(p.attributes or {})[N["CLIENT_ID"]] == client_id]
    assert hits and hits[0] >= 1


def test_nothing_is_imported_without_opentelemetry(embedded: LiveStore) -> None:
    program = f"""
import sys
class Absent:
    def find_spec(self, name, path=None, target=None):
        if name == "opentelemetry" or name.startswith("opentelemetry."):
            raise ImportError("absent")
sys.meta_path.insert(0, Absent())
import mqstate
with mqstate.Client({embedded.url!r}) as c:
    c.set("tel/absent", "v")
    assert c.get("tel/absent").text == "v"
loaded = [m for m in sys.modules if m.startswith("opentelemetry")]
assert not loaded, loaded
print("ok")
"""
    out = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr


def test_locks_and_notifications_are_counted(spans: InMemorySpanExporter) -> None:
    def values(client_id: str) -> dict[str, Any]:
        data = READER.get_metrics_data()
        assert data is not None
        return {
            m.name: getattr(p, "value")
            for rm in data.resource_metrics
            for sm in rm.scope_metrics
            if sm.scope.name == "mqstate"
            for m in sm.metrics
            for p in m.data.data_points
            if dict(p.attributes or {}).get(N["CLIENT_ID"]) == client_id
        }

    with LocalStore() as store, mqstate.Client(store.url) as client, mqstate.Client(store.url) as writer:
        with client.observe("tel/watched") as changes:
            writer.set("tel/watched", "1")
            assert changes.next(timeout=20) is not None
        lock = client.lock("tel/lock", lease=5)
        assert lock.try_acquire() is not None
        held = values(client.client_id)
        lock.release()
        after = values(client.client_id)
    assert held["mqstate.notifications.received"] >= 1
    assert held["mqstate.locks.acquired"] == 1 and held["mqstate.locks.held"] == 1
    assert after["mqstate.locks.held"] == 0 and after["mqstate.locks.lost"] == 0


def test_observe_and_each_scan_page_are_client_spans(spans: InMemorySpanExporter) -> None:
    app = trace.get_tracer("app")
    with LocalStore() as store, mqstate.Client(store.url) as client:
        for i in range(3):
            client.set(f"tel/s{i}", "v")
        spans.clear()
        with app.start_as_current_span("handle request") as parent:
            with client.observe("tel/s0"):
                pass
            keys = list(client.scan("tel/s*"))
    assert sorted(keys) == [b"tel/s0", b"tel/s1", b"tel/s2"]
    got = [s for s in ours(spans) if s.name in ("KEYNOTIFY", "SCAN")]
    names = [s.name for s in got]
    assert names[0] == "KEYNOTIFY" and names.count("KEYNOTIFY") == 1, names
    assert names.count("SCAN") >= 1, "a span per page"
    for s in got:
        assert s.kind == SpanKind.CLIENT
        assert s.parent is not None and s.parent.span_id == parent.get_span_context().span_id
        attributes = dict(s.attributes or {})
        assert attributes[N["DB_OPERATION_NAME"]] == s.name
        assert attributes[N["SERVER_ADDRESS"]] == "127.0.0.1"
        assert N["KEY"] not in attributes, "no key (or pattern) unless asked"


def test_async_observe_and_scan_pages_are_spans(spans: InMemorySpanExporter) -> None:
    app = trace.get_tracer("app")

    async def main(url: str) -> int:
        async with mqstate.AsyncClient(url) as client:
            await client.set("tel/as", "v")
            with app.start_as_current_span("task") as parent:
                async with client.observe("tel/as"):
                    pass
                assert [k async for k in client.scan("tel/as*")] == [b"tel/as"]
                return parent.get_span_context().span_id

    with LocalStore() as store:
        parent = asyncio.run(main(store.url))
    got = [s for s in ours(spans) if s.name in ("KEYNOTIFY", "SCAN")]
    assert [s.name for s in got][:2] == ["KEYNOTIFY", "SCAN"]
    assert all(s.parent is not None and s.parent.span_id == parent for s in got)


def test_lock_and_election_operations_are_internal_spans(spans: InMemorySpanExporter) -> None:
    app = trace.get_tracer("app")
    with LocalStore() as store, mqstate.Client(store.url) as client:
        with app.start_as_current_span("handle request") as parent:
            lock = client.lock("tel/lock", lease=5)
            assert lock.try_acquire() is not None
            assert lock.renew() is not None
            assert lock.release()
            lock.acquire()
            lock.release()
            lock.edit("tel/edited", lambda _: "v")
            election = client.election("tel/election", "a", term=5)
            assert election.try_campaign()
            assert election.resign()
            election.campaign()
            election.resign()
    ops = [s for s in ours(spans) if s.kind == SpanKind.INTERNAL]
    assert [s.name for s in ops] == [
        N["SPAN_LOCK_TRY_ACQUIRE"], N["SPAN_LOCK_RENEW"], N["SPAN_LOCK_RELEASE"],
        N["SPAN_LOCK_ACQUIRE"], N["SPAN_LOCK_RELEASE"], N["SPAN_LOCK_EDIT"],
        N["SPAN_ELECTION_TRY_CAMPAIGN"], N["SPAN_ELECTION_RESIGN"],
        N["SPAN_ELECTION_CAMPAIGN"], N["SPAN_ELECTION_RESIGN"],
    ]
    assert ops[0].name == "mqstate.lock.try_acquire", "the core's spelling"
    for s in ops:
        assert s.parent is not None and s.parent.span_id == parent.get_span_context().span_id
        attributes = dict(s.attributes or {})
        assert attributes[N["DB_SYSTEM_NAME"]] == N["DB_SYSTEM"]
        assert N["KEY"] not in attributes, "no lock key unless asked"
        assert N["ERROR_TYPE"] not in attributes
    # The requests are made inside the core: no span of their own (their trace context is
    # the operation's span's: tests/tests/client_envelope.rs).
    assert not [s for s in ours(spans) if s.kind == SpanKind.CLIENT]


def test_a_failed_lock_operation_carries_its_error_type(spans: InMemorySpanExporter) -> None:
    telemetry.configure(record_keys=True)
    with LocalStore() as store, mqstate.Client(store.url) as holder, mqstate.Client(store.url) as client:
        assert holder.lock("tel/held", lease=5).try_acquire() is not None
        spans.clear()
        with pytest.raises(mqstate.MqstateTimeoutError) as failed:
            client.lock("tel/held").acquire(timeout=0.2)
    (span,) = [s for s in ours(spans) if s.name == N["SPAN_LOCK_ACQUIRE"]]
    attributes = dict(span.attributes or {})
    assert attributes[N["ERROR_TYPE"]] == failed.value.code == "timeout"
    assert span.status.status_code == StatusCode.ERROR
    assert attributes[N["KEY"]] == "tel/held", "the lock key, when asked"


def test_lock_operations_are_not_call_durations(spans: InMemorySpanExporter) -> None:
    with LocalStore() as store, mqstate.Client(store.url) as client:
        lock = client.lock("tel/timed", lease=5)
        lock.acquire()
        lock.release()
        data = READER.get_metrics_data()
    assert data is not None
    operations = {
        dict(p.attributes or {}).get(N["DB_OPERATION_NAME"])
        for rm in data.resource_metrics
        for sm in rm.scope_metrics
        if sm.scope.name == "mqstate"
        for m in sm.metrics
        if m.name == N["CALL_DURATION"]
        for p in m.data.data_points
    }
    assert not {o for o in operations if isinstance(o, str) and o.startswith("mqstate.")}
