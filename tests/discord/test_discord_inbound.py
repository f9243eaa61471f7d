"""Discord messages → Inbound: who, what, where, and the bridge's own posts left out."""

from __future__ import annotations

import asyncio
import logging

import pytest
from discord_support import Received, binding, outbound

from tests.fakes import discord_payloads as p
from tests.fakes.discord import FakeDiscord


async def quiet(received: Received, fake: FakeDiscord, probe_channel: int, author: dict) -> None:
    """Nothing else was relayed: a later probe message is the very next Inbound."""
    probe = fake.push_message(probe_channel, author, "probe")
    inbound = await received.next()
    assert inbound.message_id == probe["id"], inbound


async def test_display_name_is_nickname_then_global_name_then_username(
    fake, server, make_adapter, received
) -> None:
    global_only = fake.add_member(server.guild, "grace", global_name="Grace Hopper")
    await make_adapter(bindings=[binding(server.general)])

    for author in (server.ada, global_only, server.bob):
        fake.push_message(server.general, author, "hi")
    names = [(await received.next()).sender for _ in range(3)]

    assert [sender.name for sender in names] == ["Ada", "Grace Hopper", "bob"]
    assert [sender.id for sender in names] == [server.ada["id"], global_only["id"],
                                                server.bob["id"]]
    assert not any(sender.is_bot for sender in names)


async def test_a_message_is_normalized_with_readable_mentions(
    fake, server, make_adapter, received
) -> None:
    ops = fake.add_role(server.guild, "Ops")
    await make_adapter(bindings=[binding(server.general)])

    sent = fake.push_message(
        server.general, server.bob,
        f"<@{server.ada['id']}> and <@&{ops}> see <#{server.general}> **now**",
    )
    inbound = await received.next()

    assert inbound.channel_type == "discord" and inbound.account == "main"
    assert inbound.chat_id == str(server.general) and inbound.thread_id is None
    assert inbound.message_id == sent["id"]
    assert inbound.text == "@Ada and @Ops see #general **now**"
    assert inbound.mentions == ("Ada",)
    assert inbound.reply_to is None and inbound.attachments == ()


async def test_other_bots_are_relayed_as_bots(fake, server, make_adapter, received) -> None:
    await make_adapter(bindings=[binding(server.general)])
    other_webhook = fake.ids.next()
    webhook_author = {"id": str(other_webhook), "username": "Lotbot (bridge)", "avatar": None,
                      "discriminator": "0000", "bot": True, "global_name": None}

    fake.push_message(server.general, server.lotbot, "from a bot account")
    fake.push_message(server.general, webhook_author, "from a webhook", webhook_id=other_webhook)
    first, second = await received.next(), await received.next()

    assert (first.sender.name, first.sender.is_bot) == ("Lotbot", True)
    assert (second.sender.name, second.sender.is_bot) == ("Lotbot (bridge)", True)


async def test_replies_and_attachments(fake, server, make_adapter, received) -> None:
    await make_adapter(bindings=[binding(server.general)])
    first = fake.push_message(server.general, server.ada, "question?")
    await received.next()
    photo = p.attachment(fake.ids.next(), "cat.png", "image/png", 2048)
    notes = p.attachment(fake.ids.next(), "notes.txt", "text/plain", 12)

    fake.push_message(server.general, server.bob, "answer", reply_to=int(first["id"]),
                      attachments=[photo, notes])
    inbound = await received.next()

    assert inbound.reply_to == first["id"]
    image, text_file = inbound.attachments
    assert (image.type, image.name, image.mime, image.size) == ("image", "cat.png", "image/png",
                                                                2048)
    assert image.url == photo["url"] and fake.token not in image.url
    assert (text_file.type, text_file.name) == ("file", "notes.txt")


async def test_a_file_without_text_is_relayed_and_a_system_message_is_not(
    fake, server, make_adapter, received
) -> None:
    await make_adapter(bindings=[binding(server.general)])
    data = p.message(fake.ids.next(), server.general, server.bob, "", guild_id=server.guild.id,
                     kind=7)  # "bob joined the server"
    fake.dispatch("MESSAGE_CREATE", data, server.guild.id)
    photo = p.attachment(fake.ids.next(), "cat.png", "image/png", 1)
    fake.push_message(server.general, server.ada, "", attachments=[photo])

    inbound = await received.next()

    assert inbound.text == "" and inbound.attachments[0].name == "cat.png"
    await quiet(received, fake, server.general, server.ada)


async def test_threads_and_forum_posts_are_threads_of_the_bound_channel(
    fake, server, make_adapter, received
) -> None:
    thread = fake.add_thread(server.guild, server.general, "deploy")
    post = fake.add_thread(server.guild, server.forum, "How do I …?")
    await make_adapter(bindings=[binding(server.general), binding(server.forum)])

    fake.push_message(thread, server.ada, "in a thread")
    fake.push_message(post, server.bob, "in a forum post")
    in_thread, in_post = await received.next(), await received.next()

    assert (in_thread.chat_id, in_thread.thread_id) == (str(server.general), str(thread))
    assert (in_post.chat_id, in_post.thread_id) == (str(server.forum), str(post))


async def test_a_thread_bound_by_itself_is_its_own_chat(
    fake, server, make_adapter, received
) -> None:
    thread = fake.add_thread(server.guild, server.general, "standup")
    await make_adapter(bindings=[binding(thread)])

    fake.push_message(thread, server.ada, "standup notes")
    inbound = await received.next()

    assert (inbound.chat_id, inbound.thread_id) == (str(thread), None)


