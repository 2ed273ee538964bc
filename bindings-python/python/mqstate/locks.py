"""Leased locks, fenced edits and leader elections, for asyncio (:class:`AsyncLock`,
:class:`AsyncElection`) and blocking code (:class:`Lock`, :class:`Election`). Get them from
a client: ``client.lock(key)``, ``client.election(name, candidate)``.

A lock is held by writing its holder id with ``SET key holder NEX PX lease``; the version
of that write is the **fencing token** to pass (``fencing_token=``) on writes to the keys
the lock protects. Automatic renewal (``auto_renew=``) starts only after a successful
acquire and stops at the first failed renewal.
"""

from __future__ import annotations

import asyncio
import inspect
from typing import Any, Awaitable, Callable, Optional, Union

from . import _mqstate
from . import telemetry as _telemetry
from ._calls import BytesLike, Seconds, wait, wait_async
from ._events import EditResult, HolderChange, LockStatus, Value, _decision, _edit_result, _value
from ._subscriptions import AsyncSubscription, Subscription
from .hlc import Hlc

__all__ = ["AsyncLock", "Lock", "AsyncElection", "Election", "EditFunction"]

#: An edit function: from the current value (or None) to the new value (bytes/str),
#: ``mqstate.DELETE``, ``mqstate.KEEP`` or None (keep). It may be a coroutine function
#: with the asyncio client; whatever it raises comes back unchanged.
EditFunction = Callable[[Optional[Value]], Union[Any, Awaitable[Any]]]


async def _awaited(awaitable: Awaitable[Any]) -> Any:
    return await awaitable


def _decider(fn: EditFunction, loop: Optional[asyncio.AbstractEventLoop]) -> Callable[[Any], Any]:
    """Wraps ``fn`` for the native module, which calls it on a library thread."""

    def decide(raw: Any) -> Any:
        result = fn(_value(raw))
        if inspect.isawaitable(result):
            if loop is not None:
                result = asyncio.run_coroutine_threadsafe(_awaited(result), loop).result()
            else:
                result = asyncio.run(_awaited(result))
        return _decision(result)

    return decide


class _LockBase:
    def __init__(self, native: _mqstate.Lock) -> None:
        self._native = native

    def _traced(self, name: str) -> tuple[_mqstate.Lock, Any]:
        """The lock to make one operation with, and its span (the core's ``name``)."""
        return _telemetry.begin_operation(self._native, name, self._native.key)

    @property
    def key(self) -> bytes:
        """The lock key."""
        return self._native.key

    @property
    def holder_id(self) -> str:
        """The holder id this lock writes (the client id, or ``client_id:session_id``)."""
        return self._native.holder_id

    @property
    def fencing_token(self) -> Optional[Hlc]:
        """The current fencing token while held, else None."""
        return self._native.fencing_token

    @property
    def is_held(self) -> bool:
        """Whether the lock is held now (acquired, not lost or released, lease not over)."""
        return self._native.is_held

    def set_auto_renew(self, period: Optional[Seconds]) -> None:
        """Renew automatically this often from the next acquire on (None: never)."""
        self._native.set_auto_renew(period)


