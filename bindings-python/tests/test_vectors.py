"""Every case of every shared conformance vector file, through the public ``mqstate`` API.

The files are read in place (``$MQSTATE_VECTORS`` or the project's copy in ``tests/vectors``) and iterated,
so a case added to a file is tested without touching this file.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, List, Optional

import pytest

import mqstate
from mqstate import codec, errors, hlc, topics
from conftest import cases, latin1, load

REQUESTS = load("requests.json")
RESPONSES = load("responses.json")
NOTIFICATIONS = load("notifications.json")
TOPICS = load("topics.json")
HLC = load("hlc.json")
SCAN = load("scan.json")

# Every bytes-like type the API accepts; each must give the same result.
BYTE_FORMS: List[Callable[[bytes], Any]] = [bytes, bytearray, memoryview]


def encode_command(cmd: Dict[str, Any], as_type: Callable[[bytes], Any] = bytes) -> bytes:
    """Encodes a requests.json command with the public encoders."""
    key = as_type(latin1(cmd["key"]))
    verb = cmd["verb"]
    if verb == "SET":
        return codec.encode_set(
            key,
            as_type(latin1(cmd["value"])),
            condition=cmd.get("condition"),
            px_ms=cmd.get("px_ms"),
        )
    if verb == "GET":
        return codec.encode_get(key)
    if verb == "DEL":
        return codec.encode_del(key)
    if verb == "VDEL":
        return codec.encode_vdel(key, as_type(latin1(cmd["value"])))
    if verb == "KEYNOTIFY":
        return codec.encode_keynotify(key, stop=bool(cmd.get("stop", False)))
    raise AssertionError(f"unknown verb {verb}")


# ---------------------------------------------------------------- requests.json


@pytest.mark.parametrize("case", cases(REQUESTS, "requests"))
def test_request(case: Dict[str, Any]) -> None:
    cmd = case["command"]
    payload = latin1(case["payload"])
    for as_type in BYTE_FORMS:
        got = encode_command(cmd, as_type)
        assert isinstance(got, bytes)
        assert got == payload, as_type

    # The service's decoder reads the same request back.
    request = codec.decode_request(payload)
    assert request.verb == cmd["verb"]
    assert request.key == latin1(cmd["key"])
    if cmd["verb"] in ("SET", "VDEL"):
        assert request.value == latin1(cmd["value"])
    else:
        assert request.value is None
    assert request.condition == (cmd.get("condition") if cmd["verb"] == "SET" else None)
    assert request.px_ms == (cmd.get("px_ms") if cmd["verb"] == "SET" else None)
    assert request.stop is bool(cmd.get("stop", False))
    assert request.encode() == payload
    assert codec.decode_request(bytearray(payload)) == request


# ---------------------------------------------------------------- responses.json


def store_code(error_kind: str) -> str:
    """The one name of a store error kind: its vector name, but ``unknown_store_error``
    for the vectors' ``unknown``."""
    return "unknown_store_error" if error_kind == "unknown" else error_kind


@pytest.mark.parametrize("case", cases(RESPONSES, "responses"))
def test_response(case: Dict[str, Any]) -> None:
    payload = latin1(case["payload"])
    expect = case["expect"]
    kind = expect["kind"]
    if kind == "malformed":
        with pytest.raises(errors.MalformedError) as malformed:
            codec.decode_response(payload, case["verb"])
        assert malformed.value.code == "malformed"
        assert str(malformed.value)
        return

    response = codec.decode_response(payload, case["verb"])
    assert response.kind == kind
    assert response.value == (latin1(expect["value"]) if kind == "value" else None)
    assert response.count == (expect["count"] if kind == "count" else None)
    if "applied" in expect:
        assert (response.kind == "ok") is expect["applied"]

    if kind == "error":
        assert response.error_kind == store_code(expect["error_kind"])
        assert response.error_text == expect["error_text"]
        # A store error is a value; raise_for_error() turns it into its exception class.
        with pytest.raises(errors.StoreError) as info:
            response.raise_for_error()
        error = info.value
        code = store_code(expect["error_kind"])
        assert type(error) is errors.error_class(code)
        assert error.code == code
        assert error.kind == code
        assert error.text == expect["error_text"]
        assert str(error) == expect["error_text"]
    else:
        assert response.error_kind is None and response.error_text is None
        response.raise_for_error()  # returns without raising

    # Without a verb the same form decodes; re-encoding (the service's form) round-trips,
    # and the service-side encoder builds the same bytes from the fields.
    assert codec.decode_response(payload) == response
    assert codec.decode_response(response.encode()) == response
    fields: Dict[str, Any] = {}
    if kind == "value":
        fields["value"] = response.value
    elif kind == "count":
        fields["count"] = response.count
    elif kind == "error":
        fields["error_text"] = response.error_text
    assert codec.encode_response(kind, **fields) == response.encode()


