"""A bot's question as a card: one tap answers it, once, as a typed answer would.

The whole path over real sockets: a person's `/ask` → the hub → the example Rules bot,
whose CLARIFY offers `Options:` → the card in the chat → a tap → the bot gets the answer
inside the same conversation and completes the request.
"""

from __future__ import annotations

import asyncio
from datetime import timedelta

from bridge.core.cards import button_data, read_button_data
from bridge.protocol import parse
from tests.e2e.e2e_support import System


def finals_from(messages, sender):  # type: ignore[no-untyped-def]
    return [m for m in messages if m.sender == sender and m.kind == "final"]


def option(posted, label: str) -> str:  # type: ignore[no-untyped-def]
    return next(data for shown, data in posted.card.buttons() if shown == label)


def role(posted, name: str) -> str:  # type: ignore[no-untyped-def]
    return next(data for _, data in posted.card.buttons()
                if (read_button_data(data) or ("", ""))[1] == name)


async def ask_weather(system: System):  # type: ignore[no-untyped-def]
    await system.chat_adapter.say("room", "/ask Rules weather")
    [question] = await system.wait_for(
        lambda ms: [m for m in finals_from(ms, "Rules") if m.card is not None])
    return question


async def echo_barrier(system: System, word: str) -> None:
    """A round trip through the same chat: what the bot was sent before it has been seen."""
    await system.chat_adapter.say("room", word, name="Cy", user_id="u-cy")
    await system.wait_for(lambda ms: [m for m in finals_from(ms, "Echo") if m.text == word])


async def test_a_clarify_shows_as_a_card_and_one_tap_answers_it(start_system):
    system = await start_system()
    question = await ask_weather(system)
    card = question.card
    assert card.is_open and card.asker == "Rules" and card.requester == "Ada"
    assert card.options == ("Paris", "London", "New York", "Tokyo", "Berlin", "Sydney")
    assert card.question.startswith("Which city?")
    assert card.depth == (2, 5)  # one hop after the REQUEST
    assert card.deadline is not None  # the CLARIFY's 10 minutes
    labels = [label for label, _ in card.buttons()]
    assert labels[:6] == list(card.options) and "Stop" in labels[-1] and "own" in labels[-2]

    reply = await system.chat_adapter.tap("room", option(question, "Tokyo"), name="Bea",
                                          user_id="u-bea")
    assert reply.accepted and reply.text == "Answered: Tokyo"
    done = await system.wait_for(lambda ms: [m for m in finals_from(ms, "Rules")
                                             if m.card is None])
    response = parse(done[0].text)
    assert response.type == "RESPONSE" and response.request_id == card.request_id
    assert response.status == "done" and "Tokyo" in response.result
    # Tracked as the request's answer, naming who answered.
    conv = await system.app.relay.tracker.get(card.request_id)
    assert conv.status == "done"
    answer = next(entry for entry in conv.history if entry.type == "ANSWER")
    assert answer.from_ == "Bea"
    # The card now says who answered, and its buttons are gone.
    await system.wait_for(lambda ms: question.card.state == "answered")
    assert question.card.outcome == "answered by Bea (testchat): Tokyo"
    assert question.card.buttons() == []


async def test_first_answer_wins_and_later_taps_are_told_who_answered(start_system):
    system = await start_system()
    question = await ask_weather(system)
    sydney = option(question, "Sydney")  # the card loses its buttons once answered
    taps = await asyncio.gather(
        system.chat_adapter.tap("room", option(question, "Paris"), name="Ada", user_id="u-ada"),
        system.chat_adapter.tap("room", option(question, "London"), name="Bob", user_id="u-bob"),
        system.chat_adapter.tap("room", option(question, "Berlin"), name="Cy", user_id="u-cy"),
    )
    accepted = [reply for reply in taps if reply.accepted]
    assert len(accepted) == 1
    winner = accepted[0].text.removeprefix("Answered: ")
    for reply in taps:
        if not reply.accepted:
            assert reply.text.startswith("Already answered"), reply.text
    await system.wait_for(lambda ms: [m for m in finals_from(ms, "Rules") if m.card is None])
    late = await system.chat_adapter.tap("room", sydney, name="Dee",
                                         user_id="u-dee")
    assert not late.accepted and late.text.startswith("Already answered by")
    assert winner in late.text
    # Nothing more reached the bot: one answer, one RESPONSE.
    await echo_barrier(system, "after the taps")
    responses = [m for m in finals_from(system.chat.messages, "Rules") if m.card is None]
    assert len(responses) == 1 and winner in parse(responses[0].text).result
    conv = await system.app.relay.tracker.get(question.card.request_id)
    assert [entry.type for entry in conv.history].count("ANSWER") == 1


