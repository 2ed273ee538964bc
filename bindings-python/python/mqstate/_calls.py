"""Waiting for the core's pending calls: blocking (in short slices with the GIL released,
so Ctrl-C interrupts promptly and cancels the call) or from asyncio (a completion wakes the
event loop through a pipe it watches; cancelling the awaiting task cancels the call)."""

from __future__ import annotations

import asyncio
import datetime
import os
import threading
import weakref
from typing import Any, Union

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
    """Blocks until the call completes; returns its result or raises its error. Ctrl-C
    (any exception a signal handler raises) cancels the call and is raised. Python runs
    signal handlers on its main thread only: there the wait is sliced to run them; another
    thread waits in one go."""
    if threading.get_ident() == threading.main_thread().ident:
        return pending.wait(_SLICE)
    return pending.wait(None)


class _LoopCompletions:
    """The calls awaited on one event loop. A completing call wakes the loop only when no
    wake-up is pending already (by a byte on a pipe the loop watches, so the completing
    library thread never takes the GIL), and one wake-up settles every call completed
    meanwhile."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        # Weak: the loop is the key of _COMPLETIONS, which must not keep it alive.
        self._loop = weakref.ref(loop)
        self._native = _mqstate.Completions()
        fd = self._native.fileno()
        try:
            if fd is None:
                raise NotImplementedError
            loop.add_reader(fd, self._native.settle)
        except NotImplementedError:  # a loop without add_reader (Windows' proactor)
            self._native = _mqstate.Completions(self._wake)

    def _wake(self) -> None:  # runs on a library thread, with the GIL
        loop = self._loop()
        try:
            if loop is not None:
                loop.call_soon_threadsafe(self._native.settle)
        except RuntimeError:
            pass  # the event loop was closed: nobody waits any more

    def watch(
        self, loop: asyncio.AbstractEventLoop, pending: _mqstate.PendingCall
    ) -> "asyncio.Future[Any]":
        future: "asyncio.Future[Any]" = loop.create_future()
        pending.watch(self._native, future)
        return future


_COMPLETIONS: "weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _LoopCompletions]" = (
    weakref.WeakKeyDictionary()
)
#: The last loop's completions (the common case: one loop), skipping the weak dictionary.
_LAST: "tuple[weakref.ReferenceType[asyncio.AbstractEventLoop], _LoopCompletions] | None" = None


def _completions(loop: asyncio.AbstractEventLoop) -> _LoopCompletions:
    global _LAST
    last = _LAST
    if last is not None and last[0]() is loop:
        return last[1]
    completions = _COMPLETIONS.get(loop)
    if completions is None:
        completions = _COMPLETIONS[loop] = _LoopCompletions(loop)
    _LAST = (weakref.ref(loop), completions)
    return completions


def _forget_loops() -> None:
    """In a forked child: the parent's loops (and their pipes) are not this process's."""
    global _LAST
    _LAST = None
    _COMPLETIONS.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_loops)


async def wait_async(pending: _mqstate.PendingCall) -> Any:
    """Awaits the call; cancelling the awaiting task cancels the call in the core."""
    loop = asyncio.get_running_loop()
    future = _completions(loop).watch(loop, pending)
    try:
        return await future
    except asyncio.CancelledError:
        pending.cancel()
        raise
