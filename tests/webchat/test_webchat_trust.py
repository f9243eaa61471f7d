"""One visitor can neither exhaust the webchat's memory nor pass for someone else.

Over real sockets: ids the server issues (a chosen one never reaches the bots), the
`Origin` check, duplicate and look-alike display names, the history's byte budget, the
request panel's bound, and how many rooms one page and one address may open.
"""

from __future__ import annotations

from typing import Any

import aiohttp
import pytest
from webchat_clients import OPEN_REQUEST, ChatClient, drain_until, open_client, wait_for


async def joined_client(
    http: aiohttp.ClientSession, url: str, room: str = "lobby", name: str = "Ada"
) -> tuple[ChatClient, dict[str, Any]]:
    client = await open_client(http, url)
    return client, await client.join(room, name)


# ---------------------------------------------------------------- client ids

async def test_a_chosen_client_id_never_becomes_the_user_id(connect, webchat) -> None:
    client = await connect("c-i-am-the-admin")
    joined = await client.join("lobby", "Ada")
    issued = client.hello["client_id"]
    assert joined["client_id"] == issued != "c-i-am-the-admin"
    await client.say("hello")
    inbound = await wait_for(webchat.inbound)
    assert inbound.sender.id == issued.partition(".")[0]
    assert inbound.sender.id.startswith("w-") and "admin" not in inbound.sender.id


async def test_an_id_without_this_servers_signature_is_ignored(connect, webchat) -> None:
    ada = await connect()
    await ada.join("lobby", "Ada")
    await ada.say("the real Ada")
    real = await wait_for(webchat.inbound)
    user_id = real.sender.id
    for forged in (user_id, f"{user_id}.forged-signature", f"{user_id}.{'A' * 43}"):
        eve = await connect(forged)
        joined = await eve.join("lobby", "Eve")
        assert joined["client_id"].partition(".")[0] != user_id
        await eve.say("pretending")
        assert (await wait_for(webchat.inbound)).sender.id != user_id


async def test_a_reloaded_page_keeps_its_id_and_its_resends(connect, webchat) -> None:
    first = await connect()
    await first.join("lobby", "Ada")
    await first.say("queued while offline", client_message_id="m-7")
    original = (await drain_until(first, "ack"))["message"]
    sender = (await wait_for(webchat.inbound)).sender.id
    await first.ws.close()

    reloaded = await connect(first.client_id)
    assert (await reloaded.join("lobby", "Ada"))["name"] == "Ada"  # not "Ada (2)": the same one
    await reloaded.say("queued while offline", client_message_id="m-7")
    assert (await reloaded.expect("ack"))["message_id"] == original["id"]
    await reloaded.say("and a new one")
    assert (await wait_for(webchat.inbound)).sender.id == sender
    assert webchat.inbound.empty()


# ---------------------------------------------------------------- origin

async def _handshake(http: aiohttp.ClientSession, url: str, origin: str | None) -> int:
    headers = {"Origin": origin} if origin else {}
    try:
        ws = await http.ws_connect(url, headers=headers)
    except aiohttp.WSServerHandshakeError as refused:
        return refused.status
    await ws.close()
    return 101


async def test_only_the_pages_own_origin_may_open_the_socket(http, webchat) -> None:
    own = webchat.server.url
    assert await _handshake(http, webchat.ws_url, own) == 101
    assert await _handshake(http, webchat.ws_url, None) == 101  # not a browser page
    assert await _handshake(http, webchat.ws_url, "http://evil.example") == 403
    assert await _handshake(http, webchat.ws_url, own.replace("127.0.0.1", "localhost")) == 403


async def test_allowed_origins_adds_sites(http, start_webchat) -> None:
    webchat = await start_webchat(allowed_origins=["https://chat.example.com"])
    assert await _handshake(http, webchat.ws_url, "https://chat.example.com") == 101
    assert await _handshake(http, webchat.ws_url, webchat.server.url) == 101
    assert await _handshake(http, webchat.ws_url, "https://chat.example.com.evil.io") == 403
    anyone = await start_webchat("other", allowed_origins=["*"])
    assert await _handshake(http, anyone.ws_url, "http://evil.example") == 101


async def test_a_refused_origin_gets_a_clear_answer(http, webchat) -> None:
    async with http.get(webchat.ws_url, headers={
        "Origin": "http://evil.example", "Connection": "Upgrade", "Upgrade": "websocket",
        "Sec-WebSocket-Version": "13", "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ==",
    }) as response:
        assert response.status == 403
        assert "allowed_origins" in await response.text()


# ---------------------------------------------------------------- names

async def test_a_second_ada_is_told_apart(connect, webchat) -> None:
    ada = await connect()
    assert (await ada.join("lobby", "Ada"))["name"] == "Ada"
    others = [await connect() for _ in range(4)]
    names = [(await other.join("lobby", wanted))["name"]
             for other, wanted in zip(others, ("Ada", "ada", "\u0391da", "A\u200bda"), strict=True)]
    assert names == ["Ada (2)", "ada (3)", "\u0391da (4)", "Ada (5)"]
    await others[-1].say("who am I?")
    assert (await wait_for(webchat.inbound)).sender.name == "Ada (5)"


