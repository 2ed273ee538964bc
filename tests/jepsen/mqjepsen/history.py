"""Histories: one record per operation, written as JSON lines.

Every time is ``time.monotonic()`` in seconds. On Linux that is ``CLOCK_MONOTONIC``, one
clock for every process of the machine, so the records of separate client processes can be
merged into one history (and libfaketime is told not to fake it, see ``nemesis.py``).

``status`` is the outcome:

- ``ok``: the call returned; ``result`` (and ``version``) hold what it returned.
- ``fail``: a definite failure: the store refused it (``-ERR``) or it never left the client
  (``may_have_applied`` false). It had no effect; the checker ignores it.
- ``info``: indeterminate: a timeout, a lost connection, or an error whose
  ``may_have_applied`` is true. It may have taken effect, once, at any point after its
  invocation (within the checker's horizon), or not at all.

A cached reader's reads (``cached_reader`` true) are GETs through the client-side cache;
``hit`` says whether the cache answered one (its ``hits`` counter went up) or the store did.

``result`` by operation: ``set``: ``true`` applied / ``false`` condition failed; ``get``: the
value (text) or ``null``; ``del``: 1 or 0; ``vdel``: 1 deleted, 0 no such key, -1 the value
differs.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Iterable, List, Optional, Union

OK = "ok"
FAIL = "fail"
INFO = "info"

Result = Union[bool, int, str, None]


@dataclass
class Op:
    """One operation of a history."""

    process: int
    key: str
    f: str  # "set" | "get" | "del" | "vdel"
    invoke: float
    value: Optional[str] = None  # set: the value written; vdel: the value compared
    cond: Optional[str] = None  # set: None, "nx" or "nex"
    px: Optional[int] = None  # set: expiry in ms
    complete: Optional[float] = None  # None while pending, and for a lost completion
    status: str = INFO
    result: Result = None
    version: Optional[str] = None  # the HLC the response carried, as text
    error: Optional[str] = None  # the error's code, for fail and info
    # A read of a cached reader (``worker --cached-reader``): through the client-side cache,
    # checked against its contract (``checker.check_cached``), not for linearizability.
    cached_reader: bool = False
    hit: Optional[bool] = None  # a cached reader's read: answered from memory (True) or the store

    def to_json(self) -> str:
        return json.dumps(asdict(self), separators=(",", ":"))

    @staticmethod
    def from_dict(d: dict[str, Any]) -> "Op":
        return Op(**d)

    def describe(self) -> str:
        args = self.f
        if self.f == "set":
            args += f"({self.value!r}" + (f", {self.cond}" if self.cond else "") + (
                f", px={self.px}" if self.px else "") + ")"
        elif self.f == "vdel":
            args += f"({self.value!r})"
        else:
            args += "()"
        done = f"{self.complete:.6f}" if self.complete is not None else "-"
        return (f"p{self.process} {self.key} {args} [{self.invoke:.6f} .. {done}] "
                f"{self.status} {self.result!r}" + (f" v={self.version}" if self.version else "")
                + (f" err={self.error}" if self.error else "")
                + ((" cache " + {True: "hit", False: "miss", None: "?"}[self.hit]) if self.cached_reader else ""))


def write(path: Path, ops: Iterable[Op]) -> None:
    with open(path, "w", encoding="utf-8") as f:
        for op in ops:
            f.write(op.to_json() + "\n")


def read(path: Path) -> List[Op]:
    ops: List[Op] = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.strip()
            if line:
                ops.append(Op.from_dict(json.loads(line)))
    return ops


def read_all(paths: Iterable[Path]) -> List[Op]:
    ops: List[Op] = []
    for p in paths:
        ops.extend(read(p))
    ops.sort(key=lambda o: o.invoke)
    return ops


def parse_hlc(text: str) -> tuple[int, int, str]:
    """An HLC's ordering key (wall clock, counter, node), spec §5.2."""
    wall, counter, node = text.split(":", 2)
    return int(wall), int(counter), node
