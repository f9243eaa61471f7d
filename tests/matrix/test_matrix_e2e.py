"""Matrix end to end: a real Synapse ↔ the bridge as an application service ↔ embedded hub ↔
example bots, people driven through mautrix's client API."""

from __future__ import annotations

import asyncio
import logging
import re

from matrix_support import BRIDGE_USER, Person, bot_messages, edits_of, messages

from bridge.bcn.bot import Bot, IncomingMessage, Run
from bridge.protocol import build_request, parse
from tests.support.running_bridge import WAIT

ECHO = "@bcn_echo:localhost"
RULES = "@bcn_rules:localhost"
PILL = "https://matrix.to/#/"


def joined(user_id: str):
    return lambda events: any(
        e["type"] == "m.room.member" and e["state_key"] == user_id
        and e["content"]["membership"] == "join" for e in events)


def replies_of(user_id: str, where=lambda message, text: True):
    return lambda events: [(m, text) for m, text in bot_messages(events, user_id)
                           if where(m, text)]


async def bridged_room(ada: Person, start_system, **settings):
    room = await ada.create_room(invite=[BRIDGE_USER])
    system = await start_system(room, **settings)
    await ada.wait_for(room, joined(BRIDGE_USER))
    return room, system


async def test_invite_join_and_a_streamed_reply_from_the_bots_own_user(start_system, ada):
    room = await ada.create_room()
    await start_system(room)
    await ada.invite(room, BRIDGE_USER)
    await ada.wait_for(room, joined(BRIDGE_USER))

    await ada.say(room, "hello there brave new world")

    [(message, _)] = await ada.wait_for(room, replies_of(
        ECHO, lambda m, text: text == "hello there brave new world"))
    assert message["content"]["format"] == "org.matrix.custom.html"
    events = await ada.events(room)
    assert len(bot_messages(events, ECHO)) == 1  # streamed: one event ...
    edits = edits_of(events, message["event_id"])
    assert edits  # ... edited in place, the latest replacement with the final text
    assert edits[-1]["content"]["m.new_content"]["body"] == "hello there brave new world"
    member = [e for e in events if e["type"] == "m.room.member" and e["state_key"] == ECHO]
    assert member[-1]["content"].get("displayname") == "Echo"


async def test_an_unbound_room_is_joined_and_logged_once_with_its_id(
        start_system, ada, caplog):
    caplog.set_level(logging.INFO, logger="adapters.matrix")
    await bridged_room(ada, start_system, stream=False)
    other = await ada.create_room(invite=[BRIDGE_USER], name="Elsewhere")
    await ada.wait_for(other, joined(BRIDGE_USER))
    await ada.say(other, "anyone here?")
    await ada.say(other, "hello?")

    async with asyncio.timeout(WAIT):
        while len(noted := [r for r in caplog.records if other in r.getMessage()
                            and "not bound" in r.getMessage()]) < 1:
            await asyncio.sleep(0.05)
    await asyncio.sleep(0.5)
    noted = [r.getMessage() for r in caplog.records if other in r.getMessage()
             and "not bound" in r.getMessage()]
    assert noted == [f'matrix:main sees room {other} (not bound; bind it with chat: "{other}")']
    assert bot_messages(await ada.events(other), ECHO) == []


async def test_a_person_is_forwarded_with_their_matrix_id_and_name(
        start_system, ada, tmp_path):
    room, system = await bridged_room(ada, start_system, bots=False)
    seen: list[IncomingMessage] = []
    spy = Bot(f"{system.app.bcn_url}/ws/bot", name="Echo", token_file=tmp_path / "spy.token")

    @spy.on_message
    async def record(msg: IncomingMessage, run: Run) -> str:
        seen.append(msg)
        return "noted"

    await spy.start(timeout=WAIT)
    system.bots = [spy]
    await system.wait_for_bots("Echo")
    await ada.say(room, "who am I?")

    await ada.wait_for(room, replies_of(ECHO, lambda m, text: text == "noted"))
    channel = seen[0].channel
    assert channel.user_id == ada.user_id and channel.actor_name == "Ada"
    assert re.fullmatch(r"demo:channel_matrix_[0-9a-f]{8}", seen[0].session_key)


