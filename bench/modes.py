#!/usr/bin/env python3
"""The state store in its three deployments, with four clients each, in alternating rounds.

Modes:
  mosquitto   Debian's mosquitto + `mqstate serve --broker` (the store as an MQTT client)
  adapter     `mqstate serve --embedded-adapter` (embedded broker, store on its own connection)
  in-process  `mqstate serve` (embedded broker, store inside it: the default)

Targets, run one after the other in every round (the order rotates each round):
  mqstate     the mqstate client (`client-bench load`: `mqstate bench`'s load, watched pids' CPU)
  sdk         the official Azure IoT Operations SDK's state store client (`sdk-load`)
  raw         a bare rumqttc request/response pair through the same broker, answered at once
  raw+env     the same pair carrying the state store's full request envelope

For each mode, op (GET, SET) and depth (1, 64 in flight) it prints the median of the rounds:
ops/s, p50/p99 latency, and CPU µs per request of the load process, the store and the broker
(from /proc, over the measured window only), then the load average and the ratios the
benchmark targets ask for. With --threads, also the watched processes' CPU µs and voluntary
context switches (wake-ups) per request by thread name. Release builds; the SDK comparator
needs the `sdk` feature of `mqstate-bench` (built here unless --targets leaves `sdk` out; it
needs libssl-dev and pkg-config).

  bench/modes.py [--rounds 3] [--seconds 5] [--modes mosquitto,adapter,in-process]
                 [--depths 1,64] [--ops GET,SET] [--clients 1] [--targets mqstate,raw,...]
                 [--mqstate-bin NAME=PATH]... [--threads] [--markdown FILE]

--mqstate-bin serves the store with each binary given, in the modes named `MODE@NAME`,
alternated in the same rounds: an old build's store against a new one's. The load is this
tree's `client-bench` in every mode.
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


sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scripts", "lib"))
from listening import free_port  # noqa: E402  (the harnesses' one free_port)


def wait_port(port, timeout=10.0):
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.05)
    raise SystemExit(f"nothing listens on port {port}")


def binaries_built():
    """The release binaries: `mqstate` (the stores), `client-bench` (the load), `sdk-load`."""
    return tuple(os.path.join(TARGET_DIR, "release", name)
                 for name in ("mqstate", "client-bench", "sdk-load"))


def build(sdk=True):
    bench = ["--features", "sdk", "--bin", "client-bench", "--bin", "sdk-load"] if sdk else [
        "--bin", "client-bench"]
    cmds = [["cargo", "build", "--release", "-q", "-p", "mqstate-cli"],
            ["cargo", "build", "--release", "-q", "-p", "mqstate-bench", *bench]]
    for cmd in cmds:
        print("+", " ".join(cmd), file=sys.stderr)
        subprocess.run(cmd, cwd=ROOT, check=True)
    return binaries_built()


class Mode:
    """A running deployment: the URL clients use and the pids to watch."""

    def __init__(self, label, mqstate, work):
        # `in-process@old`: the deployment `in-process` served by the binary named `old`.
        name = label.split("@")[0]
        self.label, self.name, self.mqstate, self.procs, self.watch = label, name, mqstate, [], {}
        port = free_port()
        self.url = f"mqtt://127.0.0.1:{port}"
        if name == "mosquitto":
            conf = os.path.join(work, f"mosquitto-{port}.conf")
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


THREADS = re.compile(r"^\s*threads (?P<pid>\d+):(?P<groups>.*)$")


def load_command(target, binaries, url, op, depth, seconds, clients=1, watch=()):
    """The command line of one load run of `target` (1 s of warm-up, then `seconds`)."""
    _, client, sdk = binaries
    common = ["--url", url, "--depth", str(depth),
              "--set-percent", "100" if op == "SET" else "0"]
    # `client-bench` takes durations with their unit; sdk-load takes seconds.
    timing = ["--duration", f"{seconds}s", "--warmup", "1s"]
    sdk_timing = ["--duration", str(seconds), "--warmup", "1"]
    for pid in watch:
        common += ["--watch-pid", str(pid)]
    many = ["--clients", str(clients)]
    return {
        "mqstate": [client, "load", *many, *common, *timing],
        "raw": [client, "load", "--target", "raw", *many, *common, *timing],
        "raw+env": [client, "load", "--target", "raw", "--raw-full-envelope", *many, *common,
                    *timing],
        "sdk": [sdk, *common, *sdk_timing],
    }[target]


def run_target(target, binaries, mode, op, depth, seconds, clients=1):
    cmd = load_command(target, binaries, mode.url, op, depth, seconds, clients,
                       mode.watch.values())
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=seconds * 4 + 60)
    match, threads = None, {}
    for line in out.stdout.splitlines():
        match = LINE.search(line) or match
        t = THREADS.match(line)
        if t:
            groups = []
            for part in t.group("groups").split():
                name, rest = part.rsplit("=", 1)
                name, count = name.rsplit("*", 1)
                us, switches = rest.split("/")
                groups.append((name, int(count), float(us), float(switches)))
            threads[t.group("pid")] = groups
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
        "threads": {names.get(pid, pid): groups for pid, groups in threads.items()},
    }


def median_run(runs):
    """The run with the median throughput (its latencies and CPU come with it)."""
    ordered = sorted(runs, key=lambda r: r["ops"])
    return ordered[len(ordered) // 2]


TITLES = {
    "mosquitto": "mosquitto + `mqstate serve --broker`",
    "adapter": "embedded broker, store on its own connection (`--embedded-adapter`)",
    "in-process": "embedded broker, store in process (`mqstate serve`, the default)",
}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=5)
    ap.add_argument("--modes", default="mosquitto,adapter,in-process",
                    help="deployments; `MODE@NAME` serves it with the --mqstate-bin NAME")
    ap.add_argument("--depths", default="1,64")
    ap.add_argument("--ops", default="GET,SET")
    ap.add_argument("--clients", type=int, default=1,
                    help="connections per run (mqstate and raw targets; the SDK uses one)")
    ap.add_argument("--targets", default=",".join(TARGETS))
    ap.add_argument("--mqstate-bin", action="append", default=[], metavar="NAME=PATH",
                    help="a prebuilt mqstate binary for modes written MODE@NAME")
    ap.add_argument("--threads", action="store_true",
                    help="print CPU µs and wake-ups per request by thread name")
    ap.add_argument("--no-build", action="store_true", help="use the binaries already built")
    ap.add_argument("--markdown", help="also write the tables to this file")
    args = ap.parse_args()
    targets = args.targets.split(",")
    unknown = set(targets) - set(TARGETS)
    if unknown:
        raise SystemExit(f"unknown targets {sorted(unknown)}: choose from {TARGETS}")
    if args.no_build:
        binaries = binaries_built()
    else:
        binaries = build(sdk="sdk" in targets)
    named = dict(b.split("=", 1) for b in args.mqstate_bin)
    labels = args.modes.split(",")
    ops, depths = args.ops.split(","), list(map(int, args.depths.split(",")))
    work = tempfile.mkdtemp()
    out = []

    def say(line=""):
        print(line, flush=True)
        out.append(line)

    say(f"{os.cpu_count()} cores; {args.rounds} alternating rounds of {args.seconds:g} s "
        f"(+1 s warm-up) per cell, {args.clients} connection(s); medians by throughput")
    results = {}
    modes = {}
    load_before = open("/proc/loadavg").read().split()[:3]
    try:
        for label in labels:
            which = label.split("@")[1] if "@" in label else None
            if which is not None and which not in named:
                raise SystemExit(f"{label}: no --mqstate-bin {which}=PATH")
            modes[label] = Mode(label, named.get(which, binaries[0]), work)
        # Every deployment runs throughout; rounds alternate deployments and targets.
        for op in ops:
            for depth in depths:
                runs = {(m, t): [] for m in labels for t in targets}
                cells = [(m, t) for m in labels for t in targets]
                for r in range(args.rounds):
                    order = cells[r % len(cells):] + cells[:r % len(cells)]
                    for label, target in order:
                        mode = modes[label]
                        print(f"  {label} {op} depth {depth} round {r + 1}: {target}",
                              file=sys.stderr)
                        runs[(label, target)].append(run_target(
                            target, binaries, mode, op, depth, args.seconds, args.clients))
                for (label, target), v in runs.items():
                    results[(label, op, depth, target)] = median_run(v)
    finally:
        for mode in modes.values():
            mode.stop()
        shutil.rmtree(work, ignore_errors=True)
    load_after = open("/proc/loadavg").read().split()[:3]
    say(f"Load average {' '.join(load_before)} before, {' '.join(load_after)} after.")

    def ratio(m, base):
        return f"{m / base:.2f}×" if base else "–"

    for label in labels:
        mode = modes[label]
        say()
        say(f"### {label}: {TITLES[mode.name]}")
        say()
        cpu_cols = list(mode.watch)
        say("| op | in flight | client | ops/s | p50 µs | p99 µs | CPU µs/req: client | "
            + " | ".join(cpu_cols) + " | vs raw | p99 vs raw |")
        say("|---|---|---|---:|---:|---:|---:|" + "---:|" * len(cpu_cols) + "---:|---:|")
        for op in ops:
            for depth in depths:
                raw = results.get((label, op, depth, "raw"))
                for t in targets:
                    m = results[(label, op, depth, t)]
                    err = f" ({m['errors']} errors)" if m["errors"] else ""
                    say(f"| {op} | {depth} | {t}{err} | {m['ops']:.0f} | {m['p50']} | {m['p99']} | "
                        f"{m['cpu'].get('client', float('nan')):.1f} | "
                        + " | ".join(f"{m['cpu'].get(c, float('nan')):.1f}" for c in cpu_cols)
                        + f" | {ratio(m['ops'], raw['ops']) if raw else '–'}"
                        f" | {ratio(m['p99'], raw['p99']) if raw else '–'} |")
        if args.threads:
            say()
            say(f"Threads of {label} (CPU µs / voluntary context switches per request, "
                "by thread name × threads):")
            say()
            for op in ops:
                for depth in depths:
                    for t in targets:
                        m = results[(label, op, depth, t)]
                        for who, groups in m["threads"].items():
                            shown = ", ".join(f"{n}×{c} {us:.1f} µs/{sw:.2f}"
                                              for n, c, us, sw in groups if us > 0 or sw > 0.005)
                            say(f"- {op} {depth} {t}, {who}: {shown}")

    say()
    say("### Targets (ratios of medians from this run)")
    say()
    say("| target | op | in flight | measured | goal |")
    say("|---|---|---|---:|---:|")
    for op in ops:
        for depth in depths:
            inproc = results.get(("in-process", op, depth, "mqstate"))
            mosq = results.get(("mosquitto", op, depth, "raw"))
            if inproc and mosq:
                goal = 1.5 if depth == 1 else 1.3
                say(f"| in-process mqstate / raw pair through mosquitto | {op} | {depth} | "
                    f"{inproc['ops'] / mosq['ops']:.2f}× | ≥ {goal}× |")
                say(f"| in-process mqstate p99 / raw pair p99 through mosquitto | {op} | {depth} | "
                    f"{inproc['p99'] / max(mosq['p99'], 1):.2f}× | ≤ 1× |")
            mq = results.get(("mosquitto", op, depth, "mqstate"))
            env = results.get(("mosquitto", op, depth, "raw+env"))
            if mq and env:
                say(f"| through mosquitto: mqstate / raw+env | {op} | {depth} | "
                    f"{mq['ops'] / env['ops']:.2f}× | ≥ 0.98× |")
            for label in labels:
                ours = results.get((label, op, depth, "mqstate"))
                sdk = results.get((label, op, depth, "sdk"))
                raw = results.get((label, op, depth, "raw"))
                if ours and sdk:
                    say(f"| {label}: mqstate / SDK | {op} | {depth} | "
                        f"{ours['ops'] / sdk['ops']:.2f}× | ≥ 1.5× |")
                if ours and raw and modes[label].name == "in-process":
                    say(f"| {label}: store p99 / raw pair p99, same broker | {op} | {depth} | "
                        f"{ours['p99'] / max(raw['p99'], 1):.2f}× | ≤ 1× |")
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
