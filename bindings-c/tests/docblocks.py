#!/usr/bin/env python3
"""Compiles and runs every ```c block of every README and docs page against a live store.

The blocks are extracted by `scripts/lib/docblocks extract c DIR` (the one list every suite
uses). A block with its own `main` is a whole program: its `mqtt://localhost:1883` is
pointed at the live store (MQSTATE_URL) and it must exit 0. Any other block is a fragment
that uses a connected `mqstate_client *client`: it becomes the body of a function that
`tests/docblock.h` calls with a client connected to MQSTATE_URL. Each is compiled as C11
with -Wall -Wextra -Werror against the header and the static library, with `#line`
directives so that a compiler error points into the page.

    docblocks.py --root REPO --cc CC --include DIR --lib LIBMQSTATE_A --work DIR
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
from pathlib import Path

URL = "mqtt://localhost:1883"
BLOCK_NAME = re.compile(r"^(?P<page>.+)-L(?P<line>\d+)\.c$")


def pages_by_name(root: Path) -> dict[str, Path]:
    """Maps an extracted block's page part (`bindings-c_README`) back to its page."""
    out = subprocess.run(
        ["git", "ls-files", "*.md"], cwd=root, capture_output=True, text=True, check=False
    ).stdout.split()
    paths = [Path(p) for p in out] or [p.relative_to(root) for p in root.rglob("*.md")]
    return {str(p).replace("/", "_").removesuffix(".md"): p for p in paths}


def program_source(code: str, page: Path, line: int, url: str) -> str:
    return f'#line {line} "{page}"\n' + code.replace(URL, url)


def fragment_source(code: str, page: Path, line: int) -> str:
    return (
        '#include "docblock.h"\n\n'
        "static void docblock(mqstate_client *client) {\n"
        f'#line {line} "{page}"\n'
        f"{code}"
        "}\n\n"
        "int main(void) { return docblock_run(docblock); }\n"
    )


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--root", required=True, type=Path)
    ap.add_argument("--cc", required=True)
    ap.add_argument("--include", required=True, type=Path)
    ap.add_argument("--lib", required=True, type=Path)
    ap.add_argument("--work", required=True, type=Path)
    args = ap.parse_args()
    url = os.environ.get("MQSTATE_URL")
    if not url:
        print("MQSTATE_URL must name a live store", file=sys.stderr)
        return 1

    extracted = args.work / "extracted"
    extracted.mkdir(parents=True, exist_ok=True)
    for old in extracted.glob("*.c"):
        old.unlink()
    listing = subprocess.run(
        [sys.executable, str(args.root / "scripts" / "lib" / "docblocks"), "extract", "c", str(extracted)],
        capture_output=True, text=True, check=True,
    ).stdout.split()
    pages = pages_by_name(args.root)
    tests_dir = Path(__file__).resolve().parent

    failed = 0
    ran = 0
    for path in map(Path, listing):
        m = BLOCK_NAME.match(path.name)
        if not m or m.group("page") not in pages:
            print(f"{path.name}: cannot tell which page it came from", file=sys.stderr)
            failed += 1
            continue
        page, line = pages[m.group("page")], int(m.group("line"))
        code = path.read_text(encoding="utf-8")
        whole = re.search(r"\bint\s+main\s*\(", code) is not None
        source = program_source(code, page, line, url) if whole else fragment_source(code, page, line)
        c_file = args.work / path.name
        c_file.write_text(source, encoding="utf-8")
        exe = args.work / path.stem
        compile_cmd = [
            args.cc, "-std=c11", "-D_POSIX_C_SOURCE=200809L", "-Wall", "-Wextra", "-Werror",
            f"-I{args.include}", f"-I{tests_dir}", str(c_file), str(args.lib),
            "-lpthread", "-ldl", "-lm", "-o", str(exe),
        ]
        where = f"{page}:{line}"
        built = subprocess.run(compile_cmd, capture_output=True, text=True, check=False)
        if built.returncode != 0:
            print(f"{where}: does not compile:\n{built.stderr}", file=sys.stderr)
            failed += 1
            continue
        run = subprocess.run([str(exe)], capture_output=True, text=True, check=False, timeout=120)
        ran += 1
        if run.returncode != 0:
            print(f"{where}: exited {run.returncode}:\n{run.stdout}{run.stderr}", file=sys.stderr)
            failed += 1
            continue
        kind = "program" if whole else "fragment"
        print(f"{where}: {kind} compiled and ran")
    if not listing:
        print("no C blocks found", file=sys.stderr)
        return 1
    print(f"docblocks: {len(listing)} C blocks, {ran} ran, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
