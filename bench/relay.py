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
the CPU figures are the servers' alone, read from /proc. The relay and the hub alone run side
by side and take turns (`--rounds`, 5 by default: a fifth of the messages, then of the
seconds, each in turn), so a busy moment of the shared machine weighs on both figures of a
ratio alike.

    python bench/relay.py [--messages 500] [--conversations 50] [--seconds 5] [--rounds 5]
    python bench/relay.py --code DIR [--conversations 50] [--seconds 16] [--rounds 8]

With `--code DIR` it measures something else: the relay of this checkout beside the relay of
another checkout (DIR, e.g. `git archive <commit> | tar -x -C DIR`), both at `--conversations`
at once and taking turns, and prints the ratio of their CPU per round trip — what a change to
the relay path costs or saves, against the code before it in the same run.

With `--instructions` (valgrind needed) it counts instead of timing: each server runs under
callgrind, which counts the instructions it executes while `--trips` round trips go through
at `--conversations` at once (start-up and warm-up not counted), and it prints instructions
per round trip for the relay and the hub alone — or, with `--code DIR` too, for this
checkout's relay and that one's. The count barely moves with the machine's speed or load, so
a change worth 1-2% shows where timed runs spread ±5%; but it leaves out what the CPU waits
for (cache misses, system calls), so it complements the timed figures, never replaces them.

    python bench/relay.py --instructions [--code DIR] [--trips 1000] [--conversations 50]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import shutil
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
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
async def server(*args: str, code: str | None = None,
                 under: Sequence[str] = ()) -> AsyncIterator[tuple[str, int]]:
    """A `bench/serve.py` process (of the checkout `code`, if given): its URL and pid."""
    script = str(Path(code) / "bench" / "serve.py") if code else SERVE
    async with server_process.server(script, *args, code=code, under=under) as (words, pid):
        yield words[0], pid


class Cpu:
    """CPU seconds of some processes between `start()` and `spent()`."""

    def __init__(self, *pids: int) -> None:
        self.pids = pids
        self.started = 0.0

    def _now(self) -> float:
        return sum(cpu_seconds(pid) or 0.0 for pid in self.pids)

    def start(self) -> None:
        self.started = self._now()

    def spent(self) -> float:
        return self._now() - self.started


async def tabs_for(session: aiohttp.ClientSession, url: str, rooms: int) -> list[Tab]:
    tabs = [Tab(await session.ws_connect(url), f"room{n}") for n in range(rooms)]
    for tab in tabs:
        await tab.join()
    return tabs


class Figures:
    """Latencies, round trips and server CPU of one setup, summed over the rounds."""

    def __init__(self, *pids: int) -> None:
        self.cpu = Cpu(*pids)
        self.serial: list[float] = []
        self.concurrent: list[float] = []
        self.serial_cpu_s = self.concurrent_cpu_s = self.concurrent_s = 0.0

    @property
    def serial_cpu(self) -> float:
        return self.serial_cpu_s / max(1, len(self.serial))

    @property
    def concurrent_cpu(self) -> float:
        return self.concurrent_cpu_s / max(1, len(self.concurrent))

    @property
    def rate(self) -> float:
        return len(self.concurrent) / max(self.concurrent_s, 1e-9)

    async def serial_round(self, round_trip: RoundTrip, messages: int) -> None:
        self.cpu.start()
        for _ in range(messages):
            self.serial.append(await round_trip(0))
        self.serial_cpu_s += self.cpu.spent()

    async def concurrent_round(self, round_trip: RoundTrip, conversations: int,
                               seconds: float) -> None:
        deadline = time.perf_counter() + seconds

        async def drive(index: int) -> None:
            while time.perf_counter() < deadline:
                self.concurrent.append(await round_trip(index))

        self.cpu.start()
        started = time.perf_counter()
        await asyncio.gather(*(drive(i) for i in range(conversations)))
        self.concurrent_s += time.perf_counter() - started
        self.concurrent_cpu_s += self.cpu.spent()


RoundTrip = Callable[[int], Awaitable[float]]
"""One round trip in conversation `index`; returns its latency in seconds."""


