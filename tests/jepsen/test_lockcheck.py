"""The lock scenarios' chain check, on planted chains."""

from __future__ import annotations

from mqjepsen.lockcheck import _check_chain


def test_tokens_in_order_pass() -> None:
    chain = ["100:0:S/a/1", "100:1:S/b/1", "200:0:S/a/2"]
    assert _check_chain(chain, set(chain)) == []


def test_older_token_after_newer_is_reported() -> None:
    chain = ["100:0:S/a/1", "200:0:S/b/1", "150:3:S/a/2"]
    problems = _check_chain(chain, set(chain))
    assert len(problems) == 1 and "older token" in problems[0]


def test_ghost_and_duplicate_writes_are_reported() -> None:
    chain = ["100:0:S/a/1", "100:0:S/a/1", "300:0:S/z/9"]
    problems = _check_chain(chain, {"100:0:S/a/1"})
    assert any("twice" in p for p in problems)
    assert any("no process wrote" in p for p in problems)
