"""Waiting for the core's pending calls: blocking (in short slices with the GIL released,
so Ctrl-C interrupts promptly and cancels the call) or from asyncio (a completion callback
wakes the event loop; cancelling the awaiting task cancels the call)."""

from __future__ import annotations

import asyncio
import datetime
import weakref
from typing import Any, Dict, Union

from . import _mqstate

#: A duration argument: seconds (``int`` or ``float``) or a ``datetime.timedelta``. The
#: native module converts it with the core's one rule (negative, NaN or infinite is
#: InvalidArgumentError naming the option; each purpose's floor is the core's).
Seconds = Union[float, int, datetime.timedelta]

#: A key or value argument: ``str`` is taken as UTF-8.
BytesLike = Union[bytes, bytearray, memoryview, str]

#: How long one blocking slice lasts: the longest a Ctrl-C waits to be noticed.
_SLICE = 0.05


def wait(pending: _mqstate.PendingCall) -> Any:
    """Blocks until the call completes; returns its result or raises its error."""
    try:
        while not pending.wait_slice(_SLICE):
            pass
    except BaseException:
        pending.cancel()
        raise
    return pending.result()


class _LoopCompletions:
    """The calls awaited on one event loop. A completing call wakes the loop only when no
    wake-up is pending already, and one wake-up settles every call completed meanwhile: at
    64 calls in flight the loop is woken far less often than once per call."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._futures: Dict[int, "asyncio.Future[None]"] = {}
        self._next = 0
        self._native = _mqstate.Waker(self._wake)

    def _wake(self) -> None:  # runs on a library thread
        try:
            self._loop.call_soon_threadsafe(self._settle)
        except RuntimeError:
            pass  # the event loop was closed: nobody waits any more

    def _settle(self) -> None:
        for token in self._native.take():
            future = self._futures.pop(token, None)
            if future is not None and not future.done():
                future.set_result(None)

    def watch(self, pending: _mqstate.PendingCall) -> "tuple[int, asyncio.Future[None]]":
        token = self._next
        self._next += 1
        future: "asyncio.Future[None]" = self._loop.create_future()
        self._futures[token] = future
        pending.on_done_batched(self._native, token)
        return token, future

    def forget(self, token: int) -> None:
        self._futures.pop(token, None)


_COMPLETIONS: "weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _LoopCompletions]" = (
    weakref.WeakKeyDictionary()
)


async def wait_async(pending: _mqstate.PendingCall) -> Any:
    """Awaits the call; cancelling the awaiting task cancels the call in the core."""
    loop = asyncio.get_running_loop()
    completions = _COMPLETIONS.get(loop)
    if completions is None:
        completions = _COMPLETIONS[loop] = _LoopCompletions(loop)
    token, future = completions.watch(pending)
    try:
        await future
    except asyncio.CancelledError:
        completions.forget(token)
        pending.cancel()
        raise
    return pending.result()
