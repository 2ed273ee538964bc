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
    result = run(RunConfig(mode=mode, duration=DURATION, clients=CLIENTS, seed=seed,
                           workdir=_workdir(mode, seed)))
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
