"""GET/SET load through the Python clients, for docs/benchmarks.md (run by bench/bindings.sh).

    python bench/bindings/python/bench.py URL CLIENT DEPTH SECONDS [WATCH_PID]

CLIENT is ``mqstate`` (the asyncio client: DEPTH tasks each keeping one request in flight),
``blocking`` (the blocking client: DEPTH threads sharing one ``Client``, each with one call
in flight) or ``paho`` (a paho-mqtt 2 request/response loop doing the same exchange with the
spec §2 envelope: DEPTH requests kept outstanding, correlated by correlation data;
TCP_NODELAY on). Half SETs, half GETs of 16-byte values over 1000 keys, like ``mqstate
bench``; 1 s of warm-up, then SECONDS measured. Prints one line:
``CLIENT DEPTH OPS_PER_S CPU_US_PER_OP WATCHED_CPU_US_PER_OP``: the CPU time (user + system)
of this process, and of process WATCH_PID (the store) if given, per request over the
measured window (``-`` when not measured).
"""

from __future__ import annotations

import asyncio
import os
import sys
import threading
import time
import uuid
from typing import Callable, Optional

import mqstate
from mqstate import codec

KEYS = [f"bench/{i}" for i in range(1000)]
VALUE = b"v" * 16
WARMUP = 1.0


def cpu_ticks(pid: Optional[int]) -> Optional[int]:
    """User + system CPU of process ``pid`` in clock ticks (None: unreadable)."""
    if pid is None:
        return None
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return int(fields[11]) + int(fields[12])
    except (OSError, IndexError, ValueError):
        return None


class Window:
    """The measured window: requests counted and CPU read between ``start`` and ``stop``."""

    def __init__(self, watch: Optional[int]) -> None:
        self.watch = watch
        self.measuring = False
        self.done = 0

    def start(self) -> None:
        self.cpu0 = time.process_time()
        self.watched0 = cpu_ticks(self.watch)
        self.t0 = time.monotonic()
        self.done = 0
        self.measuring = True

    def stop(self) -> str:
        self.measuring = False
        elapsed = time.monotonic() - self.t0
        ops = max(self.done, 1)
        cpu = (time.process_time() - self.cpu0) * 1e6 / ops
        after = cpu_ticks(self.watch)
        watched = (
            f"{(after - self.watched0) * 1e6 / os.sysconf('SC_CLK_TCK') / ops:.1f}"
            if after is not None and self.watched0 is not None
            else "-"
        )
        return f"{self.done / elapsed:.0f} {cpu:.1f} {watched}"


async def run_asyncio(url: str, depth: int, seconds: float, window: Window) -> str:
    async with mqstate.AsyncClient(url, request_timeout=10) as client:
        stop = False

        async def worker(n: int) -> None:
            i = n
            while not stop:
                key = KEYS[i % len(KEYS)]
                if i % 2:
                    await client.set(key, VALUE)
                else:
                    await client.get(key)
                if window.measuring:
                    window.done += 1
                i += depth

        workers = asyncio.gather(*(worker(n) for n in range(depth)))
        await asyncio.sleep(WARMUP)
        window.start()
        await asyncio.sleep(seconds)
        line = window.stop()
        stop = True
        await workers
        return line


def run_threads(depth: int, seconds: float, window: Window, op: Callable[[int], None]) -> str:
    """DEPTH threads each running ``op(i)`` in a loop; the window as in ``run_asyncio``."""
    stop = threading.Event()
    lock = threading.Lock()

    def worker(n: int) -> None:
        i = n
        while not stop.is_set():
            op(i)
            if window.measuring:
                with lock:
                    window.done += 1
            i += depth

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(depth)]
    for t in threads:
        t.start()
    time.sleep(WARMUP)
    window.start()
    time.sleep(seconds)
    line = window.stop()
    stop.set()
    for t in threads:
        t.join()
    return line


def run_blocking(url: str, depth: int, seconds: float, window: Window) -> str:
    with mqstate.Client(url, request_timeout=10) as client:

        def op(i: int) -> None:
            key = KEYS[i % len(KEYS)]
            if i % 2:
                client.set(key, VALUE)
            else:
                client.get(key)

        return run_threads(depth, seconds, window, op)


def run_paho(url: str, depth: int, seconds: float, window: Window) -> str:
    import socket

    import paho.mqtt.client as paho
    from paho.mqtt.packettypes import PacketTypes
    from paho.mqtt.properties import Properties

    host, port = url.removeprefix("mqtt://").rsplit(":", 1)
    client_id = f"paho-bench-{uuid.uuid4().hex[:8]}"
    response_topic = mqstate.topics.response_topic(client_id)
    clock = mqstate.hlc.Clock(client_id)
    slots = threading.Semaphore(depth)
    subscribed = threading.Event()
    lock = threading.Lock()
    pending: set[bytes] = set()

    def on_message(_c: object, _u: object, msg: "paho.MQTTMessage") -> None:
        corr = msg.properties.CorrelationData
        with lock:
            if corr in pending:
                pending.discard(corr)
                if window.measuring:
                    window.done += 1
                slots.release()

    client = paho.Client(paho.CallbackAPIVersion.VERSION2, client_id=client_id, protocol=paho.MQTTv5)
    client.on_message = on_message
    client.on_subscribe = lambda *a: subscribed.set()
    client.connect(host, int(port))
    # paho leaves Nagle's algorithm on (a 40 ms floor per round trip): turn it off, as mqstate
    # does, so that the loop is the best paho can do.
    client.socket().setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    client.loop_start()
    client.subscribe(response_topic, qos=1)
    subscribed.wait(10)
    started = time.monotonic()
    line = ""
    i = 0
    while True:
        now = time.monotonic()
        if not window.measuring and not line and now >= started + WARMUP:
            window.start()
        if window.measuring and now >= started + WARMUP + seconds:
            line = window.stop()
            break
        if not slots.acquire(timeout=0.1):
            continue
        key = KEYS[i % len(KEYS)].encode()
        payload = codec.encode_set(key, VALUE) if i % 2 else codec.encode_get(key)
        corr = uuid.uuid4().bytes
        props = Properties(PacketTypes.PUBLISH)
        props.ResponseTopic = response_topic
        props.CorrelationData = corr
        props.ContentType = "application/octet-stream"
        props.MessageExpiryInterval = 10
        props.UserProperty = [
            ("__srcId", client_id),
            ("__ts", str(clock.tick())),
            ("__protVer", "1.0"),
            ("$partition", client_id),
            ("$high_priority", ""),
        ]
        with lock:
            pending.add(corr)
        client.publish(mqstate.topics.REQUEST_TOPIC, payload, qos=1, properties=props)
        i += 1
    client.loop_stop()
    client.disconnect()
    return line


def main() -> None:
    url, which, depth, seconds = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
    window = Window(int(sys.argv[5]) if len(sys.argv) > 5 else None)
    if which == "mqstate":
        line = asyncio.run(run_asyncio(url, depth, seconds, window))
    elif which == "blocking":
        line = run_blocking(url, depth, seconds, window)
    else:
        line = run_paho(url, depth, seconds, window)
    print(f"{which} {depth} {line}")
    sys.stdout.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
