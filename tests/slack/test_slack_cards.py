"""A bot's question in Slack: a Block Kit card whose buttons answer it, once, for everyone.

Fake Slack ↔ real slack-bolt / slack_sdk ↔ the bridge ↔ embedded hub ↔ the example Rules
bot, whose CLARIFY to `/ask Rules weather` offers six cities. Presses arrive as Slack sends
them: an `interactive` envelope over Socket Mode, or a signed `payload=` form POSTed to the
Interactivity Request URL in HTTP mode.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import test_slack_e2e
from slack_support import ADA, CHANNEL, GRACE
from test_slack_e2e import System, protocol_from, slack_config

from adapters.slack.cards import ANSWER_ACTION, ANSWER_BLOCK
from bridge.core.cards import read_button_data
from bridge.protocol import parse
from bridge.text.parse_slack import unescape_slack
from tests.fakes.slack import FakeSlack, post_signed
from tests.support.redis_server import prefixed
from tests.support.running_bridge import BridgeStarter, instances_of
from tests.support.stores import redis_server

start_system = test_slack_e2e.start_system
"""The whole bridge against the fake Slack, as the other end-to-end tests start it."""

__all__ = ["redis_server"]

CITIES = ["Paris", "London", "New York", "Tokyo", "Berlin", "Sydney"]
MODES = pytest.mark.parametrize("mode", ["socket", "http"])


def blocks_of(message: dict[str, Any], kind: str) -> list[dict[str, Any]]:
    return [block for block in message.get("blocks") or [] if block["type"] == kind]


def context_text(message: dict[str, Any]) -> str:
    return " ".join(element["text"] for block in blocks_of(message, "context")
                    for element in block["elements"])


async def ask_weather(system: System) -> dict[str, Any]:
    """Ada's `/ask Rules weather`; the card of Rules's question, once it shows."""
    fake = system.slack
    await fake.acked(await fake.push_command("/ask", "Rules weather", user=ADA,
                                             channel=CHANNEL))
    [card] = await system.shown(
        lambda messages: [m for m in messages if blocks_of(m, "actions")])
    return card


def button(buttons: list[dict[str, Any]], label: str) -> dict[str, Any]:
    return next(b for b in buttons if b["text"]["text"] == label)


async def told(system: System, user: str, count: int = 1) -> list[str]:
    """The first `count` private (ephemeral) texts `user` got, once there are that many."""
    fake = system.slack

    def texts() -> list[str] | None:
        said = [e["text"] for e in fake.ephemerals
                if e["user"] == user and e["channel"] == CHANNEL]
        return said[:count] if len(said) >= count else None

    return await fake.wait_until(texts)


async def settled_card(system: System, ts: str) -> dict[str, Any]:
    """The card's message once it has no buttons any more."""
    fake = system.slack

    def settled() -> dict[str, Any] | None:
        message = fake.message(CHANNEL, ts)
        return None if blocks_of(message, "actions") else message

    return await fake.wait_until(settled)


def rules_responses(messages: list[dict[str, Any]]) -> list[Any]:
    parsed = [parse(text) for text in protocol_from(messages, "Rules")]
    return [p for p in parsed if p is not None and p.type == "RESPONSE"]


