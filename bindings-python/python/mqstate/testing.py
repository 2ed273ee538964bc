"""Test your app against mqstate: :class:`LocalStore`, a state store that runs in this
process (the emulator ``mqstate serve`` runs, broker included) on a free loopback port, with
faults on demand. Nothing else to install, no binary on the PATH, no fixed port; several
stores in one process share nothing.

::

    from mqstate.testing import LocalStore

    with LocalStore() as store:                 # or: async with LocalStore() as store:
        with mqstate.Client(store.url) as client:
            client.set("k", "v")
            store.fail_next(1, "fencing_token_lower_version", command="SET")
            ...                                  # the next SET fails with that error
        store.cut_connections()                  # clients reconnect and resume
        store.restart(keep_data=True)            # only keys SET with persist=True survive

The pytest plugin the package registers (:mod:`mqstate.pytest_plugin`) gives the fixtures
``mqstate_store``, ``mqstate_client`` and ``mqstate_async_client``.

Every method returns once it has taken effect. Methods that wait (``start``, ``stop``,
``restart``, ``cut_connections``) release the GIL, and Ctrl-C interrupts them, as the
blocking client's calls. They are plain (blocking) methods, for asyncio tests too: each
takes a few milliseconds, and the clients' connections do not need the event loop to make
progress meanwhile. ``async with`` starts and stops the store without blocking the loop.
Durations are seconds (``int``/``float``) or a ``datetime.timedelta``, as everywhere in
this package; errors are the package's (:class:`~mqstate.ClosedError` on a stopped store,
:class:`~mqstate.InvalidArgumentError` for an unknown error code or command).
"""

from __future__ import annotations

from typing import List, Optional

from . import _mqstate
from ._calls import BytesLike, Seconds, wait, wait_async
from ._events import Value, _value
from .errors import ClosedError

__all__ = ["LocalStore"]

#: The message of a call on a store never started.
NOT_STARTED_MESSAGE = "the local store is not started: use LocalStore.start(), with or async with"
#: The message of a call on a stopped store (the Rust LocalStore's).
STOPPED_MESSAGE = "the local store is stopped"


