"""A run: the store (and its broker), N client processes doing random operations on a few
keys through the public Python API, a nemesis injecting the mode's faults, then a final
read of every key, and the checker over the merged history.

Modes (each its own fault, and ``combined``):

- ``none``: no fault.
- ``kill``: ``kill -9`` of ``mqstate serve`` (its embedded broker dies with it), restarted
  on the same ``--data-dir`` after a short pause.
- ``partition``: every client connects through the fault proxy, which cuts every
  connection, or pauses them all for a while.
- ``broker``: ``mqstate serve --broker`` behind mosquitto; mosquitto is killed (SIGKILL)
  and started again on the same port; the store reconnects on its own.
- ``skew``: client 0's wall clock runs 30 s ahead (inside the 60 s window: its calls must
  work), client 1's 90 s ahead (outside: the store must refuse its writes), by libfaketime.
- ``combined``: kill, cut, pause and both skewed clients at once.

Cached readers (``RunConfig.cached_readers``): read-only processes beside the workers, each
reading the same keys through the client-side cache (``worker --cached-reader``, its lease
bound ``cache_freshness``), with ``MQSTATE_CACHE_PLANTED_BUG`` set to
``RunConfig.planted_bug`` in their environment only. Their reads are not linearizable by
contract and stay out of the linearizability check; ``checker.check_cached`` checks them
against the writers' history (Δ: ``cache_freshness``, through every fault). A reader that
has had no hit by the end reads on, the faults healed and the writers done, until it has one
(at most ``worker.EVIDENCE_LIMIT``): a run on a machine too busy for a hit in time still checks
the contract on one instead of nothing. In ``skew``
the first reader runs 40 s behind (the versions of the writer 30 s ahead are then past its
drift limit: refused), the others on time.

Modes for the cached readers alone (``READER_MODES``, with ``cached_readers``; the writers
see no fault):

- ``reader-pause``: the readers connect through the fault proxy, which holds their links
  silent (nothing passes, nothing is closed) for longer than the bound (1.2 to
  ``reader_pause`` s) while the writers go on.
- ``reader-stop``: a reader process is stopped (SIGSTOP) for 1.2 to ``reader_pause`` s
  while the writers go on, then continued.
- ``store-behind-broker``: ``mqstate serve --broker`` behind mosquitto, killed (SIGKILL)
  and restarted while every client stays connected to mosquitto: the new store knows none
  of the readers' KEYNOTIFY registrations.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Dict, List, Optional

import mqstate

from . import checker, history
from .cluster import Cluster
from .history import FAIL, OK, Op
from .proxy import FaultProxy
from .worker import PX_SHARE, READ_PAUSE, START_FILE, START_LIMIT, classify, ready_file

MODES = ["none", "kill", "partition", "broker", "skew", "combined"]
READER_MODES = ["reader-pause", "reader-stop", "store-behind-broker"]
PACKAGE_DIR = Path(__file__).resolve().parents[1]
FAKETIME_LIBS = [
    "/usr/lib/x86_64-linux-gnu/faketime/libfaketimeMT.so.1",
    "/usr/lib/aarch64-linux-gnu/faketime/libfaketimeMT.so.1",
    "/usr/lib/faketime/libfaketimeMT.so.1",
]
SKEW_INSIDE_S = 30
SKEW_OUTSIDE_S = 90
#: The first cached reader's clock in ``skew``: behind, so that the versions of the writer
#: 30 s ahead are more than the 60 s drift limit ahead of it.
SKEW_READER_S = -40
#: Process numbers of cached readers start here (workers are 0..clients-1, the final reads clients).
READER_BASE = 100
#: The planted bugs of the cache (core/src/cache.rs, ``MQSTATE_CACHE_PLANTED_BUG``).
PLANTED_BUGS = ["ignore_notifications", "keep_across_connections", "ignore_lease"]


def faketime_lib() -> Optional[str]:
    for path in FAKETIME_LIBS:
        if os.path.exists(path):
            return path
    return None


def skew_env(seconds: int) -> Dict[str, str]:
    """The environment that moves a process's wall clock ``seconds`` ahead (libfaketime),
    leaving CLOCK_MONOTONIC alone."""
    lib = faketime_lib()
    if lib is None:
        raise RuntimeError("libfaketime is missing: apt-get install libfaketime")
    return {"LD_PRELOAD": lib, "FAKETIME": f"{seconds:+d}s", "FAKETIME_DONT_FAKE_MONOTONIC": "1",
            "FAKETIME_NO_CACHE": "1"}


@dataclass
class RunConfig:
    mode: str
    duration: float = 5.0
    clients: int = 5
    keys: int = 3
    seed: int = 0
    timeout: float = 1.0  # each request's timeout, s
    horizon: Optional[float] = 15.0  # an indeterminate op takes effect within this, or never (None: unbounded)
    workdir: Optional[Path] = None
    keep: bool = False  # keep the work directory even when the run passes
    persist: bool = True  # False: a negative control (a kill loses acknowledged writes)
    px_share: float = PX_SHARE  # the share of SETs with an expiry
    deletes: bool = True  # False: no DEL / VDEL in the workload
    # Versions that go backwards across a store restart are a known bug (docs/reliability.md,
    # "Findings"); True lists them without failing the run (the bounded run of scripts/test).
    tolerate_known: bool = False
    cached_readers: int = 0  # read-only processes through the client-side cache (check_cached)
    cache_staleness: float = checker.CACHE_STALENESS  # Δ of the check: the readers' cache_freshness, s
    reader_pause: float = 3.0  # the longest silence or stop of a reader (READER_MODES), s
    reader_keep_alive: float = 5.0  # the cached readers' MQTT keep-alive, s (a silence past 1.5x is a cut)
    read_pause: float = READ_PAUSE  # a cached reader's pause between reads, s
    planted_bug: Optional[str] = None  # MQSTATE_CACHE_PLANTED_BUG of the cached readers (PLANTED_BUGS)


@dataclass
class RunResult:
    mode: str
    seed: int
    duration: float
    clients: int
    ops: int = 0
    ok: int = 0
    failed: int = 0
    indeterminate: int = 0
    store_kills: int = 0
    store_restarts: int = 0
    broker_restarts: int = 0
    cuts: int = 0
    pauses: int = 0
    check_seconds: float = 0.0
    known_problems: int = 0  # tolerated known-bug findings (see RunConfig.tolerate_known)
    linearizable: bool = False
    cached_readers: int = 0
    cached_reads: int = 0  # the cached readers' reads that returned
    cache_hits: int = 0  # of those, answered by the cache
    cache_problems: int = 0  # violations of the cache's contract (their lines are in problems)
    cache_behind: int = 0  # cached reads older than an acknowledged change (allowed within Δ)
    cache_max_lag: float = 0.0  # the most any was behind, s (checker.cache_lags)
    cache_lag_p50: float = 0.0  # percentiles of the lag of every cached read with a version, s
    cache_lag_p99: float = 0.0
    reader_faults: int = 0  # reader-pause silences and reader-stop stops
    reader_fault_max: float = 0.0  # the longest of them, s
    passed: bool = False
    problems: List[str] = field(default_factory=list)
    workdir: str = ""

    def line(self) -> str:
        share = 100.0 * self.indeterminate / self.ops if self.ops else 0.0
        faults = []
        if self.store_kills:
            faults.append(f"{self.store_kills} kills")
        if self.broker_restarts:
            faults.append(f"{self.broker_restarts} broker restarts")
        if self.cuts or self.pauses:
            faults.append(f"{self.cuts} cuts, {self.pauses} pauses")
        return (f"{self.mode}: {'PASS' if self.passed else 'FAIL'} seed={self.seed} "
                f"{self.ops} ops ({self.ok} ok, {self.failed} failed, {self.indeterminate} "
                f"indeterminate = {share:.1f}%), {', '.join(faults) or 'no faults'}; "
                f"checked in {self.check_seconds:.1f}s"
                + (f"; {self.cached_readers} cached readers: {self.cached_reads} reads ({self.cache_hits} hits), "
                   + (f"{self.reader_faults} reader faults (longest {self.reader_fault_max:.1f} s), "
                      if self.reader_faults else "")
                   + f"lag p50 {1000 * self.cache_lag_p50:.0f} ms, p99 {1000 * self.cache_lag_p99:.0f} ms, "
                   f"max {1000 * self.cache_max_lag:.0f} ms ({self.cache_behind} behind), "
                   f"{self.cache_problems or 'no'} cache problem(s)" if self.cached_readers else "")
                + (f"; KNOWN BUG seen {self.known_problems} time(s): versions went backwards across a restart"
                   if self.known_problems else ""))


class Nemesis:
    def __init__(self, mode: str, cluster: Cluster, proxy: Optional[FaultProxy], rng: random.Random,
                 scale: float, reader_proxy: Optional[FaultProxy] = None,
                 readers: Optional[List["subprocess.Popen[bytes]"]] = None, reader_pause: float = 3.0) -> None:
        self.mode = mode
        self.cluster = cluster
        self.proxy = proxy
        self.rng = rng
        self.scale = scale  # shorter gaps for short runs
        self.reader_proxy = reader_proxy  # reader-pause: the cached readers' links only
        self.readers = readers if readers is not None else []  # reader-stop: the cached readers
        self.reader_pause = max(1.2, reader_pause)
        self.reader_faults = 0
        self.reader_fault_max = 0.0

    def _gap(self, lo: float, hi: float) -> float:
        return self.rng.uniform(lo, hi) * self.scale

    def step(self, until: float) -> None:
        """One fault (or a pause when the mode has none), never past ``until``."""
        mode = self.mode
        if mode == "combined":
            mode = self.rng.choice(["kill", "cut", "pause"])
        elif mode == "partition":
            mode = self.rng.choice(["cut", "pause"])
        sleep_until(min(until, time.monotonic() + self._gap(0.3, 3.0)))
        if time.monotonic() >= until:
            return
        if mode == "kill":
            self.cluster.kill_store()
            time.sleep(self.rng.uniform(0.0, 0.5))
            self.cluster.start_store()
        elif mode == "cut":
            assert self.proxy is not None
            self.proxy.cut()
        elif mode == "pause":
            assert self.proxy is not None
            self.proxy.pause()
            time.sleep(min(self.rng.uniform(0.2, 3.0), max(0.2, until - time.monotonic())))
            self.proxy.resume()
        elif mode == "broker":
            self.cluster.restart_broker()
        elif mode == "reader-pause":
            # Longer than the lease's bound: nothing reaches the readers, nothing is closed.
            assert self.reader_proxy is not None
            self.reader_proxy.pause()
            length = self.rng.uniform(1.2, self.reader_pause)
            time.sleep(length)
            self.reader_proxy.resume()
            self.reader_faults += 1
            self.reader_fault_max = max(self.reader_fault_max, length)
        elif mode == "reader-stop":
            live = [p for p in self.readers if p.poll() is None]
            if live:
                proc = self.rng.choice(live)
                os.kill(proc.pid, signal.SIGSTOP)
                length = self.rng.uniform(1.2, self.reader_pause)
                try:
                    time.sleep(length)
                finally:
                    os.kill(proc.pid, signal.SIGCONT)
                self.reader_faults += 1
                self.reader_fault_max = max(self.reader_fault_max, length)
        elif mode == "store-behind-broker":
            self.cluster.kill_store()
            time.sleep(self.rng.uniform(0.0, 0.5))
            self.cluster.start_store()

    def heal(self) -> None:
        for proc in self.readers:
            if proc.poll() is None:
                os.kill(proc.pid, signal.SIGCONT)
        if self.reader_proxy is not None:
            self.reader_proxy.resume()
        if self.proxy is not None:
            self.proxy.resume()
        if not self.cluster.store_alive():
            self.cluster.start_store()


def sleep_until(t: float) -> None:
    while True:
        left = t - time.monotonic()
        if left <= 0:
            return
        time.sleep(min(left, 0.1))


def open_gate(gate: Path, procs: Dict[int, "subprocess.Popen[bytes]"], duration: float) -> float:
    """Waits until every worker is connected (or has exited: its exit code is reported
    later), then starts the run: writes its deadline, ``duration`` from now, to the gate's
    ``start`` file, which the workers wait for. Returns the deadline."""
    deadline = time.monotonic() + START_LIMIT
    while any(proc.poll() is None and not os.path.exists(ready_file(str(gate), p))
              for p, proc in procs.items()):
        if time.monotonic() > deadline:
            break  # the workers give up on their own, after as long
        time.sleep(0.01)
    until = time.monotonic() + duration
    partial = gate / f"{START_FILE}.partial"
    partial.write_text(repr(until), encoding="utf-8")
    partial.rename(gate / START_FILE)  # whole, or not there at all
    return until


def final_reads(url: str, keys: List[str], process: int, timeout: float) -> List[Op]:
    """A GET of every key once the faults are over: an acknowledged write lost by a crash
    shows here even if no worker read the key after the last restart."""
    ops: List[Op] = []
    deadline = time.monotonic() + 30
    client: Optional[mqstate.Client] = None
    while client is None:
        try:
            client = mqstate.Client(url, client_id=f"jepsen-final-{process}", request_timeout=timeout * 3)
        except mqstate.MqstateError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)
    try:
        for key in keys:
            while True:
                op = Op(process=process, key=key, f="get", invoke=time.monotonic())
                try:
                    v = client.get(key)
                    op.status, op.complete = OK, time.monotonic()
                    op.result = None if v is None else v.value.decode()
                    op.version = None if v is None or v.version is None else str(v.version)
                except mqstate.MqstateError as e:
                    op.status, op.error = classify(e)
                    op.complete = time.monotonic() if op.status == FAIL else None
                ops.append(op)
                if op.status == OK or time.monotonic() > deadline:
                    break
                time.sleep(0.1)
    finally:
        client.close()
    return ops


def skew_problems(ops: List[Op], process: int) -> List[str]:
    """The client whose clock is outside the window: the store must refuse its writes (the
    timestamp is too far in the future); none may be acknowledged."""
    bad = [o for o in ops if o.process == process and o.f != "get" and o.status == OK]
    refused = [o for o in ops if o.process == process and o.error == "timestamp_skew"]
    problems = [f"write of a client {SKEW_OUTSIDE_S} s ahead acknowledged: {o.describe()}" for o in bad[:5]]
    if len(refused) < 10:
        problems.append(f"only {len(refused)} call(s) of the client {SKEW_OUTSIDE_S} s ahead were refused "
                        "as timestamp_skew")
    return problems


def run(cfg: RunConfig) -> RunResult:
    if cfg.mode not in MODES + READER_MODES:
        raise ValueError(f"unknown mode {cfg.mode!r} (one of {', '.join(MODES + READER_MODES)})")
    if cfg.mode in READER_MODES and cfg.cached_readers == 0:
        raise ValueError(f"mode {cfg.mode} needs cached readers")
    if cfg.planted_bug is not None and cfg.planted_bug not in PLANTED_BUGS:
        raise ValueError(f"unknown planted bug {cfg.planted_bug!r} (one of {', '.join(PLANTED_BUGS)})")
    if cfg.clients >= READER_BASE:
        raise ValueError(f"at most {READER_BASE - 1} clients")
    rng = random.Random(cfg.seed)
    workdir = cfg.workdir or Path(os.environ.get("TMPDIR", "/tmp")) / f"mqjepsen-{cfg.mode}-{cfg.seed}-{os.getpid()}"
    if workdir.exists():
        shutil.rmtree(workdir)
    workdir.mkdir(parents=True)
    result = RunResult(cfg.mode, cfg.seed, cfg.duration, cfg.clients, workdir=str(workdir))
    cluster = Cluster(workdir, broker=cfg.mode in ("broker", "store-behind-broker"))
    proxy = FaultProxy(cluster.port) if cfg.mode in ("partition", "combined") else None
    url = f"mqtt://127.0.0.1:{proxy.port}" if proxy else cluster.url
    reader_proxy = FaultProxy(cluster.port) if cfg.mode == "reader-pause" else None
    reader_url = f"mqtt://127.0.0.1:{reader_proxy.port}" if reader_proxy else url
    keys = [f"jepsen/{cfg.seed}/k{i}" for i in range(cfg.keys)]
    skewed = cfg.mode in ("skew", "combined")
    procs: Dict[int, subprocess.Popen[bytes]] = {}  # by process number
    readers: List["subprocess.Popen[bytes]"] = []
    nemesis = Nemesis(cfg.mode, cluster, proxy, rng, scale=min(1.0, max(0.2, cfg.duration / 30)),
                      reader_proxy=reader_proxy, readers=readers, reader_pause=cfg.reader_pause)
    gate = workdir / "gate"  # the workers' start gate (mqjepsen.worker)
    gate.mkdir()
    base_env = dict(os.environ)
    base_env["PYTHONPATH"] = str(PACKAGE_DIR) + os.pathsep + base_env.get("PYTHONPATH", "")
    base_env.pop("MQSTATE_CACHE_PLANTED_BUG", None)  # only where a run plants it
    try:
        for p in range(cfg.clients):
            env = dict(base_env)
            if skewed and p == 0:
                env.update(skew_env(SKEW_INSIDE_S))
            if skewed and p == 1:
                env.update(skew_env(SKEW_OUTSIDE_S))
            with open(workdir / f"worker-{p}.log", "wb") as log:
                procs[p] = subprocess.Popen(
                    [sys.executable, "-m", "mqjepsen.worker", "--url", url, "--process", str(p),
                     "--keys", ",".join(keys), "--gate", str(gate), "--seed", str(rng.randrange(2**31)),
                     "--out", str(workdir / f"history-{p}.jsonl"), "--timeout", str(cfg.timeout),
                     "--px-share", str(cfg.px_share)]
                    + ([] if cfg.persist else ["--no-persist"])
                    + ([] if cfg.deletes else ["--no-deletes"]),
                    env=env, stdout=log, stderr=log)
        for i in range(cfg.cached_readers):
            p = READER_BASE + i
            env = dict(base_env)
            if cfg.planted_bug:
                env["MQSTATE_CACHE_PLANTED_BUG"] = cfg.planted_bug
            if skewed and i == 0:
                env.update(skew_env(SKEW_READER_S))
            with open(workdir / f"cached-reader-{p}.log", "wb") as log:
                procs[p] = subprocess.Popen(
                    [sys.executable, "-m", "mqjepsen.worker", "--cached-reader", "--url", reader_url,
                     "--process", str(p), "--keys", ",".join(keys), "--gate", str(gate),
                     "--seed", str(rng.randrange(2**31)), "--out", str(workdir / f"cached-{p}.jsonl"),
                     "--timeout", str(cfg.timeout), "--read-pause", str(cfg.read_pause),
                     "--freshness", str(cfg.cache_staleness), "--keep-alive", str(cfg.reader_keep_alive)],
                    env=env, stdout=log, stderr=log)
                readers.append(procs[p])
        until = open_gate(gate, procs, cfg.duration)
        if cfg.mode not in ("none", "skew"):
            # With cached readers the faults stop a quiet stretch before the end (the lease's
            # bound and half again), so that the hits the contract is checked on are not left
            # to chance (a 4 s run could be all faults: nothing checked).
            faults_until = until - (1.5 * cfg.cache_staleness if cfg.cached_readers else 0.0)
            while time.monotonic() < faults_until:
                nemesis.step(faults_until)
        sleep_until(until)
        nemesis.heal()
        for proc in procs.values():
            try:
                proc.wait(max(1.0, until + cfg.timeout * 4 + 20 - time.monotonic()))
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
                result.problems.append(f"a worker hung past the end of the run (pid {proc.pid})")
        for p, proc in procs.items():
            if proc.returncode != 0:
                log_name = f"worker-{p}.log" if p < READER_BASE else f"cached-reader-{p}.log"
                result.problems.append(f"worker {p} exited with {proc.returncode}: see {workdir}/{log_name}")
        ops = history.read_all(workdir.glob("history-*.jsonl"))
        ops += final_reads(cluster.url, keys, cfg.clients, cfg.timeout)
        history.write(workdir / "history.jsonl", ops)
        cached = history.read_all(workdir.glob("cached-*.jsonl"))
    finally:
        for proc in procs.values():
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        pauses = proxy.pause_intervals() if proxy is not None else []
        cuts = sorted((proxy.cut_times() if proxy is not None else []) + cluster.kill_times)
        if proxy is not None:
            result.cuts, result.pauses = proxy.cuts, proxy.pauses
            proxy.close()
        if reader_proxy is not None:
            pauses = sorted(pauses + reader_proxy.pause_intervals())
            reader_proxy.close()
        result.reader_faults, result.reader_fault_max = nemesis.reader_faults, nemesis.reader_fault_max
        result.store_kills = cluster.store_kills
        result.store_restarts = cluster.store_restarts
        result.broker_restarts = cluster.broker_restarts
        cluster.close()
        (workdir / "restarts.json").write_text(json.dumps(cluster.restart_times))
        (workdir / "pauses.json").write_text(json.dumps(pauses))
        (workdir / "cuts.json").write_text(json.dumps(cuts))

    t = time.monotonic()
    report = checker.check(ops, horizon=cfg.horizon, restarts=cluster.restart_times,
                           tolerate_restart_regressions=cfg.tolerate_known)
    result.check_seconds = time.monotonic() - t
    result.ops = report.ops
    result.ok, result.failed, result.indeterminate = report.ok_ops, report.failed_ops, report.indeterminate_ops
    result.linearizable = report.ok
    if not report.ok:
        result.problems.append(report.summary())
    result.known_problems = len(report.known_problems)
    cache_problems: List[str] = []
    if cfg.cached_readers:
        result.cached_readers = cfg.cached_readers
        done = [o for o in cached if o.status == OK]
        result.cached_reads = len(done)
        result.cache_hits = sum(1 for o in done if o.hit)
        t = time.monotonic()
        cache_problems = checker.check_cached(ops, cached, delta=cfg.cache_staleness, horizon=cfg.horizon,
                                              pauses=pauses, cuts=cuts)
        lags = checker.cache_lags(ops, cached)
        every = checker.cache_lags(ops, cached, every=True)
        result.check_seconds += time.monotonic() - t
        result.cache_behind, result.cache_max_lag = len(lags), max(lags, default=0.0)
        result.cache_lag_p50 = checker.percentile(every, 50)
        result.cache_lag_p99 = checker.percentile(every, 99)
        result.cache_problems = len(cache_problems)
        result.problems.extend(checker.first_problems(cache_problems))
        if result.cache_hits == 0:
            result.problems.append("cache: no cached read was answered by the cache (nothing checked)")
    if skewed:
        result.problems.extend(skew_problems(ops, 1))
        inside_ok = sum(1 for o in ops if o.process == 0 and o.status == OK)
        if inside_ok == 0:
            result.problems.append(f"the client {SKEW_INSIDE_S} s ahead (inside the window) got no call through")
    if result.ok == 0:
        result.problems.append("no operation succeeded")
    result.passed = not result.problems
    (workdir / "result.json").write_text(json.dumps(asdict(result), indent=2))
    (workdir / "check.txt").write_text(report.summary() + "\n" + "".join(p + "\n" for p in cache_problems))
    if result.passed and not cfg.keep:
        shutil.rmtree(workdir, ignore_errors=True)
        result.workdir = ""
    return result
