#!/usr/bin/env python3
"""The state store in its three deployments, with four clients each, in alternating rounds.

Modes:
  mosquitto   Debian's mosquitto + `mqstate serve --broker` (the store as an MQTT client)
  adapter     `mqstate serve --embedded-adapter` (embedded broker, store on its own connection)
  in-process  `mqstate serve` (embedded broker, store inside it: the default)

Targets, run one after the other in every round (the order rotates each round):
  mqstate     the mqstate client (`mqstate bench`)
  sdk         the official Azure IoT Operations SDK's state store client (`sdk-load`)
  raw         a bare rumqttc request/response pair through the same broker, answered at once
  raw+env     the same pair carrying the state store's full request envelope

For each mode, op (GET, SET) and depth (1, 64 in flight) it prints the median of the rounds:
ops/s, p50/p99 latency, and CPU µs per request of the load process, the store and the broker
(from /proc, over the measured window only), then the load average and the ratios the
benchmark targets ask for. Release builds; the SDK comparator needs the `sdk` feature of
`mqstate-bench` (built here; it needs libssl-dev and pkg-config).

  bench/modes.py [--rounds 3] [--seconds 5] [--modes mosquitto,adapter,in-process]
                 [--depths 1,64] [--ops GET,SET] [--markdown FILE]
"""

import argparse
import os
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TARGET_DIR = os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target"))
TARGETS = ["mqstate", "sdk", "raw", "raw+env"]
LINE = re.compile(
    r"(?P<ops>[\d.]+) ops/s\s+p50\s+(?P<p50>\d+) µs\s+p90\s+\d+ µs\s+p99\s+(?P<p99>\d+) µs"
    r"\s+errors (?P<errors>\d+)(?:\s+cpu µs/op(?P<cpu>.*))?"
)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port, timeout=10.0):
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.05)
    raise SystemExit(f"nothing listens on port {port}")


def build():
    for cmd in (
        ["cargo", "build", "--release", "-q", "-p", "mqstate-cli"],
        ["cargo", "build", "--release", "-q", "-p", "mqstate-bench", "--features", "sdk",
         "--bin", "sdk-load"],
    ):
        print("+", " ".join(cmd), file=sys.stderr)
        subprocess.run(cmd, cwd=ROOT, check=True)
    return (os.path.join(TARGET_DIR, "release", "mqstate"),
            os.path.join(TARGET_DIR, "release", "sdk-load"))


