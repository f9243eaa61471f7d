"""Two bridge instances, taps on one card at once: exactly one answer reaches the bot.

The decision is a claim in the store, so it holds across instances, not just within one
process: two `Relay`s (see conftest) share one memory store, or two Redis clients on one
real Redis. Their links are never started, so the answer a tap hands the bot waits in the
spool, in the store, where a second answer would show.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import pytest

from bridge.core.cards import button_data
from bridge.core.model import Sender
from bridge.core.outbox import Lane
from bridge.core.relay import Relay
from bridge.core.taps import Tap
from bridge.protocol import build_clarify, build_request, parse
from bridge.store import Store
from tests.core.conftest import BINDING

pytestmark = pytest.mark.usefixtures("fresh_chats")

LANE = Lane("testchat:main", "room")
OPTIONS = ["Paris", "London", "Tokyo"]


async def asked(relay: Relay) -> str:
    """Rules asks Ada which city, in the room; the card's key."""
    request = build_request(to="Rules", from_="Ada", task="weather", request_id="req-1")
    clarify = build_clarify(to="Ada", from_="Rules", request_id="req-1",
                            question="Which city?", depth=(2, 5), options=OPTIONS)
    await relay.ctx.track(parse(request), LANE)
    await relay.ctx.track(parse(clarify), LANE)
    card = await relay.decisions.issue(LANE, BINDING, parse(clarify).to_dict(), run_id="run-1")
    assert card is not None and card.options == tuple(OPTIONS)
    return card.key


def tap(key: str, choice: int, who: str) -> Tap:
    return Tap(channel_type="testchat", account="main", chat_id="room",
               sender=Sender(f"u-{who.lower()}", who), data=button_data(key, choice),
               tap_id=f"tap-{who}")


async def answers_handed_on(store: Store) -> list[tuple[str, str]]:
    """The answers waiting for the bot: (who, text)."""
    return [(entry.params["sender"]["name"], entry.params["text"])
            for entry in await store.spool.pending()
            if entry.params["text"].startswith("Re: ")]


async def test_taps_through_two_instances_at_once_settle_one_answer(
    two_stores: tuple[Store, Store], instance: Callable[[Store, str], Relay]
) -> None:
    a, b = instance(two_stores[0], "bridge-a"), instance(two_stores[1], "bridge-b")
    key = await asked(a)
    people = ["Ada", "Bea", "Cy", "Dee", "Eve", "Fay"]
    replies = await asyncio.gather(*(
        relay.decisions.tap(tap(key, n % len(OPTIONS), who))
        for n, (who, relay) in enumerate(zip(people, [a, b] * 3, strict=True))
    ))

    [(winner, won)] = [(who, reply) for who, reply in zip(people, replies, strict=True)
                       if reply.accepted]
    choice = won.text.removeprefix("Answered: ")
    assert choice == OPTIONS[people.index(winner) % len(OPTIONS)]
    # Everyone else is told who answered, through either instance.
    assert {reply.text for reply in replies if not reply.accepted} == {
        f"Already answered by {winner} (testchat): {choice}."}
    # Exactly one answer for the bot, from the person who won, naming their choice.
    assert await answers_handed_on(two_stores[1]) == [(winner, f"Re: req-1: {choice}")]
    # The card is settled in the store, as both instances read it.
    for relay in (a, b):
        card = await relay.decisions.latest_card("req-1")
        assert card is not None and card.state == "answered"
        assert card.outcome == f"answered by {winner} (testchat): {choice}"


async def test_a_tap_after_the_answer_on_the_other_instance_reaches_nothing(
    two_stores: tuple[Store, Store], instance: Callable[[Store, str], Relay]
) -> None:
    a, b = instance(two_stores[0], "bridge-a"), instance(two_stores[1], "bridge-b")
    key = await asked(a)
    first = await a.decisions.tap(tap(key, 1, "Ada"))
    assert first.accepted and first.text == "Answered: London"
    later = await b.decisions.tap(tap(key, 2, "Bea"))
    assert not later.accepted
    assert later.text == "Already answered by Ada (testchat): London."
    assert await answers_handed_on(two_stores[1]) == [("Ada", "Re: req-1: London")]
