"""Docs that run: every ```python block of every README and docs page (as
``scripts/lib/docblocks extract python`` finds them) passes ``mypy --strict`` and runs, as
written, against a live store (its URL substituted for ``mqtt://localhost:1883``). A block
that is a pytest file (it defines ``test_…`` functions) runs under pytest, with the
package's plugin (its fixtures), and every test in it must pass."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from typing import List

import pytest

from live import LiveStore
from mqstate import _mqstate

ROOT = Path(__file__).resolve().parents[2]
DOCBLOCKS = ROOT / "scripts" / "lib" / "docblocks"
README_URL = "mqtt://localhost:1883"


@pytest.fixture(scope="module")
def blocks(tmp_path_factory: pytest.TempPathFactory) -> List[Path]:
    out = tmp_path_factory.mktemp("docblocks")
    listed = subprocess.run(
        [sys.executable, str(DOCBLOCKS), "extract", "python", str(out)],
        check=True, capture_output=True, text=True,
    ).stdout.split()
    # mypy wants module names: one per block, from its page and line.
    paths = []
    for i, name in enumerate(sorted(listed)):
        path = Path(name)
        target = path.with_name(f"block_{i:02d}_{path.stem.replace('-', '_').replace('.', '_')}.py")
        path.rename(target)
        paths.append(target)
    return paths


def test_the_pages_still_have_their_python_examples(blocks: List[Path]) -> None:
    assert len(blocks) >= 7, [p.name for p in blocks]
    assert any("README" in p.name and "bindings_python" in p.name for p in blocks)


def test_every_block_passes_mypy_strict(blocks: List[Path]) -> None:
    from mypy import api

    cache = ROOT / "bindings-python" / ".mypy_cache"
    stdout, stderr, status = api.run(
        ["--strict", "--cache-dir", str(cache), "--no-error-summary", *map(str, blocks)]
    )
    assert status == 0, stdout + stderr


#: A block that is a pytest file.
PYTEST_FILE = re.compile(r"^(async )?def test_", re.MULTILINE)


def test_every_block_runs_against_a_live_store(blocks: List[Path], embedded: LiveStore) -> None:
    for path in blocks:
        code = path.read_text(encoding="utf-8").replace(README_URL, embedded.url)
        if PYTEST_FILE.search(code):
            run_under_pytest(path, code)
            continue
        compiled = compile(code, str(path), "exec")
        try:
            exec(compiled, {"__name__": "__main__"})
        except Exception as e:  # name the block: the page and line are in its file name
            raise AssertionError(f"{path.name} failed: {e!r}") from e


def run_under_pytest(path: Path, code: str) -> None:
    test_file = path.with_name(f"test_{path.name}")
    test_file.write_text(code, encoding="utf-8")
    tests = len(PYTEST_FILE.findall(code))
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--rootdir", str(path.parent), str(test_file)],
        capture_output=True, text=True, cwd=path.parent,
    )
    assert done.returncode == 0 and f"{tests} passed" in done.stdout, f"{path.name} under pytest:\n{done.stdout}{done.stderr}"


def test_the_pages_have_a_pytest_example(blocks: List[Path]) -> None:
    assert any(PYTEST_FILE.search(p.read_text(encoding="utf-8")) for p in blocks)


def test_the_readme_names_every_setting() -> None:
    text = (ROOT / "bindings-python" / "README.md").read_text(encoding="utf-8")
    missing = [name for name, _ in _mqstate.setting_names() if f"`{name}`" not in text]
    assert not missing, f"the README's settings lack {missing}"
