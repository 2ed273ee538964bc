"""Live infrastructure for the client tests: ``mqstate serve`` (the CLI binary built by the
test script) with its embedded broker, or behind Debian's mosquitto; and a wire tap
(``mosquitto_sub`` on the request topic) to see what the client really sends."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import List, Optional

ROOT = Path(__file__).resolve().parents[2]
# The /proc listening check, shared with scripts/lib/net.sh.
sys.path.insert(0, str(ROOT / "scripts" / "lib"))
from listening import free_port as free_port, listens  # noqa: E402
REQUEST_TOPIC = "statestore/v1/FA9AE35F-2F64-47CD-9BFF-08E2B32A0FE8/command/invoke"


def mqstate_bin() -> str:
    """The ``mqstate`` CLI: ``$MQSTATE_BIN``, else the shared target directory's debug build."""
    override = os.environ.get("MQSTATE_BIN")
    if override:
        return override
    target = Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target"))
    path = target / os.environ.get("CARGO_BUILD_TARGET", "") / "debug" / "mqstate"
    if not path.exists():
        raise RuntimeError(f"{path} is missing: build it with `cargo build -p mqstate-cli`")
    return str(path)


class PortLost(RuntimeError):
    """The process exited before it listened: most often another test took its port."""


def wait_listening(proc: "subprocess.Popen[bytes]", port: int, timeout: float = 10.0) -> None:
    """Waits until ``proc`` itself listens on ``port``; :class:`PortLost` if it exits first."""
    deadline = time.monotonic() + timeout
    while not listens(proc.pid, port):
        if proc.poll() is not None:
            raise PortLost(f"the process exited ({proc.returncode}) before it listened on {port}")
        if time.monotonic() > deadline:
            raise RuntimeError(f"pid {proc.pid} does not listen on 127.0.0.1:{port} after {timeout} s")
        time.sleep(0.01)


class LiveStore:
    """A running state store: ``kind`` is ``"embedded"`` or ``"mosquitto"``; ``url`` is
    where clients connect. ``restart_store()`` restarts the service (and, embedded, its
    broker); ``restart_broker()`` restarts mosquitto."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._dir = tempfile.mkdtemp(prefix="mqstate-py-")
        self._broker: Optional[subprocess.Popen[bytes]] = None
        self._store: Optional[subprocess.Popen[bytes]] = None
        # A free port can be taken by another test before the listener binds it: then
        # start again on another one.
        for attempt in range(5):
            self.port = free_port()
            self.url = f"mqtt://127.0.0.1:{self.port}"
            try:
                if kind == "mosquitto":
                    self._start_broker()
                self._start_store()
                return
            except PortLost:
                self._stop(self._broker)
                if attempt == 4:
                    raise

    def _start_broker(self) -> None:
        conf = Path(self._dir) / "mosquitto.conf"
        lines = [
            f"listener {self.port} 127.0.0.1",
            "allow_anonymous true",
            "set_tcp_nodelay true",
            "persistence false",
            "log_dest topic",
            "log_type all",
        ]
        if os.geteuid() == 0:
            lines.append("user root")
        conf.write_text("\n".join(lines) + "\n")
        binary = shutil.which("mosquitto") or "/usr/sbin/mosquitto"
        self._broker = subprocess.Popen(
            [binary, "-c", str(conf)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        wait_listening(self._broker, self.port)

    def _start_store(self) -> None:
        args = [mqstate_bin(), "serve"]
        if self.kind == "mosquitto":
            args += ["--broker", self.url]
        else:
            args += ["--listen", f"127.0.0.1:{self.port}"]
        path = Path(self._dir) / "serve.log"
        start = path.stat().st_size if path.exists() else 0
        log = open(path, "ab")
        self._store = subprocess.Popen(args, stdout=log, stderr=log)
        # Ready once the server says so (subscribed to the request topic): a fixed pause is
        # too short on a loaded machine, and requests sent before that are lost.
        deadline = time.monotonic() + 15
        while b"state store ready" not in path.read_bytes()[start:]:
            if time.monotonic() > deadline or self._store.poll() is not None:
                said = path.read_bytes()[start:].decode(errors="replace")
                lost = self._store.poll() is not None and "in use" in said
                raise (PortLost if lost else RuntimeError)("mqstate serve not ready:\n" + said)
            time.sleep(0.02)

    def _stop(self, proc: Optional[subprocess.Popen[bytes]]) -> None:
        if proc is not None and proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()

    def stop_store(self) -> None:
        self._stop(self._store)

    def start_store(self) -> None:
        self._start_store()

    def restart_store(self) -> None:
        self.stop_store()
        self._start_store()

    def restart_broker(self) -> None:
        """Restarts mosquitto and the store behind it. The store is stopped first: a store
        left running would reconnect to the new broker, take the clients' re-registrations,
        and then be restarted, losing them."""
        assert self.kind == "mosquitto"
        self._stop(self._store)
        self._stop(self._broker)
        self._start_broker()
        self._start_store()

    def close(self) -> None:
        self._stop(self._store)
        self._stop(self._broker)
        shutil.rmtree(self._dir, ignore_errors=True)


_TAP_MARKER = b"mqstate-tap-subscribed"
"""What the wire tap publishes to its own topic to know it is subscribed."""


class Tap:
    """``mosquitto_sub`` on the request topic: every request payload, in order."""

    def __init__(self, port: int) -> None:
        self._out = tempfile.NamedTemporaryFile(prefix="mqstate-tap-", delete=False)
        # A topic of its own after the request topic: a message published there and seen
        # proves both subscriptions are in place (a fixed sleep does not, on a busy machine).
        marker = f"mqstate-tap/{os.getpid()}/{uuid.uuid4().hex}"
        self._proc = subprocess.Popen(
            ["mosquitto_sub", "-V", "mqttv5", "-p", str(port), "-h", "127.0.0.1",
             "-t", REQUEST_TOPIC, "-t", marker, "-F", "%x"],
            stdout=self._out, stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 20
        while not self._subscribed():
            if time.monotonic() > deadline:
                self.close()
                raise RuntimeError("the wire tap (mosquitto_sub) never subscribed")
            subprocess.run(
                ["mosquitto_pub", "-V", "mqttv5", "-p", str(port), "-h", "127.0.0.1",
                 "-t", marker, "-m", _TAP_MARKER.decode()],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False,
            )
            time.sleep(0.05)

    def _subscribed(self) -> bool:
        with open(self._out.name, "rb") as f:
            return _TAP_MARKER.hex().encode() in f.read()

    def payloads(self) -> List[bytes]:
        with open(self._out.name, "rb") as f:
            lines = (line.strip().decode() for line in f)
            return [bytes.fromhex(line) for line in lines if line and line != _TAP_MARKER.hex()]

    def wait_for(self, *parts: bytes, timeout: float = 5.0) -> bool:
        """Whether a request containing every one of ``parts`` was seen within ``timeout``."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if any(all(p in payload for p in parts) for payload in self.payloads()):
                return True
            time.sleep(0.05)
        return False

    def close(self) -> None:
        self._proc.terminate()
        self._proc.wait()
        os.unlink(self._out.name)
