"""The README's examples run as written (against a live store, its URL substituted);
fragments with a top-level ``await`` are compiled only."""

from __future__ import annotations

import ast
import inspect
import re
from pathlib import Path

import mqstate
from live import LiveStore

README = Path(__file__).resolve().parents[1] / "README.md"


def test_readme_examples_run(embedded: LiveStore) -> None:
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), re.S)
    assert len(blocks) >= 5, "README lost its python examples"
    ran = 0
    for block in blocks:
        code = block.replace("mqtt://localhost:1883", embedded.url)
        compiled = compile(code, str(README), "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
        if compiled.co_flags & inspect.CO_COROUTINE:
            continue
        with mqstate.Client(embedded.url) as client:
            exec(compiled, {"client": client, "mqstate": mqstate})
        ran += 1
    assert ran >= 4
