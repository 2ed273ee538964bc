"""The values the clients return and the events their subscriptions yield.

All are immutable dataclasses built from the plain tuples the native module hands over.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any, Optional, Tuple, Union

from .hlc import Hlc

__all__ = [
    "Value",
    "SetResult",
    "Change",
    "ConnectionEvent",
    "HolderChange",
    "LockStatus",
    "EditResult",
    "Event",
    "DELETE",
    "KEEP",
]


@dataclass(frozen=True)
class Value:
    """A key's value (``bytes``) and its version."""

    value: bytes
    version: Optional[Hlc]

    @property
    def text(self) -> str:
        """The value decoded as UTF-8 (raises ``UnicodeDecodeError`` if it is not)."""
        return self.value.decode("utf-8")


@dataclass(frozen=True)
class SetResult:
    """The outcome of a ``set``: ``applied`` is False when an ``nx``/``nex`` condition
    failed; ``version`` is the key's new version (also a lock's fencing token)."""

    applied: bool
    version: Optional[Hlc]

    def __bool__(self) -> bool:
        return self.applied


@dataclass(frozen=True)
class CacheStats:
    """The client-side cache's counters (:meth:`Client.cache_stats`), named as in every
    language: reads answered from memory (``hits``) and from the store (``misses``),
    entries removed to stay within the bounds (``evictions``) and by notifications, cuts or
    lost sessions (``invalidations``), what it holds now (``entries``, ``bytes``), and the
    freshness lease's: renewals sent (``lease_renewals``), times it ran out with nothing read
    for a while (``lease_expiries``), times it failed — a renewal refused, lost or late, or a
    backlog of notifications: entries made before are read from the store again before they
    answer (``lease_failures``), reads of cached keys sent to the store because the lease did
    not hold (``lease_misses``, counted in ``misses`` too), and KEYNOTIFYs the store refused
    (``refused``: those keys are read uncached until the next connection)."""

    hits: int
    misses: int
    evictions: int
    invalidations: int
    entries: int
    bytes: int
    lease_renewals: int
    lease_expiries: int
    lease_failures: int
    lease_misses: int
    refused: int


@dataclass(frozen=True)
class Change:
    """One change of an observed key: ``kind`` is ``"set"`` (``value`` holds the new
    value) or ``"delete"``. ``resync`` marks a change found after a reconnection (the
    intermediate ones are not replayed); ``dropped_before`` counts changes discarded before
    this one because the reader was too slow (the oldest are dropped first)."""

    key: bytes
    kind: str
    value: Optional[bytes]
    version: Optional[Hlc]
    resync: bool = False
    dropped_before: int = 0

    @property
    def text(self) -> Optional[str]:
        """The new value decoded as UTF-8, or None for a deletion."""
        return None if self.value is None else self.value.decode("utf-8")


@dataclass(frozen=True)
class ConnectionEvent:
    """``"degraded"``: after a reconnection the subscription could not be restored yet and
    changes are being missed (``reason`` says why); ``"restored"``: it is back."""

    kind: str
    reason: Optional[str] = None


@dataclass(frozen=True)
class HolderChange:
    """A lock's holder (an election's leader) changed; ``holder`` is None when free."""

    holder: Optional[str]
    version: Optional[Hlc]
    resync: bool = False


@dataclass(frozen=True)
class LockStatus:
    """This lock's (this candidate's) own status: ``"held"`` (with ``fencing_token`` and
    ``lease`` in seconds), ``"not_held"``, or ``"lost"`` (``reason``: ``expired``,
    ``taken_over``, ``renewal_failed``)."""

    state: str
    fencing_token: Optional[Hlc] = None
    lease: Optional[float] = None
    reason: Optional[str] = None


@dataclass(frozen=True)
class EditResult:
    """The outcome of a fenced edit: what was read, what was written (``"set"``,
    ``"delete"`` or ``"keep"``), the key's new version, the token, and the attempts."""

    previous: Optional[Value]
    kind: str
    version: Optional[Hlc]
    token: Hlc
    attempts: int


Event = Union[Change, ConnectionEvent, HolderChange, LockStatus]


class _Decision(enum.Enum):
    DELETE = "delete"
    KEEP = "keep"

    def __repr__(self) -> str:
        return f"mqstate.{self.name}"


#: Returned by an edit function: delete the key.
DELETE = _Decision.DELETE
#: Returned by an edit function (or ``None``): leave the key as it is.
KEEP = _Decision.KEEP


def _value(raw: Optional[Tuple[bytes, Optional[Hlc]]]) -> Optional[Value]:
    return None if raw is None else Value(raw[0], raw[1])


def _event(raw: Tuple[Any, ...]) -> Event:
    kind = raw[0]
    if kind == "change":
        return Change(raw[1], raw[2], raw[3], raw[4], raw[5], raw[6])
    if kind == "holder":
        return HolderChange(raw[1], raw[2], raw[3])
    if kind == "status":
        return LockStatus(raw[1], raw[2], raw[3], raw[4])
    if kind == "degraded":
        return ConnectionEvent("degraded", raw[1])
    return ConnectionEvent("restored")


def _decision(result: object) -> Tuple[Any, ...]:
    """An edit function's return value as the native module wants it."""
    if result is None or result is KEEP:
        return ("keep",)
    if result is DELETE:
        return ("delete",)
    if isinstance(result, str):
        return ("set", result.encode("utf-8"))
    if isinstance(result, (bytes, bytearray, memoryview)):
        return ("set", bytes(result))
    raise TypeError(
        "an edit function returns bytes or str (the new value), mqstate.DELETE, "
        f"mqstate.KEEP or None, not {type(result).__name__}"
    )


def _edit_result(raw: Tuple[Any, ...]) -> EditResult:
    return EditResult(_value(raw[0]), raw[1], raw[2], raw[3], raw[4])
