"""Subscriptions as Python iterators: :class:`AsyncSubscription` (``async for``,
``async with``) and :class:`Subscription` (``for``, ``with``). Closing one — explicitly,
by leaving its ``with`` block, by ``break`` out of a loop followed by garbage collection,
or at garbage collection — ends it at once (for a key, ``KEYNOTIFY … STOP`` is sent)."""

from __future__ import annotations

from types import TracebackType
from typing import Generator, Iterator, Optional, Type

from . import _mqstate
from ._calls import Seconds, seconds, wait, wait_async
from ._events import Event, _event
from .errors import ClosedError, MqstateTimeoutError

__all__ = ["AsyncSubscription", "Subscription"]


class AsyncSubscription:
    """Events of a key, a lock's holder or a lock's status, for asyncio.

    ``async for event in sub`` yields :class:`Change` (or :class:`HolderChange` /
    :class:`LockStatus`) and :class:`ConnectionEvent` objects until the subscription is
    closed. The registration completes on ``await sub``, ``async with sub`` or the first
    iteration.
    """

    def __init__(
        self,
        start: Optional[_mqstate.PendingCall] = None,
        native: Optional[_mqstate.Subscription] = None,
    ) -> None:
        self._start = start
        self._native = native
        self._closed = False

    async def _ready(self) -> _mqstate.Subscription:
        if self._native is None:
            if self._closed or self._start is None:
                raise ClosedError("the subscription is closed")
            start, self._start = self._start, None
            self._native = await wait_async(start)
        return self._native

    def __await__(self) -> Generator[object, None, "AsyncSubscription"]:
        yield from self._ready().__await__()
        return self

    async def __aenter__(self) -> "AsyncSubscription":
        await self._ready()
        return self

    async def __aexit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> None:
        self.close()

    def __aiter__(self) -> "AsyncSubscription":
        return self

    async def __anext__(self) -> Event:
        event = await self.next()
        if event is None:
            raise StopAsyncIteration
        return event

    async def next(self, timeout: Optional[Seconds] = None) -> Optional[Event]:
        """The next event; None once closed. Raises MqstateTimeoutError after ``timeout``."""
        native = await self._ready()
        pending = native.next_async()
        if timeout is None:
            raw = await wait_async(pending)
        else:
            import asyncio

            try:
                raw = await asyncio.wait_for(wait_async(pending), seconds(timeout))
            except asyncio.TimeoutError:
                raise MqstateTimeoutError(f"no event within {timeout} s") from None
        return None if raw is None else _event(raw)

    def try_next(self) -> Optional[Event]:
        """The next event if one is buffered, else None."""
        if self._native is None:
            return None
        raw = self._native.try_next()
        return None if raw is None else _event(raw)

    def close(self) -> None:
        """Ends the subscription now (idempotent)."""
        self._closed = True
        if self._start is not None:
            self._start.cancel()
            self._start = None
        if self._native is not None:
            self._native.close()

    @property
    def closed(self) -> bool:
        """Whether the subscription has ended."""
        return self._closed or (self._native is not None and self._native.closed)


class Subscription:
    """Events of a key, a lock's holder or a lock's status, for blocking code.

    ``for event in sub`` blocks for each event and ends when the subscription is closed
    (another thread may call :meth:`close`); :meth:`next` takes a timeout.
    """

    def __init__(self, native: _mqstate.Subscription) -> None:
        self._native = native

    def __enter__(self) -> "Subscription":
        return self

    def __exit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> None:
        self.close()

    def __iter__(self) -> Iterator[Event]:
        return self

    def __next__(self) -> Event:
        event = self.next()
        if event is None:
            raise StopIteration
        return event

    def next(self, timeout: Optional[Seconds] = None) -> Optional[Event]:
        """The next event; None once closed. Raises MqstateTimeoutError after ``timeout``.
        Ctrl-C interrupts the wait."""
        import time

        limit = seconds(timeout)
        deadline = None if limit is None else time.monotonic() + limit
        while True:
            left = 0.05 if deadline is None else min(0.05, max(0.0, deadline - time.monotonic()))
            state, raw = self._native.next_slice(left)
            if state == "event":
                return _event(raw)
            if state == "closed":
                return None
            if deadline is not None and time.monotonic() >= deadline:
                raise MqstateTimeoutError(f"no event within {timeout} s")

    def try_next(self) -> Optional[Event]:
        """The next event if one is buffered, else None."""
        raw = self._native.try_next()
        return None if raw is None else _event(raw)

    def close(self) -> None:
        """Ends the subscription now (idempotent)."""
        self._native.close()

    @property
    def closed(self) -> bool:
        """Whether the subscription has ended."""
        return self._native.closed


def _blocking(pending: _mqstate.PendingCall) -> Subscription:
    return Subscription(wait(pending))
