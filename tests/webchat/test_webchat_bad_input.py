"""Whatever a browser sends, the page gets a clear error frame and the socket keeps working."""

from __future__ import annotations

import json

import aiohttp
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from webchat_clients import drain_until, open_client, wait_for

from adapters.webchat.frames import FrameError, JoinFrame, SendFrame, parse_client_frame


@pytest.mark.parametrize(
    ("raw", "code"),
    [
        ("not json", "bad_frame"),
        ("[1, 2]", "bad_frame"),
        ('"join"', "bad_frame"),
        ("{}", "unknown_type"),
        ('{"type": "shout"}', "unknown_type"),
        ('{"type": ["join"]}', "unknown_type"),
        ('{"type": "join", "room": "lobby"}', "bad_frame"),
        ('{"type": "join", "room": 5, "name": "Ada", "client_id": "c1"}', "bad_frame"),
        ('{"type": "join", "room": "lobby", "name": "Ada", "client_id": "<b>"}', "bad_frame"),
        ('{"type": "message", "client_message_id": "m1", "text": null}', "bad_frame"),
        ('{"type": "message", "text": "hi"}', "bad_frame"),
        pytest.param("[" * 30_000, "bad_frame", id="deeply-nested"),
    ],
)
async def test_malformed_frames_get_an_error_and_the_socket_lives_on(connect, raw, code) -> None:
    client = await connect()
    await client.ws.send_str(raw)
    error = await client.expect("error")
    assert error["code"] == code
    assert error["message"]
    joined = await client.join("lobby", "Ada")
    assert joined["room"] == "lobby"


async def test_binary_frames_are_refused(connect) -> None:
    client = await connect()
    await client.ws.send_bytes(b"\x00\x01")
    assert (await client.expect("error"))["code"] == "bad_frame"
    await client.assert_quiet()


async def test_a_bad_message_frame_names_its_message_id(connect) -> None:
    client = await connect()
    await client.join()
    await client.send({"type": "message", "client_message_id": "m-7", "text": ["not", "text"]})
    error = await client.expect("error")
    assert error["client_message_id"] == "m-7"
    assert "text" in error["message"]


async def test_messages_before_joining_are_refused(connect) -> None:
    client = await connect()
    await client.say("hello?", client_message_id="m-early")
    error = await client.expect("error")
    assert (error["code"], error["client_message_id"]) == ("not_joined", "m-early")


async def test_oversize_messages_are_refused_with_a_notice(start_webchat, http) -> None:
    chat = await start_webchat(max_message_length=50)
    ada = await open_client(http, chat.ws_url)
    await ada.join()
    await ada.say("x" * 51, client_message_id="m-big")
    error = await ada.expect("error")
    assert (error["code"], error["client_message_id"]) == ("too_long", "m-big")
    assert "50" in error["message"]
    await ada.say("x" * 50)
    assert (await ada.expect("ack"))["message"]["text"] == "x" * 50
    assert (await wait_for(chat.inbound)).text == "x" * 50  # the refused one never got there
    assert chat.inbound.empty()


async def test_frames_far_beyond_the_limit_close_the_socket_not_the_server(
    start_webchat, http
) -> None:
    chat = await start_webchat(max_message_length=100)
    ada = await open_client(http, chat.ws_url)
    await ada.join()
    await ada.say("x" * 200_000)
    closing = await ada.ws.receive(timeout=5)
    assert closing.type in (aiohttp.WSMsgType.CLOSE, aiohttp.WSMsgType.CLOSED)
    assert ada.ws.close_code == aiohttp.WSCloseCode.MESSAGE_TOO_BIG
    still_there = await open_client(http, chat.ws_url)
    assert (await still_there.join())["room"] == "lobby"


async def test_empty_messages_are_refused(connect) -> None:
    client = await connect()
    await client.join()
    await client.say("  \n ", client_message_id="m-empty")
    assert (await client.expect("error"))["code"] == "empty"


