"""`registration: listed` (what deploy/ ships): a client that reaches the hub registers a bot
over /ws/bot only under a name a group lists; the start-up log says who can register."""

from __future__ import annotations

import logging

import aiohttp
import pytest
from hub_clients import StartHub, TestBot

from bridge.bcn import BcnError


async def test_listed_registration_refuses_names_no_group_lists(
    http: aiohttp.ClientSession, start_hub: StartHub
) -> None:
    hub = await start_hub(registration="listed")
    with pytest.raises(BcnError) as refused:
        await TestBot.connect(http, hub, name="Stranger")
    assert refused.value.code == "invalid_request"
    assert "registration: listed" in refused.value.message
    assert "Stranger is not one of them" in refused.value.message
    with pytest.raises(BcnError, match="a bot without a name is not one of them"):
        await TestBot.connect(http, hub)
    listed = await TestBot.connect(http, hub, name="mantis")  # listed in group grp
    assert hub.state is not None
    group = hub.state.groups.get("grp")
    assert group is not None and listed.uuid in group.members
    token = listed.token
    await listed.close()
    again = await TestBot.connect(http, hub, token=token)  # a token is not a registration
    assert again.uuid == listed.uuid
    await again.close()


async def test_open_registration_is_the_default_and_takes_anyone(
    http: aiohttp.ClientSession, start_hub: StartHub
) -> None:
    hub = await start_hub()
    bot = await TestBot.connect(http, hub, name="Stranger")
    assert bot.uuid
    await bot.close()


async def test_the_start_up_log_says_who_can_register(
    start_hub: StartHub, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="bridge.hub")
    await start_hub()
    await start_hub(registration="listed", register_tokens=["reg-token-0123456789"])
    lines = [r.getMessage() for r in caplog.records if r.getMessage().startswith("registration")]
    assert lines == [
        "registration open: /ws/bot without a token registers any client that reaches the hub,"
        " and auto_join puts it into grp; POST /register accepts nobody (no register_tokens)",
        "registration listed: /ws/bot without a token registers only the listed bots "
        "(Helper, Mantis); POST /register accepts 1 register token(s)",
    ]