# ---------------------------------------------------------------- scan.json


def test_every_vector_file_is_run() -> None:
    """A new vector file must get a test here (each file is loaded above)."""
    from conftest import vectors_dir

    files = sorted(p.name for p in vectors_dir().glob("*.json"))
    assert files == [
        "hlc.json", "notifications.json", "requests.json", "responses.json", "scan.json", "topics.json"
    ]


@pytest.mark.parametrize("case", cases(SCAN["requests"], "scan.requests"))
def test_scan_request(case: Dict[str, Any]) -> None:
    cmd = case["command"]
    assert cmd["verb"] == "SCAN"
    payload = latin1(case["payload"])
    pattern = latin1(cmd["pattern"])
    token: Optional[bytes] = None if cmd["token"] is None else latin1(cmd["token"])
    for as_type in BYTE_FORMS:
        got = codec.encode_scan(
            as_type(pattern), token=None if token is None else as_type(token)
        )
        assert isinstance(got, bytes)
        assert got == payload, as_type

    request = codec.decode_request(payload)
    assert request.verb == "SCAN"
    assert request.pattern == pattern
    assert request.key == pattern
    assert request.token == token
    assert request.value is None and request.condition is None and request.px_ms is None
    assert request.encode() == payload


def test_scan_request_refuses_an_empty_pattern() -> None:
    for pattern in (b"", "", bytearray()):
        with pytest.raises(errors.InvalidArgumentError) as info:
            codec.encode_scan(pattern)
        assert info.value.code == "invalid_argument"
    with pytest.raises(errors.InvalidArgumentError):
        codec.encode_scan(b"", token=b"t")


@pytest.mark.parametrize("case", cases(SCAN["responses"], "scan.responses"))
def test_scan_response(case: Dict[str, Any]) -> None:
    payload = latin1(case["payload"])
    expect = case["expect"]
    kind = expect["kind"]
    if kind == "malformed":
        with pytest.raises(errors.MalformedError) as malformed:
            codec.decode_response(payload, case["verb"])
        assert malformed.value.code == "malformed"
        return

    response = codec.decode_response(payload, case["verb"])
    assert response.kind == kind
    assert response.value is None and response.count is None
    if kind == "keys":
        assert response.keys == [latin1(k) for k in expect["keys"]]
        want_token = None if expect["token"] is None else latin1(expect["token"])
        assert response.token == want_token
        assert response.error_kind is None and response.error_text is None
        fields: Dict[str, Any] = {"keys": response.keys, "token": response.token}
    else:
        assert kind == "error", kind
        assert response.keys is None and response.token is None
        assert response.error_kind == store_code(expect["error_kind"])
        assert response.error_text == expect["error_text"]
        with pytest.raises(errors.StoreError) as info:
            response.raise_for_error()
        assert type(info.value) is errors.error_class(store_code(expect["error_kind"]))
        fields = {"error_text": response.error_text}
    assert codec.decode_response(payload) == response
    assert codec.decode_response(response.encode(), "SCAN") == response
    assert codec.encode_response(kind, **fields) == response.encode()


# ---------------------------------------------------------------- notifications.json


@pytest.mark.parametrize("case", cases(NOTIFICATIONS, "notifications"))
def test_notification(case: Dict[str, Any]) -> None:
    payload = latin1(case["payload"])
    expect = case["expect"]
    if expect["kind"] == "malformed":
        with pytest.raises(errors.MalformedError):
            codec.decode_notification(case["topic"], payload)
        return

    n = codec.decode_notification(case["topic"], payload)
    assert n.client_id == expect["client_id"]
    assert n.key == latin1(expect["key"])
    assert n.kind == expect["kind"]
    value: Optional[bytes] = latin1(expect["value"]) if expect["kind"] == "set" else None
    assert n.value == value
    # The service's side: encode gives a notification that decodes the same.
    assert codec.encode_notification(n.kind, n.value) == n.encode()
    assert codec.decode_notification(n.topic, n.encode()) == n
    assert n.topic == topics.notification_topic(n.client_id, n.key)


# ---------------------------------------------------------------- topics.json


def test_request_topic() -> None:
    assert topics.REQUEST_TOPIC == TOPICS["request_topic"]
    assert mqstate.REQUEST_TOPIC == TOPICS["request_topic"]


@pytest.mark.parametrize("case", cases(TOPICS["response_topic"], "response_topic", "client_id"))
def test_response_topic(case: Dict[str, Any]) -> None:
    assert topics.response_topic(case["client_id"]) == case["topic"]


