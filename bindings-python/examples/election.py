"""Leader election: three candidates; one leads, resigns, and the next takes over. A
follower watches the leadership change.

    python election.py [mqtt://localhost:1883]
"""

from __future__ import annotations

import asyncio
import sys

import mqstate


async def candidate(url: str, name: str, turns: "asyncio.Queue[str]") -> None:
    async with mqstate.AsyncClient(url) as client:
        election = client.election("pump-controller", name, term=3)
        async with election:  # campaign (waits for its turn) … resign
            print(f"{name} leads (token {election.fencing_token})")
            await turns.put(name)
            await asyncio.sleep(0.2)


async def main(url: str) -> None:
    turns: "asyncio.Queue[str]" = asyncio.Queue()
    async with mqstate.AsyncClient(url) as observer:
        async with observer.election("pump-controller", "observer").watch_leader() as leaders:
            await asyncio.gather(*(candidate(url, f"node-{i}", turns) for i in range(3)))
            order = [turns.get_nowait() for _ in range(3)]
            print(f"leaders in turn: {order}")
            while True:
                event = await leaders.next(timeout=5)
                if isinstance(event, mqstate.HolderChange) and event.holder is None:
                    print("nobody leads now")
                    break


if __name__ == "__main__":
    try:
        asyncio.run(main(sys.argv[1] if len(sys.argv) > 1 else "mqtt://localhost:1883"))
    except mqstate.MqstateError as e:
        print(f"error: {e} [{e.code}]", file=sys.stderr)
        sys.exit(1)
