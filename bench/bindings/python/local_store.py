"""mqstate.testing.LocalStore: start-up time and memory per running store (docs/benchmarks.md,
"LocalStore (Python)").

    bench/run python-local-store [STARTS] [RUNNING]   (python bench/bindings/python/local_store.py …)

1. One store started and stopped after step 4, timed apart.
2. STARTS (default 50) times: ``LocalStore.start()`` timed until it returns (the store
   answers requests from then on), then ``stop()`` (not timed).
3. The same, with a blocking ``Client`` connected and one SET answered: what a test using
   the ``mqstate_client`` fixture pays before its first line.
4. First of all (in the fresh process, the package imported): VmRSS before and with
   RUNNING (default 20) stores running (idle, no client), the growth divided by RUNNING
   (this first batch pays the one-time costs: the runtime, the allocator's first arenas);
   then the same for a second batch after the first stopped.
"""

from __future__ import annotations

import statistics
import sys
import time
from typing import List

import mqstate
from mqstate.testing import LocalStore


def rss_kib() -> int:
    with open("/proc/self/status", encoding="ascii") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise RuntimeError("no VmRSS")


def ms(samples: List[float]) -> str:
    ordered = sorted(samples)
    p90 = ordered[int(len(ordered) * 0.9) - 1]
    return f"median {statistics.median(ordered) * 1e3:.2f} ms, p90 {p90 * 1e3:.2f} ms, max {ordered[-1] * 1e3:.2f} ms"


def main() -> None:
    starts = int(sys.argv[1]) if len(sys.argv) > 1 else 50
    running = int(sys.argv[2]) if len(sys.argv) > 2 else 20

    for batch in ("first", "second"):
        before = rss_kib()
        stores = [LocalStore.start() for _ in range(running)]
        with_them = rss_kib()
        print(f"RSS before -> with {running} stores running ({batch} batch): {before} -> {with_them} KiB "
              f"({(with_them - before) / running:.0f} KiB per store)")
        for store in stores:
            store.stop()

    t0 = time.perf_counter()
    LocalStore.start().stop()
    print(f"one start after the memory batches: {(time.perf_counter() - t0) * 1e3:.2f} ms")

    samples: List[float] = []
    for _ in range(starts):
        t0 = time.perf_counter()
        store = LocalStore.start()
        samples.append(time.perf_counter() - t0)
        store.stop()
    print(f"start to ready ({starts} starts): {ms(samples)}")

    samples = []
    for _ in range(starts):
        t0 = time.perf_counter()
        with LocalStore() as store, mqstate.Client(store.url) as client:
            client.set("k", "v")
            samples.append(time.perf_counter() - t0)
    print(f"start + Client connect + first SET ({starts}): {ms(samples)}")



if __name__ == "__main__":
    main()
