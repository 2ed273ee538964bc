"""Waiting for the core's pending calls: blocking (in short slices with the GIL released,
so Ctrl-C interrupts promptly and cancels the call) or from asyncio (a completion callback
wakes the event loop; cancelling the awaiting task cancels the call)."""

from __future__ import annotations

import asyncio
import datetime
from typing import Any, Optional, Union

from . import _mqstate

#: A duration argument: seconds, or a ``datetime.timedelta``.
Seconds = Union[float, int, datetime.timedelta]

#: A key or value argument: ``str`` is taken as UTF-8.
BytesLike = Union[bytes, bytearray, memoryview, str]

#: How long one blocking slice lasts: the longest a Ctrl-C waits to be noticed.
_SLICE = 0.05


def seconds(value: Optional[Seconds]) -> Optional[float]:
    """A duration argument as float seconds (None stays None)."""
    if value is None:
        return None
    if isinstance(value, datetime.timedelta):
        return value.total_seconds()
    return float(value)


def wait(pending: _mqstate.PendingCall) -> Any:
    """Blocks until the call completes; returns its result or raises its error."""
    try:
        while not pending.wait_slice(_SLICE):
            pass
    except BaseException:
        pending.cancel()
        raise
    return pending.result()


def _settle(future: "asyncio.Future[None]") -> None:
    if not future.done():
        future.set_result(None)


async def wait_async(pending: _mqstate.PendingCall) -> Any:
    """Awaits the call; cancelling the awaiting task cancels the call in the core."""
    loop = asyncio.get_running_loop()
    future: "asyncio.Future[None]" = loop.create_future()

    def done() -> None:  # runs on a library thread
        try:
            loop.call_soon_threadsafe(_settle, future)
        except RuntimeError:
            pass  # the event loop was closed: nobody waits any more

    pending.on_done(done)
    try:
        await future
    except asyncio.CancelledError:
        pending.cancel()
        raise
    return pending.result()