async def test_a_repeated_interaction_does_not_answer_twice(start_system):
    system = await start_system()
    question = await ask_weather(system)
    data = option(question, "Paris")
    first = await system.chat_adapter.tap("room", data, tap_id="same-press")
    again = await system.chat_adapter.tap("room", data, tap_id="same-press")
    assert first.accepted and not again.accepted


async def test_forged_or_foreign_button_data_is_refused_and_logged_once(start_system, caplog):
    system = await start_system(extra_chats=("other",))
    question = await ask_weather(system)
    forged = [
        "bcn:aaaaaaaaaaaaaaaa:0",  # a well-formed key the bridge never issued
        "not-a-button", "", "bcn:" + "x" * 300,
        button_data(question.card.key, 9),  # an option the card does not have
    ]
    for data in forged:
        reply = await system.chat_adapter.tap("room", data)
        assert not reply.accepted and reply.text == "That button is not one of this chat's."
    # Another chat's card: the same data tapped in a chat it was not posted in.
    elsewhere = await system.chat_adapter.tap("other", option(question, "Paris"))
    assert not elsewhere.accepted and "not one of this chat's" in elsewhere.text
    warnings = [r for r in caplog.records if "did not issue" in r.getMessage()]
    assert len(warnings) == 2  # once for "room", once for "other"
    assert question.card.is_open  # nothing was decided


async def test_answers_requester_lets_only_the_person_who_asked_answer(start_system):
    system = await start_system(binding={"answers": "requester"})
    question = await ask_weather(system)  # asked by Ada, u-ada
    data = option(question, "Paris")
    # A display name is not an identity: "Ada" with another platform id may not answer.
    copycat = await system.chat_adapter.tap("room", data, name="Ada", user_id="u-mallory")
    assert not copycat.accepted and copycat.text == "This question is not yours to answer."
    own = await system.chat_adapter.tap("room", data, name="Ada", user_id="u-ada")
    assert own.accepted


async def test_answers_list_takes_platform_ids_and_role_ids(start_system):
    system = await start_system(binding={"answers": ["u-ops", "role-oncall"]})
    question = await ask_weather(system)
    data = option(question, "Paris")
    stranger = await system.chat_adapter.tap("room", data, name="Ada", user_id="u-ada")
    assert not stranger.accepted and "not yours" in stranger.text
    by_role = await system.chat_adapter.tap("room", data, name="Oz", user_id="u-oz",
                                            roles=("role-other", "role-oncall"))
    assert by_role.accepted


async def test_own_words_asks_for_text_then_answers_with_it(start_system):
    system = await start_system()
    question = await ask_weather(system)
    own = role(question, "own")
    prompt = await system.chat_adapter.tap("room", own)
    assert prompt.wants_own_words and not prompt.accepted
    reply = await system.chat_adapter.tap("room", own, text="  Paris,\n please ")
    assert reply.accepted
    done = await system.wait_for(lambda ms: [m for m in finals_from(ms, "Rules")
                                             if m.card is None])
    assert "Paris" in parse(done[0].text).result
    await system.wait_for(lambda ms: question.card.state == "answered")
    assert question.card.outcome == "answered by Ada (testchat): Paris, please"


