"""The webchat draws a bot's question as a card; a press answers it once, for every page.

Hub, relay, the example Rules bot and the pages are the real ones, over real sockets. A page
names only the button's data; who pressed is its own session, whatever the frame says.
"""

from __future__ import annotations

import asyncio
from typing import Any

import aiohttp
import pytest

from tests.webchat.webchat_clients import ChatClient, drain_until, open_client

ANSWER_WAIT = 10.0
"""Upper bound for a reply to reach a page; never asserted as a duration."""


@pytest.fixture
async def http() -> Any:
    async with aiohttp.ClientSession() as session:
        yield session


async def page(system: Any, http: aiohttp.ClientSession, name: str) -> ChatClient:
    adapter = system.app.relay.ctx.adapters["webchat:main"]
    client = await open_client(http, f"{system.app.web.url}{adapter.ws_path}")
    await client.join("lobby", name)
    return client


def card_in(frame: dict[str, Any], state: str) -> dict[str, Any] | None:
    card = (frame.get("message") or {}).get("card")
    if frame["type"] in ("message", "update") and card and card["state"] == state:
        return card
    return None


async def next_card(client: ChatClient, state: str,
                    seen: list[dict[str, Any]] = ()) -> dict[str, Any]:  # type: ignore[assignment]
    """The next message or update of this page (after the frames in `seen`) whose card
    is in `state`."""
    for frame in seen:
        if (card := card_in(frame, state)) is not None:
            return card
    async with asyncio.timeout(ANSWER_WAIT):
        while True:
            if (card := card_in(await client.next_frame(), state)) is not None:
                return card


async def tap(client: ChatClient, data: str, tap_id: str, *,
              before: list[dict[str, Any]] | None = None, **extra: Any) -> dict[str, Any]:
    """Press; the page's private reply (frames that came before it go to `before`)."""
    await client.send({"type": "tap", "tap_id": tap_id, "data": data, **extra})
    async with asyncio.timeout(ANSWER_WAIT):
        while (frame := await client.next_frame())["type"] != "tap_reply":
            if before is not None:
                before.append(frame)
        return frame


async def test_a_press_answers_the_question_for_every_page(start_system, http) -> None:
    system = await start_system(webchat=True)
    ada, bob = await page(system, http, "Ada"), await page(system, http, "Bob")
    await ada.say("/ask Rules weather")
    card = await next_card(ada, "open")
    await next_card(bob, "open")
    assert card["asker"] == "Rules" and card["requester"] == "Ada"
    assert card["depth"] == {"current": 2, "max": 5} and card["deadline"]
    by_label = {button["label"]: button for button in card["buttons"]}
    assert by_label["Tokyo"]["role"] == "option"
    assert [b["role"] for b in card["buttons"]][-2:] == ["own", "stop"]

    bob_saw: list[dict[str, Any]] = []
    reply = await tap(bob, by_label["Tokyo"]["data"], "t-1", before=bob_saw,
                      sender={"id": "u-ada", "name": "Ada"})  # ignored: the session is Bob
    assert reply == {"type": "tap_reply", "tap_id": "t-1", "text": "Answered: Tokyo",
                     "accepted": True, "wants_own_words": False}
    for client, seen in ((ada, []), (bob, bob_saw)):
        answered = await next_card(client, "answered", seen)
        assert answered["outcome"] == "answered by Bob (webchat): Tokyo"
        assert answered["buttons"] == []
    response = await ada.final_from("Rules", wait=ANSWER_WAIT)
    assert "Tokyo" in response["html"] and response["protocol"]["type"] == "RESPONSE"

    late = await tap(ada, by_label["Paris"]["data"], "t-2")
    assert not late["accepted"] and late["text"] == "Already answered by Bob (webchat): Tokyo."


async def test_a_forged_press_is_answered_and_the_page_goes_on(start_system, http) -> None:
    system = await start_system(webchat=True)
    ada = await page(system, http, "Ada")
    for data in ("bcn:aaaaaaaaaaaaaaaa:0", "<script>", "x" * 100):
        reply = await tap(ada, data, "t-forged")
        assert not reply["accepted"] and "not one of this chat's" in reply["text"]
    await ada.send({"type": "tap", "tap_id": "t-long", "data": "x" * 101})
    assert (await ada.expect("error"))["code"] == "bad_frame"
    await ada.assert_quiet()


async def test_own_words_from_the_page(start_system, http) -> None:
    system = await start_system(webchat=True)
    ada = await page(system, http, "Ada")
    await ada.say("/ask Rules weather")
    card = await next_card(ada, "open")
    own = next(b["data"] for b in card["buttons"] if b["role"] == "own")
    prompt = await tap(ada, own, "t-own")
    assert prompt["wants_own_words"] and not prompt["accepted"]
    reply = await tap(ada, own, "t-own-2", text="Berlin")
    assert reply["accepted"] and reply["text"] == "Answered: Berlin"
    response = await ada.final_from("Rules", wait=ANSWER_WAIT)
    assert "Berlin" in response["html"]


async def test_a_reply_to_the_question_answers_it_whatever_it_says(start_system, http) -> None:
    """The page's Reply action: a reply to the bot's question is its answer — here a text
    that, sent plainly, would be talk to someone else ("@Bob …"), not an answer."""
    system = await start_system(webchat=True)
    ada = await page(system, http, "Ada")
    await ada.say("/ask Rules weather")
    async with asyncio.timeout(ANSWER_WAIT):
        while True:
            frame = await ada.next_frame()
            message = frame.get("message") or {}
            if (frame["type"] == "message" and (message.get("protocol") or {}).get("type")
                    == "CLARIFY"):
                break
    question_id = message["id"]
    await ada.send({"type": "message", "client_message_id": "m-reply", "text": "@Bob Tokyo",
                    "reply_to": question_id})
    ack = await drain_until(ada, "ack")
    assert ack["message"]["reply_to"] == question_id  # every page shows what it answers
    response = await ada.final_from("Rules", wait=ANSWER_WAIT)
    while response["protocol"]["type"] != "RESPONSE":  # the question's own updates first
        response = await ada.final_from("Rules", wait=ANSWER_WAIT)
    assert "Tokyo" in response["html"]
    conv = await system.app.relay.tracker.get(message["protocol"]["request_id"])
    assert conv.status == "done"


async def test_a_reply_to_a_message_the_room_does_not_hold_is_a_plain_message(
    start_system, http
) -> None:
    system = await start_system(webchat=True)
    ada = await page(system, http, "Ada")
    await ada.send({"type": "message", "client_message_id": "m-1", "text": "hello",
                    "reply_to": "no-such-message"})
    ack = await drain_until(ada, "ack")
    assert ack["message"]["reply_to"] is None
    assert (await ada.final_from("Echo", wait=ANSWER_WAIT))["html"] == "<p>hello</p>"
    assert system.app.relay is not None
