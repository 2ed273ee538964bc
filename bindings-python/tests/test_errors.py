"""The exception hierarchy: one class per code of the core's error table (as
core/vocabulary.json has it), chosen by the code, with Python's builtin bases and fields."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from typing import Any, Dict, Tuple

import pytest

import mqstate
from mqstate import _mqstate, codec, errors, hlc, topics

ROOT = Path(__file__).resolve().parents[2]
VOCABULARY: Dict[str, Any] = json.loads((ROOT / "core" / "vocabulary.json").read_text(encoding="utf-8"))
GENERATOR = ROOT / "bindings-python" / "scripts" / "generate_errors.py"

STORE_CLASSES = {
    "timestamp_skew": errors.TimestampSkewError,
    "fencing_token_required": errors.FencingTokenRequiredError,
    "fencing_token_skew": errors.FencingTokenSkewError,
    "fencing_token_lower_version": errors.FencingTokenLowerVersionError,
    "quota_exceeded": errors.QuotaExceededError,
    "syntax_error": errors.StoreSyntaxError,
    "not_authorized": errors.NotAuthorizedError,
    "unknown_command": errors.UnknownCommandError,
    "wrong_number_of_arguments": errors.WrongNumberOfArgumentsError,
    "timestamp_missing": errors.TimestampMissingError,
    "timestamp_malformed": errors.TimestampMalformedError,
    "key_length_zero": errors.KeyLengthZeroError,
    "unknown_store_error": errors.UnknownStoreError,
}


def test_every_core_code_has_its_own_class() -> None:
    codes = _mqstate.error_codes()
    assert len(codes) == len(set(codes)) >= 22
    for code in codes:
        cls = errors.error_class(code)
        assert cls is not errors.MqstateError, code
        assert cls.code == code
    # And nothing in the table is stale.
    assert {c.code for c in errors._BY_CODE.values()} == set(codes)


def test_one_class_per_code_of_the_vocabulary_named_and_placed_as_the_table_says() -> None:
    rows = VOCABULARY["errors"]
    assert {row["code"] for row in rows} == set(_mqstate.error_codes())
    base = getattr(errors, VOCABULARY["error_base_class"])
    assert base is errors.MqstateError
    families = {name: getattr(errors, name) for name in VOCABULARY["error_families"]}
    for family in families.values():
        assert family.__bases__[0] is base, family
    for row in rows:
        cls = getattr(errors, row["class"])
        assert cls.code == row["code"] and errors.error_class(row["code"]) is cls
        # The table's parent is the first base; Python's own (ValueError …) follow it.
        assert cls.__bases__[0].__name__ == row["parent"], row["class"]
        assert cls.__bases__[0] in (base, *families.values())
        assert getattr(mqstate, row["class"]) is cls
    # Exactly those: no public class of the module is missing from the table.
    public = {
        name for name, obj in vars(errors).items()
        if isinstance(obj, type) and issubclass(obj, BaseException) and not name.startswith("_")
    }
    assert public == {r["class"] for r in rows} | set(families) | {base.__name__}
    assert set(errors.__all__) == public | {"error_class"}


def test_the_generated_classes_are_current() -> None:
    spec = importlib.util.spec_from_file_location("generate_errors", GENERATOR)
    assert spec is not None and spec.loader is not None
    generator = importlib.util.module_from_spec(spec)
    sys.modules["generate_errors"] = generator
    spec.loader.exec_module(generator)
    _, block, _ = generator.split((ROOT / "bindings-python/python/mqstate/errors.py").read_text(encoding="utf-8"))
    assert block == generator.generated(VOCABULARY), (
        "mqstate/errors.py is stale: run bindings-python/scripts/generate_errors.py"
    )


def test_every_store_kind_has_its_subclass() -> None:
    kinds = dict(_mqstate.store_error_kinds())
    assert set(kinds) == set(STORE_CLASSES)
    for kind, cls in STORE_CLASSES.items():
        assert issubclass(cls, errors.StoreError)
        assert cls.kind == kind
        assert errors.error_class(kind) is cls


@pytest.mark.parametrize(
    "cls, bases",
    [
        (errors.InvalidArgumentError, (ValueError,)),
        (errors.MalformedError, ()),
        (errors.ClockDriftError, (errors.ClockError,)),
        (errors.ClockOverflowError, (errors.ClockError,)),
        (errors.FencingTokenRequiredError, (errors.StoreError,)),
        (errors.RpcError, ()),
        (errors.MqstateTimeoutError, (TimeoutError, OSError)),
        (errors.ConnectionLostError, (ConnectionError, OSError)),
        (errors.ConnectError, (ConnectionError,)),
        (errors.ConnectFailedError, (errors.ConnectError, ConnectionError)),
        (errors.ConnectTimeoutError, (errors.ConnectError, TimeoutError)),
        (errors.ConnectUnauthorizedError, (errors.ConnectError, PermissionError)),
        (errors.ClosedError, ()),
    ],
)
def test_builtin_bases(cls: type, bases: Tuple[type, ...]) -> None:
    assert issubclass(cls, errors.MqstateError)
    assert issubclass(cls, Exception)
    for base in bases:
        assert issubclass(cls, base), base


def test_factory_by_code_not_text() -> None:
    # The message says "timeout" but the code says connection_lost: the code wins.
    e = errors._from_core("connection_lost", "timeout", None, None)
    assert type(e) is errors.ConnectionLostError
    assert isinstance(e, ConnectionError)
    assert str(e) == "timeout" and e.code == "connection_lost"

    t = errors._from_core("timeout", "no response within 5 s", None, None)
    assert isinstance(t, TimeoutError) and str(t) == "no response within 5 s"

    r = errors._from_core("rpc_error", "bad request", None, 400)
    assert type(r) is errors.RpcError and r.status == 400 and str(r) == "bad request"


def test_unknown_codes_fall_back() -> None:
    e = errors._from_core("brand_new_kind", "something new", None, None)
    assert type(e) is errors.MqstateError
    assert e.code == "brand_new_kind"
    assert str(e) == "something new"
    s = errors._from_core("brand_new_store_kind", "new text", "brand_new_store_kind", None)
    assert type(s) is errors.StoreError
    assert (s.code, s.kind, s.text) == ("brand_new_store_kind", "brand_new_store_kind", "new text")


def test_errors_raised_by_the_native_module() -> None:
    with pytest.raises(errors.InvalidArgumentError, match="key must not be empty") as a:
        codec.encode_get(b"")
    assert a.value.code == "invalid_argument" and isinstance(a.value, ValueError)

    with pytest.raises(errors.MalformedError):
        codec.decode_response(b"+NOPE\r\n")

    with pytest.raises(errors.MalformedError, match="hex"):
        topics.hex_decode("ABC")

    with pytest.raises(errors.ClockDriftError):
        hlc.Hlc(10_000_000, 0, "a").tick(0, max_drift_ms=1)

    with pytest.raises(errors.ClockOverflowError):
        hlc.Hlc(5, 2**64 - 1, "a").tick(5)


def test_decode_request_raises_the_service_error() -> None:
    cases = [
        (b"", errors.StoreSyntaxError, "syntax error"),
        (b"*2\r\n$4\r\nPING\r\n$1\r\nk\r\n", errors.UnknownCommandError, "unknown command"),
        (b"*1\r\n$3\r\nGET\r\n", errors.WrongNumberOfArgumentsError, "wrong number of arguments"),
        (b"*2\r\n$3\r\nGET\r\n$0\r\n\r\n", errors.KeyLengthZeroError, "the key length is zero"),
    ]
    for payload, cls, text in cases:
        with pytest.raises(cls) as info:
            codec.decode_request(payload)
        assert info.value.text == text and str(info.value) == text
        assert info.value.kind == cls.kind


def test_unknown_store_text_is_kept() -> None:
    response = codec.decode_response(b"-ERR brand new failure\r\n", "GET")
    assert response.kind == "error"
    assert (response.error_kind, response.error_text) == ("unknown_store_error", "brand new failure")
    with pytest.raises(errors.UnknownStoreError) as info:
        response.raise_for_error()
    assert info.value.code == "unknown_store_error"
    assert info.value.text == "brand new failure"


def test_errors_are_catchable_from_the_package() -> None:
    assert mqstate.MqstateError is errors.MqstateError
    with pytest.raises(mqstate.MqstateError):
        mqstate.Hlc.parse("not a clock")
    e = errors.FencingTokenRequiredError("a fencing token is required for this request")
    assert e.kind == "fencing_token_required" and e.code == "fencing_token_required"


def test_rpc_errors_carry_their_details_and_sent_requests_say_so() -> None:
    details = {
        "status_message": "unsupported protocol version",
        "property_name": "__protVer",
        "property_value": "2.0",
        "application_error": False,
        "supported_major_versions": "1",
        "request_protocol_version": "2.0",
    }
    e = errors._from_core("rpc_error", "request failed with status 505", None, 505, details, True)
    assert isinstance(e, errors.RpcError) and e.status == 505
    assert (e.property_name, e.property_value, e.supported_major_versions) == ("__protVer", "2.0", "1")
    assert e.status_message == "unsupported protocol version" and not e.application_error
    assert e.may_have_applied
    assert not errors._from_core("timeout", "t", None, None).may_have_applied
