"""The checker against hand-written histories: ones it must accept, and planted violations
it must report."""

from __future__ import annotations

from typing import List, Optional, Tuple

from mqjepsen.checker import (cache_lags, check, check_cached, check_key, check_versions, first_problems,
                              notified_by)
from mqjepsen.history import FAIL, INFO, OK, Op, Result


def op(p: int, f: str, inv: float, comp: Optional[float], result: Result = None, *, value: Optional[str] = None,
       cond: Optional[str] = None, px: Optional[int] = None, status: str = OK, version: Optional[str] = None,
       key: str = "k") -> Op:
    return Op(process=p, key=key, f=f, invoke=inv, value=value, cond=cond, px=px,
              complete=comp if status != INFO else None, status=status, result=result, version=version)


def lin(ops: List[Op], horizon: Optional[float] = 15.0) -> bool:
    return check_key("k", ops, horizon=horizon, tol=0.01).ok


# ---- histories that must pass -----------------------------------------------------------

def test_sequential_register() -> None:
    assert lin([
        op(0, "get", 0, 1, None),
        op(0, "set", 2, 3, True, value="a"),
        op(1, "get", 4, 5, "a"),
        op(0, "set", 6, 7, False, value="b", cond="nx"),
        op(1, "set", 8, 9, True, value="a", cond="nex"),
        op(1, "vdel", 10, 11, -1, value="zz"),
        op(1, "vdel", 12, 13, 1, value="a"),
        op(0, "vdel", 14, 15, 0, value="a"),
        op(0, "del", 16, 17, 0),
        op(0, "set", 18, 19, True, value="c", cond="nx"),
        op(0, "del", 20, 21, 1),
        op(0, "get", 22, 23, None),
    ])


def test_concurrent_reads_may_see_either_side() -> None:
    assert lin([
        op(0, "set", 0, 1, True, value="a"),
        op(1, "set", 2, 6, True, value="b"),
        op(2, "get", 3, 4, "b"),
        op(3, "get", 3.5, 7, "a"),  # began before p2's read ended: may be linearized first
    ])


def test_order_must_be_found_by_search() -> None:
    # Three overlapping writes; the reads fix one order only (c, a, b).
    assert lin([
        op(0, "set", 0, 10, True, value="a"),
        op(1, "set", 0, 10, True, value="b"),
        op(2, "set", 0, 10, True, value="c"),
        op(3, "get", 1, 2, "c"),
        op(3, "get", 3, 4, "a"),
        op(4, "get", 11, 12, "b"),
    ])


def test_indeterminate_write_may_apply_late_or_never() -> None:
    assert lin([
        op(0, "set", 0, None, None, value="x", status=INFO),
        op(1, "get", 1, 2, None),
        op(1, "get", 3, 4, "x"),  # applied between the two reads
    ])
    assert lin([
        op(0, "set", 0, None, None, value="x", status=INFO),
        op(1, "get", 1, 2, None),
        op(1, "get", 30, 31, None),  # never applied
    ])


def test_indeterminate_nx_can_explain_a_failed_nx() -> None:
    assert lin([
        op(0, "set", 0, None, None, value="x", cond="nx", status=INFO),
        op(1, "set", 1, 2, False, value="y", cond="nx"),
        op(1, "get", 3, 4, "x"),
    ])


def test_definite_failures_have_no_effect() -> None:
    assert lin([
        op(0, "set", 0, 1, None, value="x", status=FAIL),
        op(1, "get", 2, 3, None),
    ])


def test_px_expiry() -> None:
    assert lin([
        op(0, "set", 0, 0.1, True, value="a", px=1000),
        op(1, "get", 0.5, 0.6, "a"),
        op(1, "get", 1.5, 1.6, None),  # expired
        op(1, "set", 2.0, 2.1, True, value="b", cond="nx"),
    ])
    # A plain SET clears the expiry.
    assert lin([
        op(0, "set", 0, 0.1, True, value="a", px=1000),
        op(0, "set", 0.2, 0.3, True, value="b"),
        op(1, "get", 5, 5.1, "b"),
    ])


