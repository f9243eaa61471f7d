"""One webchat visitor filling rooms: what it costs the server's memory.

A web server with one webchat account runs in a process of its own (`serve`; its sink takes
each message and does nothing else, so the figure is the webchat's own). This process is the
visitor: for each of N rooms it opens a page (its own WebSocket, as a script would), joins
the room, and posts `--messages` messages of the longest allowed length in four-byte
characters. Prints, per run and as the median of the runs: rooms the visitor got, rooms
refused, and the server's RSS before and after (from /proc), and the growth per room taken.

    python bench/webchat_rooms.py [--rooms 200] [--messages 200] [--runs 3] [--scenario defaults]
    python bench/webchat_rooms.py --code /tmp/before --scenario before

Scenarios: `defaults` (the limits as shipped), `unlimited-rooms` (no rooms-per-visitor
limits: only the per-room history budget bounds memory), `before` (no new settings, for a
checkout from before the limits, run with `--code`).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from server_process import (  # type: ignore[import-not-found]
    common_arguments,
    memory_mb,
    repeat,
    serve_if_asked,
    server,
    use_code,
)

SCRIPT = str(HERE / "webchat_rooms.py")
SCENARIOS: dict[str, dict[str, Any]] = {
    "before": {},
    "defaults": {},
    "unlimited-rooms": {"rooms_per_visitor": 0, "rooms_per_connection": 0},
}


async def serve(options: dict[str, Any]) -> None:
    """A WebServer with the webchat account `main`; prints `READY <ws url>`."""
    use_code()
    from adapters.webchat import WebchatAccountConfig, WebchatAdapter
    from bridge.web.server import WebServer

    async def sink(_inbound: object) -> None:
        return None

    web = WebServer("127.0.0.1:0")
    adapter = WebchatAdapter("main", WebchatAccountConfig(**options), sink, web=web)
    await adapter.start()
    await web.start()
    print(f"READY {web.url.replace('http://', 'ws://')}{adapter.ws_path}", flush=True)
    try:
        await asyncio.Event().wait()
    finally:
        await adapter.stop()
        await web.stop()


async def fill(http: Any, url: str, room: str, messages: int) -> bool:
    """One page fills one room; False when the room was refused."""
    ws = await http.ws_connect(url, max_msg_size=0)
    try:
        hello = await ws.receive_json()
        length = int(hello["max_message_length"])
        await ws.send_json({"type": "join", "room": room, "name": "Visitor",
                            "client_id": f"c-{room}"})  # ignored where ids are issued
        while (frame := await ws.receive_json())["type"] not in ("joined", "error"):
            pass
        if frame["type"] == "error":
            return False
        for n in range(messages):
            text = f"{n:04d}" + "😀" * (length - 4)
            await ws.send_json({"type": "message", "client_message_id": f"m-{n}", "text": text})
            while (await ws.receive_json())["type"] != "ack":
                pass
        return True
    finally:
        await ws.close()


async def one_run(rooms: int, messages: int, options: dict[str, Any],
                  code: str | None) -> dict[str, float]:
    import aiohttp

    async with server(SCRIPT, "serve", json.dumps(options), code=code) as (urls, pid):
        before = memory_mb(pid)
        taken = 0
        async with aiohttp.ClientSession() as http:
            for n in range(rooms):
                taken += await fill(http, urls[0], f"room{n:04d}", messages)
        await asyncio.sleep(0.5)  # let the last frames be freed
        after = memory_mb(pid)
    return {"taken": taken, "refused": rooms - taken, "rss_before_mb": before,
            "rss_after_mb": after, "per_room_mb": (after - before) / max(1, taken)}


def show(label: str, figures: dict[str, float]) -> None:
    print(f"  {label:<8} rooms taken {figures['taken']:4.0f}  refused {figures['refused']:4.0f}  "
          f"RSS before {figures['rss_before_mb']:6.0f} MB  after {figures['rss_after_mb']:6.0f} MB"
          f"  per room taken {figures['per_room_mb']:6.2f} MB", flush=True)


async def run(rooms: int, messages: int, runs: int, scenario: str, code: str | None) -> None:
    where = f"code from {code}" if code else "this checkout"
    print(f"bench/webchat_rooms.py: one visitor, {rooms} rooms × {messages} messages, "
          f"scenario {scenario!r}, {where}")
    await repeat(runs, lambda: one_run(rooms, messages, dict(SCENARIOS[scenario]), code), show)


def main() -> None:
    if serve_if_asked(serve):
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rooms", type=int, default=200)
    parser.add_argument("--messages", type=int, default=200)
    common_arguments(parser, list(SCENARIOS))
    args = parser.parse_args()
    asyncio.run(run(args.rooms, args.messages, args.runs, args.scenario, args.code))


if __name__ == "__main__":
    main()
