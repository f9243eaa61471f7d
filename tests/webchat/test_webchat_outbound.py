"""Bot replies, edits, system notices and the request panel, as every page in the room sees them."""

from __future__ import annotations

import pytest
from webchat_clients import OPEN_REQUEST

from bridge.core.adapter import PermanentSendError
from bridge.core.cards import Card
from bridge.core.model import OutboundKind, PlatformRef


async def test_send_reaches_every_client_in_the_room_only(connect, webchat) -> None:
    ada, bob, eve = await connect(), await connect(), await connect()
    await ada.join("lobby", "Ada")
    await bob.join("lobby", "Bob")
    await eve.join("kitchen", "Eve")

    ref = await webchat.adapter.send(
        webchat.outbound("<p>Thinking…</p>", kind=OutboundKind.DELTA, run_id="run-1")
    )

    assert ref.chat_id == "lobby"
    for client in (ada, bob):
        message = (await client.expect("message"))["message"]
        assert message["id"] == ref.message_id
        assert message["kind"] == "delta"
        assert message["sender"] == {"name": "Rules", "is_bot": True}
        assert message["html"] == "<p>Thinking…</p>"
        assert message["text"] is None
        assert message["run_id"] == "run-1"
    await eve.assert_quiet()


async def test_edit_replaces_the_message_for_everyone(connect, webchat) -> None:
    ada, bob = await connect(), await connect()
    await ada.join("lobby", "Ada")
    await bob.join("lobby", "Bob")
    ref = await webchat.adapter.send(webchat.outbound("<p>4</p>", kind=OutboundKind.DELTA))
    for client in (ada, bob):
        await client.expect("message")

    await webchat.adapter.edit(ref, webchat.outbound("<p>4, final.</p>", kind=OutboundKind.FINAL))

    for client in (ada, bob):
        update = (await client.expect("update"))["message"]
        assert update["id"] == ref.message_id
        assert update["kind"] == "final"
        assert update["html"] == "<p>4, final.</p>"
        assert update["edited"] is False  # a streamed reply finishing is not an edit

    await webchat.adapter.edit(ref, webchat.outbound("<p>5, final.</p>", kind=OutboundKind.FINAL))
    for client in (ada, bob):
        assert (await client.expect("update"))["message"]["edited"] is True  # changed after


async def test_a_question_card_redrawn_with_its_outcome_is_not_an_edit(connect, webchat) -> None:
    ada = await connect()
    await ada.join("lobby", "Ada")
    card = Card(key="k1", decision="run-1", request_id="req-1", question="Which city?",
                asker="Rules", requester="Ada", requester_id=None, depth=(2, 5),
                deadline=None, options=("Paris", "Tokyo"), lane="webchat:main|lobby|")
    ref = await webchat.adapter.send(webchat.outbound("<p>Which city?</p>", card=card))
    await ada.expect("message")

    answered = card.settled("answered", "answered by Bob (webchat): Tokyo")
    await webchat.adapter.edit(ref, webchat.outbound("<p>Which city?</p>", card=answered))
    update = (await ada.expect("update"))["message"]
    assert update["card"]["state"] == "answered" and update["edited"] is False


async def test_a_card_posted_for_a_person_is_not_marked_as_a_bot(connect, webchat) -> None:
    ada = await connect()
    await ada.join("lobby", "Ada")
    await webchat.adapter.send(webchat.outbound("<p>ask</p>", sender_label="Ada",
                                                from_human=True))
    message = (await ada.expect("message"))["message"]
    assert message["sender"] == {"name": "Ada", "is_bot": False}


async def test_history_holds_the_latest_version_of_an_edited_reply(connect, webchat) -> None:
    ref = await webchat.adapter.send(webchat.outbound("<p>4</p>", kind=OutboundKind.DELTA))
    await webchat.adapter.edit(ref, webchat.outbound("<p>4!</p>", kind=OutboundKind.FINAL))

    joined = await (await connect()).join("lobby", "Ada")
    assert [(m["id"], m["kind"], m["html"]) for m in joined["history"]] == [
        (ref.message_id, "final", "<p>4!</p>")
    ]


async def test_edit_of_a_forgotten_message_still_reaches_the_pages(connect, webchat) -> None:
    ada = await connect()
    await ada.join("lobby", "Ada")
    await webchat.adapter.edit(
        PlatformRef(chat_id="lobby", message_id="gone"), webchat.outbound("<p>late</p>")
    )
    update = (await ada.expect("update"))["message"]
    assert (update["id"], update["html"]) == ("gone", "<p>late</p>")


async def test_system_outbounds_are_notices(connect, webchat) -> None:
    ada = await connect()
    await ada.join("lobby", "Ada")
    await webchat.adapter.send(
        webchat.outbound("<p>No open requests.</p>", kind=OutboundKind.SYSTEM, sender_label="")
    )
    message = (await ada.expect("message"))["message"]
    assert message["kind"] == "system"
    assert message["sender"] == {"name": "bridge", "is_bot": False}


async def test_protocol_info_travels_with_the_message(connect, webchat) -> None:
    ada = await connect()
    await ada.join("lobby", "Ada")
    protocol = {
        "type": "RESPONSE",
        "from": "@Rules",
        "to": "Ada",
        "request_id": "ada-123",
        "status": "SUCCESS",
        "result": "4",
        "depth": {"current": 2, "max": 5},
    }
    await webchat.adapter.send(webchat.outbound("<pre>…</pre>", protocol=protocol))
    assert (await ada.expect("message"))["message"]["protocol"] == protocol


async def test_send_to_a_room_outside_the_allow_list_fails_permanently(start_webchat) -> None:
    chat = await start_webchat(rooms=["lobby"])
    with pytest.raises(PermanentSendError):
        await chat.adapter.send(chat.outbound("<p>hi</p>", room="secret"))


async def test_request_panel_updates_reach_the_room_and_new_joiners(connect, webchat) -> None:
    ada, eve = await connect(), await connect()
    await ada.join("lobby", "Ada")
    await eve.join("kitchen", "Eve")
    items = [OPEN_REQUEST]

    await webchat.adapter.update_requests("lobby", items)

    frame = await ada.expect("requests")
    assert frame == {"type": "requests", "room": "lobby", "items": items}
    await eve.assert_quiet()
    assert (await (await connect()).join("lobby", "Bob"))["requests"] == items

    await webchat.adapter.update_requests("lobby", [])
    assert (await ada.expect("requests"))["items"] == []


async def test_request_items_with_odd_values_are_still_sent(connect, webchat) -> None:
    from datetime import UTC, datetime

    ada = await connect()
    await ada.join("lobby", "Ada")
    deadline = datetime(2030, 1, 1, tzinfo=UTC)
    await webchat.adapter.update_requests("lobby", [{"request_id": "r1", "deadline": deadline}])
    assert (await ada.expect("requests"))["items"] == [
        {"request_id": "r1", "deadline": str(deadline)}
    ]


async def test_stop_closes_open_pages(connect, webchat) -> None:
    ada = await connect()
    await ada.join("lobby", "Ada")
    await webchat.adapter.stop()
    message = await ada.ws.receive(timeout=5)
    assert message.type.name in {"CLOSE", "CLOSED"}
    assert ada.ws.close_code == 1001