def test_nex_renews() -> None:
    assert lin([
        op(0, "set", 0, 0.1, True, value="h", cond="nex", px=1000),
        op(0, "set", 0.8, 0.9, True, value="h", cond="nex", px=1000),
        op(1, "set", 1.5, 1.6, False, value="j", cond="nex", px=1000),
        op(1, "get", 1.7, 1.8, "h"),
    ])


def test_versions_must_match_the_write() -> None:
    assert lin([
        op(0, "set", 0, 1, True, value="a", version="100:0:S"),
        op(0, "set", 2, 3, True, value="a", version="200:0:S"),
        op(1, "get", 4, 5, "a", version="200:0:S"),
    ])


def test_a_long_history_is_quick() -> None:
    ops = []
    t = 0.0
    for i in range(3000):
        ops.append(op(i % 4, "set", t, t + 0.5, True, value=str(i)))
        ops.append(op(4, "get", t + 0.6, t + 0.7, str(i)))
        t += 1
    assert lin(ops)


# ---- planted violations -----------------------------------------------------------------

def test_stale_read() -> None:
    result = check_key("k", [
        op(0, "set", 0, 1, True, value="a"),
        op(0, "set", 2, 3, True, value="b"),
        op(1, "get", 4, 5, "a"),
    ])
    assert not result.ok
    assert "get" in result.problem


def test_lost_acknowledged_write() -> None:
    # Acknowledged, then a read long after finds nothing (as after a restart that lost it).
    assert not lin([
        op(0, "set", 0, 1, True, value="a"),
        op(1, "get", 10, 11, None),
    ])
    # ... or the one before it.
    assert not lin([
        op(0, "set", 0, 1, True, value="a"),
        op(0, "set", 2, 3, True, value="b"),
        op(1, "get", 10, 11, "a"),
    ])


def test_double_applied_nx() -> None:
    assert not lin([
        op(0, "set", 0, 2, True, value="a", cond="nx"),
        op(1, "set", 0.5, 2.5, True, value="b", cond="nx"),
    ])


def test_impossible_vdel() -> None:
    # VDEL says the value differs, but the only value ever written is the one it names.
    assert not lin([
        op(0, "set", 0, 1, True, value="a"),
        op(1, "vdel", 2, 3, -1, value="a"),
    ])
    # VDEL says no such key while the key holds a value.
    assert not lin([
        op(0, "set", 0, 1, True, value="a"),
        op(1, "vdel", 2, 3, 0, value="b"),
    ])
    # VDEL deleted, but the value was another.
    assert not lin([
        op(0, "set", 0, 1, True, value="a"),
        op(1, "vdel", 2, 3, 1, value="b"),
    ])


def test_delete_of_nothing_counted() -> None:
    assert not lin([
        op(0, "del", 0, 1, 1),
    ])


def test_read_of_a_value_never_written() -> None:
    assert not lin([op(0, "get", 0, 1, "ghost")])


def test_indeterminate_write_applies_at_most_once() -> None:
    assert not lin([
        op(0, "set", 0, None, None, value="x", status=INFO),
        op(1, "get", 1, 2, "x"),
        op(1, "del", 3, 4, 1),
        op(1, "get", 5, 6, "x"),  # would need it twice
    ])


def test_indeterminate_write_past_the_horizon() -> None:
    history = [
        op(0, "set", 0, None, None, value="x", status=INFO),
        op(1, "set", 50, 51, True, value="y"),
        op(1, "get", 100, 101, "x"),  # x would have had to apply 50 s after its call
    ]
    assert not lin(history, horizon=15.0)
    assert lin(history, horizon=None)


def test_key_alive_past_its_expiry() -> None:
    assert not lin([
        op(0, "set", 0, 0.1, True, value="a", px=1000),
        op(1, "get", 3, 3.1, "a"),
    ])


def test_expired_too_early() -> None:
    assert not lin([
        op(0, "set", 0, 0.1, True, value="a", px=5000),
        op(1, "get", 1, 1.1, None),
    ])


