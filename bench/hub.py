"""The embedded hub's round trip: `channel.inbound` → echo bot `final` → `channel.deliver`.

Measured at a channel link, against the real example echo bot (single final, no
streaming). Prints round trips/s and p50/p99 latency with 1 and with N concurrent
conversations (each conversation is its own binding, waiting for its reply before
sending the next message).

    python bench/hub.py [--seconds 5] [--conversations 50] [--in-process]

By default the hub and the echo bot run as separate processes (as deployed: the hub
alone on its event loop); `--in-process` runs all three on one event loop.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bridge.bcn import Connection, Request
from bridge.hub import Hub, HubConfig

LINK_TOKEN = "bench-link-token"
CLI = ("-m", "bridge.cli")
"""The hub and the echo bot run as `bcn-bridge hub` and `bcn-bridge example-bot` do: through
the command line's own parser, so its options (logging, listen, …) cannot drift from here."""


def hub_settings(data_dir: Path) -> dict[str, Any]:
    return {
        "listen": "127.0.0.1:0",
        "data_dir": str(data_dir),
        "link_tokens": [LINK_TOKEN],
        "groups": [{"id": "bench", "name": "Bench", "driver": "Echo", "bots": ["Echo"]}],
    }


async def wait_for_bot(url: str, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    async with aiohttp.ClientSession() as http:
        while time.monotonic() < deadline:
            with contextlib.suppress(aiohttp.ClientError):
                async with http.get(url.replace("ws://", "http://") + "/healthz") as response:
                    if (await response.json())["bots_online"] >= 1:
                        return
            await asyncio.sleep(0.05)
    raise RuntimeError("the echo bot did not come online")


def cpu_seconds(pid: int) -> float | None:
    """User + system CPU time of a process so far (Linux /proc), None where unavailable."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def hub_url(process: asyncio.subprocess.Process, timeout: float = 30.0) -> str:
    """The ws:// URL from `bcn-bridge hub`'s "hub listening on URL …" line."""
    assert process.stdout is not None
    async with asyncio.timeout(timeout):
        while line := (await process.stdout.readline()).decode():
            if line.startswith("hub listening on "):
                return line.split()[3]
    raise RuntimeError(f"the hub exited (code {await process.wait()}) before it listened")


PROCESSES: dict[str, int] = {}
"""Process ids of the hub and the echo bot when they run apart, for CPU figures."""


@contextlib.asynccontextmanager
async def running_hub_and_echo(in_process: bool) -> AsyncIterator[str]:
    """Yield the hub's ws:// URL with the echo bot (single final) connected."""
    with tempfile.TemporaryDirectory() as tmp:
        settings = hub_settings(Path(tmp) / "hub")
        if in_process:
            from bridge.bcn.examples.echo import build_echo_bot

            async with Hub(HubConfig.model_validate(settings)) as hub:
                bot = build_echo_bot(hub.url + "/ws/bot", stream=False, apply_env=False)
                task = asyncio.create_task(bot.run())
                try:
                    await wait_for_bot(hub.url)
                    yield hub.url
                finally:
                    task.cancel()
                    await asyncio.gather(task, return_exceptions=True)
            return
        import yaml

        config = Path(tmp) / "hub.yaml"
        config.write_text(yaml.safe_dump({"hub": settings}))
        hub_proc = await asyncio.create_subprocess_exec(
            sys.executable, *CLI, "hub", "--config", str(config), "--log-level", "WARNING",
            cwd=ROOT, stdout=asyncio.subprocess.PIPE)
        bot_proc = None
        try:
            url = await hub_url(hub_proc)
            bot_proc = await asyncio.create_subprocess_exec(
                sys.executable, *CLI, "example-bot", "echo", "--url", url + "/ws/bot",
                "--no-stream", "--log-level", "WARNING", cwd=ROOT)
            await wait_for_bot(url)
            PROCESSES.update(hub=hub_proc.pid, echo=bot_proc.pid, client=os.getpid())
            yield url
        finally:
            PROCESSES.clear()
            for proc in (bot_proc, hub_proc):
                if proc is not None and proc.returncode is None:
                    proc.terminate()
                    await proc.wait()


class BenchLink:
    """A channel link with one binding per conversation; replies resolve waiting futures."""

    def __init__(self, conn: Connection) -> None:
        self.conn = conn
        self.waiting: dict[str, asyncio.Future[str]] = {}
        self.binding_ids: list[str] = []

    async def on_request(self, req: Request) -> dict[str, Any]:
        params = req.params
        if params.get("kind") == "final":
            future = self.waiting.pop(params.get("source_msg_id") or "", None)
            if future is not None and not future.done():
                future.set_result(params["text"])
        return {}

    async def round_trip(self, binding_id: str, msg_id: str, text: str) -> float:
        future: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        self.waiting[msg_id] = future
        started = time.perf_counter()
        await self.conn.request("channel.inbound", {
            "binding_id": binding_id, "msg_id": msg_id, "text": text,
            "sender": {"user_id": "u-bench", "name": "bench", "is_bot": False},
        })
        reply = await asyncio.wait_for(future, 10)
        elapsed = time.perf_counter() - started
        if reply != text:
            raise RuntimeError(f"echo returned {reply!r} for {text!r}")
        return elapsed


@contextlib.asynccontextmanager
async def bench_link(
    url: str, conversations: int, *, groups: list[str] | None = None, name: str = "bench",
    kind: type[BenchLink] = BenchLink, request_timeout: float = 10,
) -> AsyncIterator[BenchLink]:
    """A `kind` link named `name`: one binding per conversation in the group `bench`, or with
    `groups`, one per group (`bench/observers.py`)."""
    async with aiohttp.ClientSession() as http:
        ws = await http.ws_connect(url + "/ws/channel", max_msg_size=0)
        link = kind(Connection(ws, name=f"{name}-link", request_timeout=request_timeout))
        link.conn.on_request = link.on_request
        task = asyncio.create_task(link.conn.run())
        rooms = ([(f"{name}-{group}", group) for group in groups] if groups is not None
                 else [(f"room-{n}", "bench") for n in range(conversations)])
        bindings = [{"channel_type": "webchat", "account_ref": "bench",
                     "conversation_id": room, "group_id": group} for room, group in rooms]
        payload = await link.conn.request("channel.connect", {
            "token": LINK_TOKEN, "protocol_version": 1, "link_name": name,
            "bindings": bindings})
        link.binding_ids = [b["binding_id"] for b in payload["bindings"]]
        try:
            yield link
        finally:
            await link.conn.close()
            await asyncio.gather(task, return_exceptions=True)


async def measure(link: BenchLink, conversations: int, seconds: float) -> list[float]:
    """Each conversation sends, waits for its echo, and sends again, for `seconds`."""
    latencies: list[float] = []
    deadline = time.perf_counter() + seconds

    async def conversation(index: int) -> None:
        binding_id = link.binding_ids[index]
        n = 0
        while time.perf_counter() < deadline:
            n += 1
            latencies.append(await link.round_trip(binding_id, f"c{index}-{n}-{time.time_ns()}",
                                                   f"hello {index} #{n}"))

    await asyncio.gather(*(conversation(i) for i in range(conversations)))
    return latencies


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def report(label: str, latencies: list[float], seconds: float) -> None:
    print(f"  {label:<28} {len(latencies) / seconds:9.0f} round trips/s   "
          f"p50 {percentile(latencies, 0.5) * 1000:6.2f} ms   "
          f"p99 {percentile(latencies, 0.99) * 1000:6.2f} ms   "
          f"mean {statistics.fmean(latencies) * 1000:6.2f} ms   (n={len(latencies)})")


def report_cpu(before: dict[str, float | None], round_trips: int) -> None:
    """CPU time per round trip of each process: what the hub costs, whatever the load."""
    parts = []
    for name, pid in PROCESSES.items():
        start, end = before.get(name), cpu_seconds(pid)
        if start is not None and end is not None and round_trips:
            parts.append(f"{name} {(end - start) / round_trips * 1e6:.0f} µs")
    if parts:
        print(f"  {'':<28} CPU per round trip: {', '.join(parts)}")


async def serial_latencies(messages: int) -> list[float]:
    """One conversation, `messages` round trips, hub and echo bot in this process.

    For `bench/relay.py`, which prints the hub-only figure beside the bridge's.
    """
    async with running_hub_and_echo(in_process=True) as url, bench_link(url, 1) as link:
        for n in range(20):  # warm up
            await link.round_trip(link.binding_ids[0], f"w{n}", "warm")
        return [await link.round_trip(link.binding_ids[0], f"s{n}-{time.time_ns()}", f"m{n}")
                for n in range(messages)]


async def run(seconds: float, conversations: int, in_process: bool) -> None:
    where = "one process" if in_process else "hub, echo bot and client in separate processes"
    print(f"bench/hub.py: channel.inbound → echo final → channel.deliver ({where})")
    async with running_hub_and_echo(in_process) as url:
        async with bench_link(url, conversations) as link:
            await measure(link, conversations, min(1.0, seconds))  # warm up
            for count in (1, conversations):
                before = {name: cpu_seconds(pid) for name, pid in PROCESSES.items()}
                latencies = await measure(link, count, seconds)
                report(f"{count} conversation{'s' if count > 1 else ''}", latencies, seconds)
                report_cpu(before, len(latencies))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=5.0, help="per measurement")
    parser.add_argument("--conversations", type=int, default=50)
    parser.add_argument("--in-process", action="store_true",
                        help="run hub, echo bot and client on one event loop")
    args = parser.parse_args()
    if args.seconds <= 0 or args.conversations < 1:
        parser.error("--seconds must be > 0 and --conversations >= 1")
    asyncio.run(run(args.seconds, args.conversations, args.in_process))


if __name__ == "__main__":
    main()