async def test_stop_closes_the_request_and_the_card_says_so(start_system):
    system = await start_system()
    question = await ask_weather(system)
    paris = option(question, "Paris")
    reply = await system.chat_adapter.tap("room", role(question, "stop"), name="Bob",
                                          user_id="u-bob")
    assert reply.accepted and reply.text == "Stopped."
    conv = await system.app.relay.tracker.get(question.card.request_id)
    assert conv.finished and conv.status == "failed"
    await system.wait_for(lambda ms: not question.card.is_open)
    assert question.card.outcome == "stopped by Bob (testchat)"
    late = await system.chat_adapter.tap("room", paris)
    assert not late.accepted and "stopped by Bob" in late.text


async def test_a_timed_out_question_says_expired_and_its_buttons_answer_expired(start_system):
    system = await start_system()
    relay = system.app.relay
    question = await ask_weather(system)
    paris = option(question, "Paris")
    system.clock.advance(timedelta(minutes=11))  # a CLARIFY waits 10 minutes
    closed = await relay.sweep_once()
    assert question.card.request_id in [conv.request_id for conv in closed]
    await system.wait_for(lambda ms: not question.card.is_open)
    assert question.card.state == "expired" and question.card.buttons() == []
    reply = await system.chat_adapter.tap("room", paris)
    assert not reply.accepted and "expired" in reply.text


async def test_a_tap_after_the_deadline_before_the_sweep_is_expired(start_system):
    system = await start_system()
    question = await ask_weather(system)
    system.clock.advance(timedelta(minutes=11))
    reply = await system.chat_adapter.tap("room", option(question, "Paris"))
    assert not reply.accepted and "expired" in reply.text
    await system.wait_for(lambda ms: question.card.state == "expired")


async def test_a_typed_answer_settles_the_card_too(start_system):
    system = await start_system()
    question = await ask_weather(system)
    paris = option(question, "Paris")
    await system.chat_adapter.say("room", "Oslo", reply_to=question.ref.message_id)
    await system.wait_for(lambda ms: not question.card.is_open)
    assert question.card.outcome == "answered by Ada (typed)"
    late = await system.chat_adapter.tap("room", paris, name="Bob", user_id="u-bob")
    assert not late.accepted and "answered by Ada (typed)" in late.text


async def test_a_question_closed_elsewhere_says_closed(start_system):
    system = await start_system()
    question = await ask_weather(system)
    await system.app.relay.operator.cancel(question.card.request_id, by="Grace", reason="")
    await system.wait_for(lambda ms: not question.card.is_open)
    assert question.card.state == "closed" and question.card.buttons() == []


async def test_a_tap_while_the_card_is_being_posted_still_clears_its_buttons(
    start_system, monkeypatch
):
    """The tap settles the card before its post is on record, so it has nothing to redraw;
    once the post is recorded, the card is drawn as it stands."""
    system = await start_system()
    posting, release = asyncio.Event(), asyncio.Event()
    in_flight: list = []
    send = type(system.chat_adapter).send

    async def slow_card_post(self, out):  # type: ignore[no-untyped-def]
        if out.card is not None and not in_flight:
            in_flight.append(out.card)
            posting.set()
            await release.wait()
        return await send(self, out)

    monkeypatch.setattr(type(system.chat_adapter), "send", slow_card_post)
    await system.chat_adapter.say("room", "/ask Rules weather")
    await asyncio.wait_for(posting.wait(), 30)
    [card] = in_flight
    reply = await system.chat_adapter.tap("room", button_data(card.key, 2), name="Bea",
                                          user_id="u-bea")
    assert reply.accepted and reply.text == "Answered: New York"
    release.set()
    [question] = await system.wait_for(
        lambda ms: [m for m in finals_from(ms, "Rules") if m.card is not None])
    await system.wait_for(lambda ms: question.card.state == "answered")
    assert question.card.outcome == "answered by Bea (testchat): New York"
    assert question.card.buttons() == []
