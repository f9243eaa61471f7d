"""A Slack event with a lone UTF-16 surrogate reaches the core as valid Unicode (issue 31).

Real slack-bolt parses the fake's JSON itself (so `bridge.fastjson` is not its door): the
escaped `\\ud800` on the wire is a lone surrogate in its event, and `Inbound` — the one
normalized message every platform makes — is where it becomes U+FFFD.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from slack_support import CHANNEL, MakeAdapter, Sink, relayed_after

from bridge.web.server import WebServer
from tests.fakes.slack import FakeSlack

LONE = "U0LONE"


@pytest.fixture
async def web() -> AsyncIterator[WebServer]:
    server = WebServer("127.0.0.1:0")
    yield server
    await server.stop()


@pytest.mark.parametrize("mode", ["http", "socket"])
async def test_a_lone_surrogate_in_an_event_reaches_the_core_as_the_replacement_character(
    fake: FakeSlack, make_adapter: MakeAdapter, web: WebServer, sink: Sink, mode: str
) -> None:
    fake.add_user(LONE, "lone", display_name="Lo\udc00ne")
    if mode == "http":  # a signed event POSTed to the events route
        await make_adapter(web=web, mode="http", app_token=None)
    else:
        await make_adapter()
    await fake.push(fake.human_message(CHANNEL, LONE, "a\ud800b"))
    [inbound] = await sink.wait_for(1)
    assert inbound.text == "a\ufffdb"
    assert inbound.sender.name == "Lo\ufffdne"
    inbound.text.encode("utf-8")
    # and the next message goes through as ever
    assert await relayed_after(fake, sink) == ["a\ufffdb"]

