"""The exception hierarchy of mqstate.

Every error the Rust core reports carries a stable *code* (``ErrorKind::code()`` in the
core, the same string in every language binding); the class is chosen from that code,
never from the message text::

    MqstateError(Exception)                 .code
    ├── InvalidArgumentError(ValueError)    invalid_argument: nothing was sent
    ├── MalformedError                      malformed: bytes from the wire break the protocol
    ├── ClockError
    │   ├── ClockDriftError                 clock_drift
    │   └── ClockOverflowError              clock_overflow
    ├── StoreError                          .kind (vector name), .text (the service's exact text)
    │   ├── TimestampSkewError … KeyLengthZeroError (one per known store error)
    │   └── UnknownStoreError               unknown_store_error: a text this version does not know
    ├── RpcError                            rpc_error, .status (the response's __stat)
    ├── MqstateTimeoutError(TimeoutError)   timeout
    ├── ConnectionLostError(ConnectionError) connection_lost
    ├── ConnectError(ConnectionError)       connect_failed
    │   ├── ConnectRefusedError             connect_refused (retry later)
    │   ├── ConnectTimeoutError(TimeoutError) connect_timeout (retry later)
    │   ├── ConnectUnauthorizedError(PermissionError) connect_unauthorized (fix credentials)
    │   └── TlsError                        tls (fix the TLS settings)
    ├── ClosedError                         closed
    ├── NotHeldError                        not_held
    ├── CallCancelledError                  cancelled
    ├── UnsupportedError                    unsupported
    └── CallbackError                       callback

A code this version does not know (a newer core) raises a plain :class:`MqstateError`
whose ``code`` is that code.
"""

from __future__ import annotations

from typing import Any, Dict, Optional, Type

__all__ = [
    "MqstateError",
    "InvalidArgumentError",
    "MalformedError",
    "ClockError",
    "ClockDriftError",
    "ClockOverflowError",
    "StoreError",
    "TimestampSkewError",
    "FencingTokenRequiredError",
    "FencingTokenSkewError",
    "FencingTokenLowerVersionError",
    "QuotaExceededError",
    "StoreSyntaxError",
    "NotAuthorizedError",
    "UnknownCommandError",
    "WrongNumberOfArgumentsError",
    "TimestampMissingError",
    "TimestampMalformedError",
    "KeyLengthZeroError",
    "UnknownStoreError",
    "RpcError",
    "MqstateTimeoutError",
    "ConnectionLostError",
    "ConnectError",
    "ConnectRefusedError",
    "ConnectTimeoutError",
    "ConnectUnauthorizedError",
    "TlsError",
    "ClosedError",
    "NotHeldError",
    "CallCancelledError",
    "UnsupportedError",
    "CallbackError",
    "error_class",
]


class MqstateError(Exception):
    """Base class of every mqstate error. ``code`` is the core's stable error code;
    ``may_have_applied`` is True when the request had been sent before the error (a timeout
    waiting for the answer, a connection lost in flight): the service may have applied it."""

    code: str = "mqstate_error"
    may_have_applied: bool = False

    def __init__(self, message: str = "") -> None:
        # One positional argument only: OSError subclasses (TimeoutError, ConnectionError)
        # read two as (errno, strerror).
        super().__init__(message)
        self.message = message

    def __str__(self) -> str:
        return self.message


class InvalidArgumentError(MqstateError, ValueError):
    """The caller passed a value the protocol cannot carry; nothing was sent."""

    code = "invalid_argument"


class MalformedError(MqstateError):
    """Bytes received from the wire (payload, topic, timestamp) do not follow the protocol."""

    code = "malformed"


class ClockError(MqstateError):
    """A hybrid logical clock step was refused."""

    code = "clock_error"


class ClockDriftError(ClockError):
    """The clock would move more than the maximum drift ahead of the local time."""

    code = "clock_drift"


class ClockOverflowError(ClockError):
    """The clock's counter would overflow."""

    code = "clock_overflow"


class StoreError(MqstateError):
    """The state store answered ``-ERR <text>``.

    ``kind`` is the store error's name, the same as its code (``"syntax_error"``, …,
    ``"unknown_store_error"``) and ``text``
    the service's exact text, which is also ``str(error)``.
    """

    code = "store_error"
    kind: str = "unknown_store_error"

    def __init__(self, text: str = "", kind: Optional[str] = None) -> None:
        super().__init__(text)
        self.text = text
        if kind is not None:
            self.kind = kind


class TimestampSkewError(StoreError):
    """The request's ``__ts`` is too far ahead of the service's clock."""

    code = kind = "timestamp_skew"


class FencingTokenRequiredError(StoreError):
    """The key is fenced and the request carries no fencing token."""

    code = kind = "fencing_token_required"


class FencingTokenSkewError(StoreError):
    """The fencing token is too far ahead of the service's clock."""

    code = kind = "fencing_token_skew"


class FencingTokenLowerVersionError(StoreError):
    """The fencing token is older than the one protecting the key."""

    code = kind = "fencing_token_lower_version"


class QuotaExceededError(StoreError):
    """The key quota is reached."""

    code = kind = "quota_exceeded"


