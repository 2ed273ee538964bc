"""`mqstate serve --otlp-endpoint` against a real trace backend (Jaeger all-in-one, issue 57).

A raw MQTT5 client (paho-mqtt) sends requests carrying a known W3C `traceparent` (and
`tracestate`) as user properties; the store's spans are read back from Jaeger's query API:
same trace id, the given parent span id, named after the verb, service `mqstate-serve`, the
database attributes, `error.type` on a store error, nothing for an unsampled caller.

Run: `python3 -m pytest tests/telemetry` (paho-mqtt and pytest: the project venv of
scripts/lib/setup/python has both). The mqstate binary is $MQSTATE_BIN, else built with
`cargo build -p mqstate-cli`; Jaeger is $JAEGER_BIN, else target/tools/jaeger, built by
scripts/lib/setup/jaeger when missing (minutes the first time).
"""

import os
import queue
import secrets
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from jaeger import ROOT, Jaeger, free_port  # noqa: E402

mqtt = pytest.importorskip("paho.mqtt.client", reason="paho-mqtt (scripts/lib/setup/python)")
from paho.mqtt.packettypes import PacketTypes  # noqa: E402
from paho.mqtt.properties import Properties  # noqa: E402

REQUEST_TOPIC = "statestore/v1/FA9AE35F-2F64-47CD-9BFF-08E2B32A0FE8/command/invoke"
WAIT = 10.0


def mqstate_bin():
    explicit = os.environ.get("MQSTATE_BIN")
    if explicit:
        return explicit
    subprocess.run(
        ["cargo", "build", "-q", "-p", "mqstate-cli"],
        cwd=ROOT,
        check=True,
        env={**os.environ, "CARGO_BUILD_JOBS": os.environ.get("CARGO_BUILD_JOBS", "2")},
    )
    target = Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target"))
    return str(target / "debug" / "mqstate")


@pytest.fixture(scope="module")
def jaeger():
    with Jaeger.start() as running:
        yield running