@MODES
async def test_a_press_answers_the_question_once_for_everyone(
    start_system: Callable[..., Any], mode: str
) -> None:
    system = await start_system(mode=mode, stream=False)
    fake = system.slack
    card = await ask_weather(system)

    # The card: the question as posted, a context line, and the buttons.
    assert card["text"] and blocks_of(card, "section")
    assert "*Rules* asks Ada" in context_text(card) and "depth 2/5" in context_text(card)
    assert "<!date^" in context_text(card)  # until when, in each reader's own time zone
    buttons = fake.buttons(CHANNEL, card["ts"])
    labels = [b["text"]["text"] for b in buttons]
    assert labels == [*CITIES, "Answer in my own words", "Stop"]
    assert all(read_button_data(b["value"]) is not None for b in buttons)
    assert len({b["action_id"] for b in buttons}) == len(buttons)
    assert all(b["action_id"].startswith("bcn_card_") for b in buttons)
    stop = button(buttons, "Stop")
    assert stop["style"] == "danger" and stop["confirm"]["confirm"]["text"] == "Stop it"

    delivery = await fake.press(CHANNEL, card["ts"], ADA, button(buttons, "Tokyo"))

    await fake.acked(delivery)
    assert delivery.status in (None, 200)
    assert await told(system, ADA) == ["Answered: Tokyo"]
    [response] = await system.shown(rules_responses)
    assert "Tokyo" in response.result and response.to == "Ada"
    shown = await settled_card(system, card["ts"])
    assert "answered by Ada (slack): Tokyo" in context_text(shown)
    assert shown["text"] == card["text"]  # the notification fallback stays the question

    # Grace presses a button of the card as her client still showed it: too late.
    await fake.press(CHANNEL, card["ts"], GRACE, button(buttons, "Paris"))
    assert await told(system, GRACE) == ["Already answered by Ada (slack): Tokyo."]
    # Button data the bridge never issued, pressed by anyone, answers nothing.
    forged = {**button(buttons, "Berlin"), "value": "bcn:aaaaaaaaaaaaaaaa:0"}
    await fake.press(CHANNEL, card["ts"], GRACE, forged)
    assert (await told(system, GRACE, 2))[1] == "That button is not one of this chat's."
    conversation = await system.app.relay.tracker.get(response.request_id)
    assert conversation is not None
    assert [entry.type for entry in conversation.history].count("ANSWER") == 1
    assert len(rules_responses(fake.posts(CHANNEL))) == 1


async def test_an_unsigned_or_badly_signed_press_is_refused_and_answers_nothing(
    start_system: Callable[..., Any],
) -> None:
    system = await start_system(mode="http", stream=False)
    fake = system.slack
    card = await ask_weather(system)
    buttons = fake.buttons(CHANNEL, card["ts"])
    payload = fake.press_payload(CHANNEL, card["ts"], ADA, button(buttons, "Tokyo"))
    body = "payload=" + aiohttp.helpers.quote(json.dumps(payload), safe="")
    url = fake.interactions_url()
    assert url.endswith("/slack/main/interactivity")

    async with aiohttp.ClientSession() as session:
        async with session.post(url, data=body.encode(), headers={
                "Content-Type": "application/x-www-form-urlencoded"}) as unsigned:
            assert unsigned.status == 401
    status, _ = await post_signed(url, body, secret="not-the-signing-secret",
                                  content_type="application/x-www-form-urlencoded")
    assert status == 401

    # Nothing was answered: Grace's signed press is the first, and it wins.
    await fake.press(CHANNEL, card["ts"], GRACE, button(buttons, "Sydney"))
    assert await told(system, GRACE) == ["Answered: Sydney"]
    shown = await settled_card(system, card["ts"])
    assert "answered by Grace Hopper (slack): Sydney" in context_text(shown)
    assert [e["user"] for e in fake.ephemerals] == [GRACE]


@MODES
async def test_own_words_go_through_a_modal(
    start_system: Callable[..., Any], mode: str
) -> None:
    system = await start_system(mode=mode, stream=False)
    fake = system.slack
    card = await ask_weather(system)
    buttons = fake.buttons(CHANNEL, card["ts"])

    await fake.press(CHANNEL, card["ts"], ADA, button(buttons, "Answer in my own words"))

    [view] = await fake.wait_until(lambda: list(fake.views.values()))
    assert view["callback_id"] == "bcn_card_own"
    assert "Which city?" in view["blocks"][0]["text"]["text"]
    assert fake.ephemerals == []  # the modal is the answer to that press
    delivery = await fake.submit_view(view["id"], ADA,
                                      {ANSWER_BLOCK: {ANSWER_ACTION: "  Reykjavik,   please "}})
    await fake.acked(delivery)
    assert not (delivery.response or {}).get("errors")  # accepted: the modal closes
    assert await told(system, ADA) == ["Answered: Reykjavik, please"]
    shown = await settled_card(system, card["ts"])
    assert "answered by Ada (slack): Reykjavik, please" in context_text(shown)
    conversation = await system.app.relay.tracker.get(request_of(card))
    assert conversation is not None
    answer = next(entry for entry in conversation.history if entry.type == "ANSWER")
    assert answer.from_ == "Ada"


