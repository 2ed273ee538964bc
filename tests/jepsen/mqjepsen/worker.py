"""One client process of the workload: its own ``mqstate.Client`` (its own MQTT
connection), random operations on a few keys until a deadline, one JSON line per operation
(written when the operation completes, flushed at once).

The run starts when every worker is connected (``--gate``): a worker that has connected
creates ``ready-<process>`` in the gate directory, then waits for the runner's ``start``
file there, which holds the run's deadline. A worker's start-up (an interpreter, the
library, a connection: up to seconds on a busy machine) then takes nothing from its window,
and no fault comes before it runs.

With ``--cached-reader`` the process only reads, through the client-side cache
(``cache=True``): GETs of the run's keys in turn, a short pause between them, each recorded
with ``cached_reader`` set and whether the cache answered it (``hit``). Those histories are
checked against the cache's contract (``checker.check_cached``), not for linearizability.

Run by the runner as ``python -m mqjepsen.worker``; a clock-skew fault runs it under
libfaketime (``nemesis.skew_env``), which moves the client's wall clock (and so its HLC)
but not ``CLOCK_MONOTONIC``, the clock of the history.
"""

from __future__ import annotations

import argparse
import os
import random
import select
import sys
import time
from typing import Any, Dict, List, Optional, TextIO

import mqstate

from .history import FAIL, INFO, OK, Op


def classify(error: BaseException) -> tuple[str, str]:
    """(status, code) of a failed call: ``info`` when it may have applied, else ``fail``."""
    if isinstance(error, mqstate.MqstateError):
        if isinstance(error, mqstate.StoreError):
            return FAIL, error.code  # the store answered: it refused
        return (INFO if error.may_have_applied else FAIL), error.code
    return INFO, type(error).__name__  # unknown: assume the worst


VDEL = {"deleted": 1, "not_found": 0, "value_mismatch": -1}

# The share of SETs with an expiry (PX), unless a run says otherwise.
PX_SHARE = 0.1
#: A cached reader's pause between reads, s (histories stay small; hits take microseconds).
READ_PAUSE = 0.01
#: The longest a worker waits to connect before the run, and then for the run to start, s.
START_LIMIT = 60.0
#: How long a cached reader reads on past the run's end when it has had no hit yet (the
#: faults are healed and the writers done then): on a machine too busy for a hit within the
#: run, the cache's contract is still checked on at least one, never on none.
EVIDENCE_LIMIT = 15.0
#: The file in the gate directory that starts the run (it holds the deadline).
START_FILE = "start"


def ready_file(gate: str, process: int) -> str:
    """The file in ``gate`` by which worker ``process`` says it is connected."""
    return os.path.join(gate, f"ready-{process}")


