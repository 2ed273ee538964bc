#!/usr/bin/env python3
"""Builds the workspace's Rust tests once and runs their executables side by side.

`cargo test` runs one test executable after another, and most of them spend their time
waiting on sockets and timers, not on the cores. This builds them with `cargo test
--no-run` (the same arguments as `cargo test`), then runs them in a pool of `--jobs`
processes, longest first (the times of the last run on this machine, kept in
target/rust-test-times.json; a fresh clone uses HINT below), each from its package's folder
as `cargo test` does. The doc tests (`cargo test --doc`) run as one more job of the pool.
Executables named in --alone run by themselves after the pool: they measure ratios or load
the machine on purpose, and two of them side by side would measure each other.

Each executable's output is printed whole when it ends, then one line per executable with
its time, and the closing line `rust-tests: N passed, N failed` (executables); the tests'
counts go to scripts/test's summary through tally.py.

An executable still running after --timeout seconds (default 600, MQSTATE_TEST_TIMEOUT; the
slowest takes about 100 s on 2 busy cores) is killed with its process group (the brokers
and stores its tests started) and fails, naming the tests that had not finished: one hung
test costs ten minutes, not CI's whole time limit.

    rust_tests.py [--jobs N] [--alone NAME,...] [--only NAME,...] [--repeat N] [--timeout S]
                  [--no-doc] [--no-record] [--env K=V]... CARGO-TEST-ARGS... [-- TEST-ARGS...]

NAME is `test:FILE` for tests/FILE.rs, `lib:CRATE` for a crate's unit tests, `bin:NAME`,
or a bare FILE/CRATE. --repeat N runs each chosen executable N times (side by side with
the others), and stops one at its first failure: the way to prove a timing-sensitive test
steady (scripts/test --repeat).
"""

from __future__ import annotations

import argparse
import concurrent.futures as futures
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import tally

ROOT = Path(__file__).resolve().parents[2]
# The slowest executables of a cold run (2 cores), started first when no times are kept.
HINT = ["test:client_faults", "test:service", "test:client_connection", "test:locks",
        "test:scenarios", "test:election", "test:server_sessions", "lib:mqstate_server",
        "test:cli", "test:runtime_model", "test:bridge"]


def build(cargo_args: list[str]) -> list[dict]:
    """`cargo test --no-run` with ARGS; its test executables (diagnostics on stderr)."""
    cmd = ["cargo", "test", *cargo_args, "--no-run", "--message-format=json-render-diagnostics"]
    print("rust-tests: " + " ".join(cmd), flush=True)
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, text=True)
    if proc.returncode != 0:
        print(f"rust-tests: the build failed (exit {proc.returncode})", flush=True)
        sys.exit(proc.returncode)
    found: dict[str, dict] = {}
    for line in proc.stdout.splitlines():
        try:
            msg = json.loads(line)
        except ValueError:
            continue
        if msg.get("reason") != "compiler-artifact" or not msg.get("executable"):
            continue
        if not (msg.get("profile") or {}).get("test"):
            continue
        target = msg["target"]
        kind = target["kind"][0]
        if kind == "bench":
            continue  # built (and so linted) with --all-targets, run by `cargo bench` only
        if kind in ("lib", "rlib", "cdylib", "staticlib", "proc-macro"):
            kind = "lib"
        name = f"{kind}:{target['name']}"
        manifest = Path(msg["manifest_path"])
        # Two packages may have a target of one name: keep both.
        key = name if name not in found else f"{name}@{manifest.parent.name}"
        found[key] = {"name": key, "exe": msg["executable"], "dir": str(manifest.parent),
                      "package": msg["package_id"]}
    return list(found.values())


def matches(name: str, wanted: list[str]) -> bool:
    """Whether executable NAME (KIND:TARGET[@PACKAGE]) is one of WANTED: by its whole name, or
    a bare TARGET naming a tests/TARGET.rs or a crate's unit tests (not an example or bin of
    the same name: `--exe election` once ran examples/election.rs too)."""
    base = name.split("@")[0]
    kind, target = base.split(":", 1)
    return any(w in (name, base) or (w == target and kind in ("test", "lib")) for w in wanted)


class Results:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.rows: list[tuple[str, float, int, int]] = []  # name, seconds, exit, runs

    def report(self, name: str, secs: float, code: int, runs: int, output: str) -> None:
        with self.lock:
            status = "ok" if code == 0 else f"FAILED (exit {code})"
            extra = f", {runs} runs" if runs > 1 else ""
            print(f"\n==== {name}: {status} in {secs:.1f} s{extra}", flush=True)
            sys.stdout.write(output)
            sys.stdout.flush()
            self.rows.append((name, secs, code, runs))
            tally.record(*tally.libtest(output.splitlines()), code)


def unfinished(cmd: list[str], cwd: str | None, env: dict | None, output: str) -> list[str]:
    """The tests of libtest executable ``cmd[0]`` that ``output`` does not show finished."""
    done = set(re.findall(r"^test (\S+) \.\.\. ", output, re.M))
    listed = subprocess.run([cmd[0], "--list", "--format=terse", *cmd[1:]], cwd=cwd, env=env,
                            capture_output=True, text=True, timeout=60).stdout
    names = re.findall(r"^(\S+): test$", listed, re.M)
    return [n for n in names if n not in done]


