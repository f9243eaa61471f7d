"""Matrix round trip against a real Synapse: a person's message → the bot's reply event, as
the person's client sees it (`/sync` long poll).

Starts one Synapse (SQLite, as the tests do: tests/support/synapse.py), a whole bridge
(embedded hub, Matrix account, the example Echo bot) and a person in a bound room, then for
each run sends `--trips` messages one after another and times each until the person's sync
returns Echo's reply. Prints p50/p95 per run and the median of the runs. `--stream` keeps
the Echo bot's default streaming (the first event of the reply is timed: the message that
then grows); by default Echo answers in one piece.

    python bench/matrix_roundtrip.py [--runs 3] [--trips 50] [--stream]
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("NO_PROXY", "127.0.0.1,localhost")

import yaml
from mautrix.api import Method
from mautrix.api import Path as ApiPath

from adapters.matrix.registration import registration
from bridge.app import BridgeApp
from bridge.config.schema import BridgeConfig
from bridge.demo import start_demo_bots
from tests.matrix.matrix_support import BRIDGE_USER, Homeserver, Person, account_config
from tests.support.bridge_process import free_port
from tests.support.running_bridge import demo_hub
from tests.support.synapse import start_synapse

ECHO = "@bcn_echo:localhost"


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))]


class Sync:
    """The person's client: a `/sync` long poll that yields Echo's new messages."""

    def __init__(self, person: Person, room_id: str, stream: bool) -> None:
        self.person, self.room_id, self.stream = person, room_id, stream
        self.since: str | None = None

    async def catch_up(self) -> None:
        await self._sync(timeout=0)

    async def _sync(self, timeout: int) -> list[dict[str, Any]]:
        query = {"timeout": str(timeout)}
        if self.since:
            query["since"] = self.since
        answer = await self.person.request(Method.GET, ApiPath.v3.sync, **query)
        self.since = answer["next_batch"]
        room = answer.get("rooms", {}).get("join", {}).get(self.room_id, {})
        return room.get("timeline", {}).get("events", [])

    async def reply_to(self, text: str) -> None:
        while True:
            for event in await self._sync(timeout=30_000):
                relation = event.get("content", {}).get("m.relates_to") or {}
                body = event.get("content", {}).get("body", "")
                if (event.get("sender") == ECHO and event.get("type") == "m.room.message"
                        and relation.get("rel_type") != "m.replace"
                        and (self.stream or body.startswith(text[:8]))):
                    return


async def main(runs: int, trips: int, stream: bool) -> None:
    logging.basicConfig(level=logging.WARNING)
    with tempfile.TemporaryDirectory() as folder_name:
        folder = Path(folder_name)
        port = free_port()
        path = folder / "registration.yaml"
        path.write_text(yaml.safe_dump(registration(account_config("http://127.0.0.1:1", port))))
        synapse = start_synapse(folder / "hs", path)
        try:
            await measure(Homeserver(synapse, port), folder, runs, trips, stream)
        finally:
            synapse.stop()


async def measure(homeserver: Homeserver, folder: Path, runs: int, trips: int,
                  stream: bool) -> None:
    ada = Person(homeserver, "ada")
    await ada.set_name("Ada")
    room = await ada.create_room(invite=[BRIDGE_USER])
    config = BridgeConfig.model_validate({
        "hub": demo_hub(folder), "bcn": {"url": "embedded"},
        "store": f"sqlite:///{folder / 'bridge.db'}",
        "web": {"listen": "127.0.0.1:0", "enabled": False},
        "bindings": [{"channel": "matrix:main", "chat": room, "group": "demo"}],
    }).model_copy(update={"accounts": {"matrix": {"main": homeserver.account()}}})
    app = BridgeApp(config)
    await app.start()
    bots = await start_demo_bots(app.bcn_url, folder, stream=stream)
    try:
        await ada.wait_for(room, lambda events: BRIDGE_USER in {
            e.get("state_key") for e in events if e["type"] == "m.room.member"
            and e["content"].get("membership") == "join"})
        sync = Sync(ada, room, stream)
        await sync.catch_up()
        await ada.say(room, "warm up")
        await sync.reply_to("warm up")
        await asyncio.sleep(1.0)  # a streamed warm-up's last edits
        await sync.catch_up()
        figures = []
        for run in range(1, runs + 1):
            times = []
            for trip in range(trips):
                text = f"trip {run}-{trip:03d} {os.urandom(3).hex()}"
                started = time.perf_counter()
                await ada.say(room, text)
                await sync.reply_to(text)
                times.append((time.perf_counter() - started) * 1000)
                if stream:  # let the reply finish streaming before the next message
                    await asyncio.sleep(0.6)
                    await sync.catch_up()
            p50, p95 = percentile(times, 0.5), percentile(times, 0.95)
            figures.append((p50, p95))
            print(f"run {run}: {trips} round trips, p50 {p50:.1f} ms, p95 {p95:.1f} ms "
                  f"(min {min(times):.1f}, max {max(times):.1f})", flush=True)
        print(f"median of {runs} runs: p50 {statistics.median(f[0] for f in figures):.1f} ms, "
              f"p95 {statistics.median(f[1] for f in figures):.1f} ms "
              f"({'streamed, first event' if stream else 'one-piece reply'})")
    finally:
        for bot in bots:
            await bot.stop()
        await app.stop()
        await ada.close()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--trips", type=int, default=50)
    parser.add_argument("--stream", action="store_true")
    options = parser.parse_args()
    asyncio.run(main(options.runs, options.trips, options.stream))