def request_of(card: dict[str, Any]) -> str:
    """The request id of the CLARIFY a card shows (its text is the protocol block)."""
    clarify = parse(unescape_slack(card["text"]))
    assert clarify is not None and clarify.type == "CLARIFY"
    return clarify.request_id


@MODES
async def test_an_answer_from_a_modal_after_someone_pressed_shows_why_in_the_modal(
    start_system: Callable[..., Any], mode: str
) -> None:
    system = await start_system(mode=mode, stream=False)
    fake = system.slack
    card = await ask_weather(system)
    buttons = fake.buttons(CHANNEL, card["ts"])
    await fake.press(CHANNEL, card["ts"], ADA, button(buttons, "Answer in my own words"))
    [view] = await fake.wait_until(lambda: list(fake.views.values()))

    await fake.press(CHANNEL, card["ts"], GRACE, button(buttons, "London"))
    assert await told(system, GRACE) == ["Answered: London"]
    delivery = await fake.submit_view(view["id"], ADA, {ANSWER_BLOCK: {ANSWER_ACTION: "Oslo"}})

    await fake.acked(delivery)
    assert delivery.response == {
        "response_action": "errors",
        "errors": {ANSWER_BLOCK: "Already answered by Grace Hopper (slack): London."},
    }
    assert [e for e in fake.ephemerals if e["user"] == ADA] == []


async def test_only_the_requester_may_answer_where_the_binding_says_so(
    start_system: Callable[..., Any],
) -> None:
    system = await start_system(stream=False, binding={"answers": "requester"})
    fake = system.slack
    card = await ask_weather(system)
    buttons = fake.buttons(CHANNEL, card["ts"])

    await fake.press(CHANNEL, card["ts"], GRACE, button(buttons, "Paris"))
    assert await told(system, GRACE) == ["This question is not yours to answer."]
    assert blocks_of(fake.message(CHANNEL, card["ts"]), "actions")  # still open
    await fake.press(CHANNEL, card["ts"], ADA, button(buttons, "Berlin"))
    assert await told(system, ADA) == ["Answered: Berlin"]


async def test_stop_closes_the_request_and_the_card_says_who_stopped_it(
    start_system: Callable[..., Any],
) -> None:
    system = await start_system(stream=False)
    fake = system.slack
    card = await ask_weather(system)
    buttons = fake.buttons(CHANNEL, card["ts"])

    await fake.press(CHANNEL, card["ts"], GRACE, button(buttons, "Stop"))

    assert await told(system, GRACE) == ["Stopped."]
    shown = await settled_card(system, card["ts"])
    assert "stopped by Grace Hopper (slack)" in context_text(shown)


async def test_a_press_after_the_question_expired_is_answered_expired(
    start_system: Callable[..., Any],
) -> None:
    system = await start_system(stream=False)
    fake = system.slack
    card = await ask_weather(system)
    buttons = fake.buttons(CHANNEL, card["ts"])
    system.clock.advance(timedelta(minutes=11))  # past the CLARIFY's 10 minutes

    await fake.press(CHANNEL, card["ts"], ADA, button(buttons, "Paris"))

    assert await told(system, ADA) == ["This question has expired."]
    shown = await settled_card(system, card["ts"])
    assert "This question has expired." in context_text(shown)
    assert rules_responses(fake.posts(CHANNEL)) == []


