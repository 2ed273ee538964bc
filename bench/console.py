#!/usr/bin/env python3
"""What the console's live viewers cost the store (docs/benchmarks.md, "Console"): one
release `mqstate serve --http`, loaded by `mqstate bench` with no viewer and with three
viewers streaming every event (`curl -N` on /api/events), in turns, ROUNDS rounds of SECONDS
each:

    bench/run console [SECONDS] [ROUNDS] [CLIENTS] [DEPTH]

Prints ops/s and the store's CPU µs per request of each run, and the ratio of the medians
(the bar: three viewers keep >= 0.9x the requests per second of none)."""

import os
import re
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TARGET = os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target"))
BIN = os.path.join(TARGET, "release", "mqstate")
TICKS = os.sysconf("SC_CLK_TCK")
sys.path.insert(0, os.path.join(ROOT, "scripts", "lib"))
from listening import free_port, listens  # noqa: E402  (the harnesses' own checks)


def wait_port(port, proc, bound=20.0):
    """Until `proc` itself listens on `port` (a connect alone could reach someone else's)."""
    deadline = time.monotonic() + bound
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            sys.exit(f"serve exited ({proc.returncode})")
        if listens(proc.pid, port):
            return
        time.sleep(0.05)
    sys.exit(f"serve does not listen on {port} after {bound} s")


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


def run(url, seconds, clients, depth, serve_pid):
    before = cpu_seconds(serve_pid)
    out = subprocess.run(
        [BIN, "bench", "--url", url, "--clients", str(clients), "--depth", str(depth),
         "--duration", f"{seconds}s", "--warmup", "500ms"],
        capture_output=True, text=True, check=True,
    ).stdout
    cpu = cpu_seconds(serve_pid) - before
    rate = int(re.findall(r"(\d+) ops/s", out)[-1])
    ops = rate * seconds
    return rate, cpu * 1e6 / max(ops, 1)


def main():
    seconds = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    clients = int(sys.argv[3]) if len(sys.argv) > 3 else 4
    depth = int(sys.argv[4]) if len(sys.argv) > 4 else 16
    mqtt, http = free_port(), free_port()
    serve = subprocess.Popen(
        [BIN, "serve", "--listen", f"127.0.0.1:{mqtt}", "--http", str(http)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    try:
        wait_port(mqtt, serve)
        wait_port(http, serve)
        url = f"mqtt://127.0.0.1:{mqtt}"
        print(f"console bench: {clients} clients x {depth} in flight, {seconds} s runs, "
              f"{rounds} rounds; load {os.getloadavg()[0]:.2f}")
        results = {"none": [], "3 viewers": []}
        for r in range(rounds):
            order = ["none", "3 viewers"] if r % 2 == 0 else ["3 viewers", "none"]
            for mode in order:
                viewers = []
                if mode != "none":
                    viewers = [subprocess.Popen(
                        ["curl", "-sN", "-o", "/dev/null", f"http://127.0.0.1:{http}/api/events"])
                        for _ in range(3)]
                    time.sleep(0.5)
                try:
                    rate, cpu = run(url, seconds, clients, depth, serve.pid)
                finally:
                    for v in viewers:
                        v.terminate()
                        v.wait()
                results[mode].append((rate, cpu))
                print(f"  round {r + 1} {mode:>9}: {rate:>8} ops/s  store {cpu:6.1f} CPU-µs/request")
        none = statistics.median(r for r, _ in results["none"])
        viewed = statistics.median(r for r, _ in results["3 viewers"])
        cpu_none = statistics.median(c for _, c in results["none"])
        cpu_viewed = statistics.median(c for _, c in results["3 viewers"])
        print(f"median: none {none:.0f} ops/s ({cpu_none:.1f} CPU-µs), 3 viewers {viewed:.0f} "
              f"ops/s ({cpu_viewed:.1f} CPU-µs): {viewed / none:.2f}x the requests per second, "
              f"{cpu_viewed / cpu_none:.2f}x the store's CPU per request")
    finally:
        serve.terminate()
        serve.wait()


if __name__ == "__main__":
    main()
