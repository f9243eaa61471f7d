"""A person whose name has a space can ask a bot, and gets the answer (issue 31 §2).

Before: the bot's reply could not be wrapped as a RESPONSE to "Ada Lovelace"
(`ValueError: to must be a single bot name without spaces`), so the delivery was refused
as "retry later" for ever, with a traceback each time. Hub, bridge, the example bots (with
their defaults: Echo streams) and the page are the real ones, over real sockets.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import aiohttp
import pytest

from bridge.protocol import parse
from tests.e2e.e2e_support import texts
from tests.webchat.webchat_clients import open_client

ANSWER_WAIT = 10.0


@pytest.fixture
async def http() -> Any:
    async with aiohttp.ClientSession() as session:
        yield session


async def test_ask_from_a_spaced_name_in_the_webchat_is_answered(start_system, http):
    system = await start_system(webchat=True)
    adapter = system.app.relay.ctx.adapters["webchat:main"]
    page = await open_client(http, f"{system.app.web.url}{adapter.ws_path}")
    await page.join("lobby", "Ada Lovelace")
    await page.say("/ask Rules what is 6*7")
    shown = await page.final_from("Rules", ANSWER_WAIT)
    assert "6*7 = 42" in shown["html"]
    response = shown["protocol"]
    assert response["type"] == "RESPONSE" and response["to"] == "Ada Lovelace"
    conversation = await system.app.relay.tracker.get(response["request_id"])
    assert conversation is not None and conversation.status == "done"
    assert conversation.from_ == "Ada Lovelace"


async def test_a_clarify_to_a_spaced_name_is_answered_by_her_plain_reply(start_system):
    system = await start_system()
    await system.chat_adapter.say("room", "/ask Rules weather", name="Ada Lovelace")
    [clarify] = await system.wait_for(lambda ms: [m for m in ms if m.sender == "Rules"])
    question = parse(clarify.text)
    assert question.type == "CLARIFY" and question.to == "Ada Lovelace"
    # No reply-to and no id: the one question in this chat addressed to her.
    await system.chat_adapter.say("room", "Paris", name="Ada Lovelace")
    done = await system.wait_for(lambda ms: [m for m in ms if m.sender == "Rules"][1:])
    response = parse(done[0].text)
    assert response.type == "RESPONSE" and response.to == "Ada Lovelace"
    assert "Paris" in response.result


async def test_a_delivery_that_can_never_be_shown_ends_once_with_a_notice(
    start_system, caplog: pytest.LogCaptureFixture
):
    """The class: any output whose handling fails the same way every time (here, the record
    of the request it answers was written by an older bridge and cannot be read) ends at
    once — one ERROR line, one notice in the chat — instead of being retried for ever."""
    system = await start_system(stream=False)
    relay = system.app.relay
    store = relay.ctx.store
    original_put = store.message_map.put

    async def put(key: str, value: Any, at: Any) -> None:
        if key.startswith("src:"):
            value = {"request_id": value["request_id"]}  # unreadable: no requester, no depth
        await original_put(key, value, at)

    store.message_map.put = put  # type: ignore[method-assign]
    caplog.set_level(logging.ERROR, logger="bridge.core.outbound")
    await system.chat_adapter.say("room", "/ask Rules what is 6*7", name="Ada Lovelace")
    [notice] = await system.wait_for(
        lambda ms: [m for m in ms if "could not be shown" in m.text])
    assert "Rules" in notice.text
    await system.chat_adapter.say("room", "marker")
    await system.wait_for(lambda ms: "marker" in texts(ms, "Echo"))
    await asyncio.sleep(0)  # nothing below waits on time: the hub got its ack before "marker"
    errors = [r for r in caplog.records if "can never be shown" in r.getMessage()]
    assert len(errors) == 1
    notices = [m for m in system.chat.messages if "could not be shown" in m.text]
    assert len(notices) == 1