class AsyncLock(_LockBase):
    """A leased lock for asyncio. ``async with lock:`` acquires it (waiting) for the lock's
    default lease and releases it on exit."""

    async def try_acquire(self, lease: Optional[Seconds] = None) -> Optional[Hlc]:
        """Tries once: the fencing token, or None when someone else holds it."""
        native, call = self._traced("SPAN_LOCK_TRY_ACQUIRE")
        token: Optional[Hlc] = await _telemetry.finish_async(
            call, lambda: wait_async(native.try_acquire(lease))
        )
        return token

    async def acquire(
        self, lease: Optional[Seconds] = None, *, timeout: Optional[Seconds] = None
    ) -> Hlc:
        """Waits for the lock (up to ``timeout``; ``0``: one try, no wait; ``None``: no limit,
        cancel the task to stop waiting)."""
        native, call = self._traced("SPAN_LOCK_ACQUIRE")
        token: Hlc = await _telemetry.finish_async(
            call, lambda: wait_async(native.acquire(lease, timeout))
        )
        return token

    async def renew(self) -> Optional[Hlc]:
        """Renews the held lease: the new token, or None when no longer held."""
        native, call = self._traced("SPAN_LOCK_RENEW")
        token: Optional[Hlc] = await _telemetry.finish_async(
            call, lambda: wait_async(native.renew())
        )
        return token

    async def release(self) -> bool:
        """Releases the lock; True when our hold was deleted."""
        native, call = self._traced("SPAN_LOCK_RELEASE")
        released: bool = await _telemetry.finish_async(
            call, lambda: wait_async(native.release())
        )
        return released

    async def holder(self) -> Optional[str]:
        """The current holder id, or None when free."""
        holder: Optional[str] = await wait_async(self._native.holder())
        return holder

    def watch_holder(self) -> AsyncSubscription[HolderChange]:
        """:class:`HolderChange` events: the current holder, then each change."""
        return AsyncSubscription(start=self._native.watch_holder())

    def watch_status(self) -> AsyncSubscription[LockStatus]:
        """:class:`LockStatus` events of this lock: the current status, then each change."""
        return AsyncSubscription(native=self._native.watch_status())

    async def edit(
        self,
        key: BytesLike,
        fn: EditFunction,
        *,
        lease: Optional[Seconds] = None,
        timeout: Optional[Seconds] = None,
    ) -> EditResult:
        """Edits ``key`` under this lock: acquires, reads, calls ``fn`` (a function or a
        coroutine function) with the value, writes its result fenced, releases. Retried
        when a newer holder wrote meanwhile; an exception from ``fn`` propagates unchanged.
        ``timeout`` bounds the whole edit, retries included (default 10 s, the core's)."""
        decide = _decider(fn, asyncio.get_running_loop())
        native, call = self._traced("SPAN_LOCK_EDIT")
        return _edit_result(
            await _telemetry.finish_async(
                call, lambda: wait_async(native.edit(key, decide, lease, timeout))
            )
        )

    async def __aenter__(self) -> "AsyncLock":
        await self.acquire()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.release()


class Lock(_LockBase):
    """A leased lock for blocking code. ``with lock:`` acquires it (waiting) for the lock's
    default lease and releases it on exit."""

    def try_acquire(self, lease: Optional[Seconds] = None) -> Optional[Hlc]:
        """Tries once: the fencing token, or None when someone else holds it."""
        native, call = self._traced("SPAN_LOCK_TRY_ACQUIRE")
        token: Optional[Hlc] = _telemetry.finish(call, lambda: wait(native.try_acquire(lease)))
        return token

    def acquire(self, lease: Optional[Seconds] = None, *, timeout: Optional[Seconds] = None) -> Hlc:
        """Waits for the lock (up to ``timeout``; ``0``: one try, no wait; ``None``: no limit,
        Ctrl-C stops waiting)."""
        native, call = self._traced("SPAN_LOCK_ACQUIRE")
        token: Hlc = _telemetry.finish(call, lambda: wait(native.acquire(lease, timeout)))
        return token

    def renew(self) -> Optional[Hlc]:
        """Renews the held lease: the new token, or None when no longer held."""
        native, call = self._traced("SPAN_LOCK_RENEW")
        token: Optional[Hlc] = _telemetry.finish(call, lambda: wait(native.renew()))
        return token

    def release(self) -> bool:
        """Releases the lock; True when our hold was deleted."""
        native, call = self._traced("SPAN_LOCK_RELEASE")
        released: bool = _telemetry.finish(call, lambda: wait(native.release()))
        return released

    def holder(self) -> Optional[str]:
        """The current holder id, or None when free."""
        holder: Optional[str] = wait(self._native.holder())
        return holder

    def watch_holder(self) -> Subscription[HolderChange]:
        """:class:`HolderChange` events: the current holder, then each change."""
        return Subscription(wait(self._native.watch_holder()))

    def watch_status(self) -> Subscription[LockStatus]:
        """:class:`LockStatus` events of this lock: the current status, then each change."""
        return Subscription(self._native.watch_status())

    def edit(
        self,
        key: BytesLike,
        fn: EditFunction,
        *,
        lease: Optional[Seconds] = None,
        timeout: Optional[Seconds] = None,
    ) -> EditResult:
        """Edits ``key`` under this lock (see :meth:`AsyncLock.edit`)."""
        decide = _decider(fn, None)
        native, call = self._traced("SPAN_LOCK_EDIT")
        return _edit_result(
            _telemetry.finish(call, lambda: wait(native.edit(key, decide, lease, timeout)))
        )

    def __enter__(self) -> "Lock":
        self.acquire()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.release()


