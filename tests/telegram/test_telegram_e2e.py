"""Telegram end to end: fake Bot API ↔ real PTB ↔ the bridge ↔ embedded hub ↔ example bots."""

from __future__ import annotations

from telegram_support import BOT_USERNAME, GROUP, PUPPET_TOKEN, TOKEN

from bridge.protocol import build_request, parse
from tests.fakes.telegram import user

ADA = user("Ada", user_id=601)
LOTBOT = user("Lotbot", username="lotbot", is_bot=True, user_id=4242)


def without_prefix(text: str, name: str) -> str | None:
    head, _, body = text.partition("\n")
    return body if head == name else None


def from_bot(texts: list[str], name: str) -> list[str]:
    return [body for text in texts if (body := without_prefix(text, name)) is not None]


def protocol_from(texts: list[str], name: str) -> list[str]:
    """The bot's messages that already read as a finished protocol message."""
    return [body for body in from_bot(texts, name) if parse(body) is not None]


async def test_human_message_gets_a_streamed_reply_under_the_bot_name(start_system) -> None:
    system = await start_system()
    system.fake.push_message(TOKEN, GROUP, ADA, "hello there brave new world")

    await system.shown(lambda texts: "hello there brave new world" in from_bot(texts, "Echo"))

    assert from_bot(system.fake.bot_texts(GROUP), "Echo") == ["hello there brave new world"]
    assert system.fake.calls_to("editMessageText")  # streamed: posted, then edited in place
    sent = system.fake.calls_to("sendMessage")
    assert all(call.params["text"].startswith("<b>Echo</b>\n") for call in sent)
    typing = system.fake.calls_to("sendChatAction")
    assert typing and typing[0].params["action"] == "typing"


async def test_a_puppet_bot_posts_the_reply_as_itself(start_system) -> None:
    system = await start_system(stream=False, puppets={"Echo": PUPPET_TOKEN})
    system.fake.push_message(TOKEN, GROUP, ADA, "who answers this?")

    await system.shown(lambda texts: "who answers this?" in texts)

    [posted] = system.fake.calls_to("sendMessage", token=PUPPET_TOKEN)
    assert posted.params["text"] == "who answers this?"  # no name prefix: it is Echo's own
    assert system.fake.calls_to("sendMessage", token=TOKEN) == []


async def test_protocol_request_from_another_telegram_bot_is_answered(start_system) -> None:
    system = await start_system(deliver="natural")
    block = build_request(
        to="Echo", from_="Lotbot", task="say banana", request_id="lotbot-abc123", depth=(2, 5)
    )
    system.fake.push_message(TOKEN, GROUP, LOTBOT, block)

    [answer] = await system.shown(lambda texts: protocol_from(texts, "Echo"))
    response = parse(answer)

    assert response is not None and response.type == "RESPONSE"
    assert response.to == "Lotbot" and response.request_id == "lotbot-abc123"
    assert tuple(response.depth) == (3, 5)
    assert answer.startswith("```")  # fences stay literal text other bots can read


async def test_ask_command_addressed_to_this_bot_starts_a_tracked_request(start_system) -> None:
    system = await start_system()
    text = f"/ask@{BOT_USERNAME} Rules what is 6 times 7"
    command = {"type": "bot_command", "offset": 0, "length": len(f"/ask@{BOT_USERNAME}")}
    system.fake.push_message(TOKEN, GROUP, ADA, text, entities=[command])

    [answer] = await system.shown(lambda texts: protocol_from(texts, "Rules"))
    response = parse(answer)

    assert response is not None and response.type == "RESPONSE"
    assert response.to == "Ada" and "42" in response.result
    assert system.app.relay is not None
    conversation = await system.app.relay.tracker.get(response.request_id)
    assert conversation is not None and conversation.status == "done"


async def test_restart_with_replies_queued_delivers_them_once(start_system) -> None:
    first = await start_system(stream=False)
    fake = first.fake
    fake.fail_always("sendMessage", status=502, description="Bad Gateway")
    for n in range(3):
        fake.push_message(TOKEN, GROUP, ADA, f"queued {n}")
    await first.wait_queued(3)
    await first.stop()
    assert fake.bot_texts(GROUP) == []

    fake.recover("sendMessage")
    second = await start_system(bots=False)
    await second.shown(lambda texts: len(texts) == 3)
    await second.wait_delivered()

    assert from_bot(fake.bot_texts(GROUP), "Echo") == [f"queued {n}" for n in range(3)]
    assert len(fake.bot_texts(GROUP)) == 3


async def test_ask_from_a_spaced_name_gets_its_answer(start_system) -> None:
    """Issue 31 §2: the RESPONSE to "Ada Lovelace" could not be built, so it never came."""
    system = await start_system()
    ada_lovelace = user("Ada", user_id=602, last_name="Lovelace")
    text = f"/ask@{BOT_USERNAME} Rules what is 6 times 7"
    command = {"type": "bot_command", "offset": 0, "length": len(f"/ask@{BOT_USERNAME}")}
    system.fake.push_message(TOKEN, GROUP, ada_lovelace, text, entities=[command])

    [answer] = await system.shown(lambda texts: protocol_from(texts, "Rules"))
    response = parse(answer)

    assert response is not None and response.type == "RESPONSE"
    assert response.to == "Ada Lovelace" and "42" in response.result
