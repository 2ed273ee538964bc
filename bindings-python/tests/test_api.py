"""The Python surface beyond the vectors: argument types, messages, immutability, clocks,
and round trips over generated inputs (a fixed-seed generator, no hypothesis)."""

from __future__ import annotations

import random
import threading
from typing import List, Literal, Optional

import pytest

import mqstate
from mqstate import codec, errors, hlc, topics

SET_KV = b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n"


@pytest.mark.parametrize("key", [b"k", bytearray(b"k"), memoryview(b"k"), "k", memoryview(b"xkx")[1:2]])
def test_bytes_like_arguments(key: object) -> None:
    assert codec.encode_set(key, key.replace("k", "v") if isinstance(key, str) else b"v") == SET_KV  # type: ignore[arg-type]


def test_str_is_utf8() -> None:
    assert codec.encode_get("é") == b"*2\r\n$3\r\nGET\r\n$2\r\n\xc3\xa9\r\n"
    assert topics.hex_encode("é") == "C3A9"


def test_memoryview_of_other_shapes_is_copied_in_order() -> None:
    view = memoryview(b"abcdef").cast("B", shape=[2, 3])
    assert codec.encode_get(view) == codec.encode_get(b"abcdef")


@pytest.mark.parametrize("bad", [None, 5, 1.5, ["k"], object()])
def test_wrong_argument_type_is_a_type_error(bad: object) -> None:
    with pytest.raises(TypeError) as info:
        codec.encode_get(bad)  # type: ignore[arg-type]
    message = str(info.value)
    assert f"expected bytes, bytearray, memoryview or str, not {type(bad).__name__}" in message
    # PyO3 names the argument: in the message, or (Python 3.11+) in a note.
    assert "'key'" in message + "".join(getattr(info.value, "__notes__", []))


def test_lone_surrogate_str_is_refused() -> None:
    with pytest.raises(UnicodeEncodeError):
        codec.encode_get("\udc80")


def test_set_options_are_validated() -> None:
    # One message for every language, from the core.
    with pytest.raises(errors.InvalidArgumentError, match='condition must be "nx" or "nex" \\(in any case\\)'):
        codec.encode_set(b"k", b"v", condition="XX")
    for spelling in ("nx", "NX", "Nx"):
        assert codec.decode_request(codec.encode_set(b"k", b"v", condition=spelling)).condition == "NX"
    assert codec.decode_request(codec.encode_set(b"k", b"v", condition="nEx")).condition == "NEX"
    with pytest.raises(errors.InvalidArgumentError, match="px_ms must be at least 1"):
        codec.encode_set(b"k", b"v", px_ms=0)
    with pytest.raises(OverflowError):
        codec.encode_set(b"k", b"v", px_ms=-1)
    with pytest.raises(TypeError):
        codec.encode_set(b"k", b"v", "NX")  # type: ignore[call-arg]  # keyword-only
    assert codec.encode_set(b"k", b"", px_ms=2**64 - 1).endswith(b"$20\r\n18446744073709551615\r\n")


def test_empty_value_is_allowed_empty_key_is_not() -> None:
    assert codec.encode_set(b"k", b"") == b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$0\r\n\r\n"
    for encode in (codec.encode_get, codec.encode_del, codec.encode_keynotify):
        with pytest.raises(errors.InvalidArgumentError):
            encode(b"")


def test_decode_response_verb_check() -> None:
    assert codec.decode_response(b"$1\r\nx\r\n").value == b"x"
    with pytest.raises(errors.MalformedError, match="unexpected value response to SET"):
        codec.decode_response(b"$1\r\nx\r\n", "SET")
    with pytest.raises(errors.InvalidArgumentError, match="verb must be one of"):
        codec.decode_response(b"+OK\r\n", "set")  # type: ignore[arg-type]


def test_encode_response_arguments() -> None:
    assert codec.encode_response("ok") == b"+OK\r\n"
    assert codec.encode_response("not_applied") == b":-1\r\n"
    assert codec.encode_response("error", error_text="syntax error") == b"-ERR syntax error\r\n"
    with pytest.raises(errors.InvalidArgumentError, match="takes value and nothing else"):
        codec.encode_response("value")
    with pytest.raises(errors.InvalidArgumentError, match="takes no value"):
        codec.encode_response("ok", count=1)
    with pytest.raises(errors.InvalidArgumentError, match="kind must be one of"):
        codec.encode_response("okay")  # type: ignore[arg-type]


def test_encode_notification_arguments() -> None:
    assert codec.encode_notification("delete") == b"*2\r\n$6\r\nNOTIFY\r\n$6\r\nDELETE\r\n"
    with pytest.raises(errors.InvalidArgumentError, match="needs a value"):
        codec.encode_notification("set")
    with pytest.raises(errors.InvalidArgumentError):
        codec.encode_notification("delete", b"x")


def test_objects_are_immutable_hashable_and_printable() -> None:
    r = codec.decode_response(b"$3\r\na'\x00\r\n")
    with pytest.raises(AttributeError):
        r.kind = "ok"  # type: ignore[misc]
    assert hash(r) == hash(codec.decode_response(r.encode()))
    assert repr(r) == "Response(kind='value', value=b'a\\'\\x00')"
    req = codec.decode_request(codec.encode_set(b"k", b"v", condition="NEX", px_ms=5))
    assert repr(req) == "Request(verb='SET', key=b'k', value=b'v', condition='NEX', px_ms=5, stop=False)"
    assert {req, codec.decode_request(req.encode())} == {req}
    h = hlc.Hlc(1, 2, "n")
    assert repr(h) == "Hlc.parse('000000000000001:00002:n')"
    assert {h: 1}[hlc.Hlc.parse("1:2:n")] == 1
    with pytest.raises(AttributeError):
        h.counter = 3  # type: ignore[misc]