class Workload:
    def __init__(self, client: mqstate.Client, process: int, keys: List[str], rng: random.Random,
                 out: TextIO, px_share: float = PX_SHARE, persist: bool = True, deletes: bool = True) -> None:
        self.client = client
        self.process = process
        self.keys = keys
        self.rng = rng
        self.out = out
        self.px_share = px_share
        self.persist = persist
        # False: no DEL / VDEL, so (with px_share 0) nothing but a lost write can make a
        # written key read as missing.
        self.deletes = deletes
        self.counter = 0
        self.seen: Dict[str, str] = {}  # a value recently read or written, per key
        self.counts = {OK: 0, FAIL: 0, INFO: 0}

    def _fresh(self) -> str:
        self.counter += 1
        return f"{self.process}-{self.counter}"

    def _known_or_fresh(self, key: str) -> str:
        if key in self.seen and self.rng.random() < 0.75:
            return self.seen[key]
        return self._fresh()

    def next_op(self) -> Op:
        key = self.rng.choice(self.keys)
        r = self.rng.random()
        op = Op(process=self.process, key=key, f="get", invoke=0.0)
        if r < 0.35:
            pass
        elif r < 0.70 or not self.deletes:
            op.f = "set"
            c = self.rng.random()
            if c < 0.55:
                op.value = self._fresh()
            elif c < 0.75:
                op.value, op.cond = self._fresh(), "nx"
            else:
                op.value, op.cond = self._known_or_fresh(key), "nex"
            if self.rng.random() < self.px_share:
                op.px = self.rng.randint(200, 3000)
        elif r < 0.82:
            op.f = "del"
        else:
            op.f = "vdel"
            op.value = self._known_or_fresh(key)
        return op

    def run_one(self, op: Op) -> Op:
        c = self.client
        op.invoke = time.monotonic()
        try:
            if op.f == "get":
                v = c.get(op.key)
                op.result = None if v is None else v.value.decode()
                op.version = None if v is None or v.version is None else str(v.version)
                if op.result is not None:
                    self.seen[op.key] = op.result
            elif op.f == "set":
                assert op.value is not None
                s = c.set(op.key, op.value, condition=op.cond,
                          expiry=(op.px / 1000.0) if op.px else None, persist=self.persist)
                op.result = s.applied
                op.version = str(s.version) if s.applied and s.version is not None else None
                if s.applied:
                    self.seen[op.key] = op.value
            elif op.f == "del":
                op.result = c.delete(op.key)
            elif op.f == "vdel":
                assert op.value is not None
                op.result = VDEL[c.vdel(op.key, op.value)]
            op.status = OK
            op.complete = time.monotonic()
        except Exception as e:  # noqa: BLE001 - every failure is recorded, none is fatal
            op.status, op.error = classify(e)
            op.complete = time.monotonic() if op.status == FAIL else None
        self.counts[op.status] += 1
        self.out.write(op.to_json() + "\n")
        self.out.flush()
        return op


class CachedReader:
    """A read-only process through the client-side cache: GETs of the keys in turn."""

    def __init__(self, client: mqstate.Client, process: int, keys: List[str], out: TextIO) -> None:
        self.client = client
        self.process = process
        self.keys = keys
        self.out = out
        self.next = 0
        self.counts = {OK: 0, FAIL: 0, INFO: 0}

    def _hits(self) -> int:
        stats = self.client.cache_stats()
        if stats is None:
            raise RuntimeError("a cached reader's client has no cache")
        return stats.hits

    def read_one(self) -> Op:
        key = self.keys[self.next % len(self.keys)]
        self.next += 1
        op = Op(process=self.process, key=key, f="get", invoke=0.0, cached_reader=True)
        hits = self._hits()
        op.invoke = time.monotonic()
        try:
            v = self.client.get(key)
            op.complete = time.monotonic()
            op.status = OK
            op.result = None if v is None else v.value.decode()
            op.version = None if v is None or v.version is None else str(v.version)
        except Exception as e:  # noqa: BLE001 - every failure is recorded, none is fatal
            op.status, op.error = classify(e)
            op.complete = time.monotonic() if op.status == FAIL else None
        op.hit = self._hits() > hits  # only this thread reads through this client
        self.counts[op.status] += 1
        self.out.write(op.to_json() + "\n")
        self.out.flush()
        return op


def connect(url: str, client_id: str, timeout: float, until: float, cache: bool = False,
            freshness: Optional[float] = None, keep_alive: float = 5) -> mqstate.Client:
    """A connected client (with the client-side cache when ``cache``, its lease bound
    ``freshness`` s when given); retried while a fault keeps the store away."""
    extra: Dict[str, Any] = {"cache": True} if cache else {}  # writers' clients: no cache setting
    if cache and freshness is not None:
        extra["cache_freshness"] = freshness
    while True:
        try:
            return mqstate.Client(url, client_id=client_id, request_timeout=timeout,
                                  connect_timeout=timeout, reconnect_min_delay=0.05,
                                  reconnect_max_delay=0.5, keep_alive=keep_alive, **extra)
        except mqstate.MqstateError:
            if time.monotonic() > until:
                raise
            pause(0.1)


