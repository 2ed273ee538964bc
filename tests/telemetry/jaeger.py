"""Jaeger all-in-one (v2 backend, built by scripts/lib/setup/jaeger) for the telemetry tests.

`Jaeger.start()` runs it with in-memory storage on free loopback ports: its OTLP/HTTP
receiver (`otlp_endpoint`, what exporters post to) and its query HTTP API (`query_url`),
waits until the query API answers, and `trace(trace_id)` reads a trace back through the v1
query API (`GET /api/traces/{traceId}`). `stop()` (or the context manager) ends it.
"""

import json
import os
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SETUP = ROOT / "scripts" / "lib" / "setup" / "jaeger"

CONFIG = """\
service:
  extensions: [jaeger_storage, jaeger_query]
  pipelines:
    traces:
      receivers: [otlp]
      processors: [batch]
      exporters: [jaeger_storage_exporter]
  telemetry:
    metrics:
      level: none
    logs:
      level: info
extensions:
  jaeger_storage:
    backends:
      memstore:
        memory:
          max_traces: 10000
  jaeger_query:
    storage:
      traces: memstore
    http:
      endpoint: 127.0.0.1:{query}
    grpc:
      endpoint: 127.0.0.1:{query_grpc}
receivers:
  otlp:
    protocols:
      http:
        endpoint: 127.0.0.1:{otlp}
processors:
  batch:
    timeout: 100ms
exporters:
  jaeger_storage_exporter:
    trace_storage: memstore
"""


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def binary():
    """The Jaeger binary: $JAEGER_BIN, else target/tools/jaeger (built by the setup script
    when missing; minutes the first time)."""
    explicit = os.environ.get("JAEGER_BIN")
    if explicit:
        return Path(explicit)
    path = ROOT / "target" / "tools" / "jaeger"
    if not path.exists():
        subprocess.run([str(SETUP)], check=True)
    return path


class Jaeger:
    """A running Jaeger; see the module's documentation."""

    def __init__(self, process, otlp_port, query_port, workdir, log):
        self.process = process
        self.otlp_endpoint = f"http://127.0.0.1:{otlp_port}"
        self.query_url = f"http://127.0.0.1:{query_port}"
        self._workdir = workdir
        self._log = log

    @classmethod
    def start(cls, timeout=60.0):
        workdir = tempfile.TemporaryDirectory(prefix="mqstate-jaeger-")
        ports = {"otlp": free_port(), "query": free_port(), "query_grpc": free_port()}
        config = Path(workdir.name) / "jaeger.yaml"
        config.write_text(CONFIG.format(**ports))
        log = open(Path(workdir.name) / "jaeger.log", "w+b")
        process = subprocess.Popen(
            [str(binary()), "--config", f"file:{config}"],
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
        )
        jaeger = cls(process, ports["otlp"], ports["query"], workdir, log)
        try:
            jaeger._wait_ready(timeout)
        except BaseException:
            jaeger.stop()
            raise
        return jaeger

    def _wait_ready(self, timeout):
        deadline = time.monotonic() + timeout
        while True:
            if self.process.poll() is not None:
                raise RuntimeError(f"jaeger exited ({self.process.returncode}):\n{self.log()}")
            try:
                self._get("/api/services")
                # The receiver too: a GET on its path is answered (405) once it listens.
                with socket.create_connection(
                    ("127.0.0.1", int(self.otlp_endpoint.rsplit(":", 1)[1])), timeout=1
                ):
                    return
            except (OSError, urllib.error.URLError):
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"jaeger not ready within {timeout} s:\n{self.log()}")
            time.sleep(0.2)

    def _get(self, path):
        with urllib.request.urlopen(self.query_url + path, timeout=5) as answer:
            return json.load(answer)

    def trace(self, trace_id):
        """The trace `trace_id` (32 hex digits) as the v1 query API returns it (its `data[0]`,
        spans and processes), or None while Jaeger does not have it."""
        try:
            body = self._get(f"/api/traces/{trace_id}")
        except urllib.error.HTTPError as e:
            if e.code == 404:
                return None
            raise
        data = body.get("data") or []
        return data[0] if data else None

    def wait_for_span(self, trace_id, predicate, timeout=30.0):
        """Polls until the trace has a span for which `predicate(span, trace)` holds; returns
        (span, trace). Raises AssertionError with what was seen on timeout."""
        deadline = time.monotonic() + timeout
        seen = None
        while time.monotonic() < deadline:
            seen = self.trace(trace_id)
            for span in (seen or {}).get("spans", []):
                if predicate(span, seen):
                    return span, seen
            time.sleep(0.3)
        raise AssertionError(f"no matching span in trace {trace_id} within {timeout} s: {seen}")

    def log(self):
        self._log.flush()
        self._log.seek(0)
        return self._log.read().decode(errors="replace")[-4000:]

    def stop(self):
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self._log.close()
        self._workdir.cleanup()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()
