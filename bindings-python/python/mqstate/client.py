"""The state store clients: :class:`AsyncClient` (asyncio) and :class:`Client` (blocking,
thread-safe), with the same methods and names. Both are thin layers over the shared Rust
core (its connection, correlation engine, observation, locks and elections).

Settings are keyword arguments named as in every mqstate language (``host``, ``port``,
``client_id``, ``keep_alive``, ``clean_start``, ``session_expiry``, ``use_tls``,
``ca_file``, ``cert_file``, ``key_file``, ``username``, ``password``, ``password_file``,
``sat_file``, ``connect_timeout``, ``request_timeout``, ``observer_capacity`` …), on top of
an optional ``mqtt://`` / ``mqtts://`` URL or the Azure IoT Operations environment
(``from_env()``). Keyword settings may be spelled in snake_case or camelCase (the core
maps both); their values keep the settings' text grammar everywhere (a number is seconds,
or ``"500ms"``, ``"2s"``, ``"1m"``; a ``timedelta`` is taken as its seconds).

Durations of calls (``expiry``, ``timeout``, ``lease``, ``term``, ``auto_renew``,
``renew_every``) are seconds (``int`` or ``float``) or a ``datetime.timedelta``, under the
bare names: the same names as in Rust and Kotlin, while Node spells milliseconds ``…Ms``.
An option left out (None) is the core's default — the client's ``request_timeout``, a
lock's lease of 10 s — never one written here.
"""

from __future__ import annotations

import asyncio
import atexit
import os
from typing import Any, Callable, Optional, Union

from . import _mqstate
from . import telemetry as _telemetry
from ._calls import BytesLike, Seconds, wait, wait_async
from ._events import CacheStats, Change, ConnectionEvent, SetResult, Value, _value
from ._scan import AsyncPager, Pager
from ._settings import pairs
from ._subscriptions import AsyncSubscription, Subscription
from .errors import ClosedError

#: The message of a call on a closed client, the same in every language
#: (``closed_message`` in core/vocabulary.json).
CLOSED_MESSAGE = "the client is closed"
#: The message of a call on an AsyncClient before ``connect()`` / ``async with``.
NOT_CONNECTED_MESSAGE = "the client is not connected yet: await connect() or use async with"
from .hlc import Hlc
from .locks import AsyncElection, AsyncLock, Election, Lock

__all__ = ["AsyncClient", "Client"]

#: At interpreter exit, library threads stop calling into Python before it finalizes.
atexit.register(_mqstate._shutdown, 2.0)
#: A forked child gets a runtime of its own (clients connected before the fork refuse calls
#: with UnsupportedError there instead of hanging).
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_mqstate._after_fork)

Token = Union[Hlc, str, None]

#: An AsyncClient answers a cache hit without awaiting anything; every this many hits in a
#: row it awaits ``asyncio.sleep(0)`` instead, so that a loop of hits lets the event loop run
#: the tasks beside it. The core's number (``mqstate::vocabulary::CACHE_HIT_YIELD_EVERY``,
#: ``cache_hit_yield_every`` in core/vocabulary.json; test_vocabulary.py checks it).
CACHE_HIT_YIELD_EVERY = 64


def _token(token: Token) -> Optional[str]:
    return None if token is None else str(token)