def test_hlc_constructor_and_comparisons() -> None:
    with pytest.raises(errors.InvalidArgumentError, match="node id"):
        hlc.Hlc(1, 0, "a:b")
    with pytest.raises(errors.InvalidArgumentError):
        hlc.Hlc(1, 0, "")
    with pytest.raises(OverflowError):
        hlc.Hlc(-1, 0, "a")
    a, b = hlc.Hlc(1, 0, "a"), hlc.Hlc(1, 0, "b")
    assert a < b and a.cmp_time(b) == 0 and b.cmp_time(hlc.Hlc(2, 0, "a")) == -1
    assert (a == "not an hlc") is False
    with pytest.raises(TypeError):
        a < 5  # type: ignore[operator]  # noqa: B015


def test_clock_ticks_monotonically() -> None:
    clock = hlc.Clock("me")
    assert clock.node_id == "me" and clock.max_drift_ms == hlc.DEFAULT_MAX_DRIFT_MS == 60_000
    seen = [clock.tick() for _ in range(200)]
    assert seen == sorted(seen) and len(set(seen)) == len(seen)
    assert clock.current == seen[-1]
    assert all(h.node_id == "me" for h in seen)


def test_clock_receive_and_drift() -> None:
    clock = hlc.Clock("me", max_drift_ms=1_000)
    now = clock.now_ms()
    ahead = hlc.Hlc(now + 500, 7, "service")
    merged = clock.receive(ahead)
    assert merged.cmp_time(ahead) == 1 and merged.node_id == "me"
    before = clock.current
    with pytest.raises(errors.ClockDriftError):
        clock.receive(hlc.Hlc(now + 3_600_000, 0, "service"))
    assert clock.current == before  # unchanged on error
    with pytest.raises(errors.InvalidArgumentError):
        hlc.Clock("a:b")


def test_clock_is_shared_between_threads() -> None:
    clock = hlc.Clock("threads")
    results: List[hlc.Hlc] = []
    lock = threading.Lock()

    def work() -> None:
        mine = [clock.tick() for _ in range(100)]
        with lock:
            results.extend(mine)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(set(results)) == 400


def test_round_trips_over_generated_inputs() -> None:
    rng = random.Random(20240917)
    for _ in range(300):
        key = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 40)))
        value = bytes(rng.randrange(256) for _ in range(rng.randrange(0, 80)))
        condition: Optional[Literal["NX", "NEX"]] = rng.choice([None, "NX", "NEX"])
        px = rng.choice([None, 1, rng.randrange(1, 2**63)])
        req = codec.decode_request(codec.encode_set(key, value, condition=condition, px_ms=px))
        assert (req.key, req.value, req.condition, req.px_ms) == (key, value, condition, px)

        got = codec.decode_response(codec.encode_response("value", value=value), "GET")
        assert got.value == value

        client = "".join(rng.choice("abcXYZ-_/é") for _ in range(rng.randrange(1, 12)))
        topic = topics.notification_topic(client, key)
        assert topics.parse_notification_topic(topic) == (client, key)
        assert topics.hex_decode(topics.hex_encode(key).lower()) == key
        n = codec.decode_notification(topic, codec.encode_notification("set", value))
        assert (n.client_id, n.key, n.kind, n.value) == (client, key, "set", value)

        h = hlc.Hlc(rng.randrange(2**64), rng.randrange(2**64), client.replace("/", "_"))
        assert hlc.Hlc.parse(str(h)) == h


def test_package_exports() -> None:
    assert mqstate.__version__ == mqstate._mqstate.__version__
    for name in mqstate.__all__:
        assert hasattr(mqstate, name), name
    for module in (codec, errors, hlc, topics):
        for name in module.__all__:
            assert hasattr(module, name), (module.__name__, name)


def test_decoders_only_raise_mqstate_errors_on_garbage() -> None:
    rng = random.Random(7)
    seeds = [b"*2\r\n$3\r\nGET\r\n$1\r\nk\r\n", b"$3\r\nabc\r\n", b":12\r\n", b"-ERR x\r\n",
             b"*4\r\n$6\r\nNOTIFY\r\n$3\r\nSET\r\n$5\r\nVALUE\r\n$1\r\nv\r\n"]
    topic = topics.notification_topic("c", b"k")
    for _ in range(2000):
        data = bytearray(rng.choice(seeds))
        for _ in range(rng.randrange(1, 4)):
            op = rng.randrange(3)
            if op == 0 and data:
                data[rng.randrange(len(data))] = rng.randrange(256)
            elif op == 1 and data:
                del data[rng.randrange(len(data)):]
            else:
                data.insert(rng.randrange(len(data) + 1), rng.choice(b"*$:-+\r\n0123456789"))
        payload = bytes(data)
        for decode in (
            lambda: codec.decode_request(payload),
            lambda: codec.decode_response(payload),
            lambda: codec.decode_notification(topic, payload),
            lambda: hlc.Hlc.parse(payload.decode("latin-1")),
        ):
            try:
                decode()
            except (errors.MalformedError, errors.StoreError):
                pass
