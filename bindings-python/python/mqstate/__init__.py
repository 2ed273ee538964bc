"""mqstate: a client for the MQTT5 state store of Azure IoT Operations.

The clients, over the shared Rust core (one connection, correlation engine, observation,
locks and elections for every language):

- :class:`AsyncClient` (asyncio) and :class:`Client` (blocking, thread-safe): ``set``,
  ``get``, ``delete``, ``vdel``, ``observe``, ``scan``, ``lock``, ``election``;
- locks and elections (:mod:`mqstate.locks`), subscriptions of changes
  (:class:`AsyncSubscription`, :class:`Subscription`), and the values they return
  (:class:`Value`, :class:`SetResult`, :class:`Change` …).

And the protocol layer, for applications that own their MQTT connection (paho-mqtt, gmqtt
…) and only need to speak the state store's protocol:

- :mod:`mqstate.codec`: request, response and notification payloads;
- :mod:`mqstate.hlc`: the hybrid logical clock (:class:`Hlc`, :class:`Clock`);
- :mod:`mqstate.topics`: topic names, hex encoding, the response-topic check;
- :mod:`mqstate.errors`: the exception hierarchy (:class:`MqstateError` and subclasses).

And, to test applications (imported on its own, not here): :mod:`mqstate.testing`
(:class:`~mqstate.testing.LocalStore`, a store in process with faults on demand) and the
pytest plugin :mod:`mqstate.pytest_plugin` (fixtures ``mqstate_store``, ``mqstate_client``,
``mqstate_async_client``), which the package registers with pytest.

The names below are re-exported here for convenience.
"""

from __future__ import annotations

from . import codec, errors, hlc, locks, topics
from ._events import (
    DELETE,
    KEEP,
    CacheStats,
    Change,
    ConnectionEvent,
    EditResult,
    Event,
    HolderChange,
    LockStatus,
    SetResult,
    Value,
)
from ._mqstate import __version__
from ._scan import AsyncPager, Pager
from ._subscriptions import AsyncSubscription, Subscription
from .client import AsyncClient, Client
from .locks import AsyncElection, AsyncLock, Election, Lock
from .codec import (
    Notification,
    Request,
    Response,
    decode_notification,
    decode_request,
    decode_response,
    encode_del,
    encode_get,
    encode_keynotify,
    encode_notification,
    encode_response,
    encode_scan,
    encode_set,
    encode_vdel,
)
from .errors import (
    ClockDriftError,
    ClockError,
    ClockOverflowError,
    ClosedError,
    ConnectRefusedError,
    ConnectTimeoutError,
    ConnectUnauthorizedError,
    TlsError,
    NoStoreError,
    NotHeldError,
    CallCancelledError,
    UnsupportedError,
    CallbackError,
    ConnectError,
    ConnectFailedError,
    ConnectionLostError,
    FencingTokenLowerVersionError,
    FencingTokenRequiredError,
    FencingTokenSkewError,
    InvalidArgumentError,
    KeyLengthZeroError,
    MalformedError,
    MqstateError,
    MqstateTimeoutError,
    NotAuthorizedError,
    QuotaExceededError,
    RpcError,
    StoreError,
    StoreSyntaxError,
    TimestampMalformedError,
    TimestampMissingError,
    TimestampSkewError,
    UnknownCommandError,
    UnknownStoreError,
    WrongNumberOfArgumentsError,
)
from .hlc import DEFAULT_MAX_DRIFT_MS, Clock, Hlc
from .topics import (
    REQUEST_TOPIC,
    check_response_topic,
    hex_decode,
    hex_encode,
    is_response_topic_allowed,
    notification_filter,
    notification_topic,
    parse_notification_topic,
    response_topic,
)

__all__ = [
    "__version__",
    # the client
    "AsyncClient",
    "Client",
    "AsyncLock",
    "Lock",
    "AsyncElection",
    "Election",
    "AsyncSubscription",
    "Subscription",
    "AsyncPager",
    "Pager",
    "Value",
    "SetResult",
    "CacheStats",
    "Change",
    "ConnectionEvent",
    "HolderChange",
    "LockStatus",
    "EditResult",
    "Event",
    "DELETE",
    "KEEP",
    "locks",
    "codec",
    "errors",
    "hlc",
    "topics",
    # codec
    "Notification",
    "Request",
    "Response",
    "decode_notification",
    "decode_request",
    "decode_response",
    "encode_del",
    "encode_get",
    "encode_keynotify",
    "encode_notification",
    "encode_response",
    "encode_scan",
    "encode_set",
    "encode_vdel",
    # hlc
    "DEFAULT_MAX_DRIFT_MS",
    "Clock",
    "Hlc",
    # topics
    "REQUEST_TOPIC",
    "check_response_topic",
    "hex_decode",
    "hex_encode",
    "is_response_topic_allowed",
    "notification_filter",
    "notification_topic",
    "parse_notification_topic",
    "response_topic",
    # errors
    "ClockDriftError",
    "ClockError",
    "ClockOverflowError",
    "ClosedError",
    "ConnectRefusedError",
    "ConnectTimeoutError",
    "ConnectUnauthorizedError",
    "TlsError",
    "NoStoreError",
    "NotHeldError",
    "CallCancelledError",
    "UnsupportedError",
    "CallbackError",
    "ConnectError",
    "ConnectFailedError",
    "ConnectionLostError",
    "FencingTokenLowerVersionError",
    "FencingTokenRequiredError",
    "FencingTokenSkewError",
    "InvalidArgumentError",
    "KeyLengthZeroError",
    "MalformedError",
    "MqstateError",
    "MqstateTimeoutError",
    "NotAuthorizedError",
    "QuotaExceededError",
    "RpcError",
    "StoreError",
    "StoreSyntaxError",
    "TimestampMalformedError",
    "TimestampMissingError",
    "TimestampSkewError",
    "UnknownCommandError",
    "UnknownStoreError",
    "WrongNumberOfArgumentsError",
]
