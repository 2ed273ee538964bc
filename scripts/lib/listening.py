#!/usr/bin/env python3
"""Whether a process itself listens on a TCP port (Linux ``/proc``), for the harnesses that
start servers: a connect alone also succeeds when another process took the port and the
one started is exiting with "address in use", and the test would then talk to someone
else's server. Used by ``scripts/lib/net.sh`` (``wait_port``) and the Python binding's
``tests/live.py``; the Rust (``tests/src/listening.rs``) and Node (``test/live.mjs``)
harnesses have the same check in their own language.

    scripts/lib/listening.py PID PORT [SECONDS]   exit 0 once PID listens on PORT; 1 when
                                                  PID exits first or SECONDS (10) pass
    scripts/lib/listening.py --free-port          prints a loopback port free now

It also holds the one ``free_port()`` of the Python and shell harnesses (``tests/live.py``,
``mqjepsen``, ``bench/modes.py``, ``net.sh``).
"""

from __future__ import annotations

import os
import socket
import sys
import time
from pathlib import Path
from typing import Set


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now (the kernel's pick)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def listens(pid: int, port: int) -> bool:
    """Whether process ``pid`` holds a socket in state LISTEN on ``port`` (IPv4 or IPv6)."""
    inodes: Set[str] = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            rows = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for row in rows:
            cols = row.split()
            if len(cols) > 9 and cols[1].endswith(f":{port:04X}") and cols[3] == "0A":
                inodes.add(f"socket:[{cols[9]}]")
    if not inodes:
        return False
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return False
    for fd in fds:
        try:
            if os.readlink(f"/proc/{pid}/fd/{fd}") in inodes:
                return True
        except OSError:
            continue
    return False


def exited(pid: int) -> bool:
    """Whether process ``pid`` is gone, or a zombie its parent has not reaped yet."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except (OSError, IndexError):
        return True


def main(argv: list[str]) -> int:
    if argv[:1] == ["--free-port"]:
        print(free_port())
        return 0
    pid, port = int(argv[0]), int(argv[1])
    deadline = time.monotonic() + float(argv[2] if len(argv) > 2 else 10)
    while not listens(pid, port):
        if exited(pid) or time.monotonic() > deadline:
            return 1
        time.sleep(0.02)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