def await_start(gate: str, process: int, limit: float) -> float:
    """Announces this worker as connected in ``gate`` and waits (up to ``limit`` s) for the
    runner's ``start`` file: the run's deadline, a ``time.monotonic()`` value."""
    open(ready_file(gate, process), "w").close()
    start = os.path.join(gate, START_FILE)
    waited_until = time.monotonic() + limit
    while not os.path.exists(start):
        if time.monotonic() > waited_until:
            raise TimeoutError(f"the run did not start within {limit} s")
        pause(0.01)
    with open(start, encoding="utf-8") as f:
        return float(f.read())


def pause(seconds: float) -> None:
    """``time.sleep``, which fails (EINVAL) under libfaketime with a real monotonic clock:
    its absolute ``clock_nanosleep`` is mistranslated. A select timeout is not."""
    select.select([], [], [], seconds)


def main(argv: Optional[List[str]] = None) -> int:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--url", required=True)
    p.add_argument("--process", type=int, required=True)
    p.add_argument("--keys", required=True, help="comma-separated")
    p.add_argument("--gate", required=True,
                   help="directory of the start gate (this module's documentation)")
    p.add_argument("--seed", type=int, required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--timeout", type=float, default=2.0, help="request timeout, s")
    p.add_argument("--px-share", type=float, default=PX_SHARE)
    p.add_argument("--no-persist", action="store_true",
                   help="writes without persistence (a kill then loses them: a negative control)")
    p.add_argument("--no-deletes", action="store_true",
                   help="no DEL or VDEL: with --px-share 0, a missing value can only be a lost write")
    p.add_argument("--cached-reader", action="store_true",
                   help="only read, through the client-side cache (cache=True); ops marked cached_reader")
    p.add_argument("--read-pause", type=float, default=READ_PAUSE,
                   help="a cached reader's pause between reads, s")
    p.add_argument("--freshness", type=float, default=None,
                   help="a cached reader's cache_freshness (the lease's bound), s")
    p.add_argument("--keep-alive", type=float, default=5,
                   help="the MQTT keep-alive, s (a silent link is noticed after 1.5 times it)")
    a = p.parse_args(argv)
    if a.cached_reader:
        return cached_reader_main(a)
    rng = random.Random(a.seed)
    with open(a.out, "a", encoding="utf-8") as out:
        client = connect(a.url, f"jepsen-{a.seed}-{a.process}", a.timeout,
                         time.monotonic() + START_LIMIT)
        try:
            until = await_start(a.gate, a.process, START_LIMIT)
            w = Workload(client, a.process, a.keys.split(","), rng, out, a.px_share, not a.no_persist,
                         not a.no_deletes)
            while time.monotonic() < until:
                op = w.run_one(w.next_op())
                if op.status != OK:
                    pause(0.02)  # do not spin while the store is away
        finally:
            client.close()
    print(f"worker {a.process}: {w.counts}", file=sys.stderr)
    return 0


def cached_reader_main(a: argparse.Namespace) -> int:
    with open(a.out, "a", encoding="utf-8") as out:
        client = connect(a.url, f"jepsen-{a.seed}-{a.process}", a.timeout,
                         time.monotonic() + START_LIMIT, cache=True, freshness=a.freshness,
                         keep_alive=a.keep_alive)
        try:
            until = await_start(a.gate, a.process, START_LIMIT)
            r = CachedReader(client, a.process, a.keys.split(","), out)
            hits = 0
            while True:
                now = time.monotonic()
                if now >= until and (hits > 0 or now >= until + EVIDENCE_LIMIT):
                    break
                op = r.read_one()
                hits += int(op.status == OK and bool(op.hit))
                pause(a.read_pause if op.status == OK else max(a.read_pause, 0.02))
            stats = client.cache_stats()
        finally:
            client.close()
    bug = os.environ.get("MQSTATE_CACHE_PLANTED_BUG")
    print(f"cached reader {a.process}: {r.counts}, {stats}" + (f", planted bug {bug}" if bug else ""),
          file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
