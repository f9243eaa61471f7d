"""Webchat → bridge → hub → echo bot → hub → bridge → webchat: latency and throughput.

Prints p50/p99 round-trip latency with one conversation at a time and throughput with many
conversations at once, measured at the webchat WebSocket exactly as a browser sees it.
Beside it, the same echo round trip measured at the hub's channel link (`bench/hub.py`'s
measurement when present), so the bridge's own overhead shows.

    python bench/relay.py [--messages 300] [--conversations 50]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

import aiohttp

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bridge.app import BridgeApp
from bridge.config.schema import BridgeConfig
from bridge.core import registry
from bridge.demo import start_demo_bots

STORE = ""


def bench_config(data_dir: Path, rooms: int) -> BridgeConfig:
    return BridgeConfig.model_validate({
        "hub": {"listen": "127.0.0.1:0", "data_dir": str(data_dir / "hub"),
                "bot_reply_default": "observe",
                "groups": [{"id": "bench", "driver": "Echo", "bots": ["Echo", "Rules"],
                            "auto_join": True}]},
        "bcn": {"url": "embedded"},
        "store": STORE or f"sqlite:///{data_dir / 'bridge.db'}",
        "web": {"listen": "127.0.0.1:0"},
        "bindings": [{"channel": "webchat:main", "chat": f"room{n}", "group": "bench",
                      "protocol": {"enabled": False}} for n in range(rooms)],
    }).model_copy(
        update={"accounts": {"webchat": {"main": registry.account_config_model("webchat")()}}}
    )


class Tab:
    """One browser tab in one room."""

    def __init__(self, ws: aiohttp.ClientWebSocketResponse, room: str) -> None:
        self.ws, self.room, self.counter = ws, room, 0

    async def join(self) -> None:
        await self.ws.receive_json()  # hello
        await self.ws.send_json({"type": "join", "room": self.room, "name": "Bench",
                                 "client_id": f"bench-{self.room}"})
        while (await self.ws.receive_json())["type"] != "joined":
            pass

    async def round_trip(self) -> float:
        self.counter += 1
        text = f"ping {self.room} {self.counter}"
        started = time.perf_counter()
        await self.ws.send_json({"type": "message", "text": text,
                                 "client_message_id": f"{self.room}-{self.counter}"})
        while True:
            frame = await self.ws.receive_json()
            message = frame.get("message") or {}
            sender = message.get("sender") or {}
            if (frame["type"] in ("message", "update") and sender.get("name") == "Echo"
                    and message.get("kind") == "final" and text in json.dumps(message)):
                return time.perf_counter() - started


BENCH_DIR = str(Path(__file__).resolve().parent)


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


async def run(messages: int, conversations: int) -> None:
    with tempfile.TemporaryDirectory() as scratch:
        data_dir = Path(scratch)
        app = BridgeApp(bench_config(data_dir, conversations))
        await app.start()
        bots = await start_demo_bots(app.bcn_url, data_dir, stream=False)
        await asyncio.sleep(0.3)
        url = f"{app.web.url}/webchat/main/ws"
        try:
            async with aiohttp.ClientSession() as session:
                tabs = [Tab(await session.ws_connect(url), f"room{n}")
                        for n in range(conversations)]
                for tab in tabs:
                    await tab.join()
                for _ in range(20):  # warm up
                    await tabs[0].round_trip()
                serial = [await tabs[0].round_trip() for _ in range(messages)]
                per_tab = max(1, messages // conversations * 2)
                concurrent: list[float] = []
                started = time.perf_counter()

                async def drive(tab: Tab) -> None:
                    for _ in range(per_tab):
                        concurrent.append(await tab.round_trip())

                await asyncio.gather(*(drive(tab) for tab in tabs))
                elapsed = time.perf_counter() - started
        finally:
            for bot in bots:
                await bot.stop()
            await app.stop()
    print("webchat → bridge → hub → echo bot → hub → bridge → webchat")
    print(f"  1 conversation, {messages} messages one at a time:")
    print(f"    p50 {percentile(serial, 0.5) * 1000:7.2f} ms   p99 "
          f"{percentile(serial, 0.99) * 1000:7.2f} ms   mean "
          f"{statistics.mean(serial) * 1000:7.2f} ms")
    print(f"  {conversations} conversations at once, {len(concurrent)} round trips:")
    print(f"    {len(concurrent) / elapsed:8.0f} round trips/s   p50 "
          f"{percentile(concurrent, 0.5) * 1000:7.2f} ms   p99 "
          f"{percentile(concurrent, 0.99) * 1000:7.2f} ms")
    hub_p50 = await hub_only_p50(messages)
    if hub_p50 is not None:
        print(f"  hub only (channel link → echo → channel link) p50 {hub_p50 * 1000:7.2f} ms")
        print(f"  => the bridge + webchat add {(percentile(serial, 0.5) - hub_p50) * 1000:.2f} ms"
              " at p50")


async def hub_only_p50(messages: int) -> float | None:
    """The hub-only figure from bench/hub.py, when it offers a function for it."""
    try:
        sys.path.insert(0, BENCH_DIR)
        import hub as hub_bench  # type: ignore[import-not-found]
    except ImportError:
        return None
    measure = getattr(hub_bench, "serial_latencies", None)
    if measure is None:
        return None
    latencies = await measure(messages)
    return percentile(latencies, 0.5)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=300)
    parser.add_argument("--conversations", type=int, default=50)
    args = parser.parse_args()
    asyncio.run(run(args.messages, args.conversations))


if __name__ == "__main__":
    main()
