"""The reconnect grace after a start (issue 12, the hub's part of hole 4).

Bots online before a restart are still reconnecting when the first human messages arrive.
Such a message waits for its bot (held, per binding, bounded) instead of drawing a "no bot
is available" notice; the notice comes only if the grace ends without the bot.
"""

from __future__ import annotations

import logging
from typing import Any

import aiohttp
import pytest
from hub_clients import StartHub, TestBot, TestLink, binding, next_item, nothing_in

from bridge.hub import Hub
from bridge.hub.dispatch import NO_BOT_TEXT


async def restart_with_bots_away(
    http: aiohttp.ClientSession, start_hub: StartHub, *names: str, **overrides: Any
) -> tuple[Hub, dict[str, str]]:
    """A hub where these bots were online, stopped and started again: they are away now.

    Returns the new hub and each bot's token, to come back with.
    """
    hub = await start_hub(**overrides)
    tokens = {}
    for name in names:
        tokens[name] = (await TestBot.connect(http, hub, name=name)).token
    await hub.stop()
    return await start_hub(**overrides), tokens


async def test_a_message_waits_for_its_reconnecting_bot_and_is_then_answered(
    http: aiohttp.ClientSession, start_hub: StartHub
) -> None:
    hub, tokens = await restart_with_bots_away(http, start_hub, "Helper",
                                               reconnect_grace_seconds=30)
    link = await TestLink.connect(http, hub)
    accepted = await link.inbound("hello again", "m1")
    assert accepted["deliveries"] == [] and accepted["held"] is True
    assert accepted["waiting_for"] == ["Helper"]
    assert await nothing_in(link.delivers)  # no "no bot is available"
    assert hub.health()["held_messages"] == 1

    helper = await TestBot.connect(http, hub, token=tokens["Helper"])
    send = await next_item(helper.sends)
    assert send.params["message"]["content"][0]["text"] == "hello again"
    assert send.params["bcs_session_id"] == accepted["bcs_session_id"]
    await helper.final("run-1", "hi, I am back")
    answer = await link.deliveries_until_final()
    assert [(d["kind"], d["text"], d["source_msg_id"]) for d in answer] == [
        ("final", "hi, I am back", "m1")]
    assert await nothing_in(link.delivers)
    assert hub.health()["held_messages"] == 0


async def test_when_the_grace_ends_without_the_bot_the_chat_is_told(
    http: aiohttp.ClientSession, start_hub: StartHub, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="bridge.hub.startup_grace")
    hub, _ = await restart_with_bots_away(http, start_hub, "Helper",
                                          reconnect_grace_seconds=0.3)
    link = await TestLink.connect(http, hub)
    assert (await link.inbound("anyone?", "m1"))["waiting_for"] == ["Helper"]
    notice = await next_item(link.delivers)
    assert (notice["kind"], notice["text"], notice["source_msg_id"]) == (
        "system", NO_BOT_TEXT, "m1")
    assert any("not back: Helper" in r.getMessage() for r in caplog.records)
    later = await link.inbound("still nobody?", "m2")  # after the grace: as before, at once
    assert "held" not in later
    assert (await next_item(link.delivers))["source_msg_id"] == "m2"
    await hub.stop()

    hub = await start_hub(reconnect_grace_seconds=30)  # Helper is not awaited again
    link = await TestLink.connect(http, hub)
    assert "held" not in await link.inbound("and now?", "m3")


async def test_a_bot_offline_before_the_restart_is_not_waited_for(
    http: aiohttp.ClientSession, start_hub: StartHub
) -> None:
    hub = await start_hub(reconnect_grace_seconds=30)
    helper = await TestBot.connect(http, hub, name="Helper")
    await helper.close()
    await hub.stop()
    hub = await start_hub(reconnect_grace_seconds=30)
    link = await TestLink.connect(http, hub)
    accepted = await link.inbound("hello", "m1")
    assert "held" not in accepted
    assert (await next_item(link.delivers))["text"] == NO_BOT_TEXT


async def test_a_binding_keeps_its_order_and_other_bindings_do_not_wait(
    http: aiohttp.ClientSession, start_hub: StartHub
) -> None:
    hub, tokens = await restart_with_bots_away(http, start_hub, "Helper", "Mantis",
                                               reconnect_grace_seconds=30)
    mantis = await TestBot.connect(http, hub, token=tokens["Mantis"])
    link = await TestLink.connect(http, hub, binding("a"), binding("b"))
    bind_a, bind_b = (b["binding_id"] for b in link.payload["bindings"])

    assert (await link.inbound("hi", "a1", binding_id=bind_a))["waiting_for"] == ["Helper"]
    other = await link.inbound("@Mantis status?", "b1", binding_id=bind_b)
    assert "held" not in other and other["deliveries"][0]["name"] == "Mantis"
    assert (await next_item(mantis.sends)).params["message"]["content"][0]["text"] == (
        "@Mantis status?")
    behind = await link.inbound("@Mantis and you?", "a2", binding_id=bind_a)
    assert behind["held"] is True and behind["waiting_for"] == []  # queued behind a1
    assert await nothing_in(mantis.sends)

    helper = await TestBot.connect(http, hub, token=tokens["Helper"])
    first = await next_item(helper.sends)
    assert first.params["session_context"]["message"] == "hi"
    second = await next_item(mantis.sends)
    assert second.params["session_context"]["message"] == "@Mantis and you?"
    assert await nothing_in(link.delivers)  # no notice anywhere


async def test_held_messages_survive_a_restart_during_the_grace(
    http: aiohttp.ClientSession, start_hub: StartHub
) -> None:
    hub, tokens = await restart_with_bots_away(http, start_hub, "Helper",
                                               reconnect_grace_seconds=30)
    link = await TestLink.connect(http, hub)
    accepted = await link.inbound("do not lose me", "m1")
    assert accepted["held"] is True
    await hub.stop()

    hub = await start_hub(reconnect_grace_seconds=30)
    assert hub.health()["held_messages"] == 1
    link = await TestLink.connect(http, hub)
    helper = await TestBot.connect(http, hub, token=tokens["Helper"])
    send = await next_item(helper.sends)
    assert send.params["session_context"]["message"] == "do not lose me"
    assert send.params["channel"]["message_id"] == "m1"
    await helper.final("run-1", "kept")
    assert [d["text"] for d in await link.deliveries_until_final()] == ["kept"]


async def test_a_full_queue_routes_at_once_with_a_log_line(
    http: aiohttp.ClientSession, start_hub: StartHub, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="bridge.hub.held_messages")
    hub, _ = await restart_with_bots_away(http, start_hub, "Helper",
                                          reconnect_grace_seconds=30, held_max_per_binding=1)
    link = await TestLink.connect(http, hub)
    assert (await link.inbound("first", "m1"))["held"] is True
    assert "held" not in await link.inbound("second", "m2")
    notice = await next_item(link.delivers)
    assert (notice["text"], notice["source_msg_id"]) == (NO_BOT_TEXT, "m2")
    assert any("routed now" in r.getMessage() for r in caplog.records)