async def test_a_person_cannot_join_under_a_bot_name(connect, webchat) -> None:
    await webchat.adapter.send(webchat.outbound("I am the bot", sender_label="Rules"))
    person = await connect()
    await person.send({"type": "join", "room": "lobby", "name": "Rules"})
    refused = await person.expect("error")
    assert refused["code"] == "bot_name" and "pick another display name" in refused["message"]
    elsewhere = await connect()
    assert (await elsewhere.join("kitchen", "Rules"))["name"] == "Rules"  # no Rules there


async def test_the_same_name_in_another_room_is_fine(connect) -> None:
    ada, other = await connect(), await connect()
    await ada.join("lobby", "Ada")
    assert (await other.join("kitchen", "Ada"))["name"] == "Ada"


# ---------------------------------------------------------------- memory per room

async def test_history_stays_within_its_byte_budget(connect, webchat, start_webchat) -> None:
    small = await start_webchat("small", history_bytes=64 * 1024)
    async with aiohttp.ClientSession() as http:
        client, _ = await joined_client(http, small.ws_url)
        big = "😀" * 3990  # four bytes a character in memory: ~16 kB each
        for n in range(40):
            await client.say(f"{n} {big}")
            await drain_until(client, "ack")
        room = small.adapter.chat.rooms.get("lobby")
        assert room is not None and room.history_used <= 64 * 1024
        kept = room.history()
        assert 1 < len(kept) < 40 and kept[-1].text is not None and kept[-1].text.startswith("39 ")
        rejoined = await client.join("lobby", "Ada")
        assert [m["id"] for m in rejoined["history"]] == [m.id for m in kept]


async def test_one_message_larger_than_the_budget_is_still_kept(start_webchat) -> None:
    small = await start_webchat("tiny", history_bytes=1024)
    async with aiohttp.ClientSession() as http:
        client, _ = await joined_client(http, small.ws_url)
        for text in ("first " * 100, "second " * 100):
            await client.say(text)
            await drain_until(client, "ack")
    room = small.adapter.chat.rooms.get("lobby")
    assert room is not None and [m.text for m in room.history()] == ["second " * 100]


async def test_the_request_panel_is_bounded(connect, webchat) -> None:
    items = [{**OPEN_REQUEST, "request_id": f"r-{n}"} for n in range(500)]
    await webchat.adapter.update_requests("lobby", items)
    client = await connect()
    joined = await client.join("lobby", "Ada")
    assert [item["request_id"] for item in joined["requests"]] == [f"r-{n}" for n in range(50)]


# ---------------------------------------------------------------- rooms per visitor

async def _fill(client: ChatClient, room: str) -> dict[str, Any]:
    """Open a room and leave something in it, so it is held after the page moves on."""
    await client.send({"type": "join", "room": room, "name": "Ada",
                       "client_id": client.client_id})
    frame = await client.next_frame()
    if frame["type"] == "joined":
        await client.say(f"hello {room}")
        await drain_until(client, "ack")
    return frame


async def test_one_page_opens_a_limited_number_of_rooms(start_webchat) -> None:
    webchat = await start_webchat(rooms_per_connection=3, rooms_per_visitor=0)
    async with aiohttp.ClientSession() as http:
        page = await open_client(http, webchat.ws_url)
        assert [(await _fill(page, f"room{n}"))["type"] for n in range(3)] == ["joined"] * 3
        refused = await _fill(page, "room3")
        assert refused["type"] == "error" and refused["code"] == "too_many_rooms"
        assert "3 rooms opened from this page" in refused["message"]
        other = await open_client(http, webchat.ws_url)
        assert (await _fill(other, "shared"))["type"] == "joined"
        assert (await _fill(page, "shared"))["type"] == "joined"  # joining costs nothing
        assert (await _fill(page, "room0"))["type"] == "joined"


async def test_one_address_opens_a_limited_number_of_rooms(start_webchat) -> None:
    webchat = await start_webchat(rooms_per_connection=0, rooms_per_visitor=4)
    webchat.adapter.set_bound_rooms(["bound"])
    async with aiohttp.ClientSession() as http:
        pages = [await open_client(http, webchat.ws_url) for _ in range(3)]
        for n in range(4):
            assert (await _fill(pages[n % 2], f"room{n}"))["type"] == "joined"
        refused = await _fill(pages[2], "room4")  # a new page from the same address
        assert refused["code"] == "too_many_rooms"
        assert "4 rooms opened from your address" in refused["message"]
        assert (await _fill(pages[2], "bound"))["type"] == "joined"  # the operator's room


@pytest.mark.parametrize("history_bytes", [512])
def test_config_refuses_a_tiny_history_budget(history_bytes: int) -> None:
    from pydantic import ValidationError

    from adapters.webchat import WebchatAccountConfig

    with pytest.raises(ValidationError, match="history_bytes"):
        WebchatAccountConfig(history_bytes=history_bytes)
