"""A real `bcn-bridge hub` process killed with SIGKILL, and bots that die or come back.

Real processes and sockets all the way: the hub is `python -m bridge.cli hub`, the bots are
this repository's SDK (`bridge.bcn.bot.Bot`, in this process, or `bcn-bridge example-bot` as
a process of its own), and the chat side is a channel-link client speaking the channel link.

(a) deliveries pending (the link does not ack) → kill -9 → restart: every pending delivery
    arrives once, with its original event id; acked ones do not come back.
(b) a bot process killed mid-reply: the link gets an `error` for that run — with
    `run_timeout_ms` at ten minutes, only the hub noticing the closed socket can do that.
(c) kill -9 and restart while the bot is away: messages sent right after the restart wait
    for it and are answered once it is back; no "no bot is available" notice.
Lost / doubled counts are printed.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import AsyncIterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import aiohttp
import pytest

from bridge.bcn.examples.echo import build_echo_bot, stream_pieces
from bridge.hub.dispatch import NO_BOT_TEXT
from bridge.retry import Backoff
from tests.hub.hub_clients import TestLink, binding, next_item, nothing_in
from tests.support.bridge_process import HubProcess, ServiceProcess, free_port, write_config

pytestmark = pytest.mark.slow

LINK_TOKEN = "link-token-for-the-hub-fault-test"
WAIT = 30.0
NEVER_MS = 600_000
"""run_timeout_ms: ten minutes, so no run in these tests can end by timing out."""


class Scene:
    """One hub config on a fixed port (so a restarted hub is where the clients look)."""

    def __init__(self, tmp_path: Path, **hub: Any) -> None:
        self.tmp_path = tmp_path
        self.port = free_port()
        section = {
            "listen": f"127.0.0.1:{self.port}", "data_dir": str(tmp_path / "hub"),
            "link_tokens": [LINK_TOKEN], "bot_reply_default": "observe",
            "run_timeout_ms": NEVER_MS, "request_timeout_seconds": 5,
            "groups": [{"id": "demo", "driver": "Echo", "bots": ["Echo"]}],
            **hub,
        }
        self.config = write_config(tmp_path / "hub.yaml", {"hub": section})
        self.where = SimpleNamespace(url=f"ws://127.0.0.1:{self.port}")
        self.processes: list[ServiceProcess] = []

    @property
    def bot_url(self) -> str:
        return f"{self.where.url}/ws/bot"

    async def hub(self) -> HubProcess:
        hub = HubProcess(self.config)
        self.processes.append(hub)
        await hub.start()
        return hub

    async def link(self, http: aiohttp.ClientSession) -> TestLink:
        return await TestLink.connect(http, self.where,  # type: ignore[arg-type]
                                      binding("room-1", group_id="demo"),
                                      token=LINK_TOKEN, link_name="fault-test")

    def echo(self, *, stream: bool) -> Any:
        return build_echo_bot(self.bot_url, stream=stream, token_file=self.tmp_path / "echo.tok",
                              backoff=Backoff(initial=0.1, maximum=0.5))

    async def close(self) -> None:
        for process in self.processes:
            await process.kill()


def drain(link: TestLink) -> list[dict[str, Any]]:
    """What the link has received and the test has not read yet."""
    out = []
    while not link.delivers.empty():
        out.append(link.delivers.get_nowait())
    return out


@pytest.fixture
async def http() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession() as session:
        yield session


async def until_finals(
    link: TestLink, count: int, seen: set[str] | None = None
) -> list[dict[str, Any]]:
    """Deliveries until `count` finals; repeats of `seen` event ids are skipped, as the
    bridge skips them (an output acked just before a kill -9 may be replayed once)."""
    got: list[dict[str, Any]] = []
    while sum(d["kind"] == "final" for d in got) < count:
        delivery = await next_item(link.delivers, WAIT)
        if seen is None or delivery["event_id"] not in seen:
            got.append(delivery)
    return got


async def test_kill_9_with_deliveries_pending_replays_each_once_with_its_event_id(
    tmp_path: Path, http: aiohttp.ClientSession
) -> None:
    scene = Scene(tmp_path)
    bot = scene.echo(stream=True)
    try:
        hub = await scene.hub()
        await bot.start(timeout=WAIT)
        link = await scene.link(http)
        await link.inbound("acked first", "m0")
        acked = await until_finals(link, 1)
        link.hold = True  # from now on the link takes deliveries but never acks them
        texts = [f"pending reply number {n}" for n in range(10)]
        for n, text in enumerate(texts, start=1):
            await link.inbound(text, f"m{n}")
        expected = sum(len(stream_pieces(text)) + 1 for text in texts)  # deltas + final
        pending = [await next_item(link.delivers, WAIT) for _ in range(expected)]
        await hub.kill()
        link.release()
        await link.close()

        await scene.hub()
        again = await scene.link(http)
        replayed = [await next_item(again.delivers, WAIT)
                    for _ in range(again.payload["pending_deliveries"])]
        assert await nothing_in(again.delivers, settle=1.0)
    finally:
        await bot.stop()
        await scene.close()
    counts = Counter(d["event_id"] for d in replayed)
    lost = [d["event_id"] for d in pending if counts[d["event_id"]] == 0]
    doubled = [event_id for event_id, n in counts.items() if n > 1]
    print(f"\n{len(pending)} deliveries pending at the kill: {len(replayed)} replayed, "
          f"lost {len(lost)}, doubled {len(doubled)}")
    assert (lost, doubled) == ([], [])
    assert replayed == pending  # original event ids and outputs, in their order
    assert not {d["event_id"] for d in acked} & set(counts)  # acked ones stay acked


async def test_bot_process_killed_mid_reply_is_reported_long_before_the_run_timeout(
    tmp_path: Path, http: aiohttp.ClientSession
) -> None:
    scene = Scene(tmp_path, run_reconnect_grace_seconds=1)
    try:
        await scene.hub()
        bot = ServiceProcess(
            ["example-bot", "echo", "--url", scene.bot_url, "--name", "Echo",
             "--token-file", str(tmp_path / "echo.tok"), "--word-delay", "600"],
            "connected to")
        scene.processes.append(bot)
        await bot.start()
        link = await scene.link(http)
        await link.inbound("a very long answer please", "m1")
        first = await next_item(link.delivers, WAIT)
        assert (first["kind"], first["text"]) == ("delta", "a ")  # then it sleeps 600 s
        await bot.kill()
        notice = await next_item(link.delivers, WAIT)
    finally:
        await scene.close()
    print(f"\nbot killed mid-reply: {notice['kind']} delivered for {notice['run_id']}: "
          f"{notice['text']!r}")
    assert (notice["kind"], notice["run_id"]) == ("error", first["run_id"])
    assert notice["text"] == "Echo went offline mid-reply."
    assert notice["source_msg_id"] == "m1" and notice["seq"] == 2


async def test_hub_restart_while_the_bot_reconnects_answers_without_no_bot_notices(
    tmp_path: Path, http: aiohttp.ClientSession
) -> None:
    scene = Scene(tmp_path)  # the default reconnect grace (15 s)
    bot = scene.echo(stream=False)
    back = None
    try:
        hub = await scene.hub()
        await bot.start(timeout=WAIT)
        link = await scene.link(http)
        await link.inbound("before the restart", "m0")
        seen = {d["event_id"] for d in await until_finals(link, 1)}
        await hub.kill()
        await bot.stop()  # away until after the messages: still "reconnecting"
        await link.close()

        await scene.hub()
        again = await scene.link(http)
        texts = [f"right after the restart {n}" for n in range(5)]
        held = [(await again.inbound(text, f"r{n}")).get("held") for n, text in enumerate(texts)]
        assert held == [True] * len(texts)  # the bot was not back: this is the window
        back = scene.echo(stream=False)  # the same bot (its saved token), reconnecting
        await back.start(timeout=WAIT)
        got = await until_finals(again, len(texts), seen)
        await asyncio.sleep(1.0)  # room for a late notice or a doubled answer to show up
        got += [d for d in drain(again) if d["event_id"] not in seen]
    finally:
        if back is not None:
            await back.stop()
        await scene.close()
    answers = Counter(d["text"] for d in got if d["kind"] == "final")
    lost = [text for text in texts if answers[text] == 0]
    doubled = [text for text, n in answers.items() if n > 1]
    notices = [d["text"] for d in got if d["kind"] == "system"]
    print(f"\n{len(texts)} messages sent while the bot reconnected: lost {len(lost)}, "
          f"doubled {len(doubled)}, 'no bot' notices {notices.count(NO_BOT_TEXT)}")
    assert (lost, doubled, notices) == ([], [], [])
    assert [d["text"] for d in got] == texts  # answered in the order they were sent