@contextlib.asynccontextmanager
async def relay_driver(session: aiohttp.ClientSession, url: str,
                       conversations: int) -> AsyncIterator[RoundTrip]:
    """Browser tabs, one per room, warmed up: round trips through the webchat."""
    tabs = await tabs_for(session, url, conversations)
    for _ in range(50):
        await tabs[0].round_trip()
    yield lambda index: tabs[index].round_trip()


@contextlib.asynccontextmanager
async def hub_driver(url: str, conversations: int) -> AsyncIterator[RoundTrip]:
    """A raw channel link with one binding per conversation, warmed up."""
    async with bench_link(url, conversations) as link:
        for n in range(50):
            await link.round_trip(link.binding_ids[0], f"w{n}", "warm")
        counts = [0] * conversations

        async def round_trip(index: int) -> float:
            counts[index] += 1
            return await link.round_trip(
                link.binding_ids[index], f"c{index}-{counts[index]}-{time.time_ns()}",
                f"hi {index} {counts[index]}")

        yield round_trip


async def alternate(setups: list[tuple[Figures, RoundTrip]], rounds: int, messages: int,
                    conversations: int, seconds: float) -> None:
    """Every setup in turn, round after round: a busy moment of the shared machine then
    falls on all of them alike instead of on whichever ran alone at that time. With no
    `messages`, only the concurrent rounds run."""
    for _ in range(rounds if messages else 0):
        for figures, round_trip in setups:
            await figures.serial_round(round_trip, max(1, messages // rounds))
    for _ in range(rounds):
        for figures, round_trip in setups:
            await figures.concurrent_round(round_trip, conversations, seconds / rounds)


def line(label: str, figures: Figures, key: str) -> str:
    latencies = figures.serial if key == "serial" else figures.concurrent
    cpu = figures.serial_cpu if key == "serial" else figures.concurrent_cpu
    rate = f"{figures.rate:7.0f} rt/s  " if key == "concurrent" else " " * 14
    return (f"  {label:<34}{rate}p50 {percentile(latencies, 0.5) * 1000:6.2f} ms   "
            f"p99 {percentile(latencies, 0.99) * 1000:6.2f} ms   "
            f"server CPU/rt {cpu * 1000:5.2f} ms")


async def run(messages: int, conversations: int, seconds: float, rounds: int) -> None:
    async with server("hub") as (hub_url, hub_pid), \
            server("relay", "--rooms", str(conversations)) as (url, pid), \
            aiohttp.ClientSession() as session, \
            relay_driver(session, url, conversations) as relay_trip, \
            hub_driver(hub_url, conversations) as hub_trip:
        relay, hub = Figures(pid), Figures(hub_pid)
        await alternate([(relay, relay_trip), (hub, hub_trip)], rounds, messages,
                        conversations, seconds)
    async with server("hub") as (hub_url, hub_pid), \
            server("relay", "--rooms", str(conversations), "--hub", hub_url) as (url, pid), \
            aiohttp.ClientSession() as session, \
            relay_driver(session, url, conversations) as apart_trip:
        apart = Figures(pid, hub_pid)
        await alternate([(apart, apart_trip)], 1, messages, conversations, seconds)
    serial_ratio = relay.serial_cpu / hub.serial_cpu
    concurrent_ratio = relay.concurrent_cpu / hub.concurrent_cpu
    added = percentile(relay.serial, 0.5) - percentile(hub.serial, 0.5)
    print("webchat → bridge → hub → echo → hub → bridge → webchat, beside the hub alone "
          f"(servers on {loop_name()}; relay and hub-only alternate in {rounds} rounds)")
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


async def compare(code: str, conversations: int, seconds: float, rounds: int) -> None:
    """This checkout's relay beside the relay of another checkout (`code`), taking turns at
    `conversations` at once: what a change does to the relay's CPU, in the same run."""
    async with server("relay", "--rooms", str(conversations)) as (url, pid), \
            server("relay", "--rooms", str(conversations), code=code) as (other_url, other_pid), \
            aiohttp.ClientSession() as session, \
            relay_driver(session, url, conversations) as this_trip, \
            relay_driver(session, other_url, conversations) as other_trip:
        this, other = Figures(pid), Figures(other_pid)
        await alternate([(this, this_trip), (other, other_trip)], rounds, 0, conversations,
                        seconds)
    print(f"the relay of this checkout beside that of {code}, {conversations} conversations "
          f"at once, {seconds:g} s each (servers on {loop_name()}; taking turns in {rounds} "
          "rounds)")
    print(line("relay, this checkout", this, "concurrent"))
    print(line("relay, the other checkout", other, "concurrent"))
    print(f"  => this checkout's CPU/rt = {this.concurrent_cpu / other.concurrent_cpu:.3f}x "
          "the other's")


class Counted:
    """A server run under callgrind, counting only while `run` drives its round trips."""

    def __init__(self, out: Path) -> None:
        self.out = out
        self.trips = 0

    @property
    def under(self) -> tuple[str, ...]:
        return ("valgrind", "--tool=callgrind", "--instr-atstart=no",
                f"--callgrind-out-file={self.out}", f"--log-file={self.out}.log")

    async def run(self, session: aiohttp.ClientSession, mode: str, conversations: int,
                  trips: int, code: str | None = None) -> None:
        """Start a `mode` server (relay or hub) under callgrind, warm it up, then count
        `trips` round trips at `conversations` at once."""
        rooms = ("--rooms", str(conversations)) if mode == "relay" else ()
        async with server(mode, *rooms, code=code, under=self.under) as (url, pid), \
                (relay_driver(session, url, conversations) if mode == "relay"
                 else hub_driver(url, conversations)) as round_trip:
            each = max(1, trips // conversations)

            async def drive(index: int) -> None:
                for _ in range(each):
                    await round_trip(index)

            await _callgrind_control("-i", "on", str(pid))
            await asyncio.gather(*(drive(i) for i in range(conversations)))
            await _callgrind_control("-i", "off", str(pid))
            self.trips += each * conversations

    def per_trip(self) -> float:
        """Instructions per round trip, from the file callgrind writes when the server ends."""
        for text in reversed(self.out.read_text().splitlines()):
            if text.startswith("totals:"):
                return int(text.split()[1]) / max(1, self.trips)
        raise RuntimeError(f"{self.out} holds no instruction count")


async def _callgrind_control(*args: str) -> None:
    process = await asyncio.create_subprocess_exec(
        "callgrind_control", *args, stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.DEVNULL)
    if await process.wait() != 0:
        raise RuntimeError(f"callgrind_control {' '.join(args)} failed")


async def count_instructions(code: str | None, conversations: int, trips: int) -> None:
    """Instructions per round trip: the relay beside the hub alone, or (with `code`) this
    checkout's relay beside that one's."""
    if shutil.which("valgrind") is None or shutil.which("callgrind_control") is None:
        raise SystemExit("--instructions needs valgrind (e.g. apt-get install valgrind)")
    with tempfile.TemporaryDirectory() as scratch:
        first, second = Counted(Path(scratch) / "first"), Counted(Path(scratch) / "second")
        async with aiohttp.ClientSession() as session:
            await first.run(session, "relay", conversations, trips)
            await second.run(session, "relay" if code else "hub", conversations, trips, code)
        mine, theirs = first.per_trip(), second.per_trip()
    other = f"relay of {code}" if code else "hub only (hub+echo, 1 process)"
    print(f"instructions per round trip (callgrind), {first.trips} round trips each at "
          f"{conversations} conversations at once (servers on {loop_name()})")
    print(f"  {'relay (bridge+hub+echo, 1 process)':<40}{mine:12,.0f}")
    print(f"  {other:<40}{theirs:12,.0f}")
    print(f"  => {mine / theirs:.3f}x")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=500)
    parser.add_argument("--conversations", type=int, default=50)
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--rounds", type=int, default=5,
                        help="the relay and the hub alone take turns this many times")
    parser.add_argument("--code", help="instead: this checkout's relay beside the relay of "
                        "this other checkout (e.g. `git archive <commit> | tar -x -C DIR`)")
    parser.add_argument("--instructions", action="store_true",
                        help="instead: count instructions per round trip under callgrind")
    parser.add_argument("--trips", type=int, default=1000,
                        help="with --instructions: round trips counted on each server")
    args = parser.parse_args()
    if args.instructions:
        asyncio.run(count_instructions(args.code, args.conversations, args.trips))
        return
    if args.code:
        asyncio.run(compare(args.code, args.conversations, args.seconds, args.rounds))
        return
    asyncio.run(run(args.messages, args.conversations, args.seconds, args.rounds))


if __name__ == "__main__":
    main()
