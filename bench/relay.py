"""Webchat → bridge → hub → echo bot → hub → bridge → webchat, beside the hub alone.

Prints, for the same run and the same machine load:

- one conversation at a time: p50/p99 latency, and the server's CPU time per round trip,
  for the relay (bridge + embedded hub + echo bot in one server process, driven at the
  webchat WebSocket as a browser would) and for the hub alone (hub + echo bot in one
  process, driven at a raw channel link) — and the ratio of the two CPU figures, which is
  what the bridge costs on top of the hub whatever else the machine is doing;
- N conversations at once: round trips/s, latency and CPU per round trip, both ways;
- the relay with the hub as its own process (bridge process → hub process → echo bot).

The client always runs in this process and the servers in their own (`bench/serve.py`), so
the CPU figures are the servers' alone, read from /proc.

    python bench/relay.py [--messages 500] [--conversations 50] [--seconds 5]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

import server_process  # type: ignore[import-not-found]
from hub import bench_link, cpu_seconds, percentile  # type: ignore[import-not-found]

sys.path.insert(0, str(ROOT))
from bridge.event_loop import loop_name

SERVE = str(ROOT / "bench" / "serve.py")


class Tab:
    """One browser tab in one room."""

    def __init__(self, ws: aiohttp.ClientWebSocketResponse, room: str) -> None:
        self.ws, self.room, self.counter = ws, room, 0

    async def join(self) -> None:
        await self.ws.receive_json()  # hello
        await self.ws.send_str(json.dumps({"type": "join", "room": self.room, "name": "Bench",
                                           "client_id": f"bench-{self.room}"}))
        while (await self.ws.receive_json())["type"] != "joined":
            pass

    async def round_trip(self) -> float:
        self.counter += 1
        text = f"ping {self.room} {self.counter}"
        started = time.perf_counter()
        await self.ws.send_str(json.dumps({"type": "message", "text": text,
                                           "client_message_id": f"{self.room}-{self.counter}"}))
        while True:
            data = (await self.ws.receive()).data
            if '"final"' not in data:
                # The echo of our own message and its ack: not parsed, so the client (which
                # stands in for browsers on other machines) takes less of the cores the
                # servers share with it.
                continue
            frame = json.loads(data)
            message = frame.get("message") or {}
            if (message.get("kind") == "final" and message.get("sender", {}).get("name") == "Echo"
                    and text in (message.get("html") or "")):
                return time.perf_counter() - started


@contextlib.asynccontextmanager
async def server(*args: str) -> AsyncIterator[tuple[str, int]]:
    """A `bench/serve.py` process: its URL and pid."""
    async with server_process.server(SERVE, *args) as (words, pid):
        yield words[0], pid


class Cpu:
    """CPU seconds of some processes between `start()` and `per(round_trips)`."""

    def __init__(self, *pids: int) -> None:
        self.pids = pids
        self.started = 0.0

    def _now(self) -> float:
        return sum(cpu_seconds(pid) or 0.0 for pid in self.pids)

    def start(self) -> None:
        self.started = self._now()

    def per(self, round_trips: int) -> float:
        return (self._now() - self.started) / max(1, round_trips)


async def tabs_for(session: aiohttp.ClientSession, url: str, rooms: int) -> list[Tab]:
    tabs = [Tab(await session.ws_connect(url), f"room{n}") for n in range(rooms)]
    for tab in tabs:
        await tab.join()
    return tabs


async def relay_figures(url: str, pids: tuple[int, ...], messages: int, conversations: int,
                        seconds: float) -> dict[str, object]:
    cpu = Cpu(*pids)
    async with aiohttp.ClientSession() as session:
        tabs = await tabs_for(session, url, conversations)
        for _ in range(50):  # warm up
            await tabs[0].round_trip()
        cpu.start()
        serial = [await tabs[0].round_trip() for _ in range(messages)]
        serial_cpu = cpu.per(messages)
        concurrent: list[float] = []
        deadline = time.perf_counter() + seconds

        async def drive(tab: Tab) -> None:
            while time.perf_counter() < deadline:
                concurrent.append(await tab.round_trip())

        cpu.start()
        started = time.perf_counter()
        await asyncio.gather(*(drive(tab) for tab in tabs))
        elapsed = time.perf_counter() - started
        return {"serial": serial, "serial_cpu": serial_cpu, "concurrent": concurrent,
                "rate": len(concurrent) / elapsed, "concurrent_cpu": cpu.per(len(concurrent))}


async def hub_figures(url: str, pid: int, messages: int, conversations: int,
                      seconds: float) -> dict[str, object]:
    cpu = Cpu(pid)
    async with bench_link(url, conversations) as link:
        for n in range(50):
            await link.round_trip(link.binding_ids[0], f"w{n}", "warm")
        cpu.start()
        serial = [await link.round_trip(link.binding_ids[0], f"s{n}-{time.time_ns()}", f"m{n}")
                  for n in range(messages)]
        serial_cpu = cpu.per(messages)
        concurrent: list[float] = []
        deadline = time.perf_counter() + seconds

        async def drive(index: int) -> None:
            n = 0
            while time.perf_counter() < deadline:
                n += 1
                concurrent.append(await link.round_trip(
                    link.binding_ids[index], f"c{index}-{n}-{time.time_ns()}", f"hi {index} {n}"))

        cpu.start()
        started = time.perf_counter()
        await asyncio.gather(*(drive(i) for i in range(conversations)))
        elapsed = time.perf_counter() - started
        return {"serial": serial, "serial_cpu": serial_cpu, "concurrent": concurrent,
                "rate": len(concurrent) / elapsed, "concurrent_cpu": cpu.per(len(concurrent))}


def line(label: str, figures: dict[str, object], key: str) -> str:
    latencies = figures["serial" if key == "serial" else "concurrent"]
    assert isinstance(latencies, list)
    cpu = figures[f"{key}_cpu"]
    assert isinstance(cpu, float)
    rate = f"{figures['rate']:7.0f} rt/s  " if key == "concurrent" else " " * 14
    return (f"  {label:<34}{rate}p50 {percentile(latencies, 0.5) * 1000:6.2f} ms   "
            f"p99 {percentile(latencies, 0.99) * 1000:6.2f} ms   "
            f"server CPU/rt {cpu * 1000:5.2f} ms")


async def run(messages: int, conversations: int, seconds: float) -> None:
    async with server("hub") as (hub_url, hub_pid):
        hub = await hub_figures(hub_url, hub_pid, messages, conversations, seconds)
    async with server("relay", "--rooms", str(conversations)) as (url, pid):
        relay = await relay_figures(url, (pid,), messages, conversations, seconds)
    async with server("hub") as (hub_url, hub_pid), \
            server("relay", "--rooms", str(conversations), "--hub", hub_url) as (url, pid):
        apart = await relay_figures(url, (pid, hub_pid), messages, conversations, seconds)
    serial_ratio = relay["serial_cpu"] / hub["serial_cpu"]  # type: ignore[operator]
    concurrent_ratio = relay["concurrent_cpu"] / hub["concurrent_cpu"]  # type: ignore[operator]
    added = percentile(relay["serial"], 0.5) - percentile(hub["serial"], 0.5)  # type: ignore[arg-type]
    print("webchat → bridge → hub → echo → hub → bridge → webchat, beside the hub alone "
          f"(servers on {loop_name()})")
    print(f" one conversation, {messages} messages one at a time:")
    print(line("relay (bridge+hub+echo, 1 process)", relay, "serial"))
    print(line("hub only (hub+echo, 1 process)", hub, "serial"))
    print(f"  => the bridge adds {added * 1000:.2f} ms at p50; relay CPU/rt = "
          f"{serial_ratio:.2f}x hub-only CPU/rt")
    print(f" {conversations} conversations at once, {seconds:g} s:")
    print(line("relay (bridge+hub+echo, 1 process)", relay, "concurrent"))
    print(line("hub only (hub+echo, 1 process)", hub, "concurrent"))
    print(f"  => relay CPU/rt = {concurrent_ratio:.2f}x hub-only CPU/rt")
    print(line("relay, hub in its own process", apart, "concurrent"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=500)
    parser.add_argument("--conversations", type=int, default=50)
    parser.add_argument("--seconds", type=float, default=5.0)
    args = parser.parse_args()
    asyncio.run(run(args.messages, args.conversations, args.seconds))


if __name__ == "__main__":
    main()