class _ClientBase:
    """What both clients share: the settings (checked at construction), the native store
    once connected, and the argument conversion of every call."""

    def __init__(self, url: Optional[str], from_env: bool, settings: dict[str, Any]) -> None:
        self._url = url
        self._from_env = from_env
        self._pairs = pairs(settings)
        _mqstate.check_settings(url, from_env, self._pairs)
        self._store: Optional[_mqstate.NativeClient] = None
        self._closed = False

    def _native(self) -> _mqstate.NativeClient:
        if self._store is None:
            raise ClosedError(CLOSED_MESSAGE if self._closed else NOT_CONNECTED_MESSAGE)
        return self._store

    def _connect(self) -> _mqstate.PendingCall:
        return _mqstate.connect(self._url, self._from_env, self._pairs)

    @property
    def client_id(self) -> str:
        """The MQTT client id."""
        return self._native().client_id

    @property
    def connected(self) -> bool:
        """Whether the client is connected to the broker now."""
        return self._store is not None and self._store.link_info()[0]

    def cache_stats(self) -> Optional[CacheStats]:
        """The client-side cache's counters, or None when the cache is off (settings
        ``cache``, ``cache_keys``, ``cache_max_entries``, ``cache_max_bytes``,
        ``cache_max_staleness``, ``cache_freshness``)."""
        pairs = self._native().cache_stats()
        return None if pairs is None else CacheStats(**dict(pairs))

    def _set(
        self,
        key: BytesLike,
        value: BytesLike,
        condition: Optional[str],
        expiry: Optional[Seconds],
        fencing_token: Token,
        persist: bool,
        timeout: Optional[Seconds],
    ) -> tuple[Callable[[], _mqstate.PendingCall], Any]:
        native, call = _telemetry.begin(self._native(), "SET", key)
        return lambda: native.set(
            key, value, condition, expiry, _token(fencing_token), persist, timeout
        ), call

    def _scan(
        self, pattern: BytesLike, timeout: Optional[Seconds]
    ) -> tuple[_mqstate.Pager, tuple[str, int], BytesLike]:
        """The native pager, and what its pages' spans name: the broker, the pattern."""
        native = self._native()
        return native.scan(pattern, timeout), native.server, pattern

    def _lock(
        self,
        key: BytesLike,
        lease: Optional[Seconds],
        holder: Optional[str],
        session_id: Optional[str],
        auto_renew: Optional[Seconds],
    ) -> _mqstate.Lock:
        return self._native().lock(key, lease, holder, session_id, auto_renew)

    def _election(
        self,
        name: BytesLike,
        candidate: str,
        term: Optional[Seconds],
        session_id: Optional[str],
        renew_every: Optional[Seconds],
    ) -> _mqstate.Election:
        return self._native().election(name, candidate, term, session_id, renew_every)


