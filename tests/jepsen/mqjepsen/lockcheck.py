"""Lock safety under process pauses (SIGSTOP past the lease), against ``mqstate serve``.

- ``lock-pause``: a holder acquires, is stopped past its lease, another client acquires and
  writes fenced; the first resumes and writes with its old token: the store must refuse it
  (``fencing_token_lower_version``) and keep the newer write.
- ``fenced-edit``: N processes append to one key through ``Lock.edit``; random processes
  are stopped past their lease and resumed. The key's final value lists every applied
  write in order: the fencing tokens must never go down (an older token never applied
  after a newer one), every acknowledged edit must be in it, and nothing else.
- ``election``: N processes campaign; a leader appends to one key with fenced writes
  (GET, then SET with the election's token); leaders are stopped past their term. Two
  leaders never act at once: the tokens of the applied writes never go down.
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
from dataclasses import asdict
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

import mqstate

from .cluster import Cluster
from .history import parse_hlc
from .runner import PACKAGE_DIR, RunResult

LOCK_MODES = ["lock-pause", "fenced-edit", "election"]


def _env() -> Dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(PACKAGE_DIR) + os.pathsep + env.get("PYTHONPATH", "")
    return env


def _spawn(role: str, url: str, name: str, lock: str, extra: List[str], stdin: bool = False) -> "subprocess.Popen[str]":
    return subprocess.Popen(
        [sys.executable, "-m", "mqjepsen.lockproc", role, "--url", url, "--name", name, "--lock", lock, *extra],
        env=_env(), stdout=subprocess.PIPE, stdin=subprocess.PIPE if stdin else subprocess.DEVNULL,
        stderr=None, text=True)


def _line(proc: "subprocess.Popen[str]") -> Dict[str, Any]:
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if not line:
        raise RuntimeError(f"lock process {proc.pid} ended early (exit {proc.wait()})")
    parsed: Dict[str, Any] = json.loads(line)
    return parsed


def lock_pause(url: str, rounds: int, lease: float, seed: int) -> Tuple[List[str], Dict[str, int]]:
    problems: List[str] = []
    refused = 0
    with mqstate.Client(url, client_id=f"jepsen-contender-{seed}", request_timeout=5) as c:
        for r in range(rounds):
            lock_name, key = f"jepsen/{seed}/lock{r}", f"jepsen/{seed}/protected{r}"
            holder = _spawn("holder", url, f"holder-{seed}-{r}", lock_name,
                            ["--key", key, "--lease", str(lease)], stdin=True)
            try:
                first = _line(holder)
                old = mqstate.Hlc.parse(first["token"])
                holder.send_signal(signal.SIGSTOP)
                time.sleep(lease * 1.5)
                lock = c.lock(lock_name, lease=lease * 4)
                new = lock.acquire(timeout=5)
                if not new > old:
                    problems.append(f"round {r}: new token {new} is not newer than {old}")
                c.set(key, f"contender@{new}", fencing_token=new)
                holder.send_signal(signal.SIGCONT)
                assert holder.stdin is not None
                holder.stdin.write("go\n")
                holder.stdin.flush()
                outcome = _line(holder)
                if outcome.get("ok") or outcome.get("error") != "fencing_token_lower_version":
                    problems.append(f"round {r}: the stale holder's write with {old} was not refused: {outcome}")
                else:
                    refused += 1
                v = c.get(key)
                if v is None or v.text != f"contender@{new}":
                    problems.append(f"round {r}: the protected key holds {v!r}, not the newer holder's write")
                lock.release()
            finally:
                holder.send_signal(signal.SIGCONT)
                holder.kill()
                holder.wait()
    return problems, {"rounds": rounds, "stale_writes_refused": refused}


def _pauser(procs: List["subprocess.Popen[str]"], until: float, lease: float, rng: random.Random) -> int:
    """Until ``until``: stops a random process now and then, and resumes every stopped
    process (stopped by this or by itself, inside its critical section) once it has been
    stopped past the lease. Returns how many pauses ended."""
    pauses = 0
    stopped_since: Dict[int, float] = {}
    resume_after: Dict[int, float] = {}
    next_stop = time.monotonic() + rng.uniform(0.3, 1.2)
    while True:
        now = time.monotonic()
        for proc in procs:
            if proc.poll() is not None:
                continue
            if _is_stopped(proc.pid):
                if proc.pid not in stopped_since:
                    stopped_since[proc.pid] = now
                    resume_after[proc.pid] = lease + rng.uniform(0.2, 1.0)
                elif now - stopped_since[proc.pid] >= resume_after[proc.pid] or now >= until:
                    proc.send_signal(signal.SIGCONT)
                    del stopped_since[proc.pid]
                    pauses += 1
        if now >= until and not stopped_since:
            return pauses
        if now >= next_stop and now < until:
            victim = rng.choice(procs)
            if victim.poll() is None:
                victim.send_signal(signal.SIGSTOP)
            next_stop = now + rng.uniform(0.3, 1.2)
        time.sleep(0.02)


def _is_stopped(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "T"
    except (OSError, IndexError):
        return False


def _token_key(element: str) -> Tuple[int, int]:
    token = element.rsplit("/", 2)[0]
    wall, counter, _ = parse_hlc(token)
    return wall, counter


def _check_chain(chain: List[str], attempted: Optional[set[str]]) -> List[str]:
    """Tokens never go down along the chain; no write twice; none that no process made."""
    problems: List[str] = []
    for a, b in zip(chain, chain[1:]):
        if _token_key(b) < _token_key(a):
            problems.append(f"a write fenced by an older token applied after a newer one: {a} then {b}")
    present = set(chain)
    if len(present) != len(chain):
        problems.append("a write appears twice in the chain")
    if attempted is not None:
        for e in chain:
            if e not in attempted:
                problems.append(f"the chain holds {e}, which no process wrote")
    return problems


def fenced_run(mode: str, url: str, clients: int, duration: float, lease: float, seed: int) -> Tuple[List[str], Dict[str, int]]:
    rng = random.Random(seed)
    lock_name, chain_key = f"jepsen/{seed}/{mode}-lock", f"jepsen/{seed}/{mode}-chain"
    until = time.monotonic() + duration
    role = "editor" if mode == "fenced-edit" else "leader"
    procs = [_spawn(role, url, f"{role}-{seed}-{i}", lock_name,
                    ["--chain", chain_key, "--lease", str(lease), "--until", str(until), "--timeout", "2",
                     "--self-stop", "0.05"])
             for i in range(clients)]
    pauses = _pauser(procs, until, lease, rng)
    events: List[Dict[str, Any]] = []
    for p in procs:
        p.send_signal(signal.SIGCONT)
        try:
            out, _ = p.communicate(timeout=max(5.0, until + 30 - time.monotonic()))
        except subprocess.TimeoutExpired:
            p.kill()
            out, _ = p.communicate()
        events.extend(json.loads(line) for line in out.splitlines() if line.strip())
    with mqstate.Client(url, client_id=f"jepsen-reader-{seed}", request_timeout=5) as c:
        v = c.get(chain_key)
    chain = v.text.split("|") if v is not None else []
    problems: List[str] = []
    if mode == "fenced-edit":
        ok = [e for e in events if e.get("event") == "edit" and e.get("ok")]
        attempted = {w for e in events if e.get("event") == "edit" for w in e.get("written", [])}
        acked = [e["element"] for e in ok]
        for e in ok:
            if _token_key(e["element"]) != _token_key(e["token"] + "/x/0"):
                problems.append(f"edit wrote with {e['element']} but reports token {e['token']}")
        problems += _check_chain(chain, attempted)
        missing = [a for a in acked if a not in set(chain)]
        if missing:
            problems.append(f"{len(missing)} acknowledged edit(s) missing from the chain, e.g. {missing[:3]}")
        stats = {"edits_acknowledged": len(ok), "edits_retried": sum(1 for e in ok if e.get("attempts", 1) > 1), "edits_failed": sum(1 for e in events if e.get("event") == "edit" and not e.get("ok")),
                 "chain": len(chain), "pauses": pauses}
    else:
        writes = [e for e in events if e.get("event") == "write"]
        attempted = {e["element"] for e in writes}
        acked = [e["element"] for e in writes if e.get("ok")]
        problems += _check_chain(chain, attempted)
        lost = [a for a in acked if a not in set(chain)]
        stats = {"writes_acknowledged": len(acked), "writes_refused": sum(1 for e in writes if not e.get("ok")),
                 "chain": len(chain), "acknowledged_then_overwritten": len(lost), "pauses": pauses}
    if not chain:
        problems.append("no write was applied")
    return problems, stats


def run_lock_mode(mode: str, duration: float, clients: int, seed: int, workdir: Optional[Path] = None,
                  keep: bool = False) -> Tuple[RunResult, Dict[str, int]]:
    workdir = workdir or Path(os.environ.get("TMPDIR", "/tmp")) / f"mqjepsen-{mode}-{seed}-{os.getpid()}"
    if workdir.exists():
        shutil.rmtree(workdir)
    workdir.mkdir(parents=True)
    result = RunResult(mode, seed, duration, clients, workdir=str(workdir))
    cluster = Cluster(workdir)
    lease = 1.0
    try:
        if mode == "lock-pause":
            rounds = max(1, int(duration / (lease * 1.5 + 1.5)))
            problems, stats = lock_pause(cluster.url, rounds, lease, seed)
        else:
            problems, stats = fenced_run(mode, cluster.url, clients, duration, lease, seed)
    finally:
        cluster.close()
    result.problems = problems
    result.passed = not problems
    result.linearizable = not problems
    (workdir / "result.json").write_text(json.dumps({"result": asdict(result), "stats": stats}, indent=2))
    if result.passed and not keep:
        shutil.rmtree(workdir, ignore_errors=True)
        result.workdir = ""
    return result, stats
