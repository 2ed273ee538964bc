"""The transport floor of a Python client (docs/benchmarks.md, "The floor of each host"):
64-byte round trips to ``pingpong serve``, one in flight, with no MQTT and no library.

    python pingpong.py PORT SECONDS asyncio|blocking

``asyncio``: the least an asyncio client awaiting one request after another can do — a
Protocol on the default event loop; each round trip writes, then awaits a future that
``data_received`` resolves. ``blocking``: ``sendall`` and ``recv`` on a plain socket.
Prints ``WHO 1 OPS_PER_S CPU_US_PER_OP``.
"""

from __future__ import annotations

import asyncio
import socket
import sys
import time
from typing import Awaitable, Callable, Optional

SIZE = 64
MESSAGE = b"x" * SIZE


class Echo(asyncio.Protocol):
    def __init__(self) -> None:
        self.waiter: "Optional[asyncio.Future[None]]" = None
        self.got = 0

    def data_received(self, data: bytes) -> None:
        self.got += len(data)
        if self.got >= SIZE and self.waiter is not None:
            self.got -= SIZE
            self.waiter.set_result(None)
            self.waiter = None


async def run_asyncio(port: int, seconds: float) -> str:
    loop = asyncio.get_running_loop()
    transport, proto = await loop.create_connection(Echo, "127.0.0.1", port)
    transport.get_extra_info("socket").setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    async def round_trip() -> None:
        proto.waiter = loop.create_future()
        transport.write(MESSAGE)
        await proto.waiter

    return await measure(round_trip, seconds, "asyncio")


async def measure(round_trip: Callable[[], Awaitable[None]], seconds: float, who: str) -> str:
    end = time.monotonic() + 1.0
    while time.monotonic() < end:
        await round_trip()
    done, t0, c0 = 0, time.monotonic(), time.process_time()
    end = t0 + seconds
    while time.monotonic() < end:
        await round_trip()
        done += 1
    elapsed = time.monotonic() - t0
    return f"{who} 1 {done / elapsed:.0f} {(time.process_time() - c0) * 1e6 / done:.1f}"


def run_blocking(port: int, seconds: float) -> str:
    s = socket.create_connection(("127.0.0.1", port))
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    async def round_trip() -> None:
        s.sendall(MESSAGE)
        got = 0
        while got < SIZE:
            got += len(s.recv(SIZE - got))

    # The same loop as asyncio's, driven without an event loop (nothing in it suspends).
    coro = measure(round_trip, seconds, "pyblocking")
    try:
        coro.send(None)
    except StopIteration as done:
        return str(done.value)
    raise RuntimeError("the blocking loop suspended")


def main() -> None:
    port, seconds, who = int(sys.argv[1]), float(sys.argv[2]), sys.argv[3]
    if who == "asyncio":
        print(asyncio.run(run_asyncio(port, seconds)))
    else:
        print(run_blocking(port, seconds))


if __name__ == "__main__":
    main()
