"""``python -m mqjepsen``: runs modes, prints one line per mode and a closing count.

Example: ``python -m mqjepsen --modes kill,partition --duration 60 --clients 8 --seed 7``;
with ``--cached-readers 2`` two more processes read the same keys through the client-side
cache, checked against its contract (``--staleness``, ``--planted-bug`` to see it caught).
Histories of a failed mode are kept (the path is printed); ``--keep`` keeps them all.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any, Dict, List, Optional

from .lockcheck import LOCK_MODES, run_lock_mode
from .checker import CACHE_STALENESS
from .runner import MODES, PLANTED_BUGS, READER_MODES, RunConfig, RunResult, run

#: ``all``: the reader modes need --cached-readers, and run only when it is given.
ALL = MODES + LOCK_MODES
KNOWN = MODES + READER_MODES + LOCK_MODES


def main(argv: Optional[List[str]] = None) -> int:
    p = argparse.ArgumentParser(prog="python -m mqjepsen", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--modes", default="all",
                   help=f"comma-separated, or all: {', '.join(KNOWN)} (all: the reader modes too with "
                        "--cached-readers)")
    p.add_argument("--reader-keep-alive", type=float, default=5.0,
                   help="the cached readers' MQTT keep-alive, s: a silence shorter than 1.5 times it "
                        "stays silent (e.g. --reader-pause 70 --reader-keep-alive 120)")
    p.add_argument("--duration", type=float, default=5.0, help="seconds per mode")
    p.add_argument("--clients", type=int, default=5)
    p.add_argument("--keys", type=int, default=3)
    p.add_argument("--seed", type=int, default=None, help="default: random (printed)")
    p.add_argument("--timeout", type=float, default=1.0, help="request timeout of the workload, s")
    p.add_argument("--horizon", type=float, default=15.0,
                   help="an indeterminate operation takes effect within this many seconds or never; 0: no bound")
    p.add_argument("--tolerate-known", action="store_true",
                   help="list versions that went backwards across a store restart (a known bug) without failing")
    p.add_argument("--cached-readers", type=int, default=0,
                   help="read-only processes reading the keys through the client-side cache (workload modes)")
    p.add_argument("--staleness", type=float, default=CACHE_STALENESS,
                   help="Δ: the cached readers' cache_freshness, the most a cached read may lag an "
                        "acknowledged change, through every fault, s")
    p.add_argument("--reader-pause", type=float, default=3.0,
                   help="the longest silence (reader-pause) or stop (reader-stop) of a reader, s: "
                        "past 1.5 times --reader-keep-alive the silence becomes a cut")
    p.add_argument("--planted-bug", choices=PLANTED_BUGS, default=None,
                   help="plant this bug in the cached readers' cache (MQSTATE_CACHE_PLANTED_BUG): the run must fail")
    p.add_argument("--keep", action="store_true", help="keep every run's directory")
    p.add_argument("--workdir", type=Path, default=None, help="parent of the run directories")
    p.add_argument("--json", type=Path, default=None, help="write every result here")
    a = p.parse_args(argv)
    modes = (ALL + (READER_MODES if a.cached_readers else [])) if a.modes == "all" else a.modes.split(",")
    for m in modes:
        if m not in KNOWN:
            p.error(f"unknown mode {m!r}")
        if m in READER_MODES and not a.cached_readers:
            p.error(f"mode {m} needs --cached-readers")
    seed = a.seed if a.seed is not None else random.randrange(1, 2**31)
    print(f"mqjepsen: seed {seed}, modes {','.join(modes)}, {a.duration:g} s each, {a.clients} clients", flush=True)
    results: List[Dict[str, Any]] = []
    passed = failed = 0
    for i, mode in enumerate(modes):
        mode_seed = seed + i
        workdir = a.workdir / f"{mode}-{mode_seed}" if a.workdir else None
        started = time.monotonic()
        stats: Dict[str, int] = {}
        try:
            if mode in LOCK_MODES:
                result, stats = run_lock_mode(mode, a.duration, a.clients, mode_seed, workdir, a.keep)
                line = (f"{mode}: {'PASS' if result.passed else 'FAIL'} seed={mode_seed} "
                        + ", ".join(f"{k}={v}" for k, v in stats.items()))
            else:
                result = run(RunConfig(mode=mode, duration=a.duration, clients=a.clients, keys=a.keys,
                                       seed=mode_seed, timeout=a.timeout, workdir=workdir, keep=a.keep,
                                       horizon=a.horizon or None, tolerate_known=a.tolerate_known,
                                       cached_readers=a.cached_readers, cache_staleness=a.staleness,
                                       reader_pause=a.reader_pause, reader_keep_alive=a.reader_keep_alive,
                                       planted_bug=a.planted_bug))
                line = result.line()
        except Exception as e:  # noqa: BLE001 - a broken harness fails the mode, not the run
            result = RunResult(mode, mode_seed, a.duration, a.clients, problems=[f"harness error: {e!r}"])
            line = f"{mode}: FAIL seed={mode_seed} harness error: {e!r}"
        print(f"{line} [{time.monotonic() - started:.1f}s]", flush=True)
        for problem in result.problems:
            print("  " + problem.replace("\n", "\n  "), flush=True)
        if result.workdir:
            print(f"  histories kept in {result.workdir}", flush=True)
        passed += result.passed
        failed += not result.passed
        results.append({"result": asdict(result), "stats": stats})
    if a.json:
        a.json.write_text(json.dumps(results, indent=2))
    print(f"mqjepsen (seed {seed}): {passed} passed, {failed} failed")
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
