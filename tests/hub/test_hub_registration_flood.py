"""A flood of anonymous registrations must not cost the chats: the hub's four limits.

- `channel.participants.changed` at most once per group per interval (the changes in between
  announced together at its end), and the bridge lists a group once per burst of notices;
- registrations per IP address, with a clear `rate_limited` answer and when to retry;
- anonymous (auto-joined) bots per group;
- registrations that never connect are forgotten after a while.

Everything runs on real hubs over real sockets; nothing here reads a clock to decide.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from hub_clients import WAIT, StartHub, TestBot, TestLink, next_item, nothing_in, until

from adapters.webchat import WebchatAccountConfig
from bridge.bcn import BcnError
from bridge.hub import Hub
from bridge.hub.participants_notices import ParticipantsNotices
from tests.support.running_bridge import BridgeStarter, bridge_config

REGISTER = "reg-token-0123456789"
NO_RATE = {"register_rate_per_minute": 0}


async def http_register(http: aiohttp.ClientSession, hub: Hub, name: str) -> dict[str, Any]:
    async with http.post(hub.http_url + "/register",
                         params={"token": REGISTER, "bot-name": name}) as response:
        body: dict[str, Any] = await response.json()
        return {"status": response.status, "headers": dict(response.headers), **body}


# ---------------------------------------------------------------- participants notices

async def test_notices_are_sent_at_once_then_once_per_interval() -> None:
    """Leading edge at once; a burst within the interval is one notice at its end."""
    now = [100.0]
    sent: list[str] = []
    notices = ParticipantsNotices(0.05, sent.append, clock=lambda: now[0])
    notices.changed("grp")
    assert sent == ["grp"]  # a quiet group hears of a change at once
    for _ in range(500):
        notices.changed("grp")
    notices.changed("other")
    assert sent == ["grp", "other"]  # the burst waits for the interval's end
    await until(lambda: len(sent) == 3)
    assert sent == ["grp", "other", "grp"] and notices.sent == 3
    assert await _stays(lambda: len(sent) == 3)
    now[0] += 10  # long quiet: the next change goes out at once again
    notices.changed("grp")
    assert sent[-1] == "grp" and len(sent) == 4
    notices.close()


async def _stays(condition: Any, settle: float = 0.2) -> bool:
    await asyncio.sleep(settle)
    return bool(condition())


async def _settled(count: Any, settle: float = 0.2) -> int:
    """The value of `count()` once it stopped changing for `settle` seconds."""
    async with asyncio.timeout(WAIT):
        while True:
            seen = count()
            await asyncio.sleep(settle)
            if count() == seen:
                return int(seen)


async def test_a_registration_burst_is_one_notice_per_link(
    http: aiohttp.ClientSession, start_hub: StartHub
) -> None:
    hub = await start_hub(participants_notice_interval_seconds=60, **NO_RATE)
    link = await TestLink.connect(http, hub)
    bots = [await TestBot.connect(http, hub, name=f"Flood{n:02d}") for n in range(30)]
    first = await next_item(link.events)
    assert first.event == "channel.participants.changed" and first.payload == {"group_id": "grp"}
    assert await nothing_in(link.events, settle=0.3)  # the other changes wait for its end
    assert hub.state is not None and hub.state.notices.sent == 1
    listed = await link.conn.request("channel.participants", {"group_id": "grp"})
    assert len(listed["participants"]) == 30  # every change is there for the next listing
    for bot in bots:
        await bot.close()


async def test_the_bridge_lists_a_group_once_per_burst(tmp_path: Path) -> None:
    """100 notices at once (no hub throttle): one listing in flight, one after it."""
    starter = BridgeStarter(tmp_path)
    config = bridge_config(
        tmp_path, hub={"participants_notice_interval_seconds": 0},
        bindings=[{"channel": "webchat:main", "chat": "lobby", "group": "demo"}],
        accounts={"webchat": {"main": WebchatAccountConfig()}}, web=True,
    )
    running = await starter.start(config, bots=False)
    try:
        state = running.app.hub.state
        before = await _settled(lambda: state.notices.listings)  # after the link-up listing
        state.announce([state.groups.get("demo")] * 100)
        await until(lambda: state.notices.listings >= before + 2, timeout=WAIT)
        # Each notice used to start a full listing of its own: 100 here.
        assert 2 <= await _settled(lambda: state.notices.listings) - before <= 3
    finally:
        await starter.close()


# ---------------------------------------------------------------- rate per address

async def test_registrations_per_address_are_rate_limited(
    http: aiohttp.ClientSession, start_hub: StartHub
) -> None:
    hub = await start_hub(register_tokens=[REGISTER], register_burst=3,
                          register_rate_per_minute=1)
    first = await TestBot.connect(http, hub, name="Early")
    assert (await http_register(http, hub, "Second"))["status"] == 200
    assert (await http_register(http, hub, "Third"))["status"] == 200
    refused = await http_register(http, hub, "Fourth")
    assert refused["status"] == 429 and refused["error"] == "rate_limited"
    assert int(refused["headers"]["Retry-After"]) >= 1
    assert "too many bot registrations from 127.0.0.1" in refused["message"]
    assert "retry in" in refused["message"]
    with pytest.raises(BcnError) as over:
        await TestBot.connect(http, hub, name="Fifth")
    assert over.value.code == "rate_limited" and over.value.retryable
    assert over.value.retry_after_ms is not None and over.value.retry_after_ms >= 1000
    # A bot that already has its token is not registering: it always gets in.
    token = first.token
    await first.close()
    again = await TestBot.connect(http, hub, token=token)
    assert again.payload["is_new"] is False
    await again.close()


# ---------------------------------------------------------------- anonymous per group

async def test_a_group_takes_a_limited_number_of_anonymous_bots(
    http: aiohttp.ClientSession, start_hub: StartHub
) -> None:
    hub = await start_hub(
        register_tokens=[REGISTER], **NO_RATE,
        groups=[{"id": "grp", "driver": "Helper", "bots": ["Helper", "Mantis"],
                 "auto_join": True, "auto_join_limit": 2}],
    )
    assert hub.state is not None
    one = await TestBot.connect(http, hub)
    assert (await http_register(http, hub, "Two"))["status"] == 200
    full = await http_register(http, hub, "Three")
    assert full["status"] == 403 and full["error"] == "group_full"
    assert "group 'grp' already has 2 bots that joined by themselves" in full["message"]
    assert "auto_join_limit 2" in full["message"]
    with pytest.raises(BcnError) as refused:
        await TestBot.connect(http, hub, name="Four")
    assert refused.value.code == "invalid_request" and "group_full" not in refused.value.message
    assert "auto_join_limit" in refused.value.message
    listed = await TestBot.connect(http, hub, name="Mantis")  # named in the group: welcome
    group = hub.state.groups.get("grp")
    assert group is not None and listed.uuid in group.members and len(group.auto_joined) == 2
    for bot in (one, listed):
        await bot.close()


async def test_the_limit_survives_a_restart(
    http: aiohttp.ClientSession, start_hub: StartHub
) -> None:
    settings: dict[str, Any] = {
        **NO_RATE, "groups": [{"id": "grp", "bots": [], "auto_join": True,
                               "auto_join_limit": 1}]}
    hub = await start_hub(**settings)
    bot = await TestBot.connect(http, hub)
    await bot.close()
    await hub.stop()
    again = await start_hub(**settings)
    with pytest.raises(BcnError, match="auto_join_limit 1"):
        await TestBot.connect(http, again)


# ---------------------------------------------------------------- reaping

async def test_registrations_that_never_connect_are_forgotten(
    http: aiohttp.ClientSession, start_hub: StartHub
) -> None:
    """Reaped an hour after registering (`now` is passed: the test waits for nothing)."""
    settings: dict[str, Any] = {"register_tokens": [REGISTER], **NO_RATE}
    hub = await start_hub(**settings)
    state = hub.state
    assert state is not None
    idle = await http_register(http, hub, "Idle")
    used = await http_register(http, hub, "Used")
    bot = await TestBot.connect(http, hub, bot_id=used["bot_uuid"], token=used["bot_token"])
    live = await TestBot.connect(http, hub, name="Live")  # registered by connecting
    await bot.close()  # offline now, but it did connect: kept

    assert state.admission.reap(state, now=time.time() + 60) == 0  # not old enough yet
    assert state.admission.reap(state, now=time.time() + 3601) == 1
    assert state.registry.by_uuid(idle["bot_uuid"]) is None
    group = state.groups.get("grp")
    assert group is not None and idle["bot_uuid"] not in group.members
    assert {used["bot_uuid"], live.uuid} <= set(group.members)
    with pytest.raises(BcnError) as gone:
        await TestBot.connect(http, hub, token=idle["bot_token"])
    assert gone.value.code == "unauthorized"
    assert (await http_register(http, hub, "Idle"))["status"] == 200  # the name is free again

    await live.close()
    await hub.stop()
    again = await start_hub(**settings)  # what was reaped stays gone; what connected stays
    assert again.state is not None
    assert again.state.registry.by_uuid(idle["bot_uuid"]) is None
    assert again.state.admission.reap(again.state, now=time.time() + 3601) == 1  # the new Idle
    assert again.state.registry.by_uuid(used["bot_uuid"]) is not None
    assert again.state.registry.by_uuid(live.uuid) is not None


async def test_the_sweeper_reaps_on_its_own(
    http: aiohttp.ClientSession, start_hub: StartHub
) -> None:
    hub = await start_hub(register_tokens=[REGISTER], reap_unconnected_after_seconds=0.2,
                          sweep_interval_seconds=0.05, participants_notice_interval_seconds=0)
    assert hub.state is not None
    link = await TestLink.connect(http, hub)
    idle = await http_register(http, hub, "Idle")
    await until(lambda: hub.state.registry.by_uuid(idle["bot_uuid"]) is None, timeout=WAIT)
    joined, left = await next_item(link.events), await next_item(link.events)
    assert joined.payload == left.payload == {"group_id": "grp"}  # Idle came, and went
