"""Every fault mode and lock scenario, a few seconds each, against a live ``mqstate serve``
(the bounded run of ``scripts/test``; ``scripts/jepsen`` is the long one).

``MQJEPSEN_SEED`` (printed by scripts/test-jepsen), ``MQJEPSEN_DURATION`` (s per mode),
``MQJEPSEN_CLIENTS`` and ``MQJEPSEN_WORKDIR`` (where failed runs keep their histories)
come from the environment."""

from __future__ import annotations

import os
import random
from pathlib import Path

import pytest

from mqjepsen.lockcheck import LOCK_MODES, run_lock_mode
from mqjepsen.runner import MODES, RunConfig, run

SEED = int(os.environ.get("MQJEPSEN_SEED") or random.randrange(1, 2**31))
DURATION = float(os.environ.get("MQJEPSEN_DURATION", "4"))
CLIENTS = int(os.environ.get("MQJEPSEN_CLIENTS", "4"))
WORKDIR = Path(os.environ["MQJEPSEN_WORKDIR"]) if os.environ.get("MQJEPSEN_WORKDIR") else None


def _workdir(mode: str, seed: int) -> Path | None:
    return WORKDIR / f"{mode}-{seed}" if WORKDIR else None


@pytest.mark.parametrize("mode", MODES)
def test_workload_mode(mode: str) -> None:
    seed = SEED + MODES.index(mode)
    # Versions going backwards across a restart (the finding of docs/reliability.md, fixed
    # by the journal's clock records) fail the run like any other violation.
    result = run(RunConfig(mode=mode, duration=DURATION, clients=CLIENTS, seed=seed,
                           workdir=_workdir(mode, seed), tolerate_known=False))
    print(result.line())
    assert result.passed, (result.line() + "\n" + "\n".join(result.problems)
                           + f"\nhistories kept in {result.workdir}")
    assert result.ok > 0


@pytest.mark.parametrize("mode", LOCK_MODES)
def test_lock_mode(mode: str) -> None:
    seed = SEED + 100 + LOCK_MODES.index(mode)
    duration = DURATION * 1.5 if mode == "lock-pause" else DURATION
    result, stats = run_lock_mode(mode, duration, 3, seed, _workdir(mode, seed))
    print(mode, stats)
    assert result.passed, "\n".join(result.problems) + f"\nkept in {result.workdir}"


def test_planted_violations_in_a_real_history(tmp_path: Path) -> None:
    """A real history (mode none) passes; the same history with a violation planted after
    its final reads does not: a stale read, a lost write, a double-applied NX."""
    from dataclasses import replace

    from mqjepsen import history
    from mqjepsen.checker import check_key
    from mqjepsen.history import OK, Op

    result = run(RunConfig(mode="none", duration=2, clients=3, keys=1, seed=SEED, workdir=tmp_path / "run",
                           keep=True))
    assert result.passed, "\n".join(result.problems)
    ops = history.read(tmp_path / "run" / "history.jsonl")
    key = ops[0].key
    final = [o for o in ops if o.process == 3 and o.status == OK][-1]
    assert final.complete is not None
    end = final.complete + 1.0
    assert check_key(key, ops).ok

    written = {o.value for o in ops if o.f == "set" and o.status == OK and o.result is True}
    other = sorted(v for v in written if v is not None and v != final.result)[0]
    stale = Op(process=9, key=key, f="get", invoke=end, complete=end + 0.1, status=OK, result=other)
    assert not check_key(key, ops + [stale]).ok, "stale read not caught"

    if final.result is not None:
        lost = [replace(o, result=None, version=None) if o is final else o for o in ops]
        assert not check_key(key, lost).ok, "lost write not caught"

    nx = [Op(process=9 + i, key=key, f="set", value=f"nx-{i}", cond="nx", invoke=end + 1, complete=end + 2,
             status=OK, result=True) for i in range(2)]
    assert not check_key(key, ops + [Op(process=8, key=key, f="del", invoke=end, complete=end + 0.5,
                                        status=OK, result=1 if final.result is not None else 0)] + nx).ok, \
        "double-applied NX not caught"


def test_kill_without_persistence_is_caught(tmp_path: Path) -> None:
    """A negative control of the whole pipeline: the same kill mode with writes that do not
    ask for persistence loses acknowledged writes at every kill, and the checker says so."""
    result = run(RunConfig(mode="kill", duration=3, clients=3, seed=SEED, workdir=tmp_path / "run",
                           persist=False))
    assert result.store_kills > 0
    assert not result.linearizable, result.line()
    assert any("NOT LINEARIZABLE" in p for p in result.problems)


def test_versions_after_delete_and_restart(tmp_path: Path) -> None:
    """The minimal reproduction of the finding: a key's version must not go backwards when
    it is set again after a delete and a restart, even if its versions ran ahead of the wall
    clock (a client 30 s ahead)."""
    import subprocess
    import sys

    from mqjepsen.cluster import Cluster
    from mqjepsen.history import parse_hlc
    from mqjepsen.runner import skew_env

    cluster = Cluster(tmp_path)

    def call(code: str, skew: int = 0) -> str:
        env = dict(os.environ)
        if skew:
            env.update(skew_env(skew))
        script = f"import mqstate\nwith mqstate.Client({cluster.url!r}) as c:\n    print({code})"
        return subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True,
                              check=True, timeout=60).stdout.strip()

    try:
        before = call("c.set('k', 'a', persist=True).version", skew=30)
        assert call("c.delete('k')", skew=30) == "1"
        cluster.kill_store()
        cluster.start_store()
        after = call("c.set('k', 'b', persist=True).version")
    finally:
        cluster.close()
    assert parse_hlc(after)[:2] > parse_hlc(before)[:2], f"{after} is older than {before}"