class LocalStore:
    """A state store running in this process on ``127.0.0.1`` at a free port.

    ``LocalStore()`` makes one that is not started yet: ``with`` / ``async with`` start it
    and stop it; :meth:`start` makes one and starts it (stop it with :meth:`stop`). A store
    that stopped stays stopped (make another: starting takes a few milliseconds).

    It keys SET with ``persist=True`` in a temporary directory of its own (what
    ``restart(keep_data=True)`` keeps), removed when it stops.
    """

    def __init__(self) -> None:
        self._native: Optional[_mqstate.LocalStore] = None
        self._stopped = False

    @classmethod
    def start(cls) -> "LocalStore":
        """A store started on a free loopback port; returns once it answers requests."""
        store = cls()
        store._start()
        return store

    def _start(self) -> None:
        if self._stopped:
            raise ClosedError(STOPPED_MESSAGE)
        if self._native is None:
            self._native = wait(_mqstate.start_local_store())

    def _running(self) -> _mqstate.LocalStore:
        if self._native is None:
            raise ClosedError(NOT_STARTED_MESSAGE)
        return self._native

    def __enter__(self) -> "LocalStore":
        self._start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    async def __aenter__(self) -> "LocalStore":
        if self._stopped:
            raise ClosedError(STOPPED_MESSAGE)
        if self._native is None:
            self._native = await wait_async(_mqstate.start_local_store())
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        self._stopped = True
        if self._native is not None:
            await wait_async(self._native.stop())

    def stop(self) -> None:
        """Stops the store: closes its connections, waits until its broker and tasks are
        gone, removes its data. Calling it again does nothing."""
        self._stopped = True
        if self._native is not None:
            wait(self._native.stop())

    @property
    def url(self) -> str:
        """Where clients connect: ``mqtt://127.0.0.1:PORT``."""
        return self._running().url

    @property
    def port(self) -> int:
        """The TCP port (the same after a :meth:`restart`)."""
        return self._running().port

    @property
    def is_running(self) -> bool:
        """Whether the store runs (False before it starts, after :meth:`stop`, or after a
        :meth:`restart` that failed)."""
        return self._native is not None and self._native.is_running

    def cut_connections(self) -> int:
        """Resets every client connection now, as a network failure does (no DISCONNECT).
        MQTT sessions are kept, so clients reconnect and resume by themselves and their
        requests in flight complete. Returns, once every connection has closed, how many it
        closed."""
        closed: int = wait(self._running().cut_connections())
        return closed

    def pause(self, duration: Seconds) -> None:
        """Stops answering requests for ``duration`` (seconds or a ``timedelta``; at least
        1 ms), the shape of a GC pause or a slow network: requests received meanwhile wait,
        and are answered in order when it ends. Connections stay up. Returns at once, the
        pause in effect; a pause armed while one runs extends it if it ends later."""
        wait(self._running().pause(duration))

    def restart(self, keep_data: bool = False) -> None:
        """What ``kill -9`` and a restart do: every connection reset and every MQTT session
        lost; the store comes back on the same port, and clients reconnect by themselves
        (with new sessions: their requests in flight fail with ConnectionLostError). With
        ``keep_data``, keys SET with ``persist=True`` survive, with their versions; nothing
        else does. Returns once the new store answers requests."""
        wait(self._running().restart(keep_data))

    def fail_next(self, n: int, error: str, command: Optional[str] = None) -> None:
        """Answers the next ``n`` requests — only those of ``command`` (``"SET"``,
        ``"GET"``, ``"DEL"``, ``"VDEL"``, ``"KEYNOTIFY"``, ``"SCAN"``; any case) if given —
        with the state store error whose code is ``error`` (e.g.
        ``"fencing_token_lower_version"``; the codes of :mod:`mqstate.errors`' store
        errors), exactly as the service answers it; the store is left untouched. Replaces
        what an earlier call armed; ``n=0`` disarms. An unknown code or command raises
        InvalidArgumentError."""
        wait(self._running().fail_next(n, error, command))

    def keys(self, pattern: BytesLike = "*") -> List[bytes]:
        """The keys matching the glob ``pattern`` (the syntax of a client's ``scan``:
        ``*``, ``?``, ``[…]``, ``\\`` escapes), in byte order, read inside the store."""
        found: List[bytes] = wait(self._running().keys(pattern))
        return found

    def get(self, key: BytesLike) -> Optional[Value]:
        """The key's value and version (as a client's ``get`` returns them), or None; read
        inside the store, without a client."""
        return _value(wait(self._running().get(key)))

    def clear(self) -> int:
        """Deletes every key, persisted ones included (observers are told, as for a
        ``delete``); returns how many were deleted."""
        deleted: int = wait(self._running().clear())
        return deleted

    def held_requests(self) -> int:
        """How many requests a :meth:`pause` holds now: they reached the store and wait for
        the pause to end. A test that pauses, sends a request, then cuts the connections or
        restarts waits until its request is counted here; otherwise the cut can come first,
        and the request is sent after the reconnection (and answered)."""
        held: int = wait(self._running().held_requests())
        return held

    def drop_notifications(self, duration: Seconds) -> None:
        """Drops every notification the store sends for ``duration`` (seconds or a
        ``timedelta``; at least 1 ms), unsent: a notification path gone silent (a dead link
        the keep-alive has not noticed, a hung broker, a broker whose queue for the client is
        full). Requests are answered as usual. Returns at once, in effect; a mute armed while
        one runs extends it if it ends later."""
        wait(self._running().drop_notifications(duration))

    def dropped_notifications(self) -> int:
        """How many notifications :meth:`drop_notifications` has dropped so far (this run of
        the store)."""
        dropped: int = wait(self._running().dropped_notifications())
        return dropped

    def forget_registrations(self) -> int:
        """Forgets every client's KEYNOTIFY registrations while their connections and
        sessions stay up — what a store restarted behind its broker leaves its clients with:
        no notification of any key they observed, and nothing on the connection to say so.
        Returns how many there were."""
        forgotten: int = wait(self._running().forget_registrations())
        return forgotten

    def __repr__(self) -> str:
        if self._native is None:
            return f"<LocalStore {'stopped' if self._stopped else 'not started'}>"
        state = "running" if self._native.is_running else "stopped"
        return f"<LocalStore {self._native.url} {state}>"
