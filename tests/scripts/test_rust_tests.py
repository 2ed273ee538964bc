"""scripts/lib/rust_tests.py and scripts/lib/tally.py against a planted hang and planted
counts: a fake libtest executable (a shell script that answers `--list` as libtest does)."""

from __future__ import annotations

import os
import stat
import sys
import time
from pathlib import Path

import pytest

LIB = Path(__file__).resolve().parents[2] / "scripts" / "lib"
sys.path.insert(0, str(LIB))

import rust_tests  # noqa: E402
import tally  # noqa: E402

# Three tests: `quick` ends, `stuck` and `never` do not (libtest prints a test when it ends).
FAKE = """#!/bin/sh
if [ "$1" = --list ]; then printf 'quick: test\\nstuck: test\\nnever: test\\n'; exit 0; fi
echo "running 3 tests"
echo "test quick ... ok"
exec sleep 60
"""


@pytest.fixture
def fake_exe(tmp_path: Path) -> str:
    exe = tmp_path / "fake-tests"
    exe.write_text(FAKE)
    exe.chmod(exe.stat().st_mode | stat.S_IEXEC)
    return str(exe)


def test_a_hung_executable_is_killed_within_its_bound_naming_the_unfinished_tests(fake_exe: str) -> None:
    start = time.monotonic()
    code, text = rust_tests.run_bounded([fake_exe], None, dict(os.environ), timeout=1.0)
    assert code == 124
    assert time.monotonic() - start < 30, "killed near its bound, not after the sleep"
    assert "killed after 1 s (--timeout); unfinished: stuck, never" in text, text


def test_counts_come_from_the_runners_results(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    lines = ["test result: ok. 3 passed; 0 failed; 1 ignored;", "noise 9 passed",
             "test result: FAILED. 2 passed; 1 failed; 0 ignored;"]
    assert tally.libtest(lines) == (5, 1)
    xml = tmp_path / "r.xml"
    xml.write_text('<testsuites><testsuite><testcase name="a"/><testcase name="b"><failure/></testcase>'
                   '<testcase name="c"><skipped/></testcase><testcase name="d"><error/></testcase>'
                   "</testsuite></testsuites>")
    assert tally.junit([xml]) == (1, 2)
    counts = tmp_path / "tally"
    monkeypatch.setenv("MQSTATE_TALLY", str(counts))
    assert tally.main(["libtest", "--", "false"]) == 1
    assert tally.main(["add", "4", "0"]) == 0
    assert counts.read_text() == "0 1\n4 0\n", "a failed command with no failed test counts one"
    assert tally.main(["nonsense"]) == 2


def test_junit_with_raw_bytes_in_comments_still_counts_and_garbage_is_a_failure(tmp_path: Path) -> None:
    xml = tmp_path / "node.xml"
    xml.write_bytes(b'<testsuites><testcase name="a"/><!-- \x00\x0f\xef\xbf\xbd raw --><testcase name="b"/></testsuites>')
    assert tally.junit([xml]) == (2, 0)
    xml.write_text("<testsuites><testcase")
    assert tally.junit([xml]) == (0, 1)
    assert tally.junit([tmp_path / "missing.xml"]) == (0, 0)
