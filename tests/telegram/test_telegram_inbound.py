"""Updates from the fake Bot API, through real PTB long polling, into `Inbound`s."""

from __future__ import annotations

import logging

import pytest
from telegram_support import (
    BOT_USERNAME,
    GROUP,
    PUPPET_TOKEN,
    TOKEN,
    MakeAdapter,
    Received,
    account_config,
    binding,
)

from adapters.telegram import TelegramAdapter
from tests.fakes.telegram import FakeTelegram, user

ALICE = user("Alice", last_name="Liddell", username="alice", user_id=501)


async def test_human_message_becomes_inbound(
    fake: FakeTelegram, make_adapter: MakeAdapter, received: Received
) -> None:
    await make_adapter()
    sent = fake.push_message(TOKEN, GROUP, ALICE, "hello **bots**")

    inbound = await received.next()

    assert inbound.channel == "telegram:main"
    assert inbound.chat_id == str(GROUP)
    assert inbound.message_id == str(sent["message_id"])
    assert inbound.sender.id == "501"
    assert inbound.sender.name == "Alice Liddell"
    assert inbound.sender.is_bot is False
    assert inbound.thread_id is None and inbound.reply_to is None
    assert inbound.is_edit is False
    assert "hello" in inbound.text


async def test_name_falls_back_to_username(
    fake: FakeTelegram, make_adapter: MakeAdapter, received: Received
) -> None:
    await make_adapter()
    fake.push_message(TOKEN, GROUP, user("", username="nameless", user_id=7), "hi")

    assert (await received.next()).sender.name == "@nameless"


async def test_mentions_become_names(
    fake: FakeTelegram, make_adapter: MakeAdapter, received: Received
) -> None:
    await make_adapter()
    text = "@Mantis and Bob, look"
    bob = user("Bob", last_name="Builder", user_id=77)
    entities = [
        {"type": "mention", "offset": 0, "length": 7},
        {"type": "text_mention", "offset": 12, "length": 3, "user": bob},
    ]
    fake.push_message(TOKEN, GROUP, ALICE, text, entities=entities)

    inbound = await received.next()

    assert inbound.mentions == ("Mantis", "Bob Builder")
    assert "@Mantis" in inbound.text
    assert "Bob" in inbound.text


async def test_reply_keeps_its_target(
    fake: FakeTelegram, make_adapter: MakeAdapter, received: Received
) -> None:
    await make_adapter()
    first = fake.push_message(TOKEN, GROUP, ALICE, "question")
    fake.push_message(TOKEN, GROUP, ALICE, "follow-up", reply_to=first["message_id"])

    await received.next()
    reply = await received.next()

    assert reply.reply_to == str(first["message_id"])


async def test_forum_topic_is_a_thread_and_its_root_is_no_reply(
    fake: FakeTelegram, make_adapter: MakeAdapter, received: Received
) -> None:
    forum = -1009999
    fake.add_chat(forum, title="Forum", forum=True)
    await make_adapter()
    root = fake.message(forum, ALICE, None, forum_topic_created={"name": "Ops", "icon_color": 1})
    fake.push_message(
        TOKEN, forum, ALICE, "in the topic", thread_id=root["message_id"],
        reply_to=root["message_id"],
    )  # fmt: skip

    inbound = await received.next()

    assert inbound.thread_id == str(root["message_id"])
    assert inbound.reply_to is None


async def test_plain_supergroup_reply_thread_is_not_a_topic(
    fake: FakeTelegram, make_adapter: MakeAdapter, received: Received
) -> None:
    await make_adapter()
    first = fake.push_message(TOKEN, GROUP, ALICE, "root")
    fake.push_message(
        TOKEN, GROUP, ALICE, "reply", thread_id=first["message_id"], reply_to=first["message_id"]
    )

    await received.next()
    reply = await received.next()

    assert reply.thread_id is None
    assert reply.reply_to == str(first["message_id"])


async def test_commands_addressed_to_this_bot_are_normalized(
    fake: FakeTelegram, make_adapter: MakeAdapter, received: Received
) -> None:
    await make_adapter()
    text = f"/ask@{BOT_USERNAME} Mantis summarize"
    fake.push_message(
        TOKEN, GROUP, ALICE, text,
        entities=[{"type": "bot_command", "offset": 0, "length": len(BOT_USERNAME) + 5}],
    )  # fmt: skip

    inbound = await received.next()

    assert inbound.text == "/ask Mantis summarize"


async def test_commands_for_another_bot_are_ignored(
    fake: FakeTelegram, make_adapter: MakeAdapter, received: Received
) -> None:
    await make_adapter()
    fake.push_message(
        TOKEN, GROUP, ALICE, "/stop@OtherBot",
        entities=[{"type": "bot_command", "offset": 0, "length": 14}],
    )  # fmt: skip
    fake.push_message(TOKEN, GROUP, ALICE, "after")

    assert (await received.next()).text == "after"


async def test_edited_message_is_relayed_as_an_edit(
    fake: FakeTelegram, make_adapter: MakeAdapter, received: Received
) -> None:
    await make_adapter()
    original = fake.push_message(TOKEN, GROUP, ALICE, "helo")
    fake.push_edit(TOKEN, original, "hello")

    first = await received.next()
    edit = await received.next()

    assert first.is_edit is False
    assert edit.is_edit is True
    assert edit.message_id == first.message_id
    assert edit.text == "hello"


