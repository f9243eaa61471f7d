"""Issue 31 item 3: one bot's very large final must not disconnect the other bots.

The hub, the SDK and the channel link share one size policy (`bridge.bcn.limits`): the
hub forwards at most `MAX_FORWARDED_CHARS` of a message (cut with a notice), every peer
accepts frames up to `MAX_FRAME_BYTES`, and a frame above that is refused for its sender
alone. Real hub, real SDK bots (Echo and Rules), real sockets.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import pytest
from test_bots_with_hub import LINK_TOKEN, ChatProbe, bot_options

from bridge.bcn.bot import Bot, IncomingMessage, Run
from bridge.bcn.examples.echo import build_echo_bot
from bridge.bcn.examples.rules_bot import build_rules_bot
from bridge.bcn.limits import MAX_FORWARDED_CHARS, MAX_FRAME_BYTES
from bridge.hub import Hub, HubConfig
from bridge.hub.config import GroupConfig
from bridge.protocol import MessageType, build_request, parse

BIG_FINAL = ("a line of a very long answer\n" * 220_000)  # ~6.4 MB
"""Between the SDK's old 4 MB default and the hub's 8 MB frame: the reported case."""


def big_hub_config(tmp_path: Path) -> HubConfig:
    return HubConfig(
        listen="127.0.0.1:0",
        data_dir=tmp_path / "hub",
        link_tokens=[LINK_TOKEN],
        groups=[GroupConfig(id="team", driver="Big", bots=["Big", "Echo", "Rules"]),
                GroupConfig(id="echoes", driver="Echo", bots=["Echo"]),
                GroupConfig(id="rules", driver="Rules", bots=["Rules"])],
        bot_reply_default="observe",
        request_timeout_seconds=10,
    )


@pytest.fixture
async def big_hub(tmp_path: Path) -> AsyncIterator[Hub]:
    running = Hub(big_hub_config(tmp_path))
    await running.start()
    yield running
    await running.stop()


class Observed:
    """What one bot was shown of other bots' words (`chat.inject`)."""

    def __init__(self) -> None:
        self.texts: list[str] = []

    async def see(self, message: IncomingMessage) -> None:
        self.texts.append(message.text)

    async def from_big(self) -> str:
        """The first observed message from Big (the human's own message comes too)."""
        async with asyncio.timeout(20):
            while True:
                for text in self.texts:
                    if text.startswith("a line of a very long answer"):
                        return text
                await asyncio.sleep(0.01)


async def big_answer(_message: IncomingMessage, _run: Run) -> str:
    return BIG_FINAL


async def test_a_6_mb_final_reaches_the_other_bots_cut_and_they_stay_connected(
    big_hub: Hub, tmp_path: Path
) -> None:
    echo_saw, rules_saw = Observed(), Observed()
    big = Bot(f"{big_hub.url}/ws/bot", name="Big", on_message=big_answer,
              **bot_options(tmp_path, "big"))
    echo = build_echo_bot(f"{big_hub.url}/ws/bot", on_observe=echo_saw.see,
                          **bot_options(tmp_path, "echo"))
    rules = build_rules_bot(f"{big_hub.url}/ws/bot", **bot_options(tmp_path, "rules"))
    rules.on_observe(rules_saw.see)
    chat = ChatProbe(big_hub.url)
    async with big, echo, rules:
        await chat.connect(["team", "echoes", "rules"])
        try:
            await chat.say("team", "tell us everything")
            final = await chat.wait_for("Big", "final")
            for seen in (await echo_saw.from_big(), await rules_saw.from_big()):
                assert len(seen) <= MAX_FORWARDED_CHARS
                assert f"(reply truncated: {len(BIG_FINAL):,} characters; the first " in seen
            assert len(final["text"]) <= MAX_FORWARDED_CHARS

            await chat.say("echoes", "still here?")
            assert (await chat.wait_for("Echo", "final"))["text"] == "still here?"
            await chat.say("rules", build_request(to="Rules", from_="Alice", task="weather",
                                                  request_id="after-big"))
            clarify = parse((await chat.wait_for("Rules", "final"))["text"])
            assert clarify.type is MessageType.CLARIFY
            assert (echo.connect_count, rules.connect_count, big.connect_count) == (1, 1, 1)
        finally:
            await chat.close()


async def test_a_frame_above_the_hub_maximum_is_refused_for_its_sender_only(
    big_hub: Hub, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A peer that sends more than `MAX_FRAME_BYTES` is closed with 1009 (message too big);
    the other bots stay connected and go on answering."""
    echo = build_echo_bot(f"{big_hub.url}/ws/bot", **bot_options(tmp_path, "echo"))
    chat = ChatProbe(big_hub.url)
    async with echo, aiohttp.ClientSession() as http:
        raw = await http.ws_connect(f"{big_hub.url}/ws/bot", max_msg_size=0)
        sending = asyncio.create_task(raw.send_str("x" * (MAX_FRAME_BYTES + 1)))
        closed = await raw.receive(timeout=20)
        await asyncio.gather(sending, return_exceptions=True)  # the hub may cut it mid-write
        assert closed.type is aiohttp.WSMsgType.CLOSE
        assert closed.data == aiohttp.WSCloseCode.MESSAGE_TOO_BIG
        async with asyncio.timeout(10):  # the hub says why, in one line
            while not any("MAX_FRAME_BYTES" in r.getMessage() for r in caplog.records):
                await asyncio.sleep(0.01)
        await chat.connect(["echoes"])
        try:
            await chat.say("echoes", "unaffected")
            assert (await chat.wait_for("Echo", "final"))["text"] == "unaffected"
            assert echo.connect_count == 1
        finally:
            await chat.close()


async def test_the_sdk_refuses_to_send_a_frame_above_the_maximum_and_stays_connected(
    big_hub: Hub, tmp_path: Path
) -> None:
    """The SDK's own oversized final fails that run with a clear error in the chat; the
    connection, and the bot's next answer, are unaffected."""
    async def huge(message: IncomingMessage, _run: Run) -> str:
        return "x" * (MAX_FRAME_BYTES + 1) if message.text == "huge" else "small"

    big = Bot(f"{big_hub.url}/ws/bot", name="Big", on_message=huge,
              **bot_options(tmp_path, "big"))
    chat = ChatProbe(big_hub.url)
    async with big:
        await chat.connect(["team"])
        try:
            await chat.say("team", "huge")
            failed = await chat.wait_for("Big", "error")
            assert "too large" in failed["text"]
            chat.deliveries.clear()
            await chat.say("team", "again")
            assert (await chat.wait_for("Big", "final"))["text"] == "small"
            assert big.connect_count == 1
        finally:
            await chat.close()


def test_the_link_and_the_sdk_accept_what_the_hub_accepts() -> None:
    from bridge.hub import handshake

    assert handshake.MAX_FRAME_BYTES == MAX_FRAME_BYTES
    assert 2 * 6 * MAX_FORWARDED_CHARS < MAX_FRAME_BYTES  # two copies, worst-case escaping