def run_bounded(cmd: list[str], cwd: str | None, env: dict | None, timeout: float) -> tuple[int, str]:
    """Runs ``cmd``; its exit code and output. Past ``timeout`` seconds kills its whole
    process group and returns 124 (as timeout(1) does), naming the unfinished tests."""
    with tempfile.TemporaryFile(mode="w+") as out:
        proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True)
        killed = False
        try:
            code = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            killed = True
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            proc.wait()
            code = 124
        out.flush()
        out.seek(0)
        output = out.read()
    if killed:
        try:
            hung = ", ".join(unfinished(cmd, cwd, env, output)) or "none listed"
        except (OSError, subprocess.SubprocessError) as e:
            hung = f"unknown ({e})"
        output += f"\nrust-tests: killed after {timeout:.0f} s (--timeout); unfinished: {hung}\n"
    return code, output


def run_one(job: dict, args: argparse.Namespace, results: Results) -> None:
    env = dict(os.environ)
    env.update(kv.split("=", 1) for kv in args.env)
    env["CARGO_MANIFEST_DIR"] = job["dir"]
    start = time.monotonic()
    runs = 0
    code = 0
    output = ""
    for _ in range(args.repeat):
        runs += 1
        code, output = run_bounded([job["exe"], *args.test_args], job["dir"], env, args.timeout)
        if code != 0:
            break
    if args.repeat > 1 and code == 0:
        # Only the last run's counts: scripts/test counts one run of each.
        output += f"rust-tests: {job['name']} passed {runs} runs in a row\n"
    elif args.repeat > 1:
        output += f"rust-tests: {job['name']} FAILED on run {runs} of {args.repeat}\n"
    results.report(job["name"], time.monotonic() - start, code, runs, output)


def run_doc(cargo_args: list[str], args: argparse.Namespace, results: Results) -> None:
    start = time.monotonic()
    # (--doc takes no other target selection.)
    cmd = ["cargo", "test", *[a for a in cargo_args if a != "--all-targets"], "--doc"]
    # Compiling the doc tests is part of their time: twice the executables' bound.
    code, output = run_bounded(cmd, None, None, 2 * args.timeout)
    results.report("doc tests (" + " ".join(cmd) + ")", time.monotonic() - start, code, 1, output)


def main() -> int:
    argv = sys.argv[1:]
    test_args: list[str] = []
    if "--" in argv:
        i = argv.index("--")
        argv, test_args = argv[:i], argv[i + 1:]
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--jobs", type=int, default=int(os.environ.get("MQSTATE_TEST_JOBS", "3")))
    parser.add_argument("--alone", default="")
    parser.add_argument("--only", default="")
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--no-doc", action="store_true")
    parser.add_argument("--timeout", type=float,
                        default=float(os.environ.get("MQSTATE_TEST_TIMEOUT", "600")),
                        help="seconds an executable may run before it is killed and fails")
    parser.add_argument("--env", action="append", default=[])
    parser.add_argument("--no-record", action="store_true",
                        help="keep no times (a run in another mode, e.g. the adapter's)")
    args, cargo_args = parser.parse_known_args(argv)
    args.test_args = test_args
    if args.repeat < 1 or args.jobs < 1:
        parser.error("--repeat and --jobs take a number >= 1")

    jobs = build(cargo_args)
    if args.only:
        wanted = [w for w in args.only.split(",") if w]
        jobs = [j for j in jobs if matches(j["name"], wanted)]
        if not jobs:
            print(f"rust-tests: no test executable matches --only {args.only}")
            return 2
    alone_names = [w for w in args.alone.split(",") if w]
    alone = [j for j in jobs if matches(j["name"], alone_names)]
    pool = [j for j in jobs if j not in alone]

    times_file = Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target")) / "rust-test-times.json"
    try:
        kept = json.loads(times_file.read_text())
    except (OSError, ValueError):
        kept = {}
    hint = {n: len(HINT) - i for i, n in enumerate(HINT)}
    pool.sort(key=lambda j: (kept.get(j["name"], 0.0), hint.get(j["name"], 0)), reverse=True)

    results = Results()
    start = time.monotonic()
    with futures.ThreadPoolExecutor(max_workers=args.jobs) as ex:
        tasks = []
        doc = not args.no_doc and not args.only and not test_args and args.repeat == 1
        if doc:
            # The doc tests compile (rustdoc) while the executables mostly wait: first.
            tasks.append(ex.submit(run_doc, cargo_args, args, results))
        tasks += [ex.submit(run_one, j, args, results) for j in pool]
        for t in tasks:
            t.result()
    pool_secs = time.monotonic() - start
    for j in alone:
        run_one(j, args, results)

    if args.repeat == 1 and not test_args and not args.no_record:
        kept.update({name: secs for name, secs, _, _ in results.rows})
        try:
            times_file.parent.mkdir(parents=True, exist_ok=True)
            times_file.write_text(json.dumps(kept, indent=1, sort_keys=True))
        except OSError:
            pass
    failed = [r for r in results.rows if r[2] != 0]
    print(f"\n==== rust-tests: {len(results.rows)} executables, pool of {args.jobs} "
          f"in {pool_secs:.0f} s, {len(alone)} alone after it; by time:")
    for name, secs, code, runs in sorted(results.rows, key=lambda r: -r[1]):
        print(f"  {secs:7.1f} s  {'ok' if code == 0 else 'FAILED'}  {name}"
              + (f" ({runs} runs)" if runs > 1 else ""))
    print(f"rust-tests: {len(results.rows) - len(failed)} passed, {len(failed)} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
