"""The BCN gone for longer than `bcn.wait_for_link`: a real hub killed with SIGKILL, humans
still talking, the hub started again.

Real processes: a `bcn-bridge hub`, a `bcn-bridge run` bound to the fake Telegram, and the
example bots (this repository's SDK) in this process. `bcn.wait_for_link` is one second and
the hub stays down for more than three: every message sent meanwhile must go to the durable
spool rather than be dropped, and once the hub and its bots are back each is answered exactly
once, in the order the humans sent them. Lost / doubled counts are printed.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bridge.demo import start_demo_bots
from tests.fakes.telegram import UNPACED, FakeTelegram, user
from tests.faults.rig import bcn_section, hub_config
from tests.support.bridge_process import BridgeProcess, HubProcess, free_port, write_config

pytestmark = pytest.mark.slow

TOKEN = "123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsawQ"
GROUP = -1001234567890
WAIT_FOR_LINK = 1.0
DOWN_FOR = 3 * WAIT_FOR_LINK + 0.5
MESSAGES = [f"while the hub is down {n}" for n in range(1, 6)]
ANSWERED_WITHIN = 60.0


@pytest.fixture
async def fake() -> AsyncIterator[FakeTelegram]:
    server = FakeTelegram()
    server.add_bot(TOKEN, "BridgeBot")
    server.add_chat(GROUP, title="Team room")
    await server.start()
    yield server
    await server.stop()


def answered(fake: FakeTelegram, prefix: str) -> list[str]:
    """The bodies of the bot replies (under their name prefix) that start with `prefix`."""
    return [body for text in fake.bot_texts(GROUP)
            if (body := text.partition("\n")[2]).startswith(prefix)]


async def test_messages_sent_while_the_hub_is_down_are_answered_once_in_order(
    tmp_path: Path, fake: FakeTelegram
) -> None:
    hub_port = free_port()
    hub_yaml = write_config(tmp_path / "hub.yaml", hub_config(tmp_path, hub_port))
    bcn = {**bcn_section(hub_port, "bridge"), "wait_for_link": WAIT_FOR_LINK}
    bridge_yaml = write_config(tmp_path / "bridge.yaml", {
        "bcn": bcn,
        "store": f"sqlite:///{tmp_path / 'bridge.db'}",
        "web": {"enabled": False},
        "accounts": {"telegram": {"main": {
            "token": TOKEN, "api_base_url": fake.url, "poll_timeout": 1, "poll_interval": 0,
            "connect_timeout": 2, "read_timeout": 5,
            "send_limits": UNPACED,  # about exactly-once, not pacing: see UNPACED
        }}},
        "bindings": [{"channel": "telegram:main", "chat": str(GROUP), "group": "demo"}],
    })
    hub = HubProcess(hub_yaml)
    bridge = BridgeProcess(bridge_yaml)
    bots: list = []
    try:
        await hub.start()
        bots = await start_demo_bots(f"ws://127.0.0.1:{hub_port}", tmp_path, stream=False)
        await bridge.start()
        ada = user("Ada", user_id=601)
        fake.push_message(TOKEN, GROUP, ada, "before the outage")
        await fake.wait_until(lambda: answered(fake, "before the outage"), ANSWERED_WITHIN)

        await hub.kill()
        for text in MESSAGES:
            fake.push_message(TOKEN, GROUP, ada, text)
            await asyncio.sleep(DOWN_FOR / len(MESSAGES))
        assert answered(fake, "while the hub is down") == []
        assert bridge.running, bridge.log

        hub = HubProcess(hub_yaml)
        await hub.start()
        await fake.wait_until(
            lambda: len(answered(fake, "while the hub is down")) >= len(MESSAGES),
            ANSWERED_WITHIN)
        await asyncio.sleep(1.0)  # room for a wrongly repeated answer to show up
        shown = answered(fake, "while the hub is down")
    finally:
        for bot in bots:
            await bot.stop()
        await bridge.kill()
        await hub.stop()
    lost = [text for text in MESSAGES if text not in shown]
    doubled = [text for text in MESSAGES if shown.count(text) > 1]
    print(f"hub down {DOWN_FOR:.1f} s (wait_for_link {WAIT_FOR_LINK:g} s): "
          f"{len(MESSAGES)} sent, lost {len(lost)}, doubled {len(doubled)}")
    assert (lost, doubled) == ([], [])
    assert shown == MESSAGES
