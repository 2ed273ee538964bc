"""OpenTelemetry for mqstate's calls, through the application's own ``opentelemetry-api``.

Nothing to set up beyond OpenTelemetry itself: when ``opentelemetry-api`` is importable,
every call that goes to the store (``set``, ``get`` past the cache, ``delete``, ``vdel``,
``observe``'s KEYNOTIFY, each SCAN page) runs in a span of the tracer ``mqstate`` — a child
of the caller's current span, kind CLIENT, named by the operation (``GET``) — and its
duration is recorded in the histogram ``db.client.operation.duration``; each lock and
election operation (acquire, try_acquire, renew, release, edit; campaign, try_campaign,
resign) runs in an INTERNAL span named by the core (``mqstate.lock.acquire``); the
client's link, notifications, locks, elections and cache are read by observable
instruments when the application's metric reader collects. The span's trace context
travels with the requests (MQTT5 user properties ``traceparent``/``tracestate``; a lock
operation's requests, made inside the core, carry its span's), so a store that records it
(``mqstate serve --otlp-endpoint``) shows its side in the same trace.

Without ``opentelemetry-api`` nothing is imported and a call pays one comparison. With the
API but no SDK (a no-op provider) a call pays a non-recording span. A cache hit makes no
span and records nothing: hits are counted by ``mqstate.cache.hits``.

Names, units and attributes are the core's (:data:`NAMES`, :data:`METRICS`), the same in
every mqstate language; docs/telemetry.md lists them. Keys are not recorded unless
:func:`configure` ``(record_keys=True)``.
"""

from __future__ import annotations

import time
import weakref
from typing import Any, Awaitable, Callable, Optional, TypeVar

from . import _mqstate

__all__ = ["NAMES", "METRICS", "CALL_DURATION_BUCKETS", "configure"]

_names, _metrics, _buckets = _mqstate.telemetry_vocabulary()
#: The core's span, attribute and event names, by constant name (``NAMES["ERROR_TYPE"]``).
NAMES: dict[str, str] = dict(_names)
#: Every metric: ``(name, unit, kind, source, description)``.
METRICS: list[tuple[str, str, str, str, str]] = list(_metrics)
#: The bucket boundaries of ``db.client.operation.duration``, in seconds.
CALL_DURATION_BUCKETS: list[float] = list(_buckets)

T = TypeVar("T")

_record_keys = False
#: None: not looked for yet; False: opentelemetry-api is absent; else the instruments.
_otel: Any = None
#: The clients whose link and cache the observable instruments read.
_clients: "weakref.WeakSet[Any]" = weakref.WeakSet()


def configure(*, record_keys: bool = False) -> None:
    """``record_keys``: put each call's key on its span (``mqstate.key``). Off by default:
    keys can name people, devices or secrets."""
    global _record_keys
    _record_keys = bool(record_keys)


class _Instruments:
    """The tracer, the histogram and the observable instruments, made once per process."""

    def __init__(self) -> None:
        from opentelemetry import metrics, trace
        from opentelemetry.metrics import Observation
        from opentelemetry.trace import SpanKind, Status, StatusCode

        from . import __version__

        self.kind = SpanKind.CLIENT
        self.internal = SpanKind.INTERNAL
        self.status_error = lambda message: Status(StatusCode.ERROR, message)
        self.tracer = trace.get_tracer(NAMES["SCOPE"], __version__)
        meter = metrics.get_meter(NAMES["SCOPE"], __version__)
        duration = next(m for m in METRICS if m[0] == NAMES["CALL_DURATION"])
        try:
            self.duration = meter.create_histogram(
                duration[0], unit=duration[1], description=duration[4],
                explicit_bucket_boundaries_advisory=CALL_DURATION_BUCKETS,
            )
        except TypeError:  # an API older than 1.23 takes no advice
            self.duration = meter.create_histogram(duration[0], unit=duration[1], description=duration[4])
        for name, unit, kind, source, description in METRICS:
            if source == "call":
                continue
            make = meter.create_observable_gauge if kind == "gauge" else meter.create_observable_counter
            make(name, callbacks=[_observer(name, Observation)], unit=unit, description=description)


def _observer(name: str, observation: Any) -> Callable[[Any], list[Any]]:
    """The callback of one observable instrument: one observation per live client, its value
    the core's (``metric_values``)."""

    def observe(_options: Any) -> list[Any]:
        out = []
        for client in list(_clients):
            store = client._store
            if store is None:
                continue
            value = dict(store.metric_values()).get(name)
            if value is not None:
                out.append(observation(value, {NAMES["CLIENT_ID"]: store.client_id}))
        return out

    return observe