@pytest.mark.parametrize(
    "case", cases(TOPICS["notification_filter"], "notification_filter", "client_id")
)
def test_notification_filter(case: Dict[str, Any]) -> None:
    assert topics.notification_filter(case["client_id"]) == case["filter"]


@pytest.mark.parametrize("case", cases(TOPICS["notification_topic"], "notification_topic", "topic"))
def test_notification_topic(case: Dict[str, Any]) -> None:
    key = latin1(case["key"])
    for as_type in BYTE_FORMS:
        assert topics.notification_topic(case["client_id"], as_type(key)) == case["topic"]
    assert topics.parse_notification_topic(case["topic"]) == (case["client_id"], key)


@pytest.mark.parametrize(
    "case", cases(TOPICS["response_topic_allowed"], "response_topic_allowed", "topic")
)
def test_response_topic_allowed(case: Dict[str, Any]) -> None:
    topic = case["topic"]
    assert topics.is_response_topic_allowed(topic) is case["allowed"]
    if case["allowed"]:
        topics.check_response_topic(topic)  # returns without raising
    else:
        with pytest.raises(errors.InvalidArgumentError) as info:
            topics.check_response_topic(topic)
        assert info.value.code == "invalid_argument"


# ---------------------------------------------------------------- hlc.json


@pytest.mark.parametrize("case", cases(HLC["parse"], "parse", "text"))
def test_hlc_parse(case: Dict[str, Any]) -> None:
    if not case["ok"]:
        with pytest.raises(errors.MalformedError):
            hlc.Hlc.parse(case["text"])
        return
    h = hlc.Hlc.parse(case["text"])
    assert (h.wall_ms, h.counter, h.node_id) == (case["wall_ms"], case["counter"], case["node_id"])
    assert hlc.Hlc.parse(str(h)) == h
    assert h == hlc.Hlc(case["wall_ms"], case["counter"], case["node_id"])


@pytest.mark.parametrize("case", cases(HLC["format"], "format", "text"))
def test_hlc_format(case: Dict[str, Any]) -> None:
    h = hlc.Hlc(case["wall_ms"], case["counter"], case["node_id"])
    assert str(h) == case["text"]


@pytest.mark.parametrize("case", cases(HLC["compare"], "compare"))
def test_hlc_compare(case: Dict[str, Any]) -> None:
    a = hlc.Hlc.parse(case["a"])
    b = hlc.Hlc.parse(case["b"])
    order = case["order"]
    assert order in ("less", "equal", "greater")
    assert (a < b, a == b, a > b) == (order == "less", order == "equal", order == "greater")
    assert (b > a, b == a, b < a) == (order == "less", order == "equal", order == "greater")
    assert (a <= b) is (order != "greater")
    assert (a >= b) is (order != "less")
    assert (a != b) is (order != "equal")
    if order == "equal":
        assert hash(a) == hash(b)
    assert sorted([b, a]) == ([a, b] if order != "greater" else [b, a])


def check_clock(expect: str, step: Callable[[], hlc.Hlc]) -> None:
    if expect == "error:drift":
        with pytest.raises(errors.ClockDriftError) as info:
            step()
        assert info.value.code == "clock_drift"
        assert isinstance(info.value, errors.ClockError)
    elif expect == "error:overflow":
        with pytest.raises(errors.ClockOverflowError) as overflow:
            step()
        assert overflow.value.code == "clock_overflow"
    else:
        assert not expect.startswith("error:"), expect
        want = hlc.Hlc.parse(expect)
        got = step()
        assert (got.wall_ms, got.counter, got.node_id) == (want.wall_ms, want.counter, want.node_id)


@pytest.mark.parametrize("case", cases(HLC["tick"], "tick"))
def test_hlc_tick(case: Dict[str, Any]) -> None:
    clock = hlc.Hlc.parse(case["clock"])
    check_clock(case["expect"], lambda: clock.tick(case["now_ms"], case["max_drift_ms"]))
    # The value itself never changes: tick returns a new one.
    assert clock == hlc.Hlc.parse(case["clock"])


@pytest.mark.parametrize("case", cases(HLC["receive"], "receive"))
def test_hlc_receive(case: Dict[str, Any]) -> None:
    clock = hlc.Hlc.parse(case["clock"])
    other = hlc.Hlc.parse(case["other"])
    check_clock(
        case["expect"],
        lambda: clock.receive(other, case["now_ms"], max_drift_ms=case["max_drift_ms"]),
    )
    assert clock == hlc.Hlc.parse(case["clock"])