async def test_a_protocol_request_gets_a_response_through_the_middleware(
        start_system, ada, homeserver):
    room, _ = await bridged_room(ada, start_system, deliver="natural")
    lotbot = Person(homeserver, "lotbot")
    try:
        await ada.invite(room, lotbot.user_id)
        await lotbot.join(room)
        await lotbot.set_name("Lotbot")
        block = build_request(to="Echo", from_="Lotbot", task="say banana",
                              request_id="lotbot-abc123", depth=(2, 5))
        await lotbot.say(room, block)

        [(_, answer)] = await ada.wait_for(room, replies_of(
            ECHO, lambda m, text: parse(text) is not None))
    finally:
        await lotbot.close()
    response = parse(answer)
    assert response is not None and response.type == "RESPONSE"
    assert response.to == "Lotbot" and response.request_id == "lotbot-abc123"
    assert tuple(response.depth) == (3, 5)
    assert answer.startswith("```")  # fences stay literal text other bots can read


async def test_ask_starts_a_tracked_request_answered_by_the_bot(start_system, ada):
    room, system = await bridged_room(ada, start_system)
    await ada.say(room, "/ask Rules what is 6 times 7")

    [(_, answer)] = await ada.wait_for(room, replies_of(
        RULES, lambda m, text: (found := parse(text)) is not None and found.type == "RESPONSE"))
    response = parse(answer)
    assert response is not None and response.to == "Ada" and "42" in response.result
    assert system.app.relay is not None
    conversation = await system.app.relay.tracker.get(response.request_id)
    assert conversation is not None and conversation.status == "done"


async def test_a_thread_reply_is_answered_in_the_thread(start_system, ada):
    room, _ = await bridged_room(ada, start_system, stream=False)
    root = await ada.say(room, "the thread starts here")
    await ada.wait_for(room, replies_of(ECHO, lambda m, text: text == "the thread starts here"))

    await ada.say(room, "inside the thread", **{"m.relates_to": {
        "rel_type": "m.thread", "event_id": root, "is_falling_back": True,
        "m.in_reply_to": {"event_id": root}}})

    [(reply, _)] = await ada.wait_for(room, replies_of(
        ECHO, lambda m, text: text == "inside the thread"))
    relation = reply["content"]["m.relates_to"]
    assert relation["rel_type"] == "m.thread" and relation["event_id"] == root
    [(first, _)] = [(m, t) for m, t in bot_messages(await ada.events(room), ECHO)
                    if t == "the thread starts here"]
    assert "m.relates_to" not in first["content"]  # the main timeline stays there


async def test_mentions_are_names_inbound_and_pills_outbound(start_system, ada):
    room, _ = await bridged_room(ada, start_system, stream=False)
    await ada.say(room, "warm up")
    await ada.wait_for(room, replies_of(ECHO, lambda m, text: text == "warm up"))

    await ada.say(room, "Echo: greet Ada please", format="org.matrix.custom.html",
                  formatted_body=f'<a href="{PILL}{ECHO}">Echo</a>: greet '
                                 f'<a href="{PILL}{ada.user_id}">Ada</a> please')

    [(reply, text)] = await ada.wait_for(room, replies_of(
        ECHO, lambda m, text: "greet" in text))
    assert text == "@Echo: greet @Ada please"  # pills became @Name on the way in
    html = reply["content"]["formatted_body"]  # and @Name became pills on the way out
    assert f'<a href="{PILL}{ada.user_id}">Ada</a>' in html
    assert f'<a href="{PILL}{ECHO}">Echo</a>' in html


async def test_own_posts_are_never_relayed_back(start_system, ada):
    room, _ = await bridged_room(ada, start_system, stream=False)
    await ada.say(room, "just once")
    await ada.wait_for(room, replies_of(ECHO, lambda m, text: text == "just once"))
    await ada.say(room, "and a second")
    await ada.wait_for(room, replies_of(ECHO, lambda m, text: text == "and a second"))

    texts = [text for _, text in bot_messages(await ada.events(room), ECHO)]
    assert texts == ["just once", "and a second"]
    assert len(messages(await ada.events(room))) == 4
