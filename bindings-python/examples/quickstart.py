"""Quickstart: set, get, conditional set, delete — blocking and asyncio.

    python quickstart.py [mqtt://localhost:1883]
"""

from __future__ import annotations

import asyncio
import sys

import mqstate


def blocking(url: str) -> None:
    with mqstate.Client(url) as client:
        result = client.set("greeting", "hello")
        print(f"set greeting: applied={result.applied} version={result.version}")
        value = client.get("greeting")
        assert value is not None
        print(f"get greeting: {value.text!r} @ {value.version}")
        again = client.set("greeting", "bonjour", condition="nx")
        print(f"set nx on an existing key: applied={again.applied}")
        print(f"delete greeting: {client.delete('greeting')} key(s) deleted")


async def with_asyncio(url: str) -> None:
    async with mqstate.AsyncClient(url) as client:
        await client.set("greeting", b"hello from asyncio", expiry=60)
        value = await client.get("greeting")
        assert value is not None
        print(f"async get greeting: {value.value!r}")
        results = await asyncio.gather(*(client.set(f"item/{i}", str(i)) for i in range(100)))
        print(f"100 concurrent sets applied: {all(r.applied for r in results)}")


if __name__ == "__main__":
    url = sys.argv[1] if len(sys.argv) > 1 else "mqtt://localhost:1883"
    try:
        blocking(url)
        asyncio.run(with_asyncio(url))
    except mqstate.MqstateError as e:
        print(f"error: {e} [{e.code}]", file=sys.stderr)
        sys.exit(1)