def _instruments() -> Any:
    global _otel
    if _otel is None:
        try:
            import opentelemetry.metrics  # noqa: F401
            import opentelemetry.trace  # noqa: F401
        except ImportError:
            _otel = False
        else:
            _otel = _Instruments()
    return _otel


def watch(client: Any) -> None:
    """Lets the observable instruments read ``client`` (a connected client)."""
    if _otel is not False and _instruments():
        _clients.add(client)


class _Call:
    """One call's span and start, until it ends."""

    __slots__ = ("otel", "span", "trace", "operation", "start")

    def __init__(self, otel: Any, span: Any, trace: Any, operation: Optional[str]) -> None:
        self.otel, self.span, self.trace, self.operation = otel, span, trace, operation
        self.start = time.perf_counter()

    def end(self, error: Optional[BaseException]) -> None:
        """Ends the span with the call's outcome, and records the duration of a request
        (``operation``; a lock or election operation has none: it may wait for long)."""
        seconds = time.perf_counter() - self.start
        span = self.span
        code = None
        if error is not None:
            code = getattr(error, "code", None) or type(error).__qualname__
            if span.is_recording():
                span.set_attribute(NAMES["ERROR_TYPE"], code)
                span.set_status(self.otel.status_error(str(error)))
        if self.trace is not None:
            for name, at, attrs in self.trace.take_events():
                span.add_event(name, dict(attrs), timestamp=at)
        span.end()
        if self.operation is not None:
            attributes = {NAMES["DB_OPERATION_NAME"]: self.operation}
            if code is not None:
                attributes[NAMES["ERROR_TYPE"]] = code
            self.otel.duration.record(seconds, attributes)


def _traced(native: Any, span: Any) -> tuple[Any, Any]:
    """``native`` (a client, pager, lock or election) traced by the recording ``span``: its
    requests carry the span's W3C trace context; ``(traced native, trace)``."""
    context = span.get_span_context()
    traceparent = f"00-{context.trace_id:032x}-{context.span_id:016x}-{int(context.trace_flags):02x}"
    return native.traced(traceparent, context.trace_state.to_header() or None)  # type: ignore[no-any-return]


def begin(
    native: Any, operation: str, key: Any = None, server: Optional[tuple[str, int]] = None
) -> tuple[Any, Optional[_Call]]:
    """Starts the CLIENT span of one request to the store, named by its verb: ``(native,
    call)``, where ``native`` is what to make the call with (a client, or a pager with its
    client's ``server``; traced when the span records) and ``call`` is None when
    OpenTelemetry is absent."""
    otel = _otel if _otel is not None else _instruments()
    if otel is False:
        return native, None
    span = otel.tracer.start_span(operation, kind=otel.kind)
    trace = None
    if span.is_recording():
        host, port = native.server if server is None else server
        span.set_attribute(NAMES["DB_SYSTEM_NAME"], NAMES["DB_SYSTEM"])
        span.set_attribute(NAMES["DB_OPERATION_NAME"], operation)
        span.set_attribute(NAMES["SERVER_ADDRESS"], host)
        span.set_attribute(NAMES["SERVER_PORT"], port)
        if _record_keys and key is not None:
            span.set_attribute(NAMES["KEY"], _mqstate.telemetry_key_text(key))
        native, trace = _traced(native, span)
    return native, _Call(otel, span, trace, operation)


def begin_operation(native: Any, name: str, key: Any = None) -> tuple[Any, Optional[_Call]]:
    """Starts the INTERNAL span of one lock or election operation, named by the core's
    constant ``name`` (``SPAN_LOCK_ACQUIRE``): ``(native, call)`` as :func:`begin`; the
    requests the core makes for it carry the span's trace context and events."""
    otel = _otel if _otel is not None else _instruments()
    if otel is False:
        return native, None
    span = otel.tracer.start_span(NAMES[name], kind=otel.internal)
    trace = None
    if span.is_recording():
        span.set_attribute(NAMES["DB_SYSTEM_NAME"], NAMES["DB_SYSTEM"])
        if _record_keys and key is not None:
            span.set_attribute(NAMES["KEY"], _mqstate.telemetry_key_text(key))
        native, trace = _traced(native, span)
    return native, _Call(otel, span, trace, None)


def finish(call: Optional[_Call], run: Callable[[], T]) -> T:
    """``run()`` inside the call's span (ended with its outcome)."""
    if call is None:
        return run()
    try:
        result = run()
    except BaseException as error:
        call.end(error)
        raise
    call.end(None)
    return result


async def finish_async(call: Optional[_Call], start: Callable[[], Awaitable[T]]) -> T:
    """``await start()`` inside the call's span (ended with its outcome, a refusal of the
    arguments included)."""
    if call is None:
        return await start()
    try:
        result = await start()
    except BaseException as error:
        call.end(error)
        raise
    call.end(None)
    return result
