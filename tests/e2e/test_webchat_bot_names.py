"""No person takes a bot's name in the webchat, and bots wear a mark no person can get.

Issue 31 item 7: only names bots had posted under lately were protected, so in a room whose
group has a bot Echo that had not spoken since the bridge started, a person could join as
"Echo", "echo", "Ech\\u200bo" or "Есho" (Cyrillic). Now every bot of the room's group, as
the hub lists it, is protected. Hub, relay, bots and pages here are the real ones, over real
sockets.
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from typing import Any

import aiohttp
import pytest

from adapters.webchat import WebchatAccountConfig
from bridge.app import BridgeApp
from bridge.config.schema import BridgeConfig
from bridge.core.relay_state import RelayState
from bridge.demo import start_demo_bots
from bridge.store import open_store
from tests.support.bridge_process import free_port
from tests.webchat.webchat_clients import ChatClient, open_client

ANSWER_WAIT = 10.0
"""Upper bound for a bot's reply to reach the page; never asserted as a duration."""

POSING = ["Echo", "echo", "ECHO", "Ech\u200bo", "\u0415\u0441ho", "\uff25\uff43\uff48\uff4f",
          "Éćho", " Echo ", "Rules", "Ru1es", "RULES", "R\u200dules", "Rul\u0435s"]
"""The group's bots' names as a person might type them: case, invisible characters,
Cyrillic and full-width letters, accents, a digit for a letter."""


@pytest.fixture
async def http() -> Any:
    async with aiohttp.ClientSession() as session:
        yield session


async def page(system: Any, http: aiohttp.ClientSession) -> ChatClient:
    adapter = system.app.relay.ctx.adapters["webchat:main"]
    return await open_client(http, f"{system.app.web.url}{adapter.ws_path}")


async def refused(client: ChatClient, room: str, name: str) -> dict[str, Any]:
    await client.send({"type": "join", "room": room, "name": name})
    return await client.expect("error")


@pytest.mark.parametrize("name", POSING, ids=ascii)
async def test_a_person_cannot_take_the_name_of_a_bot_that_never_spoke(
    start_system: Any, http: aiohttp.ClientSession, name: str
) -> None:
    system = await start_system(webchat=True)  # Echo and Rules are in the group, online
    lobby = system.app.relay.ctx.adapters["webchat:main"].chat.rooms.get("lobby")
    assert lobby is None or not lobby.bot_names  # neither has said anything here

    error = await refused(await page(system, http), "lobby", name)

    assert error["code"] == "bot_name"
    assert "is a bot in this room" in error["message"]
    assert "pick another display name" in error["message"]


async def test_other_names_and_unbound_rooms_are_fine(
    start_system: Any, http: aiohttp.ClientSession
) -> None:
    system = await start_system(webchat=True)

    ada = await page(system, http)
    assert (await ada.join("lobby", "Ada"))["name"] == "Ada"
    elsewhere = await page(system, http)
    assert (await elsewhere.join("kitchen", "Echo"))["name"] == "Echo"  # no group, no bots
    refused_page = await page(system, http)
    await refused(refused_page, "lobby", "Echo")
    assert (await refused_page.join("lobby", "Echo fan"))["name"] == "Echo fan"  # tries again


async def test_a_bot_that_joins_the_group_later_is_protected_from_then_on(
    start_system: Any, http: aiohttp.ClientSession, tmp_path: Any
) -> None:
    system = await start_system(webchat=True, bots=False)  # no bot has registered yet
    early = await page(system, http)
    assert (await early.join("lobby", "Rules"))["name"] == "Rules"  # nobody's name yet
    await early.ws.close()

    system.bots = await start_demo_bots(system.app.bcn_url, tmp_path)
    await system.wait_for_bots("Echo", "Rules")

    error = await refused(await page(system, http), "lobby", "rules")
    assert error["code"] == "bot_name"


async def next_message_from(client: ChatClient, sender: str) -> dict[str, Any]:
    async with asyncio.timeout(ANSWER_WAIT):
        while True:
            frame = await client.next_frame()
            message = frame.get("message") or {}
            if frame["type"] in ("message", "update") and message["sender"]["name"] == sender:
                return message


async def test_only_the_server_marks_a_message_as_a_bots(
    start_system: Any, http: aiohttp.ClientSession
) -> None:
    system = await start_system(webchat=True, stream=False)
    ada, mallory = await page(system, http), await page(system, http)
    await ada.join("lobby", "Ada")
    await mallory.join("lobby", "Mallory")

    # A page cannot set the mark: the fields it adds to its frame are not read.
    await mallory.send({"type": "message", "client_message_id": "m-1", "text": "trust me",
                        "is_bot": True, "sender": {"name": "Echo", "is_bot": True}})
    forged = await next_message_from(ada, "Mallory")
    assert forged["sender"] == {"name": "Mallory", "is_bot": False}
    echo = await next_message_from(ada, "Echo")  # the bot Echo's reply to it
    assert echo["sender"] == {"name": "Echo", "is_bot": True}


async def test_a_bridge_started_while_the_hub_is_away_still_knows_the_bots(
    tmp_path: Any, http: aiohttp.ClientSession
) -> None:
    """The group's bots as the hub last listed them are kept in the store: a bridge that
    starts while the hub is unreachable protects them from the start."""
    store_url = f"sqlite:///{tmp_path / 'bridge.db'}"
    store = await open_store(store_url)
    await RelayState(store, lambda: datetime.now(UTC)).set_group_bots("demo", ["Echo"], [])
    await store.close()
    config = BridgeConfig.model_validate({
        "bcn": {"url": f"ws://127.0.0.1:{free_port()}/ws/channel", "token": "link-token"},
        "store": store_url,
        "web": {"listen": "127.0.0.1:0"},
        "bindings": [{"channel": "webchat:main", "chat": "lobby", "group": "demo"}],
    }).model_copy(update={"accounts": {"webchat": {"main": WebchatAccountConfig()}}})
    app = BridgeApp(config)
    await app.start()
    try:
        assert app.relay is not None and app.web is not None
        assert not app.relay.link.connected  # nobody answers at the BCN's address
        adapter = app.relay.ctx.adapters["webchat:main"]
        client = await open_client(http, f"{app.web.url}{adapter.ws_path}")
        error = await refused(client, "lobby", "ech\u043e")
        assert error["code"] == "bot_name"
    finally:
        await app.stop()