class AsyncClient(_ClientBase):
    """A state store client for asyncio.

    ::

        async with mqstate.AsyncClient("mqtt://localhost:1883") as client:
            await client.set("greeting", "hello")
            value = await client.get("greeting")

    The constructor checks the settings; :meth:`connect` (or ``async with``) connects.
    """

    #: Cache hits answered since the last time :meth:`get` awaited anything.
    _hits_in_a_row = 0

    def __init__(self, url: Optional[str] = None, **settings: Any) -> None:
        super().__init__(url, False, settings)

    @classmethod
    def from_env(cls, **settings: Any) -> "AsyncClient":
        """A client configured from the Azure IoT Operations environment variables
        (``AIO_BROKER_HOSTNAME`` …), with keyword settings on top; not yet connected."""
        client = cls.__new__(cls)
        _ClientBase.__init__(client, None, True, settings)
        return client

    async def connect(self) -> "AsyncClient":
        """Connects (a no-op when connected); raises a ConnectError subclass on failure, and
        ClosedError once the client was closed (as every other call then does)."""
        if self._closed:
            raise ClosedError(CLOSED_MESSAGE)
        if self._store is None:
            self._store = await wait_async(self._connect())
            _telemetry.watch(self)
        return self

    async def __aenter__(self) -> "AsyncClient":
        return await self.connect()

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    async def close(self) -> None:
        """Closes the connection; pending calls fail with ClosedError. Idempotent."""
        self._closed = True
        store, self._store = self._store, None
        if store is not None:
            await wait_async(store.close())

    async def set(
        self,
        key: BytesLike,
        value: BytesLike,
        *,
        condition: Optional[str] = None,
        expiry: Optional[Seconds] = None,
        fencing_token: Token = None,
        persist: bool = False,
        timeout: Optional[Seconds] = None,
    ) -> SetResult:
        """Sets ``key`` to ``value``. ``condition``: None, ``"nx"`` (only if missing) or
        ``"nex"`` (only if missing or equal); ``expiry``: the key expires after it;
        ``fencing_token``: write fenced by a lock's token; ``persist``: ask the service to
        persist it."""
        start, call = self._set(key, value, condition, expiry, fencing_token, persist, timeout)
        applied, version = await _telemetry.finish_async(call, lambda: wait_async(start()))
        return SetResult(applied, version)

    async def get(
        self, key: BytesLike, *, timeout: Optional[Seconds] = None, bypass_cache: bool = False
    ) -> Optional[Value]:
        """The key's value and version, or None when it does not exist. With the client's
        cache on (``cache=True``), a key it holds fresh is answered from memory, without
        awaiting the store (every :data:`CACHE_HIT_YIELD_EVERY`-th hit in a row awaits
        ``asyncio.sleep(0)``, so a loop of hits does not starve the event loop);
        ``bypass_cache`` reads from the store."""
        native = self._native()
        if not bypass_cache:
            hit = native.get_cached(key, timeout)
            if hit is not None:
                self._hits_in_a_row += 1
                if self._hits_in_a_row >= CACHE_HIT_YIELD_EVERY:
                    self._hits_in_a_row = 0
                    await asyncio.sleep(0)
                return _value(hit[0])
        self._hits_in_a_row = 0
        native, call = _telemetry.begin(native, "GET", key)
        return _value(
            await _telemetry.finish_async(
                call, lambda: wait_async(native.get(key, timeout, bypass_cache))
            )
        )

    async def delete(
        self,
        key: BytesLike,
        *,
        fencing_token: Token = None,
        timeout: Optional[Seconds] = None,
    ) -> int:
        """Deletes the key; the number of keys deleted (0 or 1)."""
        native, call = _telemetry.begin(self._native(), "DEL", key)
        result: int = await _telemetry.finish_async(
            call, lambda: wait_async(native.delete(key, _token(fencing_token), timeout))
        )
        return result

    async def vdel(
        self,
        key: BytesLike,
        value: BytesLike,
        *,
        fencing_token: Token = None,
        timeout: Optional[Seconds] = None,
    ) -> str:
        """Deletes the key only if it holds ``value``: ``"deleted"``, ``"not_found"`` or
        ``"value_mismatch"``."""
        native, call = _telemetry.begin(self._native(), "VDEL", key)
        result: str = await _telemetry.finish_async(
            call, lambda: wait_async(native.vdel(key, value, _token(fencing_token), timeout))
        )
        return result

    def observe(
        self, key: BytesLike, *, timeout: Optional[Seconds] = None
    ) -> AsyncSubscription[Union[Change, ConnectionEvent]]:
        """The key's changes: ``async with client.observe(key) as changes:`` then
        ``async for event in changes`` (each a :class:`Change` or a
        :class:`ConnectionEvent`). Registered when entered or awaited; ``timeout`` bounds
        the registration."""
        native, call = _telemetry.begin(self._native(), "KEYNOTIFY", key)
        try:
            start = native.observe(key, timeout)
        except BaseException as error:
            if call is not None:
                call.end(error)
            raise
        return AsyncSubscription(start=start, call=call)

    def scan(self, pattern: BytesLike, *, timeout: Optional[Seconds] = None) -> AsyncPager:
        """The keys (``bytes``) matching the glob ``pattern`` (``*``, ``?``, ``[abc]``,
        ``[a-z]``, ``[^a]``, ``\\`` escapes), one request per page: ``async for key in
        client.scan("sensor/*")``, or ``await pager.next_page()``. ``timeout`` bounds each
        page. Nothing is sent before the first page; an empty pattern raises
        InvalidArgumentError."""
        return AsyncPager(*self._scan(pattern, timeout))

    def lock(
        self,
        key: BytesLike,
        *,
        lease: Optional[Seconds] = None,
        holder: Optional[str] = None,
        session_id: Optional[str] = None,
        auto_renew: Optional[Seconds] = None,
    ) -> AsyncLock:
        """A leased lock on ``key`` (``async with lock:`` acquires and releases).
        ``lease``: the lease of calls that name none (default 10 s, the core's);
        ``holder``: the holder id written (default the client id); ``session_id``: the
        holder id becomes ``holder:session_id``; ``auto_renew``: renew this often after
        each acquire."""
        return AsyncLock(self._lock(key, lease, holder, session_id, auto_renew))

    def election(
        self,
        name: BytesLike,
        candidate: str,
        *,
        term: Optional[Seconds] = None,
        session_id: Optional[str] = None,
        renew_every: Optional[Seconds] = None,
    ) -> AsyncElection:
        """Candidate ``candidate`` in the election ``name``. ``term``: the term of calls
        that name none (default 10 s, the core's); ``renew_every``: renew the term this
        often while leader (default a third of the term)."""
        return AsyncElection(self._election(name, candidate, term, session_id, renew_every))


