#!/usr/bin/env python3
"""No import circles between the top-level modules of a crate.

A module that uses another which uses it back (client -> observe -> client) can be read,
tested and moved only together with it. For each crate source folder given, this finds
which top-level modules use which (``crate::m``, ``super::…`` resolved, ``crate::Name`` through
the names the crate root re-exports, ``use crate::{a, b}``), leaving out comments, strings,
``#[cfg(test)] mod`` blocks and public re-exports (``pub use``: a facade for a public path,
not a dependency), and prints every circle (a strongly connected set of two or more). Exits 1
if there is one.

    scripts/lib/module_cycles.py core/src server/src …

Its own test (a planted circle) is tests/scripts/test_module_cycles.py.
"""

from __future__ import annotations

import os
import re
import sys
from collections import defaultdict
from typing import Dict, List, Set

Graph = Dict[str, Set[str]]


def module_path(src: str, path: str) -> List[str]:
    """``src/a/b.rs`` -> ``["a", "b"]``; ``mod.rs`` is its folder; the crate root is ``[]``."""
    parts = os.path.relpath(path, src)[: -len(".rs")].split(os.sep)
    if parts[-1] == "mod":
        parts = parts[:-1]
    return [] if parts in (["lib"], ["main"]) else parts


def code_only(text: str) -> str:
    """The text without comments, string contents, public re-exports and test modules."""
    text = re.sub(r"//[^\n]*", "", text)
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    text = re.sub(r'"(?:\\.|[^"\\])*"', '""', text)
    text = re.sub(r"\bpub(\([^)]*\))?\s+use\s[^;]*;", "", text)
    out, i = [], 0
    test_mod = re.compile(r"#\[cfg\(test\)\]\s*(?:pub(?:\([^)]*\))?\s+)?mod\s+\w+\s*\{")
    while (m := test_mod.search(text, i)) is not None:
        out.append(text[i : m.start()])
        j, depth = m.end(), 1
        while depth and j < len(text):
            depth += {"{": 1, "}": -1}.get(text[j], 0)
            j += 1
        i = j
    out.append(text[i:])
    return "".join(out)


def root_names(src: str, tops: Set[str]) -> Dict[str, str]:
    """Names the crate root re-exports, and the module each comes from."""
    names: Dict[str, str] = {}
    for root in ("lib.rs", "main.rs"):
        path = os.path.join(src, root)
        if not os.path.exists(path):
            continue
        text = re.sub(r"//[^\n]*", "", open(path, encoding="utf-8").read())
        for m in re.finditer(r"\bpub\s+use\s+(?:crate::)?(\w+)::([^;]*);", text):
            if m.group(1) in tops:
                for name in re.findall(r"\b([A-Za-z_]\w*)\b", m.group(2)):
                    if name not in ("self", "as"):
                        names.setdefault(name, m.group(1))
    return names


def graph(src: str) -> Graph:
    """Which top-level module of the crate at ``src`` uses which."""
    files = [
        os.path.join(d, f) for d, _, fs in os.walk(src) for f in fs if f.endswith(".rs")
    ]
    tops = {p[0] for p in (module_path(src, f) for f in files) if p}
    names = root_names(src, tops)
    edges: Graph = defaultdict(set)

    def add(frm: str, target: List[str]) -> None:
        if target and target[0] not in tops:
            target = [names.get(target[0], target[0])]
        if target and target[0] in tops and target[0] != frm:
            edges[frm].add(target[0])

    for f in files:
        here = module_path(src, f)
        if not here:
            continue
        text = code_only(open(f, encoding="utf-8").read())
        for m in re.finditer(r"\b((?:crate|super)(?:::(?:super|\w+))*)", text):
            path = m.group(1).split("::")
            if path[0] == "crate":
                add(here[0], path[1:])
            else:
                ups = 0
                while ups < len(path) and path[ups] == "super":
                    ups += 1
                add(here[0], here[: max(len(here) - ups, 0)] + path[ups:])
        for m in re.finditer(r"\bcrate::\{([^}]*)\}", text):
            for name in re.findall(r"(?:^|,)\s*(\w+)", m.group(1)):
                add(here[0], [name])
    return edges


def circles(edges: Graph) -> List[List[str]]:
    """The strongly connected sets of two or more modules (Tarjan)."""
    index: Dict[str, int] = {}
    low: Dict[str, int] = {}
    stack: List[str] = []
    on_stack: Set[str] = set()
    found: List[List[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for v in sorted(set(edges) | {w for ws in edges.values() for w in ws}):
        if v not in index:
            visit(v)
    return found


def check(srcs: List[str]) -> int:
    bad = 0
    for src in srcs:
        edges = graph(src)
        for group in circles(edges):
            bad += 1
            uses = "; ".join(f"{m} uses {', '.join(sorted(edges[m] & set(group)))}" for m in group)
            print(f"module_cycles: {src}: circle {' <-> '.join(group)} ({uses})")
    if bad == 0:
        print(f"module_cycles: no circle in {len(srcs)} crates")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(check(sys.argv[1:]))
