"""The hybrid logical clock (HLC) of the state store: versions, fencing tokens, ``__ts``.

:class:`Hlc` is an immutable value ``{wall_ms}:{counter}:{node_id}``; ``str()`` gives the
canonical padded form the service sends (15-digit wall clock, 5-digit counter) and
:meth:`Hlc.parse` reads padded or unpadded text. Values compare by wall clock, then counter,
then node id, and hash consistently. The two rules of the protocol take the time as an
argument, so they are easy to test:

- ``hlc.tick(now_ms)`` before sending (a request's ``__ts``);
- ``hlc.receive(other, now_ms)`` for every ``__ts`` received.

Both return a new value and raise :class:`~mqstate.errors.ClockDriftError` when the clock
would move more than ``max_drift_ms`` (default :data:`DEFAULT_MAX_DRIFT_MS`, one minute)
ahead of ``now_ms``, or :class:`~mqstate.errors.ClockOverflowError` when the counter would
overflow.

:class:`Clock` is the thread-safe clock a process owns: one node id, the system time::

    clock = Clock("my-client")
    ts = clock.tick()            # Hlc for the request's __ts user property
    clock.receive(Hlc.parse(response_ts))
"""

from __future__ import annotations

from ._mqstate import DEFAULT_MAX_DRIFT_MS, Clock, Hlc

__all__ = ["DEFAULT_MAX_DRIFT_MS", "Clock", "Hlc"]
