"""SCAN: the keys matching a glob pattern, one request per page (:class:`AsyncPager` for
asyncio, :class:`Pager` for blocking code).

The continuation token stays in the Rust core. A page that failed (a timeout, a lost
connection) or was cancelled (a cancelled task, Ctrl-C) leaves it where it was: asking
again retries that page. Iterating yields every remaining key; stopping early and
iterating again continues with the next page. Keys are ``bytes``.
"""

from __future__ import annotations

from typing import AsyncIterator, Iterator, List, Optional

from . import _mqstate
from . import telemetry as _telemetry
from ._calls import BytesLike, wait, wait_async

__all__ = ["AsyncPager", "Pager"]


class AsyncPager:
    """The keys matching a pattern, for asyncio: ``async for key in client.scan("s/*")``,
    or ``await pager.next_page()`` for one page at a time. Made by
    :meth:`AsyncClient.scan`."""

    def __init__(
        self, native: _mqstate.Pager, server: tuple[str, int], pattern: BytesLike
    ) -> None:
        self._native = native
        # What each page's span names (a SCAN span per page, as the store sees them).
        self._server = server
        self._pattern = pattern

    async def next_page(self) -> Optional[List[bytes]]:
        """The next page's keys (possibly none while more pages follow), or None after the
        last page. Cancelling the awaiting task cancels the page; the pager stays usable."""
        if self._native.done:  # no request: no span
            return None
        native, call = _telemetry.begin(self._native, "SCAN", self._pattern, self._server)
        page: Optional[List[bytes]] = await _telemetry.finish_async(
            call, lambda: wait_async(native.next_page())
        )
        return page

    @property
    def done(self) -> bool:
        """Whether the last page has been returned."""
        return self._native.done

    async def _keys(self) -> AsyncIterator[bytes]:
        while True:
            page = await self.next_page()
            if page is None:
                return
            for key in page:
                yield key

    def __aiter__(self) -> AsyncIterator[bytes]:
        return self._keys()


class Pager:
    """The keys matching a pattern, blocking: ``for key in client.scan("s/*")``, or
    ``pager.next_page()`` for one page at a time. Made by :meth:`Client.scan`."""

    def __init__(
        self, native: _mqstate.Pager, server: tuple[str, int], pattern: BytesLike
    ) -> None:
        self._native = native
        # What each page's span names (a SCAN span per page, as the store sees them).
        self._server = server
        self._pattern = pattern

    def next_page(self) -> Optional[List[bytes]]:
        """The next page's keys (possibly none while more pages follow), or None after the
        last page. The GIL is released while waiting; Ctrl-C cancels the page and the pager
        stays usable."""
        if self._native.done:  # no request: no span
            return None
        native, call = _telemetry.begin(self._native, "SCAN", self._pattern, self._server)
        page: Optional[List[bytes]] = _telemetry.finish(call, lambda: wait(native.next_page()))
        return page

    @property
    def done(self) -> bool:
        """Whether the last page has been returned."""
        return self._native.done

    def _keys(self) -> Iterator[bytes]:
        while True:
            page = self.next_page()
            if page is None:
                return
            yield from page

    def __iter__(self) -> Iterator[bytes]:
        return self._keys()
