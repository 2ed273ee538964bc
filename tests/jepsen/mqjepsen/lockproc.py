"""Client processes of the lock-safety scenarios (``python -m mqjepsen.lockproc ROLE``).
Each prints one JSON object per line on stdout for the scenario driver to read.

- ``holder``: acquires the lock (no auto-renewal), prints its fencing token, then waits for
  a line on stdin and writes the protected key with that (by then old) token.
- ``editor``: until the deadline: acquire, ``edit`` the chain key (append this write's
  token), release; prints each outcome.
- ``leader``: until the deadline: campaign; while leader, append to the chain key with a
  fenced read-modify-write (GET, then SET with the election's token); prints each write.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import sys
import time
from typing import Any, Dict, List, Optional

import mqstate


def emit(**fields: Any) -> None:
    print(json.dumps(fields), flush=True)


def client(url: str, name: str, timeout: float, cache: bool = False) -> mqstate.Client:
    extra = {"cache": True} if cache else {}
    return mqstate.Client(url, client_id=name, request_timeout=timeout, reconnect_min_delay=0.05,
                          reconnect_max_delay=0.5, **extra)


def maybe_stop(probability: float) -> None:
    """Stops this process (SIGSTOP) with the given probability: inside the critical section,
    holding the lock (or leadership) with a token that the driver's resumer lets expire
    before it sends SIGCONT."""
    if probability and random.random() < probability:
        os.kill(os.getpid(), signal.SIGSTOP)


def holder(a: argparse.Namespace) -> None:
    with client(a.url, a.name, a.timeout) as c:
        lock = c.lock(a.lock, lease=a.lease)
        token = lock.acquire(timeout=10)
        emit(event="acquired", token=str(token))
        sys.stdin.readline()  # resumed by the driver
        try:
            c.set(a.key, f"{a.name}@{token}", fencing_token=token, timeout=a.timeout)
            emit(event="write", ok=True)
        except mqstate.MqstateError as e:
            emit(event="write", ok=False, error=e.code)


def element(name: str, seq: int, token: object) -> str:
    return f"{token}/{name}/{seq}"


def editor(a: argparse.Namespace) -> None:
    # With the client-side cache on, and the chain read through it before each edit: the
    # edit itself must read the store (a cached chain, stale after a stop, would let a newer
    # token overwrite another editor's acknowledged append: a lost element).
    with client(a.url, a.name, a.timeout, cache=True) as c:
        lock = c.lock(a.lock, lease=a.lease)
        seq = 0
        while time.monotonic() < a.until:
            seq += 1
            try:
                c.get(a.chain)
            except mqstate.MqstateError:
                pass
            written: List[str] = []

            def append(prev: Optional[mqstate.Value]) -> str:
                # ``edit`` holds the lock while it calls this: its token fences the write.
                e = element(a.name, seq, lock.fencing_token)
                written.append(e)
                maybe_stop(a.self_stop)
                return (prev.text + "|" if prev is not None else "") + e

            try:
                r = lock.edit(a.chain, append, timeout=a.timeout * 3)
                emit(event="edit", ok=True, element=written[-1], token=str(r.token),
                     attempts=r.attempts, written=written)
            except mqstate.MqstateError as e:
                emit(event="edit", ok=False, error=e.code, may_have_applied=e.may_have_applied,
                     written=written)
            time.sleep(0.01)


def leader(a: argparse.Namespace) -> None:
    with client(a.url, a.name, a.timeout) as c:
        election = c.election(a.lock, a.name, term=a.lease)
        seq = 0
        while time.monotonic() < a.until:
            try:
                if not election.try_campaign():
                    time.sleep(0.05)
                    continue
                for _ in range(5):
                    token = election.fencing_token
                    if not election.is_leader or token is None:
                        break
                    seq += 1
                    e = element(a.name, seq, token)
                    prev = c.get(a.chain)
                    maybe_stop(a.self_stop)
                    value = (prev.text + "|" if prev is not None else "") + e
                    try:
                        c.set(a.chain, value, fencing_token=token)
                        emit(event="write", ok=True, element=e)
                    except mqstate.MqstateError as err:
                        emit(event="write", ok=False, error=err.code, element=e,
                             may_have_applied=err.may_have_applied)
                    time.sleep(0.02)
                election.resign()
            except mqstate.MqstateError as err:
                emit(event="error", error=err.code)
                time.sleep(0.05)


def main(argv: Optional[List[str]] = None) -> int:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("role", choices=["holder", "editor", "leader"])
    p.add_argument("--url", required=True)
    p.add_argument("--name", required=True)
    p.add_argument("--lock", required=True)
    p.add_argument("--key", default="")
    p.add_argument("--chain", default="")
    p.add_argument("--lease", type=float, default=1.0)
    p.add_argument("--timeout", type=float, default=2.0)
    p.add_argument("--until", type=float, default=0.0)
    p.add_argument("--self-stop", type=float, default=0.0,
                   help="probability of stopping itself inside the critical section")
    a = p.parse_args(argv)
    roles: Dict[str, Any] = {"holder": holder, "editor": editor, "leader": leader}
    roles[a.role](a)
    return 0


if __name__ == "__main__":
    sys.exit(main())
