"""GET/SET load through the Python clients, for docs/benchmarks.md (run by bench/bindings.sh).

    python bench.py URL CLIENT DEPTH SECONDS

CLIENT is ``mqstate`` (the asyncio client: DEPTH tasks each keeping one request in flight)
or ``paho`` (a paho-mqtt 2 request/response loop doing the same exchange with the spec §2
envelope: DEPTH requests kept outstanding, correlated by correlation data; TCP_NODELAY on). Half SETs, half
GETs of 16-byte values over 1000 keys, like ``mqstate bench``. Prints one line:
``CLIENT DEPTH OPS_PER_S``.
"""

from __future__ import annotations

import asyncio
import os
import sys
import threading
import time
import uuid

import mqstate
from mqstate import codec

KEYS = [f"bench/{i}" for i in range(1000)]
VALUE = b"v" * 16


async def run_mqstate(url: str, depth: int, seconds: float) -> float:
    async with mqstate.AsyncClient(url, request_timeout=10) as client:
        done = 0
        stop = time.monotonic() + seconds

        async def worker(n: int) -> None:
            nonlocal done
            i = n
            while time.monotonic() < stop:
                key = KEYS[i % len(KEYS)]
                if i % 2:
                    await client.set(key, VALUE)
                else:
                    await client.get(key)
                done += 1
                i += depth

        await asyncio.gather(*(worker(n) for n in range(depth)))
        return done / seconds


def run_paho(url: str, depth: int, seconds: float) -> float:
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
    done = 0
    pending: set[bytes] = set()

    def on_message(_c: object, _u: object, msg: "paho.MQTTMessage") -> None:
        nonlocal done
        corr = msg.properties.CorrelationData
        with lock:
            if corr in pending:
                pending.discard(corr)
                done += 1
                slots.release()

    client = paho.Client(paho.CallbackAPIVersion.VERSION2, client_id=client_id, protocol=paho.MQTTv5)
    client.on_message = on_message
    client.on_subscribe = lambda *a: subscribed.set()
    client.connect(host, int(port))
    # paho leaves Nagle's algorithm on (a 40 ms floor per round trip): turn it off, as mqstate
    # does, so that the loop is the best paho can do.
    import socket as _socket

    client.socket().setsockopt(_socket.IPPROTO_TCP, _socket.TCP_NODELAY, 1)
    client.loop_start()
    client.subscribe(response_topic, qos=1)
    subscribed.wait(10)
    stop = time.monotonic() + seconds
    i = 0
    while time.monotonic() < stop:
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
    rate = done / seconds
    client.loop_stop()
    client.disconnect()
    return rate


def main() -> None:
    url, which, depth, seconds = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
    if which == "mqstate":
        rate = asyncio.run(run_mqstate(url, depth, seconds))
    else:
        rate = run_paho(url, depth, seconds)
    print(f"{which} {depth} {rate:.0f}")
    sys.stdout.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
