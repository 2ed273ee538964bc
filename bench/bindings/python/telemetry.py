"""What OpenTelemetry costs a Python caller (docs/benchmarks.md, "OpenTelemetry"): a cached hit
and an uncached ``get`` at one request in flight, in three processes timed in turns:

- ``absent``: ``opentelemetry`` cannot be imported (an import hook refuses it);
- ``noop``: ``opentelemetry-api`` without an SDK (the API's no-op providers);
- ``recording``: the SDK's ``TracerProvider`` with a ``BatchSpanProcessor`` into an exporter
  that drops what it gets, and a ``MeterProvider`` with an in-memory reader.

    python bench/bindings/python/telemetry.py URL [SECONDS] [ROUNDS]

URL is a running store (``mqstate serve``). Each round starts the three modes one after
another, each timing SECONDS (default 2) of hits then SECONDS of uncached gets; prints, per
mode, the median over ROUNDS (default 3) of CPU µs per call of this process (user + system)
and wall µs per call, and each mode's ratio to ``absent``.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
from typing import Dict, List

CHILD = r"""
import json, sys, time
mode, url, seconds = sys.argv[1], sys.argv[2], float(sys.argv[3])
if mode == "absent":
    class Absent:
        def find_spec(self, name, path=None, target=None):
            if name == "opentelemetry" or name.startswith("opentelemetry."):
                raise ImportError("absent")
    sys.meta_path.insert(0, Absent())
elif mode == "recording":
    from opentelemetry import metrics, trace
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult

    class Drop(SpanExporter):
        def export(self, spans):
            return SpanExportResult.SUCCESS

    provider = TracerProvider()
    provider.add_span_processor(BatchSpanProcessor(Drop()))
    trace.set_tracer_provider(provider)
    metrics.set_meter_provider(MeterProvider(metric_readers=[InMemoryMetricReader()]))
import mqstate

KEYS = [f"telemetry-bench/{i}" for i in range(100)]

def timed(call):
    for key in KEYS:
        call(key)
    n, c0, w0 = 0, time.process_time(), time.perf_counter()
    while True:
        for key in KEYS:
            call(key)
        n += len(KEYS)
        if time.perf_counter() - w0 >= seconds:
            return (time.process_time() - c0) / n * 1e6, (time.perf_counter() - w0) / n * 1e6

with mqstate.Client(url, cache=True) as cached, mqstate.Client(url) as plain:
    for key in KEYS:
        plain.set(key, "v" * 16)
    hit = timed(cached.get)
    miss = timed(plain.get)
    stats = cached.cache_stats()
print(json.dumps({"hit": hit, "get": miss, "store_reads_while_hitting": stats.misses}))
"""

MODES = ["absent", "noop", "recording"]


def main() -> None:
    url = sys.argv[1]
    seconds = sys.argv[2] if len(sys.argv) > 2 else "2"
    rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 3
    results: Dict[str, Dict[str, List[List[float]]]] = {m: {"hit": [], "get": []} for m in MODES}
    for r in range(rounds):
        for mode in MODES:
            out = subprocess.run([sys.executable, "-c", CHILD, mode, url, seconds],
                                 capture_output=True, text=True, check=True)
            got = json.loads(out.stdout)
            for what in ("hit", "get"):
                results[mode][what].append(got[what])
            print(f"round {r + 1} {mode:9s} hit {got['hit'][0]:7.2f} CPU-µs  "
                  f"get {got['get'][0]:7.1f} CPU-µs {got['get'][1]:7.1f} wall-µs", flush=True)
    print("\nmedians over", rounds, "rounds (CPU µs per call of the client process; wall µs)")
    base = {w: statistics.median(c for c, _ in results["absent"][w]) for w in ("hit", "get")}
    for mode in MODES:
        row = []
        for what in ("hit", "get"):
            cpu = statistics.median(c for c, _ in results[mode][what])
            wall = statistics.median(w for _, w in results[mode][what])
            row.append(f"{what} {cpu:7.2f} CPU-µs ({cpu / base[what]:.2f}x) {wall:7.2f} wall-µs")
        print(f"  {mode:9s} " + "   ".join(row))


if __name__ == "__main__":
    main()
