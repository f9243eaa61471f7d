"""Text that is not valid Unicode (a lone UTF-16 surrogate) is made valid at the door.

The repro of issue 31 item 1: one webchat frame `"a\\ud800b"` (valid JSON, ASCII on the
wire) made every writer to every bot fail on `UnicodeEncodeError` with its socket left
open, so every bot was deaf until its heartbeat noticed, and the room's history kept the
message, so every page that joined afterwards was cut off. Hub, bridge, bots and page here
are the real ones, over real sockets.
"""

from __future__ import annotations

from typing import Any

import aiohttp
import pytest

from bridge.bcn.bot import Bot, IncomingMessage, Run
from bridge.bcn.examples.rules_bot import build_rules_bot
from tests.webchat.webchat_clients import ChatClient, open_client

REPRO = '{"type":"message","client_message_id":"m1","text":"a\\ud800b"}'
"""The frame exactly as the issue has it: ASCII on the wire, a lone surrogate once read."""

ANSWER_WAIT = 10.0
"""Far below a bot's heartbeat (36-85 s): a bot that answers within it was never deaf."""


async def _page(system: Any, http: aiohttp.ClientSession) -> tuple[ChatClient, list[str]]:
    """A page in the lobby, and the texts of the history it was given on joining."""
    adapter = system.app.relay.ctx.adapters["webchat:main"]
    page = await open_client(http, f"{system.app.web.url}{adapter.ws_path}")
    joined = await page.join("lobby", "Ada")
    return page, [message["text"] or message["html"] for message in joined["history"]]


async def _bot_html(page: ChatClient, sender: str = "Echo") -> str:
    """The HTML of the next finished reply of `sender` the page is shown."""
    return (await page.final_from(sender, ANSWER_WAIT))["html"]


@pytest.fixture
async def http() -> Any:
    async with aiohttp.ClientSession() as session:
        yield session


async def test_a_webchat_frame_with_a_lone_surrogate_silences_no_bot(start_system, http):
    system = await start_system(stream=False, webchat=True)
    page, _ = await _page(system, http)
    await page.ws.send_str(REPRO)
    assert await _bot_html(page) == "<p>a\ufffdb</p>"  # its echo: made valid at the door
    await page.say("and the next one")
    assert await _bot_html(page) == "<p>and the next one</p>"  # promptly: no bot went deaf
    late, history = await _page(system, http)  # a page joining afterwards gets the history
    assert history == ["a\ufffdb", "<p>a\ufffdb</p>", "and the next one",
                       "<p>and the next one</p>"]
    await late.assert_quiet()


async def test_a_bots_final_with_a_lone_surrogate_silences_nothing(start_system, http, tmp_path):
    """A bot's reply is a door too: `!` comes back as a lone surrogate from this driver. Before,
    the bot's own writer died on it (its socket open, its runs unanswered), so it never
    answered this message or the next."""
    system = await start_system(stream=False, webchat=True, bots=False)

    async def lone(message: IncomingMessage, run: Run) -> str:
        return message.text.replace("!", "\ud800")

    bot_url = f"{system.app.bcn_url.rstrip('/')}/ws/bot"
    driver = Bot(bot_url, name="Echo", token_file=tmp_path / "echo.token")
    driver.on_message(lone)
    rules = build_rules_bot(bot_url, name="Rules", token_file=tmp_path / "rules.token")
    for bot in (driver, rules):
        await bot.start(timeout=10)
        system.bots.append(bot)
    await system.wait_for_bots("Echo", "Rules")
    page, _ = await _page(system, http)
    await page.say("hi!")
    assert await _bot_html(page) == "<p>hi\ufffd</p>"
    await page.say("and the next one")
    assert await _bot_html(page) == "<p>and the next one</p>"
    _, history = await _page(system, http)
    assert history == ["hi!", "<p>hi\ufffd</p>", "and the next one", "<p>and the next one</p>"]
