"""Instructions per request from a callgrind profile (bench/instructions.sh).

    python3 callgrind_per_request.py PROFILE [TOP]

The divisor is the number of calls made to the core's `PendingMap::insert` inside the
profile's window: one per request, whatever the client. Prints the self cost of each object
(the library, libc, an interpreter, the dynamic loader) per request, their total, and the TOP
(default 12) functions by self cost per request.
"""

from __future__ import annotations

import re
import sys
from collections import defaultdict

#: The function each request calls exactly once (core/src/rpc/pending.rs).
PER_REQUEST = "PendingMap::insert"


def main() -> None:
    path = sys.argv[1]
    top = int(sys.argv[2]) if len(sys.argv) > 2 else 12
    names: dict[tuple[str, str], str] = {}

    def name(kind: str, text: str) -> str:
        # Callgrind compresses names: "(7) full name" the first time, "(7)" after.
        m = re.match(r"\((\d+)\)(?: (.*))?$", text)
        if not m:
            return text
        if m.group(2):
            names[(kind, m.group(1))] = m.group(2)
        return names.get((kind, m.group(1)), text)

    by_object: dict[str, int] = defaultdict(int)
    by_function: dict[tuple[str, str], int] = defaultdict(int)
    obj = fn = callee = ""
    call_cost_next = False
    requests = 0
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            line = line.rstrip("\n")
            if line.startswith("ob="):
                obj = name("ob", line[3:])
            elif line.startswith("fn="):
                fn = name("fn", line[3:])
            elif line.startswith("cob="):
                name("ob", line[4:])
            elif line.startswith("cfn="):
                callee = name("fn", line[4:])
            elif line.startswith("calls="):
                call_cost_next = True  # the next cost line is the call's inclusive cost
                if PER_REQUEST in callee and PER_REQUEST not in fn:
                    requests += int(line[6:].split()[0])
            elif line[:1].isdigit() or line[:1] in "+-*":
                if call_cost_next:
                    call_cost_next = False
                    continue
                parts = line.split()
                if len(parts) >= 2:
                    by_object[obj] += int(parts[1])
                    by_function[(obj, fn)] += int(parts[1])
    if requests == 0:
        sys.exit(f"{path}: no call to {PER_REQUEST} in the profile's window")
    total = sum(by_object.values())
    print(f"  {requests} requests in the window; instructions per request:")
    for o, c in sorted(by_object.items(), key=lambda kv: -kv[1]):
        if c / requests >= 50:
            print(f"  {c / requests:9.0f}  {o.rsplit('/', 1)[-1]}")
    print(f"  {total / requests:9.0f}  total")
    print(f"  the {top} costliest functions (self, per request):")
    for (o, f), c in sorted(by_function.items(), key=lambda kv: -kv[1])[:top]:
        print(f"  {c / requests:9.0f}  {f[:110]}  [{o.rsplit('/', 1)[-1]}]")


if __name__ == "__main__":
    main()