class _ElectionBase:
    def __init__(self, native: _mqstate.Election) -> None:
        self._native = native

    def _traced(self, name: str) -> tuple[_mqstate.Election, Any]:
        """The candidate to make one operation with, and its span (the core's ``name``)."""
        return _telemetry.begin_operation(self._native, name)

    @property
    def candidate_id(self) -> str:
        """This candidate's id."""
        return self._native.candidate_id

    @property
    def is_leader(self) -> bool:
        """Whether this candidate leads now (turns False at once when a renewal fails)."""
        return self._native.is_leader

    @property
    def fencing_token(self) -> Optional[Hlc]:
        """The leader's fencing token while this candidate leads."""
        return self._native.fencing_token


class AsyncElection(_ElectionBase):
    """A candidate in a leader election, for asyncio. ``async with election:`` campaigns
    (waiting) and resigns on exit."""

    async def campaign(
        self, term: Optional[Seconds] = None, *, timeout: Optional[Seconds] = None
    ) -> Hlc:
        """Waits to become leader (up to ``timeout``); the leader's fencing token. The term
        is then renewed automatically until :meth:`resign`."""
        native, call = self._traced("SPAN_ELECTION_CAMPAIGN")
        token: Hlc = await _telemetry.finish_async(
            call, lambda: wait_async(native.campaign(term, timeout))
        )
        return token

    async def try_campaign(self, term: Optional[Seconds] = None) -> bool:
        """Becomes leader if nobody is; True when leader now."""
        native, call = self._traced("SPAN_ELECTION_TRY_CAMPAIGN")
        elected: bool = await _telemetry.finish_async(
            call, lambda: wait_async(native.try_campaign(term))
        )
        return elected

    async def resign(self) -> bool:
        """Steps down; True when this candidate led."""
        native, call = self._traced("SPAN_ELECTION_RESIGN")
        resigned: bool = await _telemetry.finish_async(call, lambda: wait_async(native.resign()))
        return resigned

    async def leader(self) -> Optional[str]:
        """The current leader's id, or None."""
        leader: Optional[str] = await wait_async(self._native.leader())
        return leader

    def watch_leader(self) -> AsyncSubscription[HolderChange]:
        """:class:`HolderChange` events: the current leader, then each change."""
        return AsyncSubscription(start=self._native.watch_leader())

    def watch_status(self) -> AsyncSubscription[LockStatus]:
        """:class:`LockStatus` events of this candidate's leadership."""
        return AsyncSubscription(native=self._native.watch_status())

    async def __aenter__(self) -> "AsyncElection":
        await self.campaign()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.resign()


class Election(_ElectionBase):
    """A candidate in a leader election, for blocking code. ``with election:`` campaigns
    (waiting) and resigns on exit."""

    def campaign(self, term: Optional[Seconds] = None, *, timeout: Optional[Seconds] = None) -> Hlc:
        """Waits to become leader (up to ``timeout``); the leader's fencing token."""
        native, call = self._traced("SPAN_ELECTION_CAMPAIGN")
        token: Hlc = _telemetry.finish(call, lambda: wait(native.campaign(term, timeout)))
        return token

    def try_campaign(self, term: Optional[Seconds] = None) -> bool:
        """Becomes leader if nobody is; True when leader now."""
        native, call = self._traced("SPAN_ELECTION_TRY_CAMPAIGN")
        elected: bool = _telemetry.finish(call, lambda: wait(native.try_campaign(term)))
        return elected

    def resign(self) -> bool:
        """Steps down; True when this candidate led."""
        native, call = self._traced("SPAN_ELECTION_RESIGN")
        resigned: bool = _telemetry.finish(call, lambda: wait(native.resign()))
        return resigned

    def leader(self) -> Optional[str]:
        """The current leader's id, or None."""
        leader: Optional[str] = wait(self._native.leader())
        return leader

    def watch_leader(self) -> Subscription[HolderChange]:
        """:class:`HolderChange` events: the current leader, then each change."""
        return Subscription(wait(self._native.watch_leader()))

    def watch_status(self) -> Subscription[LockStatus]:
        """:class:`LockStatus` events of this candidate's leadership."""
        return Subscription(self._native.watch_status())

    def __enter__(self) -> "Election":
        self.campaign()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.resign()
