"""The adapter's side of cards, against the fake Bot API with real python-telegram-bot: how a
card is drawn and redrawn, and how a press becomes the core's `Tap` (the core's side is a
recording sink here; the whole path is in test_telegram_cards.py)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta

import pytest
from telegram_support import (
    GROUP,
    PUPPET_TOKEN,
    TOKEN,
    MakeAdapter,
    Received,
    binding,
    outbound,
)
from test_telegram_webhook import SECRET, public_url, start_webhook, web  # noqa: F401

from adapters.telegram import TelegramAdapter
from adapters.telegram.adapter import ALLOWED_UPDATES
from adapters.telegram.cards import MAX_ANSWER_TEXT, cut, row_width
from adapters.telegram.outbound import MAX_TEXT
from adapters.telegram.taps import FAILED, NOT_BOUND, prompt_key
from bridge.core.cards import Card
from bridge.core.model import PlatformRef
from bridge.core.taps import Tap, TapReply
from bridge.web.server import WebServer
from tests.fakes.telegram import FakeTelegram, user

ALICE = user("Alice", user_id=501, last_name="<Liddell>")
OTHER_CHAT = -100999


@dataclass
class Taps:
    """The core's tap sink, recording what the adapter hands it."""

    reply: TapReply = field(default_factory=lambda: TapReply("Answered: Tokyo", accepted=True))
    taps: list[Tap] = field(default_factory=list)
    fail: bool = False

    async def __call__(self, tap: Tap) -> TapReply:
        self.taps.append(tap)
        if self.fail:
            raise RuntimeError("the store is down")
        return self.reply


def a_card(now: datetime, *, asker: str = "Rules", options: tuple[str, ...] = (
        "Paris", "London", "New York", "Tokyo", "Berlin")) -> Card:  # fmt: skip
    return Card(key="abcdefghijklmnop", decision="d1", request_id="ada-1", question="Which?",
                asker=asker, requester="Ada", requester_id=None, depth=(2, 5),
                deadline=now + timedelta(minutes=10), options=options)


async def started(make_adapter: MakeAdapter, **overrides: object) -> tuple[TelegramAdapter, Taps]:
    adapter = await make_adapter(**overrides)
    adapter.use_bindings([binding()])
    sink = Taps()
    adapter.taps = sink
    return adapter, sink


def card_message(fake: FakeTelegram, ref: PlatformRef) -> dict[str, object]:
    return fake.messages[(int(ref.chat_id), int(ref.message_id))]


async def test_an_open_card_is_sent_with_its_keyboard_and_an_escaped_line_of_facts(
    fake: FakeTelegram, make_adapter: MakeAdapter
) -> None:
    adapter, _ = await started(make_adapter, puppets={"R&D <bot>": PUPPET_TOKEN})
    card = a_card(adapter.state.clock(), asker="R&D <bot>")

    ref = await adapter.send(outbound("Which?", sender="R&D <bot>", card=card))

    [call] = fake.calls_to("sendMessage")
    assert call.token == TOKEN  # not the puppet: presses go to the bot that posted
    assert call.params["text"].endswith(
        "\n\n❓ R&amp;D &lt;bot&gt; asks · depth 2/5 · 10 min left · request ada-1")
    labels = [[b["text"] for b in row] for row in fake.keyboard(GROUP, int(ref.message_id))]
    assert labels == [["Paris", "London", "New York"], ["Tokyo", "Berlin"],
                      ["Answer in my own words", "Stop"]]


async def test_a_settled_card_is_edited_to_its_outcome_and_loses_its_keyboard(
    fake: FakeTelegram, make_adapter: MakeAdapter
) -> None:
    adapter, _ = await started(make_adapter)
    card = a_card(adapter.state.clock())
    ref = await adapter.send(outbound("Which?", sender="Rules", card=card))
    settled = card.settled("answered", "answered by Bo <b>& co</b> (telegram): Tokyo")

    await adapter.edit(ref, outbound("Which?", sender="Rules", card=settled))
    await adapter.edit(ref, outbound("Which?", sender="Rules", card=settled))  # not modified

    [edit, _] = fake.calls_to("editMessageText")
    assert "reply_markup" not in edit.params  # no keyboard: Telegram drops the old one
    assert edit.params["text"] == (
        "<b>Rules</b>\nWhich?\n\n✅ answered by Bo &lt;b&gt;&amp; co&lt;/b&gt; (telegram): Tokyo")
    assert fake.keyboard(GROUP, int(ref.message_id)) == []
    assert card_message(fake, ref)["text"].endswith("(telegram): Tokyo")


