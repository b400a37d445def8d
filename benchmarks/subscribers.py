"""WebSocket subscribers for the live-events benchmark, in a process of their own.

`python -m benchmarks.subscribers '<json spec>'`, the spec a list of
`{"url": ws://..., "key": ..., "count": n}`. Connects every subscriber, prints `ready`,
then notes when each `message.appended` frame arrives (`time.monotonic()`, one clock for
every process on the machine). A line on stdin ends it: it prints one JSON object,
`{message_id: [arrival, ...]}`, and closes the sockets.

A separate process, so that reading the frames does not hold the appender's GIL.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from collections import defaultdict
from typing import Any

from websockets.asyncio.client import ClientConnection, connect


async def subscribe(url: str, key: str) -> ClientConnection:
    ws = await connect(url, additional_headers={"Authorization": f"Bearer {key}"},
                       max_queue=None)
    hello = json.loads(await ws.recv())
    if hello.get("type") != "subscribed":
        raise RuntimeError(f"not subscribed: {hello}")
    return ws


async def listen(ws: ClientConnection, arrivals: dict[str, list[float]]) -> None:
    async for text in ws:
        now = time.monotonic()
        frame = json.loads(text)
        if frame.get("type") == "message.appended":
            arrivals[frame["data"]["message"]["id"]].append(now)


async def main(spec: list[dict[str, Any]]) -> None:
    sockets = [await subscribe(item["url"], item["key"])
               for item in spec for _ in range(int(item["count"]))]
    arrivals: dict[str, list[float]] = defaultdict(list)
    tasks = [asyncio.create_task(listen(ws, arrivals)) for ws in sockets]
    print("ready", flush=True)
    await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)
    await asyncio.sleep(0.5)  # the last frames may still be on their way
    for task in tasks:
        task.cancel()
    await asyncio.gather(*(ws.close() for ws in sockets), return_exceptions=True)
    print(json.dumps(arrivals), flush=True)


if __name__ == "__main__":
    asyncio.run(main(json.loads(sys.argv[1])))