def test_wrong_version() -> None:
    assert not lin([
        op(0, "set", 0, 1, True, value="a", version="100:0:S"),
        op(0, "set", 2, 3, True, value="a", version="200:0:S"),
        op(1, "get", 4, 5, "a", version="100:0:S"),
    ])


def test_versions_going_backwards() -> None:
    history = [
        op(0, "set", 0, 1, True, value="a", version="200:0:S"),
        op(1, "set", 2, 3, True, value="b", version="150:3:S"),
    ]
    problems = check_versions(history)
    assert len(problems) == 1 and "came after" in problems[0].text
    assert not check(history).ok
    # Concurrent operations may carry versions in either order.
    assert check_versions([
        op(0, "set", 0, 3, True, value="a", version="200:0:S"),
        op(1, "set", 1, 2, True, value="b", version="150:3:S"),
    ]) == []


def test_report_per_key() -> None:
    report = check([
        op(0, "set", 0, 1, True, value="a", key="k1"),
        op(1, "get", 2, 3, "a", key="k2"),  # another key: a ghost
        op(1, "get", 2, 3, "a", key="k1"),
    ])
    assert not report.ok
    assert [k.ok for k in report.keys] == [True, False]
    assert "k2" in report.summary()


def test_version_regression_across_a_restart_is_the_known_bug() -> None:
    history = [
        op(0, "set", 0, 1, True, value="a", version="200:0:S"),
        op(0, "del", 1.5, 1.8, 1),
        op(1, "set", 3, 4, True, value="b", version="150:3:S"),
    ]
    assert not check(history).ok
    assert not check(history, restarts=[2.0]).ok  # reported unless tolerated
    tolerated = check(history, restarts=[2.0], tolerate_restart_regressions=True)
    assert tolerated.ok and len(tolerated.known_problems) == 1
    assert "known bug" in tolerated.summary()
    # No restart in between: never tolerated.
    assert not check(history, restarts=[5.0], tolerate_restart_regressions=True).ok


# ---- cached reads (check_cached) --------------------------------------------------------

def cread(p: int, inv: float, result: Optional[str], version: Optional[str] = None, *, hit: bool = True,
          key: str = "k") -> Op:
    """A cached reader's read, returned 1 ms after its call."""
    return Op(process=p, key=key, f="get", invoke=inv, complete=inv + 0.001, status=OK, result=result,
              version=version, cached_reader=True, hit=hit)


# The writers' history of the cache tests: a written at 0..0.1, b at 2..2.1, c at 5..5.1.
WRITES = [
    op(0, "set", 0, 0.1, True, value="a", version="1000:0:S"),
    op(0, "set", 2, 2.1, True, value="b", version="3000:0:S"),
    op(1, "get", 2.5, 2.6, "b", version="3000:0:S"),
    op(0, "set", 5, 5.1, True, value="c", version="6000:0:S"),
]


def cache_problems(reads: List[Op], history: Optional[List[Op]] = None) -> List[str]:
    return check_cached(WRITES if history is None else history, reads, delta=1.0)


def test_cached_reads_within_the_bound_pass() -> None:
    assert cache_problems([
        cread(100, -1, None, hit=False),  # before any write
        cread(100, 0.5, "a", "1000:0:S", hit=False),
        cread(100, 2.5, "a", "1000:0:S"),  # b acknowledged 0.4 s ago: within Δ
        cread(100, 3.0, "b", "3000:0:S"),
        cread(100, 5.9, "b", "3000:0:S"),  # c due at 6.1
        cread(100, 6.2, "c", "6000:0:S"),
        cread(101, 0.05, "a", "1000:0:S", hit=False),  # another process, its own order
        cread(101, 6.5, "c", "6000:0:S"),
    ]) == []