class Mode:
    """A running deployment: the URL clients use and the pids to watch."""

    def __init__(self, name, mqstate, work):
        self.name, self.procs, self.watch = name, [], {}
        port = free_port()
        self.url = f"mqtt://127.0.0.1:{port}"
        if name == "mosquitto":
            conf = os.path.join(work, "mosquitto.conf")
            with open(conf, "w") as f:
                f.write(f"listener {port} 127.0.0.1\nallow_anonymous true\nset_tcp_nodelay true\n"
                        "persistence false\nlog_dest none\n")
                if os.geteuid() == 0:
                    f.write("user root\n")
            binary = shutil.which("mosquitto") or "/usr/sbin/mosquitto"
            broker = subprocess.Popen([binary, "-c", conf])
            self.procs.append(broker)
            wait_port(port)
            store = subprocess.Popen([mqstate, "serve", "--broker", self.url],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            self.watch = {"store": store.pid, "broker": broker.pid}
        else:
            flags = ["--embedded-adapter"] if name == "adapter" else []
            store = subprocess.Popen([mqstate, "serve", "--listen", f"127.0.0.1:{port}", *flags],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            self.watch = {"broker+store": store.pid}
        self.procs.append(store)
        wait_port(port)
        time.sleep(1.0)

    def stop(self):
        for p in reversed(self.procs):
            p.terminate()
            try:
                p.wait(5)
            except subprocess.TimeoutExpired:
                p.kill()


def run_target(target, binaries, mode, op, depth, seconds):
    mqstate, sdk = binaries
    common = ["--url", mode.url, "--depth", str(depth), "--duration", str(seconds),
              "--warmup", "1", "--set-percent", "100" if op == "SET" else "0"]
    for pid in mode.watch.values():
        common += ["--watch-pid", str(pid)]
    cmd = {
        "mqstate": [mqstate, "bench", *common],
        "raw": [mqstate, "bench", "--target", "raw", *common],
        "raw+env": [mqstate, "bench", "--target", "raw", "--raw-full-envelope", *common],
        "sdk": [sdk, *common],
    }[target]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=seconds * 4 + 60)
    match = None
    for line in out.stdout.splitlines():
        match = LINE.search(line) or match
    if out.returncode != 0 or match is None:
        raise SystemExit(f"{target} failed ({out.returncode}):\n{out.stdout}\n{out.stderr[-2000:]}")
    cpu = {}
    for part in (match.group("cpu") or "").split():
        who, us = part.split("=")
        cpu[who] = float(us)
    names = {str(pid): name for name, pid in mode.watch.items()}
    return {
        "ops": float(match.group("ops")), "p50": int(match.group("p50")),
        "p99": int(match.group("p99")), "errors": int(match.group("errors")),
        "cpu": {("client" if who == "self" else names.get(who, who)): us
                for who, us in cpu.items()},
    }


def median_run(runs):
    """The run with the median throughput (its latencies and CPU come with it)."""
    ordered = sorted(runs, key=lambda r: r["ops"])
    return ordered[len(ordered) // 2]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=5)
    ap.add_argument("--modes", default="mosquitto,adapter,in-process")
    ap.add_argument("--depths", default="1,64")
    ap.add_argument("--ops", default="GET,SET")
    ap.add_argument("--markdown", help="also write the tables to this file")
    args = ap.parse_args()
    binaries = build()
    work = tempfile.mkdtemp()
    out = []

    def say(line=""):
        print(line, flush=True)
        out.append(line)

    say(f"{os.cpu_count()} cores; {args.rounds} alternating rounds of {args.seconds:g} s "
        f"(+1 s warm-up) per cell; medians by throughput")
    results = {}
    try:
        for name in args.modes.split(","):
            mode = Mode(name, binaries[0], work)
            load_before = open("/proc/loadavg").read().split()[:3]
            try:
                for op in args.ops.split(","):
                    for depth in map(int, args.depths.split(",")):
                        runs = {t: [] for t in TARGETS}
                        for r in range(args.rounds):
                            order = TARGETS[r % len(TARGETS):] + TARGETS[:r % len(TARGETS)]
                            for target in order:
                                print(f"  {name} {op} depth {depth} round {r + 1}: {target}",
                                      file=sys.stderr)
                                runs[target].append(
                                    run_target(target, binaries, mode, op, depth, args.seconds))
                        results[(name, op, depth)] = {t: median_run(v) for t, v in runs.items()}
            finally:
                mode.stop()
            load_after = open("/proc/loadavg").read().split()[:3]
            say()
            say(f"### {name}: " + {
                "mosquitto": "mosquitto + `mqstate serve --broker`",
                "adapter": "embedded broker, store on its own connection (`--embedded-adapter`)",
                "in-process": "embedded broker, store in process (`mqstate serve`, the default)",
            }[name])
            say()
            say(f"Load average {' '.join(load_before)} before, {' '.join(load_after)} after.")
            say()
            cpu_cols = list(mode.watch)
            say("| op | in flight | client | ops/s | p50 µs | p99 µs | CPU µs/req: client | "
                + " | ".join(cpu_cols) + " | vs raw | vs raw+env |")
            say("|---|---|---|---:|---:|---:|---:|" + "---:|" * len(cpu_cols) + "---:|---:|")
            for op in args.ops.split(","):
                for depth in map(int, args.depths.split(",")):
                    cell = results[(name, op, depth)]
                    for t in TARGETS:
                        m = cell[t]
                        err = f" ({m['errors']} errors)" if m["errors"] else ""
                        say(f"| {op} | {depth} | {t}{err} | {m['ops']:.0f} | {m['p50']} | {m['p99']} | "
                            f"{m['cpu'].get('client', float('nan')):.1f} | "
                            + " | ".join(f"{m['cpu'].get(c, float('nan')):.1f}" for c in cpu_cols)
                            + f" | {m['ops'] / cell['raw']['ops']:.2f}× | "
                            f"{m['ops'] / cell['raw+env']['ops']:.2f}× |")
    finally:
        shutil.rmtree(work, ignore_errors=True)

    say()
    say("### Targets (ratios of medians from this run)")
    say()
    say("| target | op | in flight | measured | goal |")
    say("|---|---|---|---:|---:|")
    for op in args.ops.split(","):
        for depth in map(int, args.depths.split(",")):
            inproc = results.get(("in-process", op, depth))
            mosq = results.get(("mosquitto", op, depth))
            if inproc and mosq:
                goal = 1.5 if depth == 1 else 1.3
                say(f"| in-process mqstate / raw pair through mosquitto | {op} | {depth} | "
                    f"{inproc['mqstate']['ops'] / mosq['raw']['ops']:.2f}× | ≥ {goal}× |")
                say(f"| in-process mqstate p99 / raw pair p99 through mosquitto | {op} | {depth} | "
                    f"{inproc['mqstate']['p99'] / max(mosq['raw']['p99'], 1):.2f}× | ≤ 1× |")
            if mosq:
                say(f"| through mosquitto: mqstate / raw+env | {op} | {depth} | "
                    f"{mosq['mqstate']['ops'] / mosq['raw+env']['ops']:.2f}× | ≥ 0.98× |")
            for name in args.modes.split(","):
                cell = results.get((name, op, depth))
                if cell:
                    say(f"| {name}: mqstate / SDK | {op} | {depth} | "
                        f"{cell['mqstate']['ops'] / cell['sdk']['ops']:.2f}× | ≥ 1.5× |")
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
