"""One SET/GET/KEYNOTIFY round against a state store, spoken with paho-mqtt (MQTT 5).

Usage: python paho_round.py HOST PORT CLIENT_ID [--no-notify-subscription]

Exits 0 after the round succeeded; prints what went wrong and exits 1 otherwise (a
connection that never completes, e.g. a CONNACK paho rejects, is a failure after 10 s).
"""

import queue
import sys
import time
import uuid

import paho.mqtt.client as mqtt
from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.properties import Properties

REQUEST_TOPIC = "statestore/v1/FA9AE35F-2F64-47CD-9BFF-08E2B32A0FE8/command/invoke"
NOTIFY_PREFIX = "clients/statestore/v1/FA9AE35F-2F64-47CD-9BFF-08E2B32A0FE8"
WAIT = 10.0


def resp(*args):
    out = b"*%d\r\n" % len(args)
    for arg in args:
        out += b"$%d\r\n%s\r\n" % (len(arg), arg)
    return out


def main():
    host, port, client_id = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    subscribe_notifications = "--no-notify-subscription" not in sys.argv[4:]
    response_topic = f"clients/{client_id}/services/{REQUEST_TOPIC}/response"
    notify_filter = f"{NOTIFY_PREFIX}/{client_id.encode().hex().upper()}/command/notify/+"

    events = queue.Queue()
    client = mqtt.Client(
        mqtt.CallbackAPIVersion.VERSION2, client_id=client_id, protocol=mqtt.MQTTv5
    )
    client.on_connect = lambda c, u, flags, rc, props: events.put(("connack", rc))
    client.on_subscribe = lambda c, u, mid, rcs, props: events.put(("suback", rcs))
    client.on_message = lambda c, u, msg: events.put(("message", msg))
    client.connect(host, port, keepalive=30)
    client.loop_start()

    def wait_for(kind):
        deadline = time.monotonic() + WAIT
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise SystemExit(f"paho: no {kind} within {WAIT} s")
            try:
                got, value = events.get(timeout=left)
            except queue.Empty:
                continue
            if got == kind:
                return value
            if got == "message":
                pending.append(value)

    pending = []
    rc = wait_for("connack")
    if rc.is_failure:
        raise SystemExit(f"paho: connection refused: {rc}")
    filters = [(response_topic, 1)]
    if subscribe_notifications:
        filters.append((notify_filter, 1))
    client.subscribe(filters)
    wait_for("suback")

    def request(*args):
        correlation = uuid.uuid4().bytes
        props = Properties(PacketTypes.PUBLISH)
        props.ResponseTopic = response_topic
        props.CorrelationData = correlation
        props.ContentType = "application/octet-stream"
        props.MessageExpiryInterval = 10
        now = int(time.time() * 1000)
        props.UserProperty = [
            ("__srcId", client_id),
            ("__ts", f"{now:015d}:00000:{client_id}"),
            ("__protVer", "1.0"),
        ]
        client.publish(REQUEST_TOPIC, resp(*args), qos=1, properties=props)
        deadline = time.monotonic() + WAIT
        while time.monotonic() < deadline:
            msg = wait_for("message")
            if getattr(msg.properties, "CorrelationData", None) == correlation:
                user = dict(getattr(msg.properties, "UserProperty", []))
                if user.get("__stat") != "200":
                    raise SystemExit(f"paho: {args[0]!r} answered {user}")
                return msg.payload
            pending.append(msg)
        raise SystemExit(f"paho: no response to {args[0]!r}")

    key = f"paho-{client_id}".encode()
    expect(request(b"SET", key, b"v1"), b"+OK\r\n")
    expect(request(b"GET", key), b"$2\r\nv1\r\n")
    expect(request(b"KEYNOTIFY", key), b"+OK\r\n")
    expect(request(b"SET", key, b"v2"), b"+OK\r\n")
    topic = f"{NOTIFY_PREFIX}/{client_id.encode().hex().upper()}/command/notify/{key.hex().upper()}"
    deadline = time.monotonic() + WAIT
    while True:
        while pending:
            msg = pending.pop(0)
            if msg.topic == topic:
                expect(msg.payload, b"*4\r\n$6\r\nNOTIFY\r\n$3\r\nSET\r\n$5\r\nVALUE\r\n$2\r\nv2\r\n")
                client.disconnect()
                client.loop_stop()
                print("paho-mqtt: SET/GET/KEYNOTIFY round ok")
                return
        if time.monotonic() > deadline:
            raise SystemExit("paho: no notification")
        pending.append(wait_for("message"))


def expect(got, want):
    if got != want:
        raise SystemExit(f"paho: got {got!r}, want {want!r}")


if __name__ == "__main__":
    main()