async def test_a_thread_discord_py_has_not_seen_is_looked_up(
    fake, server, make_adapter, received
) -> None:
    await make_adapter(bindings=[binding(server.general)])
    thread = fake.ids.next()
    server.guild.threads[thread] = p.thread(thread, server.guild.id, server.general, "quiet", 1)

    fake.push_message(thread, server.ada, "nobody announced this thread")
    inbound = await received.next()

    assert (inbound.chat_id, inbound.thread_id) == (str(server.general), str(thread))
    assert [c.params["channel"] for c in fake.calls_to("get_channel")] == [str(thread)]


async def test_human_edits_are_relayed_bot_edits_and_link_previews_are_not(
    fake, server, make_adapter, received
) -> None:
    await make_adapter(bindings=[binding(server.general, relay_edits=True)])
    human = fake.push_message(server.general, server.ada, "teh plan")
    bot = fake.push_message(server.general, server.lotbot, "thinking")
    await received.next(), await received.next()

    preview = {**fake.messages[int(human["id"])], "embeds": []}  # no edited_timestamp
    fake.dispatch("MESSAGE_UPDATE", preview, server.guild.id)
    fake.push_edit(int(bot["id"]), "thinking harder")
    fake.push_edit(int(human["id"]), "the plan")
    edit = await received.next()

    assert edit.is_edit and edit.message_id == human["id"] and edit.text == "the plan"
    assert edit.timestamp > edit_created(human)
    await quiet(received, fake, server.general, server.ada)


def edit_created(data: dict) -> object:
    return p.snowflake_time(int(data["id"]))


async def test_deleting_a_human_message_is_relayed_with_what_it_said(
    fake, server, make_adapter, received
) -> None:
    await make_adapter(bindings=[binding(server.general, relay_edits=True)])
    message = fake.push_message(server.general, server.ada, f"oops <@{server.bob['id']}>")
    await received.next()

    fake.push_delete(int(message["id"]))
    deleted = await received.next()

    assert deleted.is_delete and deleted.message_id == message["id"]
    assert deleted.text == "oops @bob" and deleted.sender.name == "Ada"


async def test_after_a_restart_a_delete_still_names_its_author(
    fake, server, make_adapter, received
) -> None:
    first = await make_adapter(bindings=[binding(server.general, relay_edits=True)])
    message = fake.push_message(server.general, server.ada, "said before the restart")
    await received.next()
    await first.stop()

    await make_adapter(bindings=[binding(server.general, relay_edits=True)])
    fake.push_delete(int(message["id"]))
    deleted = await received.next()

    assert deleted.is_delete and deleted.sender.id == server.ada["id"]
    assert deleted.text == ""  # discord.py's cache did not survive; the store kept the author


async def test_the_bridge_never_hears_its_own_posts(fake, server, make_adapter, received) -> None:
    adapter = await make_adapter(bindings=[binding(server.general)])
    assert fake.echo_before_response  # the gateway echo arrives before the REST answer

    by_webhook = await adapter.send(outbound("as Mantis", server.general))
    prefixed = await adapter.send(
        outbound("as the bot", server.general, binding=binding(server.general, display="prefix"))
    )

    assert [m.content for m in fake.from_bridge(server.general)] == [
        "as Mantis", "**Mantis**\nas the bot"
    ]
    assert by_webhook.message_id != prefixed.message_id
    await quiet(received, fake, server.general, server.ada)


async def test_after_a_restart_the_old_webhook_is_still_recognised(
    fake, server, make_adapter, received
) -> None:
    first = await make_adapter(bindings=[binding(server.general)])
    await first.send(outbound("before", server.general))
    [hook] = fake.webhooks.values()
    await first.stop()

    await make_adapter(bindings=[binding(server.general)])
    author = {"id": str(hook.id), "username": "Mantis", "avatar": None,
              "discriminator": "0000", "bot": True, "global_name": None}
    fake.push_message(server.general, author, "an echo from before", webhook_id=hook.id)

    await quiet(received, fake, server.general, server.ada)
    assert len(fake.calls_to("list_webhooks")) == 1  # the store knew it; nothing was looked up


async def test_unbound_channels_are_logged_once_with_their_id(
    fake, server, make_adapter, received, caplog: pytest.LogCaptureFixture
) -> None:
    other = fake.add_channel(server.guild, "random")
    await make_adapter(bindings=[binding(server.general)])

    with caplog.at_level(logging.INFO, logger="adapters.discord"):
        for _ in range(2):
            fake.push_message(other, server.ada, "hello?")
            await received.next()

    lines = [r.getMessage() for r in caplog.records if "sees #random" in r.getMessage()]
    assert lines == [f'discord:main sees #random ({other}) in server "Team" '
                     f'(not bound; bind it with chat: "{other}")']


async def test_identify_asks_for_message_content_and_members_only_when_configured(
    fake, server, make_adapter
) -> None:
    first = await make_adapter()
    await first.stop()
    await make_adapter(members_intent=True)
    await asyncio.sleep(0)

    without, with_members = (frame["intents"] for frame in fake.identifies())
    assert without & p.MESSAGE_CONTENT_INTENT and with_members & p.MESSAGE_CONTENT_INTENT
    assert not without & p.MEMBERS_INTENT and with_members & p.MEMBERS_INTENT
    chunks = [f for f in fake.gateway_frames if f.get("op") == 8]
    assert [int(c["d"]["guild_id"]) for c in chunks] == [server.guild.id]
