"""Observe a key: every change, in order, with its version; the subscription closes (and
the store stops notifying) when the ``async with`` block ends.

    python observe.py [mqtt://localhost:1883]
"""

from __future__ import annotations

import asyncio
import sys

import mqstate


async def main(url: str) -> None:
    async with mqstate.AsyncClient(url) as watcher, mqstate.AsyncClient(url) as writer:
        async with watcher.observe("sensor/temperature") as changes:
            for reading in ("20.5", "21.0", "21.5"):
                await writer.set("sensor/temperature", reading)
            await writer.delete("sensor/temperature")
            seen = 0
            async for event in changes:
                if isinstance(event, mqstate.ConnectionEvent):
                    print(f"connection {event.kind}: {event.reason}")
                    continue
                # A Change here: observe() yields Change | ConnectionEvent.
                print(f"{event.kind:6} {event.text} @ {event.version}")
                seen += 1
                if seen == 4:
                    break


if __name__ == "__main__":
    try:
        asyncio.run(main(sys.argv[1] if len(sys.argv) > 1 else "mqtt://localhost:1883"))
    except mqstate.MqstateError as e:
        print(f"error: {e} [{e.code}]", file=sys.stderr)
        sys.exit(1)