async def test_the_line_is_left_out_when_the_text_fills_the_message(
    fake: FakeTelegram, make_adapter: MakeAdapter
) -> None:
    adapter, _ = await started(make_adapter)
    full = "x" * MAX_TEXT

    ref = await adapter.send(outbound(full, card=a_card(adapter.state.clock())))

    assert card_message(fake, ref)["text"] == f"Mantis\n{full}"
    assert fake.keyboard(GROUP, int(ref.message_id))  # the buttons still show


def test_rows_fit_the_labels() -> None:
    assert row_width(["Yes", "No"]) == 3
    assert row_width(["Somewhat longer", "No"]) == 2
    assert row_width(["A label far too long for two in a row"]) == 1
    assert cut("y" * 300) == "y" * (MAX_ANSWER_TEXT - 1) + "…"
    assert len(cut("😀" * 150).encode("utf-16-le")) // 2 <= MAX_ANSWER_TEXT


async def test_callback_query_is_asked_for_in_polling_and_webhook_modes(
    fake: FakeTelegram, make_adapter: MakeAdapter
) -> None:
    assert "callback_query" in ALLOWED_UPDATES
    await started(make_adapter)

    [poll, *_] = await fake.wait_for_call("getUpdates")
    assert "callback_query" in poll.params["allowed_updates"]


async def test_a_press_by_webhook_is_the_core_tap_of_the_person_who_pressed(
    fake: FakeTelegram, make_adapter: MakeAdapter, web: WebServer, public_url: str  # noqa: F811
) -> None:
    adapter = await start_webhook(make_adapter, web, public_url)
    adapter.use_bindings([binding()])
    sink = Taps()
    adapter.taps = sink
    [hook] = fake.calls_to("setWebhook")
    assert "callback_query" in hook.params["allowed_updates"]
    ref = await adapter.send(outbound("Which?", card=a_card(adapter.state.clock())))

    token, update = fake.callback_query(GROUP, int(ref.message_id), ALICE, "bcn:x:3")
    assert await fake.deliver_webhook(token, update) == 200
    answer = await fake.wait_for_answer(update["callback_query"]["id"])

    assert answer["text"] == "Answered: Tokyo"
    [tap] = sink.taps
    assert (tap.channel, tap.chat_id, tap.data) == ("telegram:main", str(GROUP), "bcn:x:3")
    assert (tap.sender.id, tap.sender.name) == ("501", "Alice <Liddell>")
    assert tap.tap_id == update["callback_query"]["id"] and tap.text is None


async def test_presses_in_unbound_chats_never_reach_the_core(
    fake: FakeTelegram, make_adapter: MakeAdapter
) -> None:
    adapter, sink = await started(make_adapter)
    fake.add_chat(OTHER_CHAT)
    adapter.use_bindings([binding()])
    posted = fake.message(OTHER_CHAT, fake.bots[TOKEN].as_user(), "an old card")
    fake.message_owner[(OTHER_CHAT, posted["message_id"])] = TOKEN

    query = fake.push_callback(OTHER_CHAT, posted["message_id"], ALICE, "bcn:x:0")

    assert (await fake.wait_for_answer(query))["text"] == NOT_BOUND
    assert sink.taps == []


async def test_a_failing_core_is_answered_and_logged_once_with_its_traceback(
    fake: FakeTelegram, make_adapter: MakeAdapter, caplog: pytest.LogCaptureFixture,
    received: Received,
) -> None:
    adapter, sink = await started(make_adapter)
    sink.fail = True
    ref = await adapter.send(outbound("Which?", card=a_card(adapter.state.clock())))

    for _ in range(2):
        query = fake.push_callback(GROUP, int(ref.message_id), ALICE, "bcn:x:0")
        assert (await fake.wait_for_answer(query))["text"] == FAILED

    errors = [r for r in caplog.records if "could not handle a button press" in r.getMessage()]
    assert len(errors) == 2 and errors[0].exc_info and not errors[1].exc_info
    fake.push_message(TOKEN, GROUP, ALICE, "still here")  # the handler goes on
    assert (await received.next()).text == "still here"


