#!/usr/bin/env python3
"""Runs a test command and writes its passed and failed tests for scripts/test's summary.

    tally.py KIND -- COMMAND...   runs COMMAND, its output passed through; counts its tests;
                                  exits with COMMAND's status
    tally.py add PASSED FAILED    counts a suite's own checks

KIND says where the counts come from, never from a runner's prose:
  pytest    pytest's JUnit XML (--junitxml is added to COMMAND)
  node      node --test's JUnit reporter (added beside the command's own reporter)
  ctest     CTest's JUnit XML (--output-junit is added)
  junit=DIR the JUnit XML files COMMAND leaves in DIR (Maven's surefire-reports)
  libtest   the `test result:` lines of Rust's libtest (it has no stable machine format)

Each count is one line `PASSED FAILED` appended to the file $MQSTATE_TALLY (scripts/test
gives each step its own; without it nothing is written). A command that fails with no
failed test counted (a build error, a crash) counts as one failure.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path

INVALID_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")
LIBTEST = re.compile(r"^test result: \w+\. (\d+) passed; (\d+) failed;")


def junit(paths: list[Path]) -> tuple[int, int]:
    """Passed and failed test cases of JUnit XML files (skipped ones are neither)."""
    passed = failed = 0
    for path in paths:
        try:
            # (node's reporter copies a child's raw bytes into comments: drop what XML forbids.)
            text = INVALID_XML.sub("", path.read_bytes().decode("utf-8", "replace"))
            root = ET.fromstring(text)
        except OSError:
            continue  # none written (the command's status tells)
        except ET.ParseError as e:
            print(f"tally: {path} is not readable JUnit XML ({e}): counted as a failure", file=sys.stderr)
            failed += 1
            continue
        for case in root.iter("testcase"):
            if case.find("failure") is not None or case.find("error") is not None:
                failed += 1
            elif case.find("skipped") is None:
                passed += 1
    return passed, failed


def libtest(lines: list[str]) -> tuple[int, int]:
    """Passed and failed tests of libtest's `test result:` lines."""
    passed = failed = 0
    for line in lines:
        m = LIBTEST.match(line)
        if m:
            passed, failed = passed + int(m[1]), failed + int(m[2])
    return passed, failed


def record(passed: int, failed: int, status: int = 0) -> None:
    """Appends the counts to $MQSTATE_TALLY; a command that exited with a failing STATUS
    and no failed test counted (a build error, a crash) counts as one failure."""
    if status != 0 and failed == 0:
        failed = 1
    target = os.environ.get("MQSTATE_TALLY")
    if target:
        with open(target, "a") as f:
            f.write(f"{passed} {failed}\n")


def run(kind: str, cmd: list[str]) -> int:
    with tempfile.TemporaryDirectory() as tmp:
        xml = Path(tmp) / "junit.xml"
        if kind == "pytest":
            cmd = [*cmd, f"--junitxml={xml}"]
        elif kind == "node":
            # (Before the test files: node takes what follows them for more files.)
            cmd = [cmd[0], "--test-reporter=junit", f"--test-reporter-destination={xml}", *cmd[1:]]
        elif kind == "ctest":
            cmd = [*cmd, "--output-junit", str(xml)]
        if kind == "libtest":
            proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True, errors="replace")
            assert proc.stdout is not None
            lines = []
            for line in proc.stdout:
                sys.stdout.write(line)
                lines.append(line)
            rc = proc.wait()
            passed, failed = libtest(lines)
        else:
            rc = subprocess.run(cmd).returncode
            if kind.startswith("junit="):
                passed, failed = junit(sorted(Path(kind[6:]).glob("*.xml")))
            else:
                passed, failed = junit([xml])
    record(passed, failed, rc)
    return rc


def main(argv: list[str]) -> int:
    if len(argv) == 3 and argv[0] == "add" and argv[1].isdigit() and argv[2].isdigit():
        record(int(argv[1]), int(argv[2]))
        return 0
    kinds = ("pytest", "node", "ctest", "libtest")
    if len(argv) >= 3 and argv[1] == "--" and (argv[0] in kinds or argv[0].startswith("junit=")):
        sys.stdout.flush()
        return run(argv[0], argv[2:])
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
