"""The system under test: ``mqstate serve`` with its embedded broker, or behind Debian's
mosquitto (``--broker``), always with ``--data-dir`` (every write of the workload asks for
persistence), on free loopback ports; started, killed with SIGKILL and restarted."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import List, Optional

ROOT = Path(__file__).resolve().parents[3]


def mqstate_bin() -> str:
    """``$MQSTATE_BIN``, else the debug build in ``$CARGO_TARGET_DIR`` (or ``target/``)."""
    override = os.environ.get("MQSTATE_BIN")
    if override:
        return override
    path = Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target")) / "debug" / "mqstate"
    if not path.exists():
        raise RuntimeError(f"{path} is missing: build it with `cargo build -p mqstate-cli`")
    return str(path)


# The harnesses' one free_port() (scripts/lib/listening.py).
sys.path.insert(0, str(ROOT / "scripts" / "lib"))
from listening import free_port as free_port  # noqa: E402


def wait_port(port: int, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.02)
    raise RuntimeError(f"nothing listens on 127.0.0.1:{port} after {timeout} s")


class Cluster:
    """``broker`` False: the embedded broker; True: mosquitto on its own port."""

    def __init__(self, workdir: Path, broker: bool = False) -> None:
        self.workdir = workdir
        self.data_dir = workdir / "data"
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.use_broker = broker
        self.port = free_port()
        self.store_restarts = 0
        self.store_kills = 0
        self.broker_restarts = 0
        self.restart_times: List[float] = []  # time.monotonic() of each restart of the store
        # time.monotonic() once each kill (of the store, or of mosquitto) had closed its connections
        self.kill_times: List[float] = []
        self._store: Optional[subprocess.Popen[bytes]] = None
        self._broker: Optional[subprocess.Popen[bytes]] = None
        if broker:
            self._start_broker()
        self._start_store()

    @property
    def url(self) -> str:
        return f"mqtt://127.0.0.1:{self.port}"

    # ---- mosquitto ----------------------------------------------------------------------

    def _start_broker(self) -> None:
        conf = self.workdir / "mosquitto.conf"
        lines = [f"listener {self.port} 127.0.0.1", "allow_anonymous true",
                 "set_tcp_nodelay true", "persistence false", "log_dest none"]
        if os.geteuid() == 0:
            lines.append("user root")
        conf.write_text("\n".join(lines) + "\n")
        binary = shutil.which("mosquitto") or "/usr/sbin/mosquitto"
        deadline = time.monotonic() + 10
        while True:
            self._broker = subprocess.Popen([binary, "-c", str(conf)],
                                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            try:
                wait_port(self.port, 3)
                return
            except RuntimeError:
                # The port may still be held by the killed broker's sockets for a moment.
                self._broker.kill()
                self._broker.wait()
                if time.monotonic() > deadline:
                    raise

    def restart_broker(self) -> None:
        """SIGKILL mosquitto and start it again on the same port (the store reconnects)."""
        assert self._broker is not None
        self._broker.send_signal(signal.SIGKILL)
        self._broker.wait()
        self.kill_times.append(time.monotonic())
        self._start_broker()
        self.broker_restarts += 1

    # ---- the store ----------------------------------------------------------------------

    def _start_store(self) -> None:
        args: List[str] = [mqstate_bin(), "serve", "--data-dir", str(self.data_dir)]
        if self.use_broker:
            args += ["--broker", self.url]
        else:
            args += ["--listen", f"127.0.0.1:{self.port}"]
        path = self.workdir / "serve.log"
        start = path.stat().st_size if path.exists() else 0
        with open(path, "ab") as log:
            self._store = subprocess.Popen(args, stdout=log, stderr=log)
        deadline = time.monotonic() + 20
        while b"state store ready" not in path.read_bytes()[start:]:
            if time.monotonic() > deadline or self._store.poll() is not None:
                raise RuntimeError("mqstate serve not ready:\n"
                                   + path.read_bytes()[start:].decode(errors="replace")[-4000:])
            time.sleep(0.02)

    def kill_store(self) -> None:
        """SIGKILL: no flush, no goodbye. Behind mosquitto the clients' connections stay up
        (they are to mosquitto), so the kill is no cut for them."""
        assert self._store is not None
        self._store.send_signal(signal.SIGKILL)
        self._store.wait()
        if not self.use_broker:
            self.kill_times.append(time.monotonic())
        self.store_kills += 1

    def start_store(self) -> None:
        self.restart_times.append(time.monotonic())
        self._start_store()
        self.store_restarts += 1

    def store_alive(self) -> bool:
        return self._store is not None and self._store.poll() is None

    def close(self) -> None:
        for proc in (self._store, self._broker):
            if proc is not None and proc.poll() is None:
                proc.terminate()
                try:
                    proc.wait(5)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
