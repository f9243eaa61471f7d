"""A bot's question on Telegram: an inline keyboard, one press answers it, once.

End to end over real sockets: the fake Bot API ↔ real python-telegram-bot ↔ the bridge ↔ the
embedded hub ↔ the example Rules bot, whose `weather` CLARIFY offers six cities. A press is a
`callback_query` update as Telegram sends it (to the bot that posted the message, with the
presser in `from`); every one must be answered with `answerCallbackQuery`.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from telegram_support import GROUP, TOKEN, StartSystem, System, telegram_config

from bridge.core.cards import read_button_data
from bridge.protocol import parse
from tests.fakes.telegram import FakeTelegram, user
from tests.support.bridge_process import free_port
from tests.support.redis_server import prefixed
from tests.support.running_bridge import WAIT, BridgeStarter, instances_of
from tests.support.stores import redis_server

__all__ = ["redis_server"]

ADA = user("Ada", user_id=601)
BEA = user("Bea", user_id=602, last_name="Ng")
CY = user("Cy", user_id=603, username="cy")

CITIES = ["Paris", "London", "New York", "Tokyo", "Berlin", "Sydney"]


async def ask_weather(system: System) -> dict[str, Any]:
    """Ada asks Rules for the weather; the card message, once it shows its keyboard."""
    fake = system.fake
    assert fake is not None
    command = {"type": "bot_command", "offset": 0, "length": len("/ask")}
    fake.push_message(TOKEN, GROUP, ADA, "/ask Rules weather", entities=[command])
    return await fake.wait_until(lambda: next(
        (m for (chat, _), m in sorted(fake.messages.items())
         if chat == GROUP and m.get("reply_markup")), None), WAIT)


def buttons(fake: FakeTelegram, card: dict[str, Any]) -> dict[str, str]:
    """label -> callback_data of the buttons the card message shows now."""
    rows = fake.keyboard(GROUP, card["message_id"])
    return {button["text"]: button["callback_data"] for row in rows for button in row}


def shown(fake: FakeTelegram, card: dict[str, Any]) -> str:
    return str(fake.messages[(GROUP, card["message_id"])]["text"])


async def press(fake: FakeTelegram, card: dict[str, Any], who: dict[str, Any],
                data: str | None) -> str:
    """Press a button of the card as `who`; the text of the answerCallbackQuery."""
    query = fake.push_callback(GROUP, card["message_id"], who, data)
    answer = await fake.wait_for_answer(query, WAIT)
    assert answer.get("show_alert") in (None, False)
    return str(answer.get("text", ""))


def responses(texts: list[str]) -> list[Any]:
    found = []
    for text in texts:
        head, _, body = text.partition("\n")
        message = parse(body) if head == "Rules" else None
        if message is not None and message.type == "RESPONSE":
            found.append(message)
    return found


async def test_a_clarify_shows_with_an_inline_keyboard_of_its_choices(
    start_system: StartSystem,
) -> None:
    system = await start_system()
    fake = system.fake
    assert fake is not None
    card = await ask_weather(system)

    rows = fake.keyboard(GROUP, card["message_id"])
    labels = [[button["text"] for button in row] for row in rows]
    assert labels == [CITIES[:3], CITIES[3:], ["Answer in my own words", "Stop"]]
    for row in rows:
        for button in row:
            data = button["callback_data"]
            assert read_button_data(data) is not None and len(data.encode()) <= 64
    text = shown(fake, card)
    assert text.startswith("Rules\n") and "Which city?" in text
    assert "❓ Rules asks · depth 2/5 · 10 min left · request " in text.splitlines()[-1]
    [sent] = [c for c in fake.calls_to("sendMessage") if c.params.get("reply_markup")]
    assert sent.token == TOKEN  # the main bot posts it: presses go to the bot that posted


async def test_one_press_answers_later_ones_are_told_who_answered(
    start_system: StartSystem,
) -> None:
    system = await start_system()
    fake = system.fake
    assert fake is not None
    card = await ask_weather(system)
    data = buttons(fake, card)

    assert await press(fake, card, BEA, data["Tokyo"]) == "Answered: Tokyo"
    [response] = await system.shown(responses)
    assert response.status == "done" and "Tokyo" in response.result
    await fake.wait_until(lambda: "answered by Bea Ng (telegram): Tokyo" in shown(fake, card))
    assert fake.keyboard(GROUP, card["message_id"]) == []
    assert "✅ answered by Bea Ng (telegram): Tokyo" in shown(fake, card).splitlines()[-1]

    late = await press(fake, card, CY, data["Paris"])
    assert late == "Already answered by Bea Ng (telegram): Tokyo."
    forged = await press(fake, card, CY, "bcn:aaaaaaaaaaaaaaaa:0")
    assert forged == "That button is not one of this chat's."
    game = await press(fake, card, CY, None)
    assert game == "That button is not one of this chat's."
    assert fake.unanswered() == []
    assert len(responses(fake.bot_texts(GROUP))) == 1  # nothing more reached the bot


async def test_own_words_go_through_a_force_reply_prompt(start_system: StartSystem) -> None:
    system = await start_system()
    fake = system.fake
    assert fake is not None
    card = await ask_weather(system)

    assert await press(fake, card, BEA, buttons(fake, card)["Answer in my own words"]) \
        == "Type your answer."
    [prompt] = await fake.wait_until(lambda: [
        c for c in fake.calls_to("sendMessage")
        if (c.params.get("reply_markup") or {}).get("force_reply")])
    assert prompt.params["reply_markup"]["selective"] is True
    assert 'href="tg://user?id=602"' in prompt.params["text"]  # aimed at Bea only
    prompt_message = max(mid for (chat, mid) in fake.messages if chat == GROUP)
    assert "type your answer to: Which city?" in fake.messages[(GROUP, prompt_message)]["text"]

    # Someone else's reply to the prompt is an ordinary message (Echo repeats it).
    fake.push_message(TOKEN, GROUP, CY, "not my question", reply_to=prompt_message)
    await system.shown(lambda texts: any(t.endswith("not my question") for t in texts))
    assert fake.keyboard(GROUP, card["message_id"])  # still open

    fake.push_message(TOKEN, GROUP, BEA, "Sydney,\n please", reply_to=prompt_message)
    [response] = await system.shown(responses)
    assert "Sydney" in response.result
    await fake.wait_until(
        lambda: "answered by Bea Ng (telegram): Sydney, please" in shown(fake, card))
    assert fake.keyboard(GROUP, card["message_id"]) == []


async def test_an_expired_card_loses_its_buttons_and_says_so(start_system: StartSystem) -> None:
    system = await start_system()
    fake = system.fake
    assert fake is not None
    relay = system.app.relay
    assert relay is not None
    card = await ask_weather(system)
    paris = buttons(fake, card)["Paris"]

    system.clock.advance(timedelta(minutes=11))  # a CLARIFY waits 10 minutes
    await relay.sweep_once()

    await fake.wait_until(lambda: "This question has expired." in shown(fake, card))
    assert fake.keyboard(GROUP, card["message_id"]) == []
    assert await press(fake, card, BEA, paris) == "This question has expired."


async def test_answers_requester_refuses_anyone_else(start_system: StartSystem) -> None:
    system = await start_system(binding={"answers": "requester"})
    fake = system.fake
    assert fake is not None
    card = await ask_weather(system)  # asked by Ada
    paris = buttons(fake, card)["Paris"]

    assert await press(fake, card, BEA, paris) == "This question is not yours to answer."
    assert await press(fake, card, ADA, paris) == "Answered: Paris"


@pytest.fixture
async def two_instances(tmp_path: Path, fake: FakeTelegram, redis_server: str
                        ) -> AsyncIterator[list[System]]:
    """Two instances of one bridge in webhook mode on one Redis, behind one public URL (a
    load balancer's): Telegram posts each update there, and it may reach either one."""
    ports = [free_port(), free_port()]
    public_url = f"http://127.0.0.1:{ports[0]}"
    config = telegram_config(tmp_path, fake, web=True, mode="webhook", public_url=public_url,
                             secret_token="s3cret-Webhook_token")
    starter = BridgeStarter(tmp_path)
    async with prefixed(redis_server) as store:
        configs = [
            each.model_copy(update={"web": each.web.model_copy(
                update={"listen": f"127.0.0.1:{port}"})})
            for each, port in zip(instances_of(config, store, await starter.start_hub(config)),
                                  ports, strict=True)
        ]
        systems = await starter.start_instances(configs, wrap=System, fake=fake)
        try:
            yield systems
        finally:
            await starter.close()


async def test_a_press_through_either_instance_answers_once_for_everyone(
    fake: FakeTelegram, two_instances: list[System],
) -> None:
    first, second = two_instances
    assert second.app.web is not None
    command = {"type": "bot_command", "offset": 0, "length": len("/ask")}
    update = {"message": fake.message(GROUP, ADA, "/ask Rules weather", entities=[command])}
    assert await fake.deliver_webhook(TOKEN, update) == 200
    card = await fake.wait_until(lambda: next(
        (m for (chat, _), m in sorted(fake.messages.items())
         if chat == GROUP and m.get("reply_markup")), None), WAIT)
    data = buttons(fake, card)

    # Bea's press reaches the first instance, Cy's at the same moment the second.
    queries = {}
    deliveries = []
    for who, city, url in ((BEA, "Tokyo", None), (CY, "Paris", second.app.web.url)):
        token, query = fake.callback_query(GROUP, card["message_id"], who, data[city])
        queries[who["first_name"]] = query["callback_query"]["id"]
        deliveries.append(fake.deliver_webhook(
            token, query, url=url and url + "/telegram/main"))
    assert await asyncio.gather(*deliveries) == [200, 200]
    said = {name: str((await fake.wait_for_answer(query, WAIT)).get("text", ""))
            for name, query in queries.items()}
    [(winner, choice)] = [(name, text.removeprefix("Answered: "))
                          for name, text in said.items() if text.startswith("Answered: ")]
    shown_as = {"Bea": "Bea Ng", "Cy": "Cy"}[winner]
    loser = "Cy" if winner == "Bea" else "Bea"
    assert said[loser] == f"Already answered by {shown_as} (telegram): {choice}."
    [response] = await first.shown(responses)
    assert choice in response.result
    await fake.wait_until(
        lambda: f"answered by {shown_as} (telegram): {choice}" in shown(fake, card))
    assert fake.keyboard(GROUP, card["message_id"]) == []
    conversation = await first.app.relay.tracker.get(response.request_id)
    assert conversation is not None
    assert [entry.type for entry in conversation.history].count("ANSWER") == 1
    assert fake.unanswered() == []
    await first.wait_delivered()
    assert len(responses(fake.bot_texts(GROUP))) == 1
