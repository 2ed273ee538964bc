"""A linearizability checker for the state store's model of one key, and the checks that
go with it.

The search is Wing & Gong's, with Lowe's memoization (a cache of (set of linearized
operations, model state) already explored), run separately for each key: the store's
operations touch one key each, so a history is linearizable exactly when each key's
sub-history is (P-compositionality, Horn & Kroening).

The model of a key (spec §3, §4, §6):

- ``set`` plain: always applies; ``nx``: applies when the key is absent; ``nex``: applies
  when it is absent or holds the SET's own value. ``px`` ms: the key expires ``px`` after
  the SET took effect; a SET without ``px`` clears any earlier expiry.
- ``get``: the current value (and the version of the SET that wrote it) or nothing.
- ``del``: 1 and deletes when the key exists, else 0.
- ``vdel v``: 1 and deletes when the key holds ``v``; 0 when it is absent; -1 otherwise.

Time enters through PX. Each state carries ``now``: the earliest time the last
linearization point can have (the largest invocation time of the operations linearized so
far, raised when an expiry had to be assumed). The next operation's point is at least
``max(now, its invocation)``; the earliest point is always the best choice, since a later
operation can still pick a later point. A key written with ``px`` at a point in
``[t, complete]`` expires somewhere in ``[t + px - tol, complete + px + tol]``: an operation
may see it alive if its point can be before the end of that window, or gone if its point
can be at or after the start of the window and no earlier than any remaining operation's
completion allows.

Indeterminate operations (``info``) may take effect, with whatever outcome the model gives
them, at any point after their invocation, or never. With a finite ``horizon`` they are
treated as completing ``horizon`` seconds after their invocation (the request carries a
message expiry of its timeout, so the broker drops it after that); with ``horizon=None``
they may take effect at any later time. Definite failures had no effect and are left out,
as are indeterminate GETs.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Dict, Iterable, List, Optional, Sequence, Set, Tuple

from .history import FAIL, INFO, OK, Op, parse_hlc

INF = float("inf")

# (value, version, expiry window start, expiry window end, now)
State = Tuple[Optional[str], Optional[str], float, float, float]
INITIAL: State = (None, None, INF, INF, -INF)


@dataclass
class KeyResult:
    key: str
    ok: bool
    ops: int  # operations searched (fail and indeterminate gets left out)
    indeterminate: int
    explored: int  # memoized configurations
    problem: str = ""  # why not, for a failure: the operation that could not be placed
    context: List[str] = field(default_factory=list)  # the operations around it


@dataclass
class Report:
    ok: bool
    keys: List[KeyResult]
    version_problems: List[str]
    known_problems: List[str]
    ops: int
    ok_ops: int
    failed_ops: int
    indeterminate_ops: int

    def summary(self) -> str:
        lines = [
            f"{'linearizable' if self.ok else 'NOT LINEARIZABLE or versions went backwards'}: "
            f"{self.ops} operations ({self.ok_ops} ok, {self.failed_ops} failed, "
            f"{self.indeterminate_ops} indeterminate) on {len(self.keys)} key(s)"
        ]
        for k in self.keys:
            if not k.ok:
                lines.append(f"  key {k.key}: {k.problem}")
                lines.extend("    " + c for c in k.context)
        for p in self.version_problems[:20]:
            lines.append(f"  version: {p}")
        if self.known_problems:
            lines.append(f"  known bug, tolerated: {len(self.known_problems)} version(s) older than one "
                         "handed out before a store restart (a deleted key's versions are forgotten)")
            lines.extend(f"    {p}" for p in self.known_problems[:5])
        return "\n".join(lines)


def _views(state: State, t0: float, min_comp: float) -> Iterable[Tuple[Optional[str], Optional[str], float, float, float]]:
    """What an operation whose point is at least ``t0`` can find: (value, version, expiry
    start, expiry end, point). ``min_comp`` is the earliest completion of any operation not
    yet linearized (the point may not be later)."""
    value, version, elo, ehi, _ = state
    if value is None:
        yield None, None, INF, INF, t0
        return
    if t0 < ehi:
        yield value, version, elo, ehi, t0
    if elo < INF:
        te = max(t0, elo)
        if te <= min_comp:
            yield None, None, INF, INF, te


def _transitions(op: Op, comp: float, state: State, min_comp: float, tol: float) -> List[State]:
    """Every state the model can be in after ``op``, consistent with what ``op`` returned."""
    out: List[State] = []
    t0 = max(state[4], op.invoke)
    known = op.status == OK
    for value, version, elo, ehi, t in _views(state, t0, min_comp):
        unchanged: State = (value, version, elo, ehi, t)
        if op.f == "get":
            if op.result == value and (op.version is None or version is None or op.version == version):
                out.append(unchanged)
        elif op.f == "set":
            applies = (op.cond is None or (op.cond == "nx" and value is None)
                       or (op.cond == "nex" and (value is None or value == op.value)))
            if known and bool(op.result) != applies:
                continue
            if applies:
                if op.px:
                    px = op.px / 1000.0
                    out.append((op.value, op.version if known else None, t + px - tol, comp + px + tol, t))
                else:
                    out.append((op.value, op.version if known else None, INF, INF, t))
            else:
                out.append(unchanged)
        elif op.f == "del":
            if value is None:
                if not known or op.result == 0:
                    out.append(unchanged)
            elif not known or op.result == 1:
                out.append((None, None, INF, INF, t))
        elif op.f == "vdel":
            if value is None:
                if not known or op.result == 0:
                    out.append(unchanged)
            elif value == op.value:
                if not known or op.result == 1:
                    out.append((None, None, INF, INF, t))
            elif not known or op.result == -1:
                out.append(unchanged)
        else:
            raise ValueError(f"unknown operation {op.f!r}")
    # Duplicates (two views to the same state) would only cost time.
    seen: Set[State] = set()
    unique = []
    for s in out:
        if s not in seen:
            seen.add(s)
            unique.append(s)
    return unique


def check_key(key: str, history: Sequence[Op], horizon: Optional[float] = 15.0,
              tol: float = 0.25, max_explored: int = 5_000_000) -> KeyResult:
    """Whether one key's history is linearizable (see the module's doc)."""
    ops = [o for o in history if o.status != FAIL and not (o.status == INFO and o.f == "get")]
    ops.sort(key=lambda o: o.invoke)
    n = len(ops)
    indeterminate = sum(1 for o in ops if o.status == INFO)
    comp: List[float] = []
    for o in ops:
        if o.status == OK:
            assert o.complete is not None
            comp.append(o.complete)
        else:
            comp.append(o.invoke + horizon if horizon is not None else INF)

    # Entries 1..2n in time order (a call before a return at the same instant: concurrent);
    # 0 is the head, 2n+1 the end.
    events = sorted([(o.invoke, 0, i) for i, o in enumerate(ops)] + [(comp[i], 1, i) for i in range(n)])
    end = 2 * n + 1
    is_call = [False] * (end + 1)
    op_of = [-1] * (end + 1)
    time_of = [0.0] * (end + 1)
    match = [0] * (end + 1)
    call_entry = [0] * n
    for e, (t, kind, i) in enumerate(events, start=1):
        is_call[e] = kind == 0
        op_of[e] = i
        time_of[e] = t
        if kind == 0:
            call_entry[i] = e
        else:
            match[call_entry[i]] = e
    nxt = list(range(1, end + 2))
    prv = list(range(-1, end))

    def lift(e: int) -> None:
        for x in (e, match[e]):
            nxt[prv[x]] = nxt[x]
            prv[nxt[x]] = prv[x]

    def unlift(e: int) -> None:
        for x in (match[e], e):
            nxt[prv[x]] = x
            prv[nxt[x]] = x

    def min_comp() -> float:
        x = nxt[0]
        while x != end and is_call[x]:
            x = nxt[x]
        return time_of[x] if x != end else INF

    state: State = INITIAL
    linearized = 0
    # The memo (Lowe): configurations (operations linearized, state) whose every extension
    # failed, recorded when the search backtracks out of them. Kept, for each (determinate
    # operations linearized, state), as the sets of indeterminate operations resolved
    # (applied or dropped) there: a configuration is dominated, and skipped, when a failed
    # one had the same determinate operations and state and resolved a subset of its
    # indeterminate ones (what was still pending there could still have been left out).
    info_mask = 0
    for i, o in enumerate(ops):
        if o.status == INFO:
            info_mask |= 1 << i
    det_mask = ~info_mask
    failed: Dict[Tuple[int, State], List[int]] = {}
    explored = 0
    stack: List[Tuple[int, State, List[State], int]] = []
    deepest = -1
    blocked_at = -1

    def attempt(entry: int, trans: List[State], start: int) -> bool:
        nonlocal state, linearized, explored
        bit = 1 << op_of[entry]
        for k in range(start, len(trans)):
            nl = linearized | bit
            ns = trans[k]
            seen = failed.get((nl & det_mask, ns))
            if seen is not None:
                resolved = nl & info_mask
                if any(r & ~resolved == 0 for r in seen):
                    continue
            explored += 1
            stack.append((entry, state, trans, k + 1))
            lift(entry)
            state = ns
            linearized = nl
            return True
        return False

    entry = nxt[0]
    while nxt[0] != end:
        if explored > max_explored:
            return KeyResult(key, False, n, indeterminate, explored,
                             f"search gave up after {max_explored} configurations (inconclusive)")
        if is_call[entry]:
            i = op_of[entry]
            trans = _transitions(ops[i], comp[i], state, min_comp(), tol)
            entry = nxt[0] if attempt(entry, trans, 0) else nxt[entry]
            continue
        # A return entry: the operation it closes was not placed before it. An indeterminate
        # one may never have taken effect: dropped here, at the end of its horizon, rather
        # than at every earlier point (keeping it pending allows everything dropping does).
        if ops[op_of[entry]].status == INFO:
            call = call_entry[op_of[entry]]
            if attempt(call, [state], 0):
                entry = nxt[0]
                continue
        if len(stack) > deepest:
            deepest, blocked_at = len(stack), op_of[entry]
        if not stack:
            return _failure(key, ops, n, indeterminate, explored, deepest, blocked_at)
        top, prev_state, trans, k = stack.pop()
        failed.setdefault((linearized & det_mask, state), []).append(linearized & info_mask)
        unlift(top)
        state = prev_state
        linearized &= ~(1 << op_of[top])
        entry = nxt[0] if attempt(top, trans, k) else nxt[top]
    return KeyResult(key, True, n, indeterminate, explored)


def _failure(key: str, ops: List[Op], n: int, indeterminate: int, explored: int,
             deepest: int, blocked_at: int) -> KeyResult:
    bad = ops[blocked_at]
    context = []
    lo = bad.invoke - 1.0
    hi = (bad.complete or bad.invoke) + 0.5
    near = [o for o in ops if (o.complete or INF) >= lo and o.invoke <= hi]
    for o in near[-40:]:
        context.append(("=> " if o is bad else "   ") + o.describe())
    return KeyResult(key, False, n, indeterminate, explored,
                     f"no linearization places {bad.describe()} (at most {deepest} of {n} "
                     f"operations linearized)", context)


@dataclass
class VersionProblem:
    """A version older than one returned by an operation that completed before."""

    text: str
    older_complete: float  # when the operation with the newer version completed
    newer_invoke: float  # when the operation that returned an older one was invoked

    def across(self, restarts: Sequence[float]) -> bool:
        """Whether a store restart lies between the two operations."""
        return any(self.older_complete <= t <= self.newer_invoke for t in restarts)


def check_versions(history: Sequence[Op]) -> List[VersionProblem]:
    """Per key: a version returned by an operation is never older than one returned by an
    operation that completed before it was invoked (a SET's new version, a GET's)."""
    problems: List[VersionProblem] = []
    by_key: Dict[str, List[Op]] = defaultdict(list)
    for o in history:
        if o.status == OK and o.version and (o.f == "get" or (o.f == "set" and o.result is True)):
            by_key[o.key].append(o)
    for key, ops in by_key.items():
        by_complete = sorted(ops, key=lambda o: o.complete or 0.0)
        j = 0
        best: Optional[Op] = None
        best_v: Optional[Tuple[int, int, str]] = None
        for o in sorted(ops, key=lambda o: o.invoke):
            while j < len(by_complete) and (by_complete[j].complete or 0.0) < o.invoke:
                c = by_complete[j]
                assert c.version is not None
                cv = parse_hlc(c.version)
                if best_v is None or cv > best_v:
                    best, best_v = c, cv
                j += 1
            assert o.version is not None
            if best_v is not None and parse_hlc(o.version)[:2] < best_v[:2]:
                assert best is not None
                problems.append(VersionProblem(f"key {key}: {o.describe()} came after {best.describe()}",
                                               best.complete or 0.0, o.invoke))
    return problems


def check(history: Sequence[Op], horizon: Optional[float] = 15.0, tol: float = 0.25,
          restarts: Sequence[float] = (), tolerate_restart_regressions: bool = False) -> Report:
    """Linearizability of every key, and versions that never go backwards.

    ``restarts``: when the store was started again (``time.monotonic()``). A version that
    went backwards across a restart (the newer operation invoked after a restart that
    followed the older one's completion) is the known bug of a deleted key's versions being
    forgotten by a restart (docs/reliability.md, "Findings"); with
    ``tolerate_restart_regressions`` those are listed in ``known_problems`` instead of
    failing the check."""
    by_key: Dict[str, List[Op]] = defaultdict(list)
    for o in history:
        by_key[o.key].append(o)
    keys = [check_key(k, v, horizon, tol) for k, v in sorted(by_key.items())]
    found = check_versions(history)
    known = [p for p in found if tolerate_restart_regressions and p.across(restarts)]
    versions = [p.text for p in found if p not in known]
    return Report(
        ok=all(k.ok for k in keys) and not versions,
        keys=keys,
        version_problems=versions,
        known_problems=[p.text for p in known],
        ops=len(history),
        ok_ops=sum(1 for o in history if o.status == OK),
        failed_ops=sum(1 for o in history if o.status == FAIL),
        indeterminate_ops=sum(1 for o in history if o.status == INFO),
    )


# ---- cached reads -----------------------------------------------------------------------

#: Δ, the staleness a cached read is allowed by default, s: the cache's freshness lease
#: bound (``cache_freshness``, default 1 s). No cached read may lag an acknowledged change
#: by Δ or more, in any failure: a proxy pause (a link silent but not known to be dead), a
#: stopped reader process, a store restarted behind its broker; nothing extends it.
CACHE_STALENESS = 1.0
#: How soon after a connection is closed under it (a proxy cut, a kill) a cached reader's
#: client must have noticed (and emptied its cache), s: an EOF on loopback takes
#: milliseconds to be read; the rest is room for a busy machine.
CUT_NOTICE = 0.5


def _order(version: str) -> Tuple[int, int]:
    """A version's place in a key's order: (wall clock, counter) of its HLC."""
    return parse_hlc(version)[:2]


def notified_by(t: float, delta: float, pauses: Sequence[Tuple[float, float]] = ()) -> float:
    """The latest time a change acknowledged at ``t`` may reach a connected cached reader:
    ``t + delta``, pushed to ``delta`` after the end of every proxy pause that begins before
    that (a paused connection delivers nothing and its client does not know it is cut)."""
    due = t + delta
    for start, end in sorted(pauses):
        if start > due:
            break
        if end >= t:
            due = max(due, end + delta)
    return due


class _Latest:
    """Items (due, rank, op) sorted by ``due``: the highest rank among those due before a
    time (a prefix maximum, found by bisection)."""

    def __init__(self, items: List[Tuple[float, Tuple[float, ...], Op]]) -> None:
        items.sort(key=lambda x: x[0])
        self.due = [d for d, _, _ in items]
        self.best: List[Tuple[Tuple[float, ...], Op]] = []
        for _, rank, o in items:
            if not self.best or rank > self.best[-1][0]:
                self.best.append((rank, o))
            else:
                self.best.append(self.best[-1])

    def before(self, t: float) -> Optional[Tuple[Tuple[float, ...], Op]]:
        i = bisect_left(self.due, t)
        return self.best[i - 1] if i else None


def check_cached(history: Sequence[Op], reads: Sequence[Op], delta: float = CACHE_STALENESS,
                 horizon: Optional[float] = 15.0, pauses: Sequence[Tuple[float, float]] = (),
                 cuts: Sequence[float] = (), notice: float = CUT_NOTICE, tol: float = 0.25) -> List[str]:
    """Cached reads (``reads``, each a GET of one cached-reader process, through its cache)
    against the cache's contract (docs/api.md, "The client-side cache"), given the writers'
    history (``history``: uncached, checked for linearizability on its own). Per key:

    - **valid**: a value read was written by a SET (acknowledged as applied, or
      indeterminate) invoked before the read returned; a version read that an acknowledged
      SET or an uncached GET returned comes with that operation's value;
    - **monotonic**: in one process, a version read is never older than one read before
      (over the whole process: writes are persistent, so a reconnection to the store, which
      empties the cache, cannot go back either);
    - **stale by less than ``delta``** (the lease's bound, whatever the faults: ``pauses``
      extend nothing here): a read invoked at ``t`` returns nothing older than a change
      acknowledged (``ok``, completed) ``delta`` or more before ``t``: not a version
      older than an acknowledged SET's or an uncached GET's; not a version that an
      acknowledged DEL / VDEL invoked after it was known removed, nor a PX write past its
      expiry (``tol`` as in the linearizability model); not nothing when an acknowledged
      SET without PX leaves no removal possible (no DEL, VDEL or PX write, acknowledged or
      indeterminate within ``horizon``, may come between it and the read). Indeterminate
      writes never force freshness: a read may return their values, or not;
    - **emptied by a cut**: ``cuts`` are when every connection was closed under the clients
      (a proxy cut, a kill of the store or broker). A cut empties the cache, so after one a
      process's reads of a key are not answered by the cache before one of them has gone to
      the store (``hit`` false) to fill it again; a read invoked more than ``notice`` after
      the cut (its client has seen the connection end by then; a proxy pause delays that as
      for notifications) that hits with no miss of the key since the cut is a violation.

    Versions order a key's states: the writers' check proves they follow real time. Returns
    every violation found, one line each, starting ``cache: <kind>:`` (``stale read``,
    ``non-monotonic read``, ``invalid read``, ``hit after a cut``)."""
    inf_h = INF if horizon is None else horizon
    by_key: Dict[str, List[Op]] = defaultdict(list)
    for o in history:
        if not o.cached_reader:
            by_key[o.key].append(o)
    reads_by_key: Dict[str, List[Op]] = defaultdict(list)
    for o in reads:
        if o.status == OK and o.f == "get":
            reads_by_key[o.key].append(o)

    def due(o: Op) -> float:
        # The lease's bound holds through every fault: no pause extends it.
        assert o.complete is not None
        return o.complete + delta

    invalid: List[str] = []
    backwards: List[str] = []
    stale: List[str] = []
    kept: List[str] = []
    breaks = sorted(cuts)
    by_process_key: Dict[Tuple[int, str], List[Op]] = defaultdict(list)
    for o in reads:
        if o.f == "get" and o.hit is not None:
            by_process_key[(o.process, o.key)].append(o)
    for (_, key), mine in sorted(by_process_key.items()):
        mine.sort(key=lambda o: o.invoke)
        starts = [o.invoke for o in mine]
        for n, tc in enumerate(breaks):
            until = breaks[n + 1] if n + 1 < len(breaks) else INF
            noticed = notified_by(tc, notice, pauses)  # a paused proxy passes no EOF on
            for o in mine[bisect_right(starts, tc):]:
                if o.invoke >= until or o.hit is False:
                    break  # the next cut's turn, or the cache was filled again
                if o.status == OK and o.invoke > noticed:
                    kept.append(f"key {key}: {o.describe()} was answered by the cache {o.invoke - tc:.3f} s "
                                f"after every connection was closed, with no read of the key from the store "
                                f"since (notice {notice:g} s)")
                    break
    for key, key_reads in sorted(reads_by_key.items()):
        ops = by_key.get(key, [])
        applied = [o for o in ops if o.f == "set" and o.status == OK and o.result is True]
        # Values written (by SETs that applied or may have), with when first invoked.
        written: Dict[str, float] = {}
        for o in ops:
            if o.f == "set" and o.value is not None and (o.status == INFO or (o.status == OK and o.result is True)):
                written[o.value] = min(written.get(o.value, INF), o.invoke)
        # Versions returned by acknowledged operations: their value, when first known applied.
        versions: Dict[str, Tuple[Optional[str], float, Op]] = {}
        seen = [o for o in applied if o.version] + [o for o in ops if o.f == "get" and o.status == OK and o.version]
        for o in seen:
            assert o.version is not None and o.complete is not None
            value = o.value if o.f == "set" else (o.result if isinstance(o.result, str) else None)
            if o.version not in versions or o.complete < versions[o.version][1]:
                versions[o.version] = (value, o.complete, o)
        # Rule: no version older than one acknowledged (a SET's, an uncached GET's) in time.
        newest = _Latest([(due(o), _order(o.version or ""), o) for o in seen])
        # Rule: no version removed by an acknowledged DEL / VDEL invoked after it was known.
        removals = _Latest([(due(o), (o.invoke,), o) for o in ops
                            if o.f in ("del", "vdel") and o.status == OK and o.result == 1])
        expiry: Dict[str, Tuple[float, Op]] = {}
        for o in applied:
            if o.px and o.version:
                assert o.complete is not None
                expiry[o.version] = (o.complete + o.px / 1000.0 + tol + delta, o)
        # Rule: not nothing after an acknowledged SET without PX, unless a removal may follow.
        lasting = _Latest([(due(o), (o.invoke,), o) for o in applied if not o.px])
        removers = sorted(
            ((o.invoke, (o.complete if o.status == OK and o.complete is not None else o.invoke + inf_h), o)
             for o in ops
             if (o.f in ("del", "vdel") and (o.status == INFO or (o.status == OK and o.result == 1)))
             or (o.f == "set" and o.px and (o.status == INFO or (o.status == OK and o.result is True)))),
            key=lambda x: x[0])
        remover_invokes = [i for i, _, _ in removers]
        remover_ends: List[float] = []
        for _, end, _ in removers:
            remover_ends.append(max(end, remover_ends[-1]) if remover_ends else end)

        last: Dict[int, Op] = {}  # per process, the read of the newest version so far
        for r in sorted(key_reads, key=lambda o: o.invoke):
            assert r.complete is not None
            value = r.result if isinstance(r.result, str) else None
            if value is not None:
                if written.get(value, INF) >= r.complete:
                    invalid.append(f"key {key}: {r.describe()} read a value no SET wrote")
                elif r.version is not None and r.version in versions and versions[r.version][0] != value:
                    invalid.append(f"key {key}: {r.describe()} read another value with the version of "
                                   f"{versions[r.version][2].describe()}")
            if r.version is not None:
                prev = last.get(r.process)
                if prev is not None and prev.version is not None and _order(r.version) < _order(prev.version):
                    backwards.append(f"key {key}: {r.describe()} came after {prev.describe()} in the same process")
                if prev is None or prev.version is None or _order(r.version) > _order(prev.version):
                    last[r.process] = r
                best = newest.before(r.invoke)
                if best is not None and _order(r.version) < best[0]:
                    w = best[1]
                    stale.append(f"key {key}: {r.describe()} is older than {w.describe()}, due "
                                 f"{r.invoke - due(w):.3f} s before the read (Δ {delta:g} s)")
                    continue
                if r.version in versions:
                    gone = removals.before(r.invoke)
                    if gone is not None and gone[0][0] > versions[r.version][1]:
                        d = gone[1]
                        stale.append(f"key {key}: {r.describe()} was removed by {d.describe()}, due "
                                     f"{r.invoke - due(d):.3f} s before the read (Δ {delta:g} s)")
                        continue
                if r.version in expiry and expiry[r.version][0] < r.invoke:
                    t, s = expiry[r.version]
                    stale.append(f"key {key}: {r.describe()} had expired: {s.describe()}, due "
                                 f"{r.invoke - t:.3f} s before the read (Δ {delta:g} s)")
            elif value is None:
                best = lasting.before(r.invoke)
                if best is not None:
                    j = bisect_left(remover_invokes, r.complete)
                    latest_end = remover_ends[j - 1] if j else -INF
                    if best[0][0] >= latest_end:
                        w = best[1]
                        stale.append(f"key {key}: {r.describe()} found nothing after {w.describe()}, due "
                                     f"{r.invoke - due(w):.3f} s before the read, which nothing could "
                                     f"remove (Δ {delta:g} s)")

    problems: List[str] = []
    for kind, found in (("stale read", stale), ("non-monotonic read", backwards), ("invalid read", invalid),
                        ("hit after a cut", kept)):
        problems.extend(f"cache: {kind}: {p}" for p in found)
    return problems


def first_problems(problems: Sequence[str], limit: int = 10) -> List[str]:
    """At most ``limit`` of each kind of ``check_cached``'s problems, then how many more."""
    out: List[str] = []
    count: Dict[str, int] = defaultdict(int)
    for p in problems:
        kind = p.split(":", 2)[1]
        count[kind] += 1
        if count[kind] <= limit:
            out.append(p)
    out.extend(f"cache:{kind}: ... and {n - limit} more" for kind, n in count.items() if n > limit)
    return out


def cache_lags(history: Sequence[Op], reads: Sequence[Op], every: bool = False) -> List[float]:
    """How far behind each cached read that returned an older version than one already
    acknowledged was (what Δ has to cover, measured): the read's invocation minus the
    earliest completion of an acknowledged SET or uncached GET with a newer version of the
    key. Reads that were not behind are left out, or count 0 with ``every`` (every read
    that returned a version: the distribution of the lag)."""
    newer: Dict[str, Tuple[List[Tuple[int, int]], List[float]]] = {}
    by_key: Dict[str, List[Op]] = defaultdict(list)
    for o in history:
        if (not o.cached_reader and o.status == OK and o.version and o.complete is not None
                and (o.f == "get" or (o.f == "set" and o.result is True))):
            by_key[o.key].append(o)
    for key, ops in by_key.items():
        ops.sort(key=lambda o: _order(o.version or ""))
        orders = [_order(o.version or "") for o in ops]
        first: List[float] = [INF] * (len(ops) + 1)  # the earliest completion from i on
        for i in range(len(ops) - 1, -1, -1):
            first[i] = min(first[i + 1], ops[i].complete or INF)
        newer[key] = (orders, first)
    lags: List[float] = []
    for r in reads:
        if r.status != OK or r.version is None or r.key not in newer:
            continue
        orders, first = newer[r.key]
        i = bisect_right(orders, _order(r.version))
        if first[i] < r.invoke:
            lags.append(r.invoke - first[i])
        elif every:
            lags.append(0.0)
    return lags


def percentile(values: Sequence[float], p: float) -> float:
    """The ``p``-th percentile (0..100) of ``values`` by the nearest rank; 0 when empty."""
    if not values:
        return 0.0
    ordered = sorted(values)
    rank = max(1, -(-len(ordered) * p // 100))  # ceil(n p / 100), at least 1
    return ordered[int(rank) - 1]