async def test_a_card_in_a_thread_is_answered_in_that_thread(
    start_system: Callable[..., Any],
) -> None:
    system = await start_system(stream=False, binding={"session_scope": "thread"})
    fake = system.slack
    parent = fake.human_message(CHANNEL, ADA, "a question for the bots")
    await fake.push(parent)
    await system.shown(lambda m: m)
    ask = f"<@{fake.bot_user_id}> ask Rules weather"
    await fake.push(fake.human_message(CHANNEL, ADA, ask, thread_ts=parent["ts"]))
    [card] = await system.shown(lambda m: [p for p in m if blocks_of(p, "actions")],
                                thread=parent["ts"])

    await fake.press(CHANNEL, card["ts"], GRACE,
                     button(fake.buttons(CHANNEL, card["ts"]), "Berlin"))

    assert await told(system, GRACE) == ["Answered: Berlin"]
    assert fake.ephemerals[0]["thread_ts"] == parent["ts"]
    [response] = await system.shown(rules_responses, thread=parent["ts"])
    assert "Berlin" in response.result
    assert rules_responses(fake.posts(CHANNEL)) == []  # nothing outside the thread


@pytest.fixture
async def two_instances(tmp_path: Path, fake: FakeSlack, redis_server: str
                        ) -> AsyncIterator[list[System]]:
    """Two instances of one bridge in HTTP mode on one Redis, as behind a load balancer:
    Slack sends events to the first; a press may reach either one."""
    starter = BridgeStarter(tmp_path)
    async with prefixed(redis_server) as store:
        config = slack_config(tmp_path, fake, mode="http")
        configs = instances_of(config, store, await starter.start_hub(config))
        systems = await starter.start_instances(configs, stream=False, wrap=System, fake=fake)
        assert systems[0].app.web is not None
        fake.events_url = f"{systems[0].app.web.url}/slack/main/events"
        try:
            yield systems
        finally:
            await starter.close()


async def test_a_press_through_either_instance_answers_once_for_everyone(
    two_instances: list[System],
) -> None:
    first, second = two_instances
    fake = first.slack
    card = await ask_weather(first)
    buttons = fake.buttons(CHANNEL, card["ts"])
    # Ada's press goes to the first instance, Grace's at the same moment to the second.
    assert second.app.web is not None
    payload = fake.press_payload(CHANNEL, card["ts"], GRACE, button(buttons, "Paris"))
    body = "payload=" + aiohttp.helpers.quote(json.dumps(payload), safe="")
    (status, _), _ = await asyncio.gather(
        post_signed(f"{second.app.web.url}/slack/main/interactivity", body,
                    secret=fake.signing_secret,
                    content_type="application/x-www-form-urlencoded"),
        fake.press(CHANNEL, card["ts"], ADA, button(buttons, "Tokyo")),
    )
    assert status == 200
    said = {user: (await told(first, user))[0] for user in (ADA, GRACE)}
    [(winner, choice)] = [(user, text.removeprefix("Answered: "))
                          for user, text in said.items() if text.startswith("Answered: ")]
    loser = GRACE if winner == ADA else ADA
    name = {ADA: "Ada", GRACE: "Grace Hopper"}[winner]
    assert said[loser] == f"Already answered by {name} (slack): {choice}."
    # One answer reached Rules, whose one RESPONSE names that choice.
    [response] = await first.shown(rules_responses)
    assert choice in response.result
    shown = await settled_card(first, card["ts"])
    assert f"answered by {name} (slack): {choice}" in context_text(shown)
    conversation = await first.app.relay.tracker.get(response.request_id)
    assert conversation is not None
    assert [entry.type for entry in conversation.history].count("ANSWER") == 1
    await first.settled()
    assert len(rules_responses(fake.posts(CHANNEL))) == 1
