"""The SDK and the example bots against the real embedded hub, over real sockets.

A human's message enters through a minimal channel link (the `/ws/channel` frames of
the channel link spoken with the shared `Connection`), the hub routes it to the bot, and the
bot's output comes back as `channel.deliver` requests.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from bridge.bcn import Connection, Request
from bridge.bcn.examples.echo import build_echo_bot
from bridge.bcn.examples.rules_bot import build_rules_bot
from bridge.hub import Hub, HubConfig
from bridge.hub.config import GroupConfig
from bridge.protocol import MessageType, build_request, parse
from bridge.retry import Backoff

LINK_TOKEN = "link-secret-for-tests"


class ChatProbe:
    """Plays the bridge on `/ws/channel`: posts human messages, collects bot output."""

    def __init__(self, hub_url: str) -> None:
        self.hub_url = hub_url
        self.deliveries: list[dict[str, Any]] = []
        self.binding_ids: dict[str, str] = {}
        self._msg_ids = itertools.count(1)
        self._http: aiohttp.ClientSession | None = None
        self._conn: Connection | None = None
        self._reader: asyncio.Task[None] | None = None

    async def connect(self, groups: list[str]) -> None:
        self._http = aiohttp.ClientSession()
        ws = await self._http.ws_connect(f"{self.hub_url}/ws/channel")
        self._conn = Connection(ws, on_request=self._on_request, name="probe")
        self._reader = asyncio.create_task(self._conn.run())
        bindings = [{"channel_type": "webchat", "account_ref": "main",
                     "conversation_id": f"room-{group}", "group_id": group,
                     "identity_forwarding": True} for group in groups]
        answer = await self._conn.request("channel.connect", {
            "token": LINK_TOKEN, "protocol_version": 1, "link_name": "probe",
            "bindings": bindings})
        for echoed in answer["bindings"]:
            self.binding_ids[echoed["group_id"]] = echoed["binding_id"]

    async def close(self) -> None:
        if self._conn is not None:
            await self._conn.close()
        if self._reader is not None:
            await asyncio.wait({self._reader})
        if self._http is not None:
            await self._http.close()

    async def _on_request(self, request: Request) -> dict[str, Any]:
        if request.method == "channel.deliver":
            self.deliveries.append(request.params)
        return {}

    async def say(self, group: str, text: str) -> dict[str, Any]:
        assert self._conn is not None
        return await self._conn.request("channel.inbound", {
            "binding_id": self.binding_ids[group], "msg_id": f"m-{next(self._msg_ids)}",
            "sender": {"user_id": "u-alice", "name": "Alice", "is_bot": False},
            "text": text, "mentions": []})

    async def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        assert self._conn is not None
        return await self._conn.request(method, params)

    def outputs(self, bot: str) -> list[dict[str, Any]]:
        return [d for d in self.deliveries if d["sender"]["name"] == bot]

    async def wait_for(self, bot: str, kind: str) -> dict[str, Any]:
        async with asyncio.timeout(10):
            while True:
                for delivery in self.outputs(bot):
                    if delivery["kind"] == kind:
                        return delivery
                await asyncio.sleep(0.01)


def hub_config(tmp_path: Path, port: int = 0) -> HubConfig:
    return HubConfig(
        listen=f"127.0.0.1:{port}",
        data_dir=tmp_path / "hub",
        link_tokens=[LINK_TOKEN],
        groups=[GroupConfig(id="echoes", driver="Echo"), GroupConfig(id="rules", driver="Rules")],
        bot_reply_default="observe",
        request_timeout_seconds=5,
    )


@pytest.fixture
async def hub(tmp_path: Path) -> AsyncIterator[Hub]:
    running = Hub(hub_config(tmp_path))
    await running.start()
    yield running
    await running.stop()


@pytest.fixture
async def chat(hub: Hub) -> AsyncIterator[ChatProbe]:
    probe = ChatProbe(hub.url)
    yield probe
    await probe.close()


def bot_options(tmp_path: Path, name: str) -> dict[str, Any]:
    return {"token_file": tmp_path / f"{name}.token", "backoff": Backoff(initial=0.01, maximum=0.1),
            "heartbeat_interval": 0.05}


async def test_echo_streams_through_the_hub(hub, chat, tmp_path):
    async with build_echo_bot(f"{hub.url}/ws/bot", **bot_options(tmp_path, "echo")):
        await chat.connect(["echoes"])
        answer = await chat.say("echoes", "hello big world")
        assert [(d["name"], d["method"]) for d in answer["deliveries"]] == [("Echo", "chat.send")]
        final = await chat.wait_for("Echo", "final")
    deltas = [d["text"] for d in chat.outputs("Echo") if d["kind"] == "delta"]
    assert deltas == ["hello ", "big ", "world"]
    assert final["text"] == "hello big world"


async def test_rules_bot_answers_protocol_and_clarify_through_the_hub(hub, chat, tmp_path):
    async with build_rules_bot(f"{hub.url}/ws/bot", **bot_options(tmp_path, "rules")):
        await chat.connect(["rules"])
        await chat.say("rules", build_request(to="Rules", from_="Alice", task="weather",
                                              request_id="alice-w1"))
        clarify = parse((await chat.wait_for("Rules", "final"))["text"])
        chat.deliveries.clear()
        await chat.say("rules", "Tokyo")
        response = parse((await chat.wait_for("Rules", "final"))["text"])
    assert clarify.type is MessageType.CLARIFY and clarify.to == "Alice"
    assert response.type is MessageType.RESPONSE and response.request_id == "alice-w1"
    assert response.result == "Weather in Tokyo: 26°C, humid and clear"


async def test_stop_in_the_chat_aborts_the_bot_run(hub, chat, tmp_path):
    slow = build_echo_bot(f"{hub.url}/ws/bot", word_delay=0.05, **bot_options(tmp_path, "echo"))
    async with slow:
        await chat.connect(["echoes"])
        inbound = await chat.say("echoes", " ".join(f"w{i}" for i in range(200)))
        first = await chat.wait_for("Echo", "delta")
        answer = await chat.request("channel.abort", {
            "bcs_session_id": inbound["bcs_session_id"], "run_id": first["run_id"]})
        assert answer["aborted_run_ids"] == [first["run_id"]]
        await chat.wait_for("Echo", "aborted")
        seen = len(chat.outputs("Echo"))
        await asyncio.sleep(0.2)  # several word delays: a live run would have streamed on
        assert len(chat.outputs("Echo")) == seen
    assert not any(d["kind"] == "final" for d in chat.outputs("Echo"))


async def test_bot_comes_back_with_its_identity_after_a_hub_restart(tmp_path):
    first_hub = Hub(hub_config(tmp_path))
    await first_hub.start()
    port = first_hub.port
    bot = build_echo_bot(f"{first_hub.url}/ws/bot", **bot_options(tmp_path, "echo"))
    try:
        await bot.start(timeout=10)
        uuid = bot.bot_uuid
        await first_hub.stop()
        second_hub = Hub(hub_config(tmp_path, port))
        await second_hub.start()
        try:
            async with asyncio.timeout(10):
                while bot.connect_count < 2:
                    await bot.wait_connected()
                    await asyncio.sleep(0.01)
            assert bot.bot_uuid == uuid and bot.negotiated_version == 3
            probe = ChatProbe(second_hub.url)
            await probe.connect(["echoes"])
            try:
                await probe.say("echoes", "still me")
                assert (await probe.wait_for("Echo", "final"))["text"] == "still me"
            finally:
                await probe.close()
        finally:
            await second_hub.stop()
    finally:
        await bot.stop()


async def test_sdk_bot_speaks_v3_and_coordinates_through_the_hub(hub, chat, tmp_path):
    """A v3 SDK bot on the hub: run events accepted, route.resolve and session.complete."""
    from bridge.bcn.bot import Bot, complete_session, resolve_route, route_to

    answers: list[dict[str, Any]] = []
    bot = Bot(f"{hub.url}/ws/bot", name="Echo", client_kind="bcn-bridge-tests",
              **bot_options(tmp_path, "coord"))

    @bot.on_message
    async def answer(message: Any, run: Any) -> None:
        resolved = await resolve_route(bot, message.bcs_group_id, names=["Echo"],
                                       session_id=message.bcs_session_id)
        answers.append(resolved)
        await run.delta("resolved ")
        await run.final("resolved Echo", routing=route_to(
            bot_uuids=tuple(target["value"] for target in resolved["resolved"])))

    async with bot:
        assert bot.run_events and bot.negotiated_version == 3
        await chat.connect(["echoes"])
        said = await chat.say("echoes", "who are you?")
        final = await chat.wait_for("Echo", "final")
        assert final["text"] == "resolved Echo"
        assert answers[0]["resolved"][0]["bot_name"] == "Echo"
        done = await complete_session(bot, said["bcs_session_id"], output="bye")
        assert done["status"] == "completed"
        again = await chat.say("echoes", "hello again")
        assert again["bcs_session_id"] != said["bcs_session_id"]