async def test_a_long_answer_is_cut_to_what_telegram_takes(
    fake: FakeTelegram, make_adapter: MakeAdapter
) -> None:
    adapter, sink = await started(make_adapter)
    sink.reply = TapReply("Already answered by Ada (telegram): " + "very " * 80)
    ref = await adapter.send(outbound("Which?", card=a_card(adapter.state.clock())))

    query = fake.push_callback(GROUP, int(ref.message_id), ALICE, "bcn:x:0")

    text = (await fake.wait_for_answer(query))["text"]
    assert text.startswith("Already answered by Ada") and text.endswith("…")


async def test_own_words_prompt_is_remembered_in_the_store_and_answered_once(
    fake: FakeTelegram, make_adapter: MakeAdapter
) -> None:
    adapter, sink = await started(make_adapter)
    card = a_card(adapter.state.clock())
    sink.reply = TapReply("Type your answer.", card=card, wants_own_words=True)
    ref = await adapter.send(outbound("Which?", card=card))

    query = fake.push_callback(GROUP, int(ref.message_id), ALICE, "bcn:abcdefghijklmnop:own")
    await fake.wait_for_answer(query)
    [prompt_call] = await fake.wait_until(lambda: [
        c for c in fake.calls_to("sendMessage") if "force_reply" in str(c.params)])
    prompt_id = max(mid for (chat, mid) in fake.messages if chat == GROUP)
    assert await adapter.state.get(prompt_key(GROUP, prompt_id)) == {
        "user": "501", "data": "bcn:abcdefghijklmnop:own"}
    assert "Alice &lt;Liddell&gt;</a>, type your answer to: Which?" in prompt_call.params["text"]

    sink.reply = TapReply("Already answered by Bo (telegram): Paris.", card=card)
    answer = fake.push_message(TOKEN, GROUP, ALICE, "Oslo", reply_to=prompt_id)
    said = await fake.wait_until(lambda: [
        m for m in fake.bot_texts(GROUP) if m.startswith("Already answered by Bo")])

    assert said == ["Already answered by Bo (telegram): Paris."]
    own = sink.taps[-1]
    assert (own.data, own.text, own.tap_id) == (
        "bcn:abcdefghijklmnop:own", "Oslo", str(answer["message_id"]))


async def test_without_callback_query_in_allowed_updates_no_press_would_arrive(
    fake: FakeTelegram, make_adapter: MakeAdapter, received: Received,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The fake holds Telegram to `allowed_updates`, so the tests above prove it is asked."""
    monkeypatch.setattr("adapters.telegram.adapter.ALLOWED_UPDATES", ("message",))
    adapter, sink = await started(make_adapter)
    ref = await adapter.send(outbound("Which?", card=a_card(adapter.state.clock())))

    query = fake.push_callback(GROUP, int(ref.message_id), ALICE, "bcn:x:0")
    fake.push_message(TOKEN, GROUP, ALICE, "after the press")

    assert (await received.next()).text == "after the press"
    assert fake.unanswered() == [query] and sink.taps == []


async def test_a_puppets_streamed_reply_that_ends_as_a_card_shows_without_buttons(
    fake: FakeTelegram, make_adapter: MakeAdapter, caplog: pytest.LogCaptureFixture
) -> None:
    adapter, _ = await started(make_adapter, puppets={"Rules": PUPPET_TOKEN})
    ref = await adapter.send(outbound("Which", sender="Rules"))  # streamed, by the puppet

    await adapter.edit(ref, outbound("Which?", sender="Rules",
                                     card=a_card(adapter.state.clock())))

    assert card_message(fake, ref)["text"].startswith("Which?\n\n❓ Rules asks")
    assert fake.keyboard(GROUP, int(ref.message_id)) == []
    assert "shows without buttons" in caplog.text
