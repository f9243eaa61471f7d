"""A bot's own socket is a door (issue 31 item 1): a final whose JSON text carries an escaped
lone surrogate is made valid there, and no writer of the hub dies of it.

The SDK cleans what it sends, so these bots write the frame themselves on a raw `/ws/bot`
socket: `"a\\ud800b"`, ASCII on the wire and valid JSON. Before the fix the hub kept the
surrogate, and its writers to the other bots and to the link failed on it and stopped while
their sockets stayed open: every bot deaf until its heartbeat noticed.
"""

from __future__ import annotations

import json
from typing import Any

import aiohttp
import pytest
from hub_clients import TestBot, TestLink, next_item

from bridge.hub import Hub

LONE = "a\\ud800b"
"""The text as it is on the wire: a JSON escape of a lone surrogate (backslash and all)."""


def _text(params: dict[str, Any]) -> str:
    return str(params["message"]["content"][0]["text"])


def _raw_final(bot: TestBot, run_id: str, escaped: str) -> str:
    """The frame of a final `run_id` whose text is `escaped`, written in JSON by hand, in the
    dialect the bot's connection negotiated (v3 `chat`, else v1/v2 `chat.event`)."""
    if bot.run_events:
        payload = (f'{{"runId":{json.dumps(run_id)},"sessionId":'
                   f'{json.dumps(bot.sessions[run_id])},"seq":1,"ts":1,"state":"final",'
                   f'"content":"{escaped}"}}')
        return f'{{"type":"event","event":"chat","payload":{payload},"seq":1}}'
    payload = (f'{{"run_id":{json.dumps(run_id)},"bcs_group_id":"grp","state":"final",'
               f'"message":{{"role":"assistant","content":[{{"type":"text",'
               f'"text":"{escaped}"}}],"timestamp":1}}}}')
    return f'{{"type":"event","event":"chat.event","payload":{payload},"seq":1}}'


@pytest.mark.parametrize("version", [2, 3])
async def test_a_raw_final_with_an_escaped_lone_surrogate_silences_no_bot(
    http: aiohttp.ClientSession, hub: Hub, version: int
) -> None:
    helper = await TestBot.connect(http, hub, name="Helper", protocol_version=version)
    mantis = await TestBot.connect(http, hub, name="Mantis")
    link = await TestLink.connect(http, hub)

    await link.inbound("say something odd", "m1")
    send = await next_item(helper.sends)
    assert _text(send.params).endswith("say something odd")
    await next_item(mantis.injects)  # the person's message, observed
    frame = _raw_final(helper, "run-1", LONE)
    assert frame.isascii() and "\\ud800" in frame
    json.loads(frame)  # valid JSON, as the issue has it
    await helper.ws.send_str(frame)

    # what reaches the chat, and the bot observing it, is valid: U+FFFD where it was
    [final] = await link.deliveries_until_final()
    assert (final["kind"], final["text"]) == ("final", "a\ufffdb")
    observed = await next_item(mantis.injects)
    assert _text(observed.params).endswith("a\ufffdb")

    # every writer of the hub lives on: to the bot that spoke, to the other, to the link
    mantis.reply = lambda text: "mantis here"
    await link.inbound("@Mantis and the next one", "m2")
    assert _text((await next_item(mantis.sends)).params).endswith("@Mantis and the next one")
    assert _text((await next_item(helper.injects)).params).endswith("@Mantis and the next one")
    [answer] = await link.deliveries_until_final()
    assert (answer["text"], answer["sender"]["name"]) == ("mantis here", "Mantis")
    # the driver is given the other bot's answer to act on
    assert _text((await next_item(helper.sends)).params).endswith("mantis here")

    helper.reply = lambda text: "helper here"
    await link.inbound("and one for the driver", "m3")
    assert _text((await next_item(helper.sends)).params).endswith("and one for the driver")
    [answer] = await link.deliveries_until_final()
    assert (answer["text"], answer["sender"]["name"]) == ("helper here", "Helper")
    assert not helper.conn.closed and not mantis.conn.closed and not link.conn.closed
