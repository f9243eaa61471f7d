"""A Telegram polling outage takes the bridge out of `/readyz` until polling works again."""

from __future__ import annotations

import asyncio
from pathlib import Path

import aiohttp
import pytest
from telegram_support import GROUP, account_config

from tests.fakes.telegram import FakeTelegram
from tests.support.running_bridge import WAIT, BridgeStarter, bridge_config


async def readiness(url: str, status: int) -> dict:  # type: ignore[type-arg]
    """Poll `/readyz` until it answers `status`; its JSON body."""
    async with aiohttp.ClientSession() as session, asyncio.timeout(WAIT):
        while True:
            async with session.get(url) as response:
                if response.status == status:
                    return await response.json()
            await asyncio.sleep(0.05)


@pytest.mark.slow  # python-telegram-bot waits 1 s, then longer, between failed polls
async def test_a_polling_outage_is_named_by_readyz_until_it_ends(
    tmp_path: Path, fake: FakeTelegram
) -> None:
    config = bridge_config(
        tmp_path, web=True,
        bindings=[{"channel": "telegram:main", "chat": str(GROUP), "group": "demo"}],
        accounts={"telegram": {"main": account_config(fake)}},
    )
    starter = BridgeStarter(tmp_path)
    try:
        running = await starter.start(config, bots=False)
        assert running.app.web is not None
        readyz = f"{running.app.web.url}/readyz"
        await readiness(readyz, 200)

        fake.fail_always("getUpdates", status=502, description="Bad Gateway")
        body = await readiness(readyz, 503)
        assert list(body["down"]) == ["telegram:main"]
        assert "polling the Bot API fails" in body["down"]["telegram:main"]

        fake.recover("getUpdates")
        assert (await readiness(readyz, 200))["status"] == "ready"
    finally:
        await starter.close()
