"""kill -9 of a real `bcn-bridge run` in the middle of a multi-part reply, then a restart.

The reply's first part is on Telegram, the second is in flight (the fake holds the request,
so Telegram never applied it) when the process dies. After the restart every part is in
the chat exactly once, in order.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from bridge.bcn.bot import Bot, IncomingMessage, Run
from bridge.retry import Backoff
from tests.fakes.telegram import UNPACED, FakeTelegram, user
from tests.support.bridge_process import BridgeProcess, free_port, write_config

TOKEN = "123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsawQ"
GROUP = -1001234567890
WAIT = 30.0
PARAGRAPHS = [f"Part {n}: " + " ".join(f"word{n}" for _ in range(380)) for n in (1, 2, 3)]
"""Three paragraphs of about 3,000 characters: Telegram needs one message for each."""


def config(tmp_path: Path, fake: FakeTelegram, hub_port: int) -> dict[str, Any]:
    return {
        "hub": {
            "listen": f"127.0.0.1:{hub_port}",
            "data_dir": str(tmp_path / "hub"),
            "bot_reply_default": "observe",
            "groups": [{"id": "demo", "driver": "Long", "bots": ["Long"], "auto_join": True}],
        },
        "bcn": {"url": "embedded"},
        "store": f"sqlite:///{tmp_path / 'bridge.db'}",
        "web": {"enabled": False},
        "accounts": {"telegram": {"main": {
            "token": TOKEN, "api_base_url": fake.url, "poll_timeout": 1, "poll_interval": 0,
            "connect_timeout": 2, "read_timeout": 5,
            "send_limits": UNPACED,  # about exactly-once, not pacing: see UNPACED
        }}},
        "bindings": [{"channel": "telegram:main", "chat": str(GROUP), "group": "demo"}],
    }


@pytest.fixture
async def fake() -> AsyncIterator[FakeTelegram]:
    server = FakeTelegram()
    server.add_bot(TOKEN, "BridgeBot")
    server.add_chat(GROUP, title="Team room")
    await server.start()
    yield server
    await server.stop()


def long_bot(hub_port: int, tmp_path: Path) -> Bot:
    bot = Bot(f"ws://127.0.0.1:{hub_port}/ws/bot", name="Long",
              token_file=tmp_path / "long.token", backoff=Backoff(initial=0.1, maximum=1.0))

    @bot.on_message
    async def answer(msg: IncomingMessage, run: Run) -> None:
        await run.final("\n\n".join(PARAGRAPHS))

    return bot


@pytest.mark.slow
async def test_kill_9_mid_multi_part_reply_posts_each_part_once(
    tmp_path: Path, fake: FakeTelegram
) -> None:
    hub_port = free_port()
    cfg = write_config(tmp_path / "bridge.yaml", config(tmp_path, fake, hub_port))
    bridge = BridgeProcess(cfg)
    await bridge.start()
    bot = long_bot(hub_port, tmp_path)
    await bot.start(timeout=WAIT)
    try:
        fake.hold("sendMessage", after=1)
        fake.push_message(TOKEN, GROUP, user("Ada", user_id=601), "tell me everything")
        await fake.wait_for_call("sendMessage", count=2, timeout=WAIT)  # part 2 in flight
        await bridge.kill()
        fake.release()
        assert len(fake.bot_texts(GROUP)) == 1

        restarted = BridgeProcess(cfg)
        await restarted.start()
        try:
            await fake.wait_until(lambda: len(fake.bot_texts(GROUP)) >= 3, WAIT)
            await asyncio.sleep(0.5)  # room for a wrongly repeated part to show up
            shown = fake.bot_texts(GROUP)
        finally:
            await restarted.stop()
    finally:
        await bot.stop()
        await bridge.kill()
    bodies = [text.partition("\n")[2] for text in shown]
    lost = [p for p in PARAGRAPHS if p not in bodies]
    doubled = [p[:7] for p in PARAGRAPHS if bodies.count(p) > 1]
    assert (lost, doubled) == ([], []), f"lost {len(lost)}, doubled {doubled}"
    assert bodies == PARAGRAPHS