def test_cached_read_stale_beyond_the_bound() -> None:
    problems = cache_problems([cread(100, 1.0, "a", "1000:0:S"), cread(100, 3.2, "a", "1000:0:S")])
    assert len(problems) == 1 and problems[0].startswith("cache: stale read: key k:"), problems
    assert "older than p0 k set('b')" in problems[0]
    # A larger Δ allows it.
    assert check_cached(WRITES, [cread(100, 3.2, "a", "1000:0:S")], delta=1.5) == []
    # An uncached GET's version forces freshness too: b as read at 2.6 (were its SET
    # indeterminate), and a read at 3.7 of a.
    writes = [WRITES[0], op(0, "set", 2, None, None, value="b", status=INFO), WRITES[2]]
    assert check_cached(writes, [cread(100, 3.5, "a", "1000:0:S")], delta=1.0) == []
    assert len(check_cached(writes, [cread(100, 3.7, "a", "1000:0:S")], delta=1.0)) == 1


def test_a_pause_extends_no_cached_read_past_the_bound() -> None:
    # The proxy paused every connection from 2.05 to 4.0: b's notification waits for it, but
    # the lease's bound does not (the reader must go to the store from 3.1 on).
    assert check_cached(WRITES, [cread(100, 3.05, "a", "1000:0:S")], delta=1.0, pauses=[(2.05, 4.0)]) == []
    for t in (3.15, 4.5):
        problems = check_cached(WRITES, [cread(100, t, "a", "1000:0:S")], delta=1.0, pauses=[(2.05, 4.0)])
        assert len(problems) == 1 and problems[0].startswith("cache: stale read: "), problems
    # notified_by still pushes the notice of a cut past a pause (the "hit after a cut" rule).
    assert notified_by(2.1, 1.0, [(2.05, 4.0), (4.5, 4.8), (7.0, 8.0)]) == 5.8  # two pauses chained
    assert notified_by(2.1, 1.0, [(0.0, 1.0)]) == 3.1  # over before


def test_cached_read_of_a_deleted_or_expired_value() -> None:
    deleted = [op(0, "set", 0, 0.1, True, value="a", version="1000:0:S"), op(1, "del", 1, 1.1, 1)]
    assert check_cached(deleted, [cread(100, 1.5, "a", "1000:0:S")], delta=1.0) == []
    problems = check_cached(deleted, [cread(100, 2.5, "a", "1000:0:S")], delta=1.0)
    assert len(problems) == 1 and "was removed by p1 k del()" in problems[0]
    # A DEL that may have come before the SET removes nothing of it.
    early = [op(0, "set", 0, 0.1, True, value="a", version="1000:0:S"), op(1, "del", -1, 0.05, 1)]
    assert check_cached(early, [cread(100, 2.5, "a", "1000:0:S")], delta=1.0) == []
    expiring = [op(0, "set", 0, 0.1, True, value="a", px=500, version="1000:0:S")]
    assert check_cached(expiring, [cread(100, 1.5, "a", "1000:0:S")], delta=1.0) == []  # due at 1.85
    problems = check_cached(expiring, [cread(100, 2.0, "a", "1000:0:S")], delta=1.0)
    assert len(problems) == 1 and "had expired" in problems[0]
    # Nothing, long after a lasting SET that nothing could remove: stale; with a DEL that
    # may follow it (indeterminate), or a PX write, not.
    assert len(check_cached(WRITES[:1], [cread(100, 2.0, None)], delta=1.0)) == 1
    assert check_cached(WRITES[:1], [cread(100, 1.0, None)], delta=1.0) == []
    maybe = [op(1, "del", -1, None, None, status=INFO)] + WRITES[:1]
    assert check_cached(maybe, [cread(100, 2.0, None)], delta=1.0) == []  # may apply after the SET
    assert len(check_cached(maybe, [cread(100, 2.0, None)], delta=1.0, horizon=0.5)) == 1  # not
    px = WRITES[:1] + [op(1, "set", 0.5, 0.6, True, value="e", px=200, version="1500:0:S")]
    assert check_cached(px, [cread(100, 2.0, None)], delta=1.0) == []


