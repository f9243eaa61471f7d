"""Slack end to end: fake Slack ↔ real slack-bolt ↔ the bridge ↔ embedded hub ↔ example bots."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from slack_support import (
    ADA,
    CHANNEL,
    GRACE,
    LOTBOT_BOT,
    LOTBOT_USER,
    OTHER_CHANNEL,
    account_config,
)

from bridge.config.schema import BridgeConfig
from bridge.protocol import build_request, parse
from bridge.text import to_platform
from tests.fakes.slack import FakeSlack
from tests.support.running_bridge import WAIT, BridgeStarter, RunningBridge, bridge_config


@dataclass
class System(RunningBridge):
    fake: FakeSlack | None = None

    @property
    def slack(self) -> FakeSlack:
        assert self.fake is not None
        return self.fake

    async def shown(
        self, predicate: Callable[[list[dict[str, Any]]], Any], thread: str | None = None
    ) -> Any:
        """Until `predicate(the app's messages in the channel, as shown now)` is truthy."""
        fake = self.slack
        return await fake.wait_until(lambda: predicate(fake.posts(CHANNEL, thread)), WAIT)

    async def settled(self) -> None:
        assert self.app.relay is not None
        await self.app.relay.outbox.wait_idle()


def slack_config(
    tmp_path: Path, fake: FakeSlack, *, deliver: str = "raw", mode: str = "socket",
    binding: dict[str, Any] | None = None, **account: Any,
) -> BridgeConfig:
    """A bridge with `slack:main` bound to CHANNEL (group `demo`); `binding` adds keys to
    that binding, the other keywords go to the account."""
    return bridge_config(
        tmp_path,
        bindings=[{"channel": "slack:main", "chat": CHANNEL, "group": "demo",
                   "protocol": {"enabled": True, "deliver": deliver}, **(binding or {})}],
        accounts={"slack": {"main": account_config(fake, mode=mode, **account)}},
        web=mode == "http",
    )


@pytest.fixture
async def start_system(tmp_path: Path, fake: FakeSlack) -> AsyncIterator[Callable[..., Any]]:
    starter = BridgeStarter(tmp_path)

    async def start(
        *, bots: bool = True, stream: bool = True, mode: str = "socket", **settings: Any,
    ) -> System:
        config = slack_config(tmp_path, fake, mode=mode, **settings)
        system = await starter.start(config, bots=bots, stream=stream, wrap=System, fake=fake)
        if mode == "http":
            assert system.app.web is not None
            fake.events_url = f"{system.app.web.url}/slack/main/events"
        return system

    yield start
    await starter.close()


def said_by(messages: list[dict[str, Any]], name: str) -> list[str]:
    return [m["text"] for m in messages if m.get("username") == name]


def protocol_from(messages: list[dict[str, Any]], name: str) -> list[str]:
    """The bot's messages that already read as a finished protocol message (Slack escapes
    `&`, `<` and `>`, as other bots reading the channel get them)."""
    unescaped = [t.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")
                 for t in said_by(messages, name)]
    return [text for text in unescaped if parse(text) is not None]


@pytest.mark.parametrize("mode", ["socket", "http"])
async def test_a_message_gets_a_streamed_reply_under_the_bots_name(
    start_system: Callable[..., Any], mode: str
) -> None:
    system = await start_system(mode=mode)
    fake = system.slack

    await fake.push(fake.human_message(CHANNEL, ADA, "hello there brave new world"))

    await system.shown(lambda m: "hello there brave new world" in said_by(m, "Echo"))
    await system.settled()
    assert said_by(fake.posts(CHANNEL), "Echo") == ["hello there brave new world"]
    assert fake.calls_to("chat.update")  # streamed: posted, then edited in place
    assert all(call.params.get("username") == "Echo"
               for call in fake.calls_to("chat.postMessage"))


async def test_a_protocol_request_from_another_slack_bot_is_answered(
    start_system: Callable[..., Any],
) -> None:
    system = await start_system(deliver="natural")
    fake = system.slack
    block = build_request(
        to="Echo", from_="Lotbot", task="say <banana> & co", request_id="lotbot-abc123",
        depth=(2, 5),
    )
    text = to_platform(block, "slack")  # what Lotbot's own post looks like to the API
    await fake.push(fake.other_bot_message(CHANNEL, bot_id=LOTBOT_BOT, user=LOTBOT_USER,
                                           name="Lotbot", text=text))

    [answer] = await system.shown(lambda m: protocol_from(m, "Echo"))
    response = parse(answer)

    assert response is not None and response.type == "RESPONSE"
    assert response.to == "Lotbot" and response.request_id == "lotbot-abc123"
    assert tuple(response.depth) == (3, 5)
    assert answer.startswith("```")  # fences stay literal text other bots can read
    assert "<banana> & co" in answer


@pytest.mark.parametrize(("allow_everyone", "shown"), [(False, "@channel"), (True, "<!channel>")])
async def test_a_bot_may_ping_the_channel_only_where_allowed(
    start_system: Callable[..., Any], allow_everyone: bool, shown: str
) -> None:
    system = await start_system(stream=False, binding={"allow_everyone": allow_everyone})
    fake = system.slack

    await fake.push(fake.human_message(CHANNEL, ADA, "<!channel> deploy <!here> now"))

    [reply] = await system.shown(lambda m: said_by(m, "Echo"))
    assert reply.startswith(f"{shown} deploy")
    if not allow_everyone:
        for ping in ("<!channel>", "<!here>", "<!everyone>"):
            assert all(ping not in call.params["text"]
                       for call in fake.calls_to("chat.postMessage"))


async def test_a_redelivered_message_is_answered_once(start_system: Callable[..., Any]) -> None:
    system = await start_system(stream=False)
    fake = system.slack
    first = await fake.push(fake.human_message(CHANNEL, ADA, "just once please"))
    await system.shown(lambda m: said_by(m, "Echo"))

    await fake.redeliver(first)
    await fake.push(fake.human_message(CHANNEL, ADA, "and then this"))

    await system.shown(lambda m: "and then this" in said_by(m, "Echo"))
    await system.settled()
    assert said_by(fake.posts(CHANNEL), "Echo") == ["just once please", "and then this"]


async def test_slash_ask_starts_a_tracked_request(start_system: Callable[..., Any]) -> None:
    system = await start_system(stream=False)
    fake = system.slack

    delivery = await fake.push_command("/ask", "Rules what is 6 times 7", user=ADA,
                                       channel=CHANNEL)

    await fake.acked(delivery)
    [answer] = await system.shown(lambda m: protocol_from(m, "Rules"))
    response = parse(answer)
    assert response is not None and response.to == "Ada" and "42" in response.result
    [request] = protocol_from(fake.posts(CHANNEL), "Ada")  # the human's request, as them
    assert parse(request) is not None and parse(request).type == "REQUEST"
    assert system.app.relay is not None
    conversation = await system.app.relay.tracker.get(response.request_id)
    assert conversation is not None and conversation.status == "done"
    assert fake.responses == []  # nothing to say privately: the request is in the channel


@pytest.mark.parametrize(
    ("command", "kind", "text"),
    [
        ("/requests", "ephemeral", "No open requests in this chat."),
        ("/new", "in_channel", "Started a fresh conversation"),
        ("/ask", "ephemeral", "Usage: `/ask &lt;Bot&gt; &lt;task&gt;`"),  # mrkdwn
    ],
)
async def test_command_answers_go_through_the_response_url(
    start_system: Callable[..., Any], command: str, kind: str, text: str
) -> None:
    system = await start_system(stream=False)
    fake = system.slack

    await fake.push_command(command, "", user=ADA, channel=CHANNEL)

    [posted] = await fake.wait_until(lambda: fake.responses)
    assert posted.body["response_type"] == kind
    assert posted.body["text"].startswith(text)
    await system.settled()
    assert fake.calls_to("chat.postMessage") == []


async def test_an_expired_response_url_falls_back_to_a_post(
    start_system: Callable[..., Any],
) -> None:
    system = await start_system(stream=False)
    fake = system.slack
    fake.expired_responses = True

    await fake.push_command("/requests", "", user=ADA, channel=CHANNEL)

    [posted] = await system.shown(lambda m: said_by(m, "bcn-bridge"))
    assert posted == "No open requests in this chat."


async def test_a_command_in_an_unbound_channel_says_how_to_bind_it(
    start_system: Callable[..., Any],
) -> None:
    system = await start_system(stream=False)
    fake = system.slack

    await fake.push_command("/requests", "", user=ADA, channel=OTHER_CHANNEL)

    [posted] = await fake.wait_until(lambda: fake.responses)
    assert posted.body["response_type"] == "ephemeral"
    assert f'chat: "{OTHER_CHANNEL}"' in posted.body["text"]


async def test_asking_the_app_in_a_thread_answers_in_the_thread(
    start_system: Callable[..., Any],
) -> None:
    system = await start_system(stream=False, binding={"session_scope": "thread"})
    fake = system.slack
    parent = fake.human_message(CHANNEL, ADA, "a question for the bots")
    await fake.push(parent)
    await system.shown(lambda m: said_by(m, "Echo"))
    ask = f"<@{fake.bot_user_id}> ask Rules what is 6 times 7"

    await fake.push(fake.human_message(CHANNEL, ADA, ask, thread_ts=parent["ts"]))

    [answer] = await system.shown(lambda m: protocol_from(m, "Rules"), thread=parent["ts"])
    response = parse(answer)
    assert response is not None and "42" in response.result
    assert protocol_from(fake.posts(CHANNEL), "Rules") == []  # nothing outside the thread


async def test_an_edit_reaches_the_bots_when_the_binding_relays_edits(
    start_system: Callable[..., Any],
) -> None:
    system = await start_system(stream=False, binding={"relay_edits": True})
    fake = system.slack
    original = fake.human_message(CHANNEL, ADA, "teh plan")
    await fake.push(original)
    await system.shown(lambda m: said_by(m, "Echo"))

    await fake.push(fake.edit(CHANNEL, original["ts"], "the plan"))

    await system.shown(lambda m: "(edited) the plan" in said_by(m, "Echo"))


async def test_a_rate_limited_reply_waits_and_keeps_its_order(
    start_system: Callable[..., Any],
) -> None:
    system = await start_system(stream=False)
    fake = system.slack
    fake.rate_limit("chat.postMessage", retry_after=0.2, times=2)

    for n in range(3):
        await fake.push(fake.human_message(CHANNEL, ADA, f"in order {n}"))

    await system.shown(lambda m: len(said_by(m, "Echo")) == 3)
    assert said_by(fake.posts(CHANNEL), "Echo") == [f"in order {n}" for n in range(3)]
    assert len(fake.calls_to("chat.postMessage")) == 5  # two refused, none dropped


async def test_restart_with_replies_queued_delivers_them_once(
    start_system: Callable[..., Any],
) -> None:
    first = await start_system(stream=False)
    fake = first.slack
    fake.fail("chat.postMessage", "service_unavailable", status=503)
    for n in range(3):
        await fake.push(fake.human_message(CHANNEL, ADA, f"queued {n}"))
    relay = first.app.relay
    assert relay is not None
    async with asyncio.timeout(WAIT):
        while relay.outbox.pending_count() < 3:
            await asyncio.sleep(0.01)
    await first.stop()
    assert fake.posts(CHANNEL) == []

    fake.recover("chat.postMessage")
    second = await start_system(bots=False)
    await second.shown(lambda m: len(m) == 3)
    await second.settled()

    assert said_by(fake.posts(CHANNEL), "Echo") == [f"queued {n}" for n in range(3)]


async def test_a_bots_mention_of_a_person_pings_them(start_system: Callable[..., Any]) -> None:
    system = await start_system(stream=False)
    fake = system.slack

    await fake.push(fake.human_message(CHANNEL, ADA, f"<@{ADA}> look at this"))

    [reply] = await system.shown(lambda m: said_by(m, "Echo"))
    assert reply == f"<@{ADA}> look at this"  # the bot wrote "@Ada": Slack needs the id


async def test_a_long_reply_is_split_at_4000_characters_outside_code_blocks(
    start_system: Callable[..., Any],
) -> None:
    system = await start_system(stream=False)
    fake = system.slack
    prose = " ".join(f"word{n}" for n in range(700))
    code = "\n".join(f"line {n} of the listing" for n in range(250))
    text = f"{prose}\n\n```\n{code}\n```\n\n{prose}"

    await fake.push(fake.human_message(CHANNEL, ADA, text))

    await system.shown(lambda m: len(said_by(m, "Echo")) >= 3)
    await system.settled()
    parts = said_by(fake.posts(CHANNEL), "Echo")
    assert all(len(part) <= 4000 for part in parts)
    assert all(part.count("```") % 2 == 0 for part in parts)  # no part opens a fence it leaves
    assert " ".join(parts).replace("```", "").split() == text.replace("```", "").split()


async def test_one_message_in_two_events_is_answered_once(
    start_system: Callable[..., Any],
) -> None:
    system = await start_system(stream=False)
    fake = system.slack
    message = fake.human_message(CHANNEL, ADA, "said once, sent twice")

    await fake.push(message)
    await fake.push(dict(message))  # a new event id: only (channel, ts) tells them apart
    await fake.push(fake.human_message(CHANNEL, ADA, "the next one"))

    await system.shown(lambda m: "the next one" in said_by(m, "Echo"))
    await system.settled()
    assert said_by(fake.posts(CHANNEL), "Echo") == ["said once, sent twice", "the next one"]


async def test_slash_ask_from_a_spaced_name_gets_its_answer(
    start_system: Callable[..., Any],
) -> None:
    """Issue 31 §2: the RESPONSE to "Grace Hopper" could not be built, so it never came."""
    system = await start_system()
    fake = system.slack
    delivery = await fake.push_command("/ask", "Rules what is 6 times 7", user=GRACE,
                                       channel=CHANNEL)
    await fake.acked(delivery)
    [answer] = await system.shown(lambda m: protocol_from(m, "Rules"))
    response = parse(answer)
    assert response is not None and response.to == "Grace Hopper" and "42" in response.result
