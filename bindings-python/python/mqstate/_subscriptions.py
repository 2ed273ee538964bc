"""Subscriptions as Python iterators: :class:`AsyncSubscription` (``async for``,
``async with``) and :class:`Subscription` (``for``, ``with``), generic over the events they
yield — ``observe()`` gives ``Subscription[Change | ConnectionEvent]``, ``watch_holder()``
``Subscription[HolderChange]``, ``watch_status()`` ``Subscription[LockStatus]`` — so a type
checker narrows each event with one ``isinstance``.

Closing one — explicitly, by leaving its ``with`` block, by ``break`` out of a loop followed
by garbage collection, or at garbage collection — ends it at once (for a key,
``KEYNOTIFY … STOP`` is sent). Waiting for the next event with a timeout is the core's
(``next(timeout=…)`` raises MqstateTimeoutError, and neither a timeout nor a cancellation
loses an event)."""

from __future__ import annotations

from typing import Any, Generator, Generic, Iterator, Optional, TypeVar, cast

from . import _mqstate
from . import telemetry as _telemetry
from ._calls import Seconds, wait, wait_async
from ._events import _event
from .errors import ClosedError

__all__ = ["AsyncSubscription", "Subscription"]

#: The events a subscription yields.
E = TypeVar("E", covariant=True)


def _typed(raw: Any) -> Any:
    return None if raw is None else _event(raw)


class AsyncSubscription(Generic[E]):
    """Events of a key, a lock's holder or a lock's status, for asyncio.

    ``async for event in sub`` yields events (:class:`Change` and :class:`ConnectionEvent`
    for a key, :class:`HolderChange` or :class:`LockStatus` for a lock) until the
    subscription is closed. The registration completes on ``await sub``, ``async with sub``
    or the first iteration.
    """

    def __init__(
        self,
        start: Optional[_mqstate.PendingCall] = None,
        native: Optional[_mqstate.Subscription] = None,
        call: Any = None,
    ) -> None:
        self._start = start
        self._native = native
        self._closed = False
        #: The registration's span (observe's KEYNOTIFY), ended when it completes.
        self._call = call

    async def _ready(self) -> _mqstate.Subscription:
        if self._native is None:
            if self._closed or self._start is None:
                raise ClosedError("the subscription is closed")
            start, self._start = self._start, None
            call, self._call = self._call, None
            native: _mqstate.Subscription = await _telemetry.finish_async(
                call, lambda: wait_async(start)
            )
            self._native = native
            return native
        return self._native

    def __await__(self) -> Generator[Any, None, AsyncSubscription[E]]:
        yield from self._ready().__await__()
        return self

    async def __aenter__(self) -> AsyncSubscription[E]:
        await self._ready()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        self.close()

    def __aiter__(self) -> AsyncSubscription[E]:
        return self

    async def __anext__(self) -> E:
        event = await self.next()
        if event is None:
            raise StopAsyncIteration
        return event

    async def next(self, timeout: Optional[Seconds] = None) -> Optional[E]:
        """The next event; None once closed. Raises MqstateTimeoutError when none came
        within ``timeout``; cancelling the awaiting task loses no event."""
        native = await self._ready()
        return cast(Optional[E], _typed(await wait_async(native.next(timeout))))

    def try_next(self) -> Optional[E]:
        """The next event if one is buffered, else None."""
        if self._native is None:
            return None
        return cast(Optional[E], _typed(self._native.try_next()))

    def close(self) -> None:
        """Ends the subscription now (idempotent)."""
        self._closed = True
        if self._start is not None:
            self._start.cancel()
            self._start = None
        call, self._call = self._call, None
        if call is not None:  # closed before the registration was awaited
            call.end(ClosedError("the subscription was closed before it was registered"))
        if self._native is not None:
            self._native.close()

    @property
    def closed(self) -> bool:
        """Whether the subscription has ended."""
        return self._closed or (self._native is not None and self._native.closed)


class Subscription(Generic[E]):
    """Events of a key, a lock's holder or a lock's status, for blocking code.

    ``for event in sub`` blocks for each event and ends when the subscription is closed
    (another thread may call :meth:`close`); :meth:`next` takes a timeout. Ctrl-C
    interrupts a wait.
    """

    def __init__(self, native: _mqstate.Subscription) -> None:
        self._native = native

    def __enter__(self) -> Subscription[E]:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __iter__(self) -> Iterator[E]:
        return self

    def __next__(self) -> E:
        event = self.next()
        if event is None:
            raise StopIteration
        return event

    def next(self, timeout: Optional[Seconds] = None) -> Optional[E]:
        """The next event; None once closed. Raises MqstateTimeoutError when none came
        within ``timeout``; Ctrl-C interrupts the wait and loses no event."""
        return cast(Optional[E], _typed(wait(self._native.next(timeout))))

    def try_next(self) -> Optional[E]:
        """The next event if one is buffered, else None."""
        return cast(Optional[E], _typed(self._native.try_next()))

    def close(self) -> None:
        """Ends the subscription now (idempotent)."""
        self._native.close()

    @property
    def closed(self) -> bool:
        """Whether the subscription has ended."""
        return self._native.closed