def test_cached_reads_going_backwards() -> None:
    problems = cache_problems([cread(100, 3.0, "b", "3000:0:S", hit=False), cread(100, 3.1, "a", "1000:0:S")])
    assert len(problems) == 1 and problems[0].startswith("cache: non-monotonic read: key k:"), problems
    assert "came after p100 k get() " in problems[0]
    # Two processes may each see either, and one key's versions say nothing of another's.
    assert cache_problems([cread(100, 3.0, "b", "3000:0:S"), cread(101, 3.1, "a", "1000:0:S"),
                           cread(100, 3.2, "x", "9000:0:S", key="k2"),
                           cread(100, 3.3, "a", "1000:0:S", key="k3")],
                          history=WRITES + [op(0, "set", 3, 3.05, True, value="x", key="k2", version="9000:0:S"),
                                            op(0, "set", 3, 3.05, True, value="a", key="k3",
                                               version="1000:0:S")]) == []


def test_cached_read_of_a_value_never_written() -> None:
    problems = cache_problems([cread(100, 3.0, "zz", "3500:0:S")])
    assert len(problems) == 1 and problems[0].startswith("cache: invalid read: key k:"), problems
    assert "no SET wrote" in problems[0]
    # Written only after the read returned: invalid as well.
    assert len(cache_problems([cread(100, 1.0, "c", "6000:0:S")])) >= 1
    # An indeterminate SET's value may be read; a value under another write's version may not.
    maybe = WRITES + [op(1, "set", 5.5, None, None, value="m", status=INFO)]
    assert cache_problems([cread(100, 6.0, "m", "6500:0:S")], history=maybe) == []
    problems = cache_problems([cread(100, 3.0, "a", "3000:0:S")])
    assert any("another value with the version of p0 k set('b')" in p for p in problems), problems


def test_cached_problems_are_capped_per_kind() -> None:
    reads = [cread(100, 3.2 + i / 100, "a", "1000:0:S") for i in range(15)] + [cread(100, 9, "zz", "9999:0:S")]
    problems = cache_problems(reads)
    assert len(problems) == 16
    first = first_problems(problems, limit=10)
    assert len(first) == 12 and first[-1] == "cache: stale read: ... and 5 more"


def test_cache_lags() -> None:
    lags = cache_lags(WRITES, [cread(100, 2.5, "a", "1000:0:S"), cread(100, 3.0, "b", "3000:0:S"),
                               cread(100, 5.5, "b", "3000:0:S"), cread(100, 0.05, "a", "1000:0:S")])
    assert [round(x, 6) for x in lags] == [0.4, 0.4]  # behind b (done at 2.1), behind c (5.1)


def test_cached_hit_after_a_cut() -> None:
    def reads(*at: Tuple[float, bool]) -> List[Op]:
        return [cread(100, t, "b", "3000:0:S", hit=hit) for t, hit in at]

    # Cut at 3.0: a hit before it's noticed, then a miss that fills the cache again.
    assert cache_problems(reads((2.9, True), (3.1, True), (3.2, False), (3.6, True))) == []
    assert check_cached(WRITES, reads((2.9, True), (3.1, True), (3.2, False), (3.6, True)), delta=1.0,
                        cuts=[3.0]) == []
    problems = check_cached(WRITES, reads((2.9, True), (3.1, True), (3.6, True), (3.7, False)), delta=1.0,
                            cuts=[3.0])
    assert len(problems) == 1 and problems[0].startswith("cache: hit after a cut: key k:"), problems
    assert "0.600 s after every connection was closed" in problems[0]
    # A later cut starts over; a read of another process or key is its own.
    assert check_cached(WRITES, reads((3.1, True), (3.3, True), (3.9, False)), delta=1.0, cuts=[3.0, 3.2]) == []
    assert len(check_cached(WRITES, reads((3.2, False), (3.6, True)) + [cread(101, 3.6, "b", "3000:0:S")],
                            delta=1.0, cuts=[3.0])) == 1
    # A cut during a proxy pause reaches the client when the pause ends (4.0).
    assert check_cached(WRITES, reads((3.6, True), (4.3, True)), delta=1.0, cuts=[3.0], pauses=[(2.5, 4.0)]) == []
    assert len(check_cached(WRITES, reads((3.6, True), (4.6, True)), delta=1.0, cuts=[3.0],
                            pauses=[(2.5, 4.0)])) == 1
