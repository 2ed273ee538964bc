"""The client-side cache from Python: a cached ``get`` against an uncached one at one request
in flight, blocking and asyncio, in one run (docs/benchmarks.md, "Client-side cache").

    python bench/bindings/python/cached.py URL [SECONDS] [ROUNDS]

URL is a running store (``mqstate serve``). Each round times, for SECONDS (default 2) each
and in turns: blocking ``Client.get`` without and with ``cache=True``, then the asyncio
``AsyncClient.get`` the same way, over 1,000 keys read in turn (every key read once before the
window: the cache is warm). Prints the median over ROUNDS (default 3) of each one's mean µs
per get, the ratios, and the cache's counters (how many reads reached the store).
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import time
from typing import Callable, Dict, List

import mqstate

KEYS = [f"cached-bench/{i}" for i in range(1000)]


def timed_blocking(client: mqstate.Client, seconds: float) -> float:
    for key in KEYS:
        client.get(key)
    n, start = 0, time.perf_counter()
    deadline = start + seconds
    while True:
        for key in KEYS[:100]:
            client.get(key)
        n += 100
        now = time.perf_counter()
        if now >= deadline:
            return (now - start) / n * 1e6


async def timed_async(client: mqstate.AsyncClient, seconds: float) -> float:
    for key in KEYS:
        await client.get(key)
    n, start = 0, time.perf_counter()
    deadline = start + seconds
    while True:
        for key in KEYS[:100]:
            await client.get(key)
        n += 100
        now = time.perf_counter()
        if now >= deadline:
            return (now - start) / n * 1e6


def main() -> None:
    url = sys.argv[1]
    seconds = float(sys.argv[2]) if len(sys.argv) > 2 else 2.0
    rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 3
    with mqstate.Client(url) as writer:
        for key in KEYS:
            writer.set(key, "v" * 16)
    samples: Dict[str, List[float]] = {k: [] for k in ("blocking", "blocking cached", "asyncio", "asyncio cached")}
    stats = None
    for _ in range(rounds):
        for name, cache in (("blocking", False), ("blocking cached", True)):
            with mqstate.Client(url, cache=cache) as client:
                samples[name].append(timed_blocking(client, seconds))
                stats = client.cache_stats() or stats

        async def run(name: str, cache: bool) -> None:
            async with mqstate.AsyncClient(url, cache=cache) as client:
                samples[name].append(await timed_async(client, seconds))

        asyncio.run(run("asyncio", False))
        asyncio.run(run("asyncio cached", True))
    med: Callable[[str], float] = lambda k: statistics.median(samples[k])
    for name in samples:
        print(f"{name:<16} {med(name):9.2f} µs per get (median of {rounds} rounds of {seconds:g} s)")
    print(f"ratio blocking   {med('blocking') / med('blocking cached'):.1f}x faster with the cache")
    print(f"ratio asyncio    {med('asyncio') / med('asyncio cached'):.1f}x faster with the cache")
    if stats is not None:
        reads = stats.hits + stats.misses
        print(f"cache (last blocking run): {reads} reads, {stats.misses} reached the store "
              f"({100 * stats.misses / max(reads, 1):.2f} %: the first read of each key)")


if __name__ == "__main__":
    main()
