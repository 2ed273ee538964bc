"""A leased lock and a fenced edit: four workers increment one counter 25 times each under
the lock; every write carries the lock's fencing token, so the total is exact.

    python lock.py [mqtt://localhost:1883]
"""

from __future__ import annotations

import sys
import threading
from typing import Optional

import mqstate


def increment(current: Optional[mqstate.Value]) -> str:
    return str(int(current.text) + 1 if current else 1)


def worker(url: str) -> None:
    with mqstate.Client(url) as client:
        lock = client.lock("counter/lock", lease=2)
        for _ in range(25):
            lock.edit("counter", increment, timeout=30)


def main(url: str) -> None:
    with mqstate.Client(url) as client:
        lock = client.lock("counter/lock", lease=5)
        with lock:  # acquire … release
            print(f"held the lock with token {lock.fencing_token}")
        # The counter is protected by the lock: every write goes through it, even the reset.
        lock.edit("counter", lambda current: "0")
        threads = [threading.Thread(target=worker, args=(url,)) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        value = client.get("counter")
        assert value is not None
        print(f"counter = {value.text} (4 workers x 25 fenced increments)")
        if value.text != "100":
            raise SystemExit(1)


if __name__ == "__main__":
    try:
        main(sys.argv[1] if len(sys.argv) > 1 else "mqtt://localhost:1883")
    except mqstate.MqstateError as e:
        print(f"error: {e} [{e.code}]", file=sys.stderr)
        sys.exit(1)
