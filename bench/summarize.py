#!/usr/bin/env python3
"""Prints criterion medians of saved baselines side by side as a Markdown table.

Usage: bench/summarize.py BASELINE [BASELINE...]  (e.g. run1 run2, from
`cargo bench -p mqstate-bench -- --save-baseline run1`). Reads
$CARGO_TARGET_DIR/criterion (default: target/criterion at the project root).

For every row it prints each baseline's median time and that median divided by the median
of the group's mqstate reference row (`mqstate`, or `mqstate_payload` for notifications)
in the same baseline: above 1 is slower than mqstate, below 1 is faster.
"""

import json
import os
import sys
from pathlib import Path

REFERENCES = ("mqstate", "mqstate_payload")


def fmt_time(ns):
    if ns >= 1000:
        return f"{ns / 1000:.2f} µs"
    return f"{ns:.1f} ns"


def load(root, baseline):
    rows = {}
    for bench in root.glob(f"**/{baseline}/benchmark.json"):
        meta = json.loads(bench.read_text())
        est = json.loads((bench.parent / "estimates.json").read_text())
        rows[(meta["group_id"], meta["function_id"])] = est["median"]["point_estimate"]
    return rows


def main():
    baselines = sys.argv[1:]
    if not baselines:
        sys.exit(__doc__)
    project = Path(__file__).resolve().parent.parent
    target = Path(os.environ.get("CARGO_TARGET_DIR", project / "target"))
    root = target / "criterion"
    runs = [load(root, b) for b in baselines]
    keys = sorted(set().union(*runs), key=lambda k: (order(k[0]), k[0], row_order(k[1])))
    head = ["group", "row"]
    for b in baselines:
        head += [f"{b} median", f"{b} ÷ mqstate"]
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for group, row in keys:
        cells = [group, row]
        for run in runs:
            t = run.get((group, row))
            ref = next((run[(group, r)] for r in REFERENCES if (group, r) in run), None)
            cells.append(fmt_time(t) if t is not None else "–")
            cells.append(f"{t / ref:.2f}" if t is not None and ref else "")
        print("| " + " | ".join(cells) + " |")


def row_order(row):
    """mqstate rows first, then the comparator, then the floors."""
    ranks = ["mqstate", "mqstate_", "redis_protocol", "memcpy_prealloc", "vec_from"]
    exact = [i for i, r in enumerate(ranks) if row == r]
    prefix = [i for i, r in enumerate(ranks) if r.endswith("_") and row.startswith(r)]
    return ((exact or prefix or [99])[0], row)


def order(group):
    """Groups in the order the benchmark file defines them, sizes ascending."""
    kinds = ["encode_set", "decode_get", "decode_notification", "hlc"]
    kind, _, size = group.partition("/")
    scale = {"B": 1, "KiB": 1024}
    num = "".join(c for c in size if c.isdigit())
    unit = size[len(num):]
    return (kinds.index(kind) if kind in kinds else 99, int(num or 0) * scale.get(unit, 1))


if __name__ == "__main__":
    main()