class StoreSyntaxError(StoreError):
    """The payload is not a well-formed request (``syntax error``)."""

    code = kind = "syntax_error"


class NotAuthorizedError(StoreError):
    """Authorization failed."""

    code = kind = "not_authorized"


class UnknownCommandError(StoreError):
    """The verb is not recognised."""

    code = kind = "unknown_command"


class WrongNumberOfArgumentsError(StoreError):
    """The argument count is wrong for the verb."""

    code = kind = "wrong_number_of_arguments"


class TimestampMissingError(StoreError):
    """A SET without ``__ts``."""

    code = kind = "timestamp_missing"


class TimestampMalformedError(StoreError):
    """``__ts`` or ``__ft`` is not a hybrid logical clock."""

    code = kind = "timestamp_malformed"


class KeyLengthZeroError(StoreError):
    """The key is empty."""

    code = kind = "key_length_zero"


class UnknownStoreError(StoreError):
    """A store error text this version of mqstate does not know (kept in ``text``)."""

    code = "unknown_store_error"
    kind = "unknown_store_error"


class RpcError(MqstateError):
    """The RPC layer refused the request; ``status`` is the response's ``__stat``, and the
    other attributes are the response's details (``__stMsg``, ``__propName``,
    ``__propVal``, ``__apErr``, ``__supProtMajVer``, ``__requestProtVer``), None when absent."""

    code = "rpc_error"
    status_message: Optional[str] = None
    property_name: Optional[str] = None
    property_value: Optional[str] = None
    application_error: bool = False
    supported_major_versions: Optional[str] = None
    request_protocol_version: Optional[str] = None

    def __init__(self, message: str = "", status: int = 0) -> None:
        super().__init__(message)
        self.status = status


class MqstateTimeoutError(MqstateError, TimeoutError):
    """No response arrived in time."""

    code = "timeout"


class ConnectionLostError(MqstateError, ConnectionError):
    """The connection was lost while the request was in flight (it may have been applied)."""

    code = "connection_lost"


class ConnectError(MqstateError, ConnectionError):
    """Connecting to the broker failed."""

    code = "connect_failed"


class ConnectRefusedError(ConnectError):
    """The connection was refused (nobody listening, broker unavailable); retry later."""

    code = "connect_refused"


class ConnectTimeoutError(ConnectError, TimeoutError):
    """The connection attempt timed out; retry later."""

    code = "connect_timeout"


class ConnectUnauthorizedError(ConnectError, PermissionError):
    """The broker refused the credentials; fix them before retrying."""

    code = "connect_unauthorized"


class TlsError(ConnectError):
    """The TLS handshake failed; fix the TLS settings."""

    code = "tls"


class ClosedError(MqstateError):
    """The client or object was closed."""

    code = "closed"


class NotHeldError(MqstateError):
    """The lock (or leadership) is not held."""

    code = "not_held"


class CallCancelledError(MqstateError):
    """The call was cancelled by its caller."""

    code = "cancelled"


class UnsupportedError(MqstateError):
    """The operation is not supported here."""

    code = "unsupported"


class CallbackError(MqstateError):
    """A user callback failed."""

    code = "callback"


_BY_CODE: Dict[str, Type[MqstateError]] = {
    cls.code: cls
    for cls in (
        InvalidArgumentError,
        MalformedError,
        ClockDriftError,
        ClockOverflowError,
        TimestampSkewError,
        FencingTokenRequiredError,
        FencingTokenSkewError,
        FencingTokenLowerVersionError,
        QuotaExceededError,
        StoreSyntaxError,
        NotAuthorizedError,
        UnknownCommandError,
        WrongNumberOfArgumentsError,
        TimestampMissingError,
        TimestampMalformedError,
        KeyLengthZeroError,
        UnknownStoreError,
        RpcError,
        MqstateTimeoutError,
        ConnectionLostError,
        ConnectError,
        ConnectRefusedError,
        ConnectTimeoutError,
        ConnectUnauthorizedError,
        TlsError,
        ClosedError,
        NotHeldError,
        CallCancelledError,
        UnsupportedError,
        CallbackError,
    )
}


def error_class(code: str) -> Type[MqstateError]:
    """The exception class for a core error code (:class:`MqstateError` if unknown)."""
    return _BY_CODE.get(code, MqstateError)


def _from_core(
    code: str,
    message: str,
    store_kind: Optional[str],
    status: Optional[int],
    details: Optional[Dict[str, Any]] = None,
    may_have_applied: bool = False,
) -> MqstateError:
    """Builds the exception for a core error (called by the native module)."""
    cls = _BY_CODE.get(code)
    error: MqstateError
    if cls is None and store_kind is not None:
        # A store kind newer than this file: still a StoreError.
        error = StoreError(message, store_kind)
    elif cls is None:
        error = MqstateError(message)
    elif issubclass(cls, StoreError):
        error = cls(message, store_kind)
    elif issubclass(cls, RpcError):
        error = cls(message, status if status is not None else 0)
    else:
        error = cls(message)
    if type(error).code != code:
        error.code = code
    if may_have_applied:
        error.may_have_applied = True
    if details and isinstance(error, RpcError):
        for name, value in details.items():
            setattr(error, name, value)
    return error