@pytest.fixture(scope="module")
def store(jaeger):
    """`mqstate serve` exporting to Jaeger; yields its MQTT port."""
    binary = mqstate_bin()
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MQSTATE_", "OTEL_"))}
    proc = subprocess.Popen(
        [
            binary,
            "serve",
            "--listen",
            f"127.0.0.1:{port}",
            "--otlp-endpoint",
            jaeger.otlp_endpoint,
        ],
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    deadline = time.monotonic() + 20
    while True:
        if proc.poll() is not None:
            raise RuntimeError(f"mqstate serve exited: {proc.stderr.read().decode()}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            break
        except OSError:
            if time.monotonic() > deadline:
                proc.kill()
                raise
            time.sleep(0.1)
    yield port
    proc.terminate()
    try:
        proc.wait(timeout=15)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


class Client:
    """A paho MQTT5 client speaking the store's protocol (spec/protocol.md) by hand."""

    def __init__(self, port):
        self.id = f"otel-{uuid.uuid4().hex[:8]}"
        self.response_topic = f"clients/{self.id}/services/{REQUEST_TOPIC}/response"
        self.events = queue.Queue()
        self.client = mqtt.Client(
            mqtt.CallbackAPIVersion.VERSION2, client_id=self.id, protocol=mqtt.MQTTv5
        )
        self.client.on_connect = lambda c, u, f, rc, p: self.events.put(("connack", rc))
        self.client.on_subscribe = lambda c, u, mid, rcs, p: self.events.put(("suback", rcs))
        self.client.on_message = lambda c, u, msg: self.events.put(("message", msg))
        self.client.connect("127.0.0.1", port, keepalive=30)
        self.client.loop_start()
        assert not self._wait("connack").is_failure
        self.client.subscribe([(self.response_topic, 1)])
        self._wait("suback")

    def _wait(self, kind):
        deadline = time.monotonic() + WAIT
        while time.monotonic() < deadline:
            try:
                got, value = self.events.get(timeout=0.2)
            except queue.Empty:
                continue
            if got == kind:
                return value
        raise AssertionError(f"no {kind} within {WAIT} s")

    def request(self, *args, traceparent=None, tracestate=None, timestamp=True):
        """Sends one request; returns (payload, user properties) of its answer."""
        correlation = uuid.uuid4().bytes
        props = Properties(PacketTypes.PUBLISH)
        props.ResponseTopic = self.response_topic
        props.CorrelationData = correlation
        props.MessageExpiryInterval = 10
        user = [("__srcId", self.id), ("__protVer", "1.0")]
        if timestamp:
            user.append(("__ts", f"{int(time.time() * 1000):015d}:00000:{self.id}"))
        if traceparent:
            user.append(("traceparent", traceparent))
        if tracestate:
            user.append(("tracestate", tracestate))
        props.UserProperty = user
        payload = b"*%d\r\n" % len(args) + b"".join(
            b"$%d\r\n%s\r\n" % (len(a), a) for a in args
        )
        self.client.publish(REQUEST_TOPIC, payload, qos=1, properties=props)
        while True:
            msg = self._wait("message")
            if getattr(msg.properties, "CorrelationData", None) == correlation:
                return msg.payload, dict(getattr(msg.properties, "UserProperty", []))

    def close(self):
        self.client.disconnect()
        self.client.loop_stop()


@pytest.fixture
def client(store):
    c = Client(store)
    yield c
    c.close()


def new_context(sampled=True):
    trace_id, parent_id = secrets.token_hex(16), secrets.token_hex(8)
    return trace_id, parent_id, f"00-{trace_id}-{parent_id}-{'01' if sampled else '00'}"


def tags(span):
    return {t["key"]: t["value"] for t in span.get("tags", [])}


def child_of(parent_id):
    def matches(span, trace):
        return any(
            ref.get("refType") == "CHILD_OF" and ref.get("spanID") == parent_id
            for ref in span.get("references", [])
        )

    return matches


def service(span, trace):
    return trace["processes"][span["processID"]]["serviceName"]


def test_the_store_span_is_a_child_of_the_callers_span(jaeger, store, client):
    trace_id, set_parent, traceparent = new_context()
    answer, props = client.request(
        b"SET", b"otel-key", b"v", traceparent=traceparent, tracestate="vendor=opaque"
    )
    assert answer == b"+OK\r\n" and props.get("__stat") == "200"
    get_parent = secrets.token_hex(8)
    answer, _ = client.request(b"GET", b"otel-key", traceparent=f"00-{trace_id}-{get_parent}-01")
    assert answer == b"$1\r\nv\r\n"

    for name, parent in (("SET", set_parent), ("GET", get_parent)):
        span, trace = jaeger.wait_for_span(trace_id, child_of(parent))
        assert span["traceID"] == trace_id
        assert span["operationName"] == name
        assert service(span, trace) == "mqstate-serve"
        t = tags(span)
        assert t["span.kind"] == "server"
        assert t["db.system.name"] == "azure.iot_operations.state_store"
        assert t["db.operation.name"] == name
        assert t["mqstate.client_id"] == client.id
        assert t["server.address"] == "127.0.0.1"
        assert int(t["server.port"]) == store
        assert "error.type" not in t
        assert span["spanID"] not in (set_parent, get_parent)
    set_span, _ = jaeger.wait_for_span(trace_id, child_of(set_parent))
    # Jaeger shows the span's trace state (the caller's tracestate, passed on) as a tag.
    assert tags(set_span)["w3c.tracestate"] == "vendor=opaque"


def test_a_store_error_sets_error_type(jaeger, client):
    trace_id, parent_id, traceparent = new_context()
    answer, _ = client.request(b"SET", b"otel-err", b"v", traceparent=traceparent, timestamp=False)
    assert answer.startswith(b"-ERR"), answer
    span, _ = jaeger.wait_for_span(trace_id, child_of(parent_id))
    t = tags(span)
    assert span["operationName"] == "SET"
    assert t["error.type"] == "timestamp_missing"
    assert t.get("otel.status_code") == "ERROR"


def test_an_unsampled_caller_gets_no_store_span(jaeger, client):
    unsampled_trace, _, unsampled = new_context(sampled=False)
    client.request(b"GET", b"otel-key", traceparent=unsampled)
    # A sampled request after it: once its span is in, the earlier one would be too.
    trace_id, parent_id, traceparent = new_context()
    client.request(b"GET", b"otel-key", traceparent=traceparent)
    jaeger.wait_for_span(trace_id, child_of(parent_id))
    time.sleep(1.5)
    assert jaeger.trace(unsampled_trace) is None


def test_an_invalid_traceparent_starts_a_new_trace(jaeger, client):
    bad_trace = "0" * 32
    answer, _ = client.request(
        b"GET", b"otel-key", traceparent=f"00-{bad_trace}-{secrets.token_hex(8)}-01"
    )
    assert answer in (b"$1\r\nv\r\n", b"$-1\r\n")
    # The request is still answered; its span is a root of its own trace (not findable by
    # an id we know), and the all-zero trace id is never used.
    time.sleep(1.5)
    assert jaeger.trace(bad_trace) is None