@pytest.mark.parametrize(
    ("room", "code"),
    [("", "bad_room"), ("a b", "bad_room"), ("x" * 65, "bad_room"), ("../etc", "bad_room")],
)
async def test_bad_room_names_are_refused(connect, room, code) -> None:
    client = await connect()
    await client.send({"type": "join", "room": room, "name": "Ada", "client_id": "c1"})
    assert (await client.expect("error"))["code"] == code


async def test_rooms_outside_the_allow_list_are_refused(start_webchat, http) -> None:
    chat = await start_webchat(rooms=["lobby"])
    client = await open_client(http, chat.ws_url)
    assert client.hello["rooms"] == ["lobby"]
    await client.send({"type": "join", "room": "secret", "name": "Ada", "client_id": "c1"})
    assert (await client.expect("error"))["code"] == "room_not_allowed"


@pytest.mark.parametrize("name", ["", "   ", "\u200b\u200b", "x" * 41])
async def test_bad_display_names_are_refused(connect, name) -> None:
    client = await connect()
    await client.send({"type": "join", "room": "lobby", "name": name, "client_id": "c1"})
    assert (await client.expect("error"))["code"] == "bad_name"


async def test_room_count_is_bounded(start_webchat, http) -> None:
    chat = await start_webchat(max_rooms=2)
    ada, bob, eve = [await open_client(http, chat.ws_url) for _ in range(3)]
    await ada.join("one", "Ada")
    await bob.join("two", "Bob")
    await eve.send({"type": "join", "room": "three", "name": "Eve", "client_id": "c3"})
    assert (await eve.expect("error"))["code"] == "too_many_rooms"

    await ada.join("two", "Ada")  # room "one" is now empty and silent, so it is forgotten
    assert (await eve.join("three", "Eve"))["room"] == "three"


async def test_rooms_people_left_do_not_lock_the_webchat(start_webchat, http) -> None:
    """One visitor filling every room with a message must not lock everyone else out."""
    chat = await start_webchat(max_rooms=3)
    eve = await open_client(http, chat.ws_url)
    for room in ("one", "two", "three"):
        await eve.join(room, "Eve")
        await eve.say("mine now")
        await drain_until(eve, "ack")
    await eve.ws.close()

    ada = await open_client(http, chat.ws_url)
    assert (await ada.join("four", "Ada"))["room"] == "four"
    await chat.adapter.send(chat.outbound("the bot answers", room="lobby"))
    assert (await ada.join("lobby", "Ada"))["history"][0]["html"] == "the bot answers"
    # the rooms used longest ago went first; the one used last keeps its history
    bob = await open_client(http, chat.ws_url)
    joined = await bob.join("three", "Bob")
    assert [m["text"] for m in joined["history"]] == ["mine now"]


async def test_human_html_is_never_sent_as_html(connect) -> None:
    client = await connect()
    await client.join()
    await client.say('<img src=x onerror="alert(1)">')
    message = (await client.expect("ack"))["message"]
    assert message["html"] is None
    assert message["text"] == '<img src=x onerror="alert(1)">'


scalars = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text()
frames = st.one_of(
    st.text(max_size=200),
    st.recursive(
        scalars,
        lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner),
        max_leaves=12,
    ).map(json.dumps),
    st.fixed_dictionaries(
        {"type": st.sampled_from(["join", "message", "ping", "x"])},
        optional={
            "room": st.text(max_size=10),
            "name": st.text(max_size=10),
            "client_id": st.text(max_size=10),
            "client_message_id": st.one_of(st.text(max_size=10), st.integers()),
            "text": st.one_of(st.text(max_size=10), st.none()),
        },
    ).map(json.dumps),
)


@settings(max_examples=300, deadline=None)
@given(frames)
def test_parsing_any_frame_gives_a_frame_or_a_frame_error(raw: str) -> None:
    try:
        frame = parse_client_frame(raw)
    except FrameError as error:
        assert error.code in {"bad_frame", "unknown_type"}
        assert str(error)
    else:
        assert frame.type in {"join", "message", "ping"}
        if isinstance(frame, SendFrame):
            assert isinstance(frame.text, str)
        if isinstance(frame, JoinFrame):
            assert isinstance(frame.room, str)
