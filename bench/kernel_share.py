#!/usr/bin/env python3
"""Where a load process's CPU per request goes: user space, the kernel, and the system calls
and context switches behind the kernel's share; the Rust client (`client-bench load`) against the
official SDK's client (`sdk-load`), alternating, against one `mqstate serve` each run.

For each client, op and round it prints, per request over a window in the middle of the run:
user and system CPU µs (`/proc/PID/task/*/stat`), context switches, and the calls of
`writev`, `write`, `recvfrom`, `epoll_wait`, `futex` and `setsockopt` (`perf stat` on the
syscall tracepoints; left out when perf cannot count them). Then the medians and one ratio:
the Rust client's *system* CPU per request over the SDK's *total*, the smallest its
CPU ratio could be if its user space cost nothing (docs/benchmarks.md, "Targets today").

  bench/kernel_share.py [--rounds 3] [--seconds 4] [--depth 16] [--ops GET,SET]

Release builds (the SDK comparator needs libssl-dev and pkg-config, as for bench/modes.py).
Installs Debian's linux-perf if `perf` is missing; runs as root or with perf allowed.
"""

import argparse
import glob
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import modes  # noqa: E402  (Mode, load_command, build, LINE)

SYSCALLS = ["writev", "write", "recvfrom", "epoll_wait", "futex", "setsockopt"]


def ensure_perf():
    if shutil.which("perf"):
        return
    print("kernel_share: installing perf (Debian's linux-perf)", file=sys.stderr)
    subprocess.run("apt-get update -qq >/dev/null && apt-get install -y -qq linux-perf >/dev/null",
                   shell=True, check=False)


def cpu_of(pid):
    """User and system CPU ticks of all threads of `pid`."""
    user = system = 0
    for task in glob.glob(f"/proc/{pid}/task/*"):
        try:
            with open(f"{task}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        user += int(fields[11])
        system += int(fields[12])
    return user, system


def perf_counts(pid, seconds, out):
    """Counts of the syscall tracepoints and context switches of `pid` over `seconds`."""
    events = [f"syscalls:sys_enter_{s}" for s in SYSCALLS] + ["context-switches"]
    perf = shutil.which("perf")
    if perf is None:
        time.sleep(seconds)
        return {}
    start = time.monotonic()
    run = subprocess.run([perf, "stat", "-x,", "-o", out, "-p", str(pid), "-e", ",".join(events),
                          "--", "sleep", str(seconds)], capture_output=True, text=True)
    # A perf that cannot count (no tracepoints, a kernel without its tools) returns at once:
    # the CPU figures still get their whole window.
    time.sleep(max(0.0, seconds - (time.monotonic() - start)))
    counts = {}
    if run.returncode == 0 and os.path.exists(out):
        with open(out) as f:
            for line in f:
                parts = line.strip().split(",")
                if len(parts) > 2 and parts[0].replace(".", "").isdigit():
                    counts[parts[2].replace("syscalls:sys_enter_", "")] = float(parts[0])
    return counts


def one_run(target, binaries, op, depth, seconds, work):
    store = modes.Mode("in-process", binaries[0], work)
    try:
        total = seconds + 4
        cmd = modes.load_command(target, binaries, store.url, op, depth, total)
        load = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        time.sleep(3)
        before, t0 = cpu_of(load.pid), time.monotonic()
        counts = perf_counts(load.pid, seconds, os.path.join(work, "perf.txt"))
        after, t1 = cpu_of(load.pid), time.monotonic()
        output, _ = load.communicate(timeout=total + 60)
    finally:
        store.stop()
    match = None
    for line in output.splitlines():
        match = modes.LINE.search(line) or match
    if load.returncode != 0 or match is None:
        raise SystemExit(f"{target} failed ({load.returncode}):\n{output[-2000:]}")
    requests = float(match.group("ops")) * (t1 - t0)
    tick_us = 1e6 / os.sysconf("SC_CLK_TCK")
    return {
        "ops": float(match.group("ops")),
        "user": (after[0] - before[0]) * tick_us / requests,
        "sys": (after[1] - before[1]) * tick_us / requests,
        **{k: v / requests for k, v in counts.items()},
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seconds", type=int, default=4)
    ap.add_argument("--depth", type=int, default=16)
    ap.add_argument("--ops", default="GET,SET")
    args = ap.parse_args()
    ensure_perf()
    binaries = modes.build(sdk=True)
    load_before = open("/proc/loadavg").read().split()[:3]
    runs = {}
    with tempfile.TemporaryDirectory() as work:
        for r in range(args.rounds):
            for op in args.ops.split(","):
                targets = ["mqstate", "sdk"] if r % 2 == 0 else ["sdk", "mqstate"]
                for target in targets:
                    run = one_run(target, binaries, op, args.depth, args.seconds, work)
                    runs.setdefault((target, op), []).append(run)
                    calls = ", ".join(f"{k} {run[k]:.2f}" for k in [*SYSCALLS, "context-switches"]
                                      if k in run)
                    print(f"  {op} {args.depth} in flight, round {r + 1}: {target:7} "
                          f"{run['ops']:8.0f} ops/s  user {run['user']:5.1f} µs  "
                          f"system {run['sys']:5.1f} µs  per request: {calls}", flush=True)
    load_after = open("/proc/loadavg").read().split()[:3]
    print(f"\nLoad average {' '.join(load_before)} before, {' '.join(load_after)} after.")
    print(f"\nMedians per request, {args.depth} in flight ({args.rounds} rounds):\n")
    keys = ["user", "sys", *SYSCALLS, "context-switches"]
    print("| client | op | ops/s | " + " | ".join(keys) + " |")
    print("|---|---|---:|" + "---:|" * len(keys))
    med = {}
    for (target, op), rs in sorted(runs.items()):
        med[(target, op)] = {k: statistics.median(x[k] for x in rs) for k in ["ops", *keys] if k in rs[0]}
        m = med[(target, op)]
        cells = " | ".join(f"{m[k]:.2f}" if k in m else "–" for k in keys)
        print(f"| {target} | {op} | {m['ops']:.0f} | {cells} |")
    print()
    for op in args.ops.split(","):
        ours, sdk = med.get(("mqstate", op)), med.get(("sdk", op))
        if ours and sdk:
            total_sdk = sdk["user"] + sdk["sys"]
            print(f"{op}: mqstate CPU ÷ SDK's {(ours['user'] + ours['sys']) / total_sdk:.2f}×; "
                  f"mqstate's system CPU alone ÷ SDK's total {ours['sys'] / total_sdk:.2f}×; "
                  f"user space ÷ SDK's {ours['user'] / sdk['user']:.2f}×; "
                  f"rate {ours['ops'] / sdk['ops']:.2f}×")


if __name__ == "__main__":
    main()