async def test_photos_and_documents_carry_file_ids_only(
    fake: FakeTelegram,
    make_adapter: MakeAdapter,
    received: Received,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    await make_adapter()
    photo = [
        {"file_id": "small-id", "file_unique_id": "s", "width": 90, "height": 90},
        {"file_id": "big-id", "file_unique_id": "b", "width": 1280, "height": 960,
         "file_size": 12345},
    ]  # fmt: skip
    document = {
        "file_id": "doc-id", "file_unique_id": "d", "file_name": "report.pdf",
        "mime_type": "application/pdf", "file_size": 999,
    }  # fmt: skip
    fake.push_message(TOKEN, GROUP, ALICE, None, photo=photo, caption="look @Mantis",
                      caption_entities=[{"type": "mention", "offset": 5, "length": 7}])  # fmt: skip
    fake.push_message(TOKEN, GROUP, ALICE, None, document=document)

    with_photo = await received.next()
    with_document = await received.next()

    assert with_photo.text == "look @Mantis"
    assert with_photo.mentions == ("Mantis",)
    [image] = with_photo.attachments
    assert (image.type, image.file_id, image.size, image.url) == ("image", "big-id", 12345, None)
    [file] = with_document.attachments
    assert (file.type, file.file_id, file.name, file.mime) == (
        "file", "doc-id", "report.pdf", "application/pdf",
    )  # fmt: skip
    secret = TOKEN.partition(":")[2]
    assert secret not in repr(with_photo) and secret not in repr(with_document)
    assert secret not in caplog.text
    assert "/bot<redacted>/getUpdates" in caplog.text  # httpx logged the URL, redacted


async def test_bots_messages_are_marked_and_own_echoes_dropped(
    fake: FakeTelegram, make_adapter: MakeAdapter, received: Received
) -> None:
    await make_adapter(puppets={"Mantis": PUPPET_TOKEN})
    main, puppet = fake.bots[TOKEN], fake.bots[PUPPET_TOKEN]
    fake.push_message(TOKEN, GROUP, main.as_user(), "my own echo")
    fake.push_message(TOKEN, GROUP, puppet.as_user(), "a puppet's echo")
    other = user("Lotbot", username="lotbot", is_bot=True, user_id=4242)
    fake.push_message(TOKEN, GROUP, other, "from another bot")

    inbound = await received.next()

    assert inbound.text == "from another bot"
    assert inbound.sender.is_bot is True
    assert [item.text for item in received.items] == ["from another bot"]


async def test_each_chat_is_logged_once_with_its_id(
    fake: FakeTelegram,
    make_adapter: MakeAdapter,
    received: Received,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="adapters.telegram")
    await make_adapter()
    for text in ("one", "two"):
        fake.push_message(TOKEN, GROUP, ALICE, text)
    await received.next()
    await received.next()

    lines = [r.getMessage() for r in caplog.records if str(GROUP) in r.getMessage()]
    assert len(lines) == 1
    assert "Team room" in lines[0] and f'not bound; bind it with chat: "{GROUP}"' in lines[0]


async def test_bound_chats_are_logged_as_bound(
    fake: FakeTelegram, received: Received, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="adapters.telegram")
    adapter = TelegramAdapter("main", account_config(fake), received)
    adapter.use_bindings([binding()])
    await adapter.start()
    try:
        fake.push_message(TOKEN, GROUP, ALICE, "hi")
        await received.next()
    finally:
        await adapter.stop()

    [line] = [r.getMessage() for r in caplog.records if str(GROUP) in r.getMessage()]
    assert line.endswith("(bound)")


async def test_updates_are_confirmed_so_a_restart_does_not_repeat_them(
    fake: FakeTelegram, make_adapter: MakeAdapter, received: Received
) -> None:
    adapter = await make_adapter()
    fake.push_message(TOKEN, GROUP, ALICE, "once")
    await received.next()
    await adapter.stop()

    assert fake.confirmed(TOKEN)


async def test_service_messages_carry_nothing_for_the_bots(
    fake: FakeTelegram, make_adapter: MakeAdapter, received: Received
) -> None:
    """Telegram sends joins, pins and new topics as messages without text: not for the bots."""
    forum = -1009999
    fake.add_chat(forum, title="Forum", forum=True)
    await make_adapter()
    bob = user("Bob", user_id=77)
    fake.push_message(TOKEN, GROUP, ALICE, None, new_chat_members=[bob])
    fake.push_message(TOKEN, GROUP, ALICE, None, left_chat_member=bob)
    topic = fake.push_message(
        TOKEN, forum, ALICE, None, forum_topic_created={"name": "Ops", "icon_color": 1}
    )
    pinned = {"message_id": topic["message_id"], "date": topic["date"], "chat": topic["chat"]}
    fake.push_message(TOKEN, GROUP, ALICE, None, pinned_message=pinned)
    fake.push_message(TOKEN, GROUP, ALICE, "after")

    assert (await received.next()).text == "after"
    assert [item.text for item in received.items] == ["after"]