class Client(_ClientBase):
    """A blocking state store client; thread-safe (the GIL is released while waiting, and
    Ctrl-C interrupts a wait).

    ::

        with mqstate.Client("mqtt://localhost:1883") as client:
            client.set("greeting", "hello")
            print(client.get("greeting").text)

    The constructor connects; raises a ConnectError subclass on failure.
    """

    def __init__(self, url: Optional[str] = None, **settings: Any) -> None:
        super().__init__(url, False, settings)
        self._store = wait(self._connect())
        _telemetry.watch(self)

    @classmethod
    def from_env(cls, **settings: Any) -> "Client":
        """A client connected with the Azure IoT Operations environment variables
        (``AIO_BROKER_HOSTNAME`` …), with keyword settings on top."""
        client = cls.__new__(cls)
        _ClientBase.__init__(client, None, True, settings)
        client._store = wait(client._connect())
        _telemetry.watch(client)
        return client

    def __enter__(self) -> "Client":
        self._native()  # a closed client raises ClosedError here, not at its first call
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        """Closes the connection; pending calls fail with ClosedError. Idempotent."""
        self._closed = True
        store, self._store = self._store, None
        if store is not None:
            wait(store.close())

    def set(
        self,
        key: BytesLike,
        value: BytesLike,
        *,
        condition: Optional[str] = None,
        expiry: Optional[Seconds] = None,
        fencing_token: Token = None,
        persist: bool = False,
        timeout: Optional[Seconds] = None,
    ) -> SetResult:
        """Sets ``key`` to ``value`` (see :meth:`AsyncClient.set`)."""
        start, call = self._set(key, value, condition, expiry, fencing_token, persist, timeout)
        applied, version = _telemetry.finish(call, lambda: wait(start()))
        return SetResult(applied, version)

    def get(
        self, key: BytesLike, *, timeout: Optional[Seconds] = None, bypass_cache: bool = False
    ) -> Optional[Value]:
        """The key's value and version, or None when it does not exist (see
        :meth:`AsyncClient.get` for the cache)."""
        native = self._native()
        if not bypass_cache:
            hit = native.get_cached(key, timeout)
            if hit is not None:
                return _value(hit[0])
        native, call = _telemetry.begin(native, "GET", key)
        return _value(
            _telemetry.finish(call, lambda: wait(native.get(key, timeout, bypass_cache)))
        )

    def delete(
        self,
        key: BytesLike,
        *,
        fencing_token: Token = None,
        timeout: Optional[Seconds] = None,
    ) -> int:
        """Deletes the key; the number of keys deleted (0 or 1)."""
        native, call = _telemetry.begin(self._native(), "DEL", key)
        result: int = _telemetry.finish(
            call, lambda: wait(native.delete(key, _token(fencing_token), timeout))
        )
        return result

    def vdel(
        self,
        key: BytesLike,
        value: BytesLike,
        *,
        fencing_token: Token = None,
        timeout: Optional[Seconds] = None,
    ) -> str:
        """Deletes the key only if it holds ``value``: ``"deleted"``, ``"not_found"`` or
        ``"value_mismatch"``."""
        native, call = _telemetry.begin(self._native(), "VDEL", key)
        result: str = _telemetry.finish(
            call, lambda: wait(native.vdel(key, value, _token(fencing_token), timeout))
        )
        return result

    def observe(
        self, key: BytesLike, *, timeout: Optional[Seconds] = None
    ) -> Subscription[Union[Change, ConnectionEvent]]:
        """The key's changes, registered when this returns: ``with client.observe(key) as
        changes: for event in changes: …`` (each a :class:`Change` or a
        :class:`ConnectionEvent`); ``timeout`` bounds the registration."""
        native, call = _telemetry.begin(self._native(), "KEYNOTIFY", key)
        return Subscription(_telemetry.finish(call, lambda: wait(native.observe(key, timeout))))

    def scan(self, pattern: BytesLike, *, timeout: Optional[Seconds] = None) -> Pager:
        """The keys (``bytes``) matching the glob ``pattern``, one request per page:
        ``for key in client.scan("sensor/*")``, or ``pager.next_page()`` (see
        :meth:`AsyncClient.scan`)."""
        return Pager(*self._scan(pattern, timeout))

    def lock(
        self,
        key: BytesLike,
        *,
        lease: Optional[Seconds] = None,
        holder: Optional[str] = None,
        session_id: Optional[str] = None,
        auto_renew: Optional[Seconds] = None,
    ) -> Lock:
        """A leased lock on ``key`` (``with lock:`` acquires and releases); see
        :meth:`AsyncClient.lock`."""
        return Lock(self._lock(key, lease, holder, session_id, auto_renew))

    def election(
        self,
        name: BytesLike,
        candidate: str,
        *,
        term: Optional[Seconds] = None,
        session_id: Optional[str] = None,
        renew_every: Optional[Seconds] = None,
    ) -> Election:
        """Candidate ``candidate`` in the election ``name``; see :meth:`AsyncClient.election`."""
        return Election(self._election(name, candidate, term, session_id, renew_every))
