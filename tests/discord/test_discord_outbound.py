"""Outbound → Discord: webhooks under the bots' names, no accidental pings, errors classified."""

from __future__ import annotations

import asyncio
import logging

import pytest
from discord_support import WAIT, binding, outbound

from bridge.core.account_state import AccountState
from bridge.core.adapter import PermanentSendError, TransientSendError
from bridge.core.model import PlatformRef
from bridge.core.render import render_parts
from bridge.store.memory import MemoryStore
from tests.fakes import discord_payloads as p

NOBODY = {"users": [], "roles": [], "everyone": False}


async def test_one_webhook_per_channel_is_created_once_and_reused(
    fake, server, make_adapter
) -> None:
    adapter = await make_adapter(bindings=[binding(server.general)])

    first = await adapter.send(outbound("one", server.general, sender="Mantis"))
    second = await adapter.send(outbound("two", server.general, sender="Echo"))

    [hook] = fake.webhooks.values()
    assert hook.name == "bcn-bridge" and hook.channel_id == server.general
    assert len(fake.calls_to("create_webhook")) == 1
    shown = fake.shown(server.general)
    assert [(m.author, m.content, m.webhook_id) for m in shown] == [
        ("Mantis", "one", hook.id), ("Echo", "two", hook.id)
    ]
    assert (first.chat_id, first.thread_id) == (str(server.general), None)
    assert second.message_id == str(shown[1].id)


async def test_an_existing_bridge_webhook_is_reused_after_a_restart(
    fake, server, make_adapter
) -> None:
    first = await make_adapter(bindings=[binding(server.general)])
    await first.send(outbound("before", server.general))
    await first.stop()

    # Even with the store lost, the webhook is found: the bridge's bot created it.
    lost = AccountState(MemoryStore(), "discord:main")
    second = await make_adapter(bindings=[binding(server.general)], own_state=lost)
    await second.send(outbound("after", server.general))

    assert len(fake.webhooks) == 1 and len(fake.calls_to("create_webhook")) == 1


async def test_a_deleted_webhook_is_made_anew(fake, server, make_adapter) -> None:
    adapter = await make_adapter(bindings=[binding(server.general)])
    await adapter.send(outbound("one", server.general))
    [old] = list(fake.webhooks)
    fake.delete_webhook(old)

    await adapter.send(outbound("two", server.general))

    [new] = list(fake.webhooks)
    assert new != old
    assert [m.content for m in fake.shown(server.general)] == ["one", "two"]
    assert fake.shown(server.general)[1].webhook_id == new


@pytest.mark.parametrize(
    ("label", "shown"),
    [
        ("Discord Helper", "Disc\u043erd Helper"),
        ("my clyde bot", "my clyd\u0435 bot"),
        ("  two\nlines  ", "two lines"),
        ("", "bot"),
        ("x" * 100, "x" * 79 + "…"),
    ],
)
async def test_webhook_usernames_follow_discords_rules(
    fake, server, make_adapter, label: str, shown: str
) -> None:
    adapter = await make_adapter(bindings=[binding(server.general)])

    await adapter.send(outbound("hi", server.general, sender=label))

    [posted] = fake.shown(server.general)
    assert posted.author == shown  # the fake refuses what Discord refuses


async def test_thread_replies_go_through_the_parent_webhook(fake, server, make_adapter) -> None:
    thread = fake.add_thread(server.guild, server.general, "deploy")
    post = fake.add_thread(server.guild, server.forum, "question")
    adapter = await make_adapter(bindings=[binding(server.general), binding(server.forum)])

    in_thread = await adapter.send(outbound("in the thread", server.general, thread_id=str(thread)))
    in_post = await adapter.send(outbound("in the post", server.forum, thread_id=str(post)))

    assert [m.content for m in fake.shown(thread)] == ["in the thread"]
    assert [m.content for m in fake.shown(post)] == ["in the post"]
    assert fake.shown(server.general) == []
    assert in_thread.thread_id == str(thread) and in_post.chat_id == str(server.forum)
    executed = fake.calls_to("execute_webhook")
    assert [call.query.get("thread_id") for call in executed] == [str(thread), str(post)]
    assert {hook.channel_id for hook in fake.webhooks.values()} == {server.general, server.forum}


async def test_a_thread_bound_as_its_own_chat_is_posted_into(fake, server, make_adapter) -> None:
    thread = fake.add_thread(server.guild, server.general, "standup")
    adapter = await make_adapter(bindings=[binding(thread)])

    ref = await adapter.send(outbound("notes", thread))

    assert [m.content for m in fake.shown(thread)] == ["notes"]
    assert (ref.chat_id, ref.thread_id) == (str(thread), None)


async def test_everyone_and_here_never_ping_unless_the_binding_allows(
    fake, server, make_adapter
) -> None:
    adapter = await make_adapter(bindings=[binding(server.general)])
    quiet = binding(server.general)
    loud = binding(server.general, allow_everyone=True)

    for bound in (quiet, loud):
        [text] = render_parts("@everyone and @here, look", bound, adapter.capabilities)
        await adapter.send(outbound(text, server.general, binding=bound))

    neutral, allowed = fake.shown(server.general)
    assert "@everyone" not in neutral.content and neutral.pinged == NOBODY
    assert allowed.content == "@everyone and @here, look" and allowed.pinged["everyone"]
    payloads = [call.body["allowed_mentions"] for call in fake.calls_to("execute_webhook")]
    assert payloads[0] == {"parse": [], "users": []}
    assert sorted(payloads[1]["parse"]) == ["everyone", "roles"]


async def test_only_users_the_bot_addressed_are_pinged_on_send_and_edit(
    fake, server, make_adapter, received
) -> None:
    adapter = await make_adapter(bindings=[binding(server.general)])
    fake.push_message(server.general, server.ada, "hi")  # discord.py now knows Ada
    await received.next()
    ops = fake.add_role(server.guild, "Ops")
    bound = binding(server.general)

    [text] = render_parts(f"@Ada please check <@{server.bob['id']}> <@&{ops}>", bound,
                          adapter.capabilities, adapter.directory(str(server.general)))
    ref = await adapter.send(outbound(text, server.general))
    await adapter.edit(ref, outbound(text + " (edited)", server.general))

    [posted] = fake.from_bridge(server.general)
    assert posted.content.startswith(f"<@{server.ada['id']}> please check")
    assert posted.pinged == {"users": [int(server.ada["id"])], "roles": [], "everyone": False}
    assert posted.edits == 1
    edit = fake.calls_to("edit_webhook_message")[0].body
    assert edit["allowed_mentions"] == {"parse": [], "users": [int(server.ada["id"])]}


async def test_with_the_members_intent_anyone_in_the_server_can_be_addressed(
    fake, server, make_adapter
) -> None:
    adapter = await make_adapter(bindings=[binding(server.general)], members_intent=True)
    bound = binding(server.general)

    [text] = render_parts("@bob and @ada, and @Nobody", bound, adapter.capabilities,
                          adapter.directory(str(server.general)))
    await adapter.send(outbound(text, server.general))

    [posted] = fake.from_bridge(server.general)
    assert posted.content == f"<@{server.bob['id']}> and <@{server.ada['id']}>, and @Nobody"
    assert posted.pinged["users"] == [int(server.bob["id"]), int(server.ada["id"])]


async def test_without_manage_webhooks_replies_carry_a_bold_name_said_once(
    fake, server, make_adapter, caplog: pytest.LogCaptureFixture
) -> None:
    fake.set_bot_permissions(server.guild, p.BRIDGE_PERMISSIONS & ~p.MANAGE_WEBHOOKS)
    adapter = await make_adapter(bindings=[binding(server.general)])

    with caplog.at_level(logging.WARNING, logger="adapters.discord"):
        first = await adapter.send(outbound("one", server.general, sender="Mantis"))
        await adapter.send(outbound("two", server.general, sender="Echo"))
        await adapter.edit(first, outbound("one, edited", server.general, sender="Mantis"))

    assert [(m.author, m.content) for m in fake.shown(server.general)] == [
        ("Bridge", "**Mantis**\none, edited"), ("Bridge", "**Echo**\ntwo")
    ]
    assert fake.calls_to("create_webhook") == [] and fake.calls_to("list_webhooks") == []
    warned = [r for r in caplog.records if "cannot post through a webhook" in r.getMessage()]
    assert len(warned) == 1 and "Manage Webhooks" in warned[0].getMessage()
    assert all(call.body["allowed_mentions"] == {"parse": [], "users": []}
               for call in fake.calls_to("create_message") + fake.calls_to("edit_message"))


async def test_webhooks_come_back_when_the_permission_does(
    fake, server, make_adapter, received
) -> None:
    fake.set_bot_permissions(server.guild, p.BRIDGE_PERMISSIONS & ~p.MANAGE_WEBHOOKS)
    adapter = await make_adapter(bindings=[binding(server.general)])
    await adapter.send(outbound("prefixed", server.general))

    fake.set_bot_permissions(server.guild, p.BRIDGE_PERMISSIONS)
    fake.push_message(server.general, server.ada, "after the role update")
    await received.next()  # the gateway delivers in order: the role update is known now
    await adapter.send(outbound("as myself", server.general))

    assert [m.author for m in fake.from_bridge(server.general)] == ["Bridge", "Mantis"]


async def test_display_prefix_posts_as_the_bot_and_replies_to_the_message(
    fake, server, make_adapter, received
) -> None:
    question = fake.push_message(server.general, server.ada, "help")
    adapter = await make_adapter(bindings=[binding(server.general)])
    bound = binding(server.general, display="prefix")

    await adapter.send(outbound("answer", server.general, binding=bound,
                                reply_to=question["id"]))

    [call] = fake.calls_to("create_message")
    assert call.body["content"] == "**Mantis**\nanswer"
    assert str(call.body["message_reference"]["message_id"]) == question["id"]
    assert fake.webhooks == {}


async def test_edit_and_delete_webhook_and_bot_messages(fake, server, make_adapter) -> None:
    thread = fake.add_thread(server.guild, server.general, "t")
    adapter = await make_adapter(bindings=[binding(server.general)])
    prefix = binding(server.general, display="prefix")
    hooked = await adapter.send(outbound("v1", server.general, thread_id=str(thread)))
    as_bot = await adapter.send(outbound("b1", server.general, binding=prefix))

    await adapter.edit(hooked, outbound("v2", server.general, thread_id=str(thread)))
    await adapter.edit(as_bot, outbound("b2", server.general, binding=prefix))
    assert [m.content for m in fake.shown(thread)] == ["v2"]
    assert [m.content for m in fake.shown(server.general)] == ["**Mantis**\nb2"]
    assert fake.calls_to("edit_webhook_message")[0].query["thread_id"] == str(thread)

    await adapter.delete(hooked)
    await adapter.delete(as_bot)
    await adapter.delete(as_bot)  # already gone: still a success
    assert fake.shown(thread) == [] and fake.shown(server.general) == []


async def test_a_long_rate_limit_is_handed_to_the_outbox(fake, server, make_adapter) -> None:
    adapter = await make_adapter(bindings=[binding(server.general, display="prefix")])
    fake.rate_limit_next("create_message", retry_after=45)

    with pytest.raises(TransientSendError) as caught:
        await adapter.send(outbound("later", server.general,
                                    binding=binding(server.general, display="prefix")))

    assert caught.value.retry_after == 45
    assert fake.shown(server.general) == []


async def test_a_short_rate_limit_is_waited_out_by_discord_py(fake, server, make_adapter) -> None:
    adapter = await make_adapter(bindings=[binding(server.general)])
    bound = binding(server.general, display="prefix")
    fake.rate_limit_next("create_message", retry_after=0.05)

    await adapter.send(outbound("soon", server.general, binding=bound))

    assert len(fake.calls_to("create_message")) == 2
    assert [m.content for m in fake.shown(server.general)] == ["**Mantis**\nsoon"]


async def test_a_cloudflare_429_is_transient_with_its_retry_after(
    fake, server, make_adapter
) -> None:
    adapter = await make_adapter(bindings=[binding(server.general)])
    await adapter.send(outbound("warm up", server.general))
    fake.rate_limit_next("execute_webhook", retry_after=3, via=False)

    with pytest.raises(TransientSendError) as caught:
        await adapter.send(outbound("blocked", server.general))

    assert caught.value.retry_after == 3


async def test_a_webhook_call_that_hangs_is_bounded_by_its_own_timeout(
    fake, server, make_adapter
) -> None:
    adapter = await make_adapter(bindings=[binding(server.general)], webhook_timeout=0.3)
    await adapter.send(outbound("warm up", server.general))
    fake.stall_next("execute_webhook", 5)

    with pytest.raises(TransientSendError, match="webhook_timeout"):
        await adapter.send(outbound("stuck", server.general))


@pytest.mark.parametrize(
    ("status", "code", "kind"),
    [
        (403, 50013, PermanentSendError),
        (404, 10003, PermanentSendError),
        (400, 50035, PermanentSendError),
        (503, 0, TransientSendError),
    ],
)
async def test_api_errors_are_classified(fake, server, make_adapter, status, code, kind) -> None:
    bound = binding(server.general, display="prefix")
    adapter = await make_adapter(bindings=[bound])
    fake.fail_next("create_message", status=status, code=code, message="refused")

    with pytest.raises(kind) as caught:
        await adapter.send(outbound("x", server.general, binding=bound))

    assert fake.token not in str(caught.value)


async def test_a_dropped_connection_is_transient(fake, server, make_adapter) -> None:
    bound = binding(server.general, display="prefix")
    adapter = await make_adapter(bindings=[bound])
    fake.drop_next("create_message")

    with pytest.raises(TransientSendError):
        await adapter.send(outbound("x", server.general, binding=bound))


async def test_editing_through_a_webhook_that_was_replaced_is_permanent(
    fake, server, make_adapter
) -> None:
    adapter = await make_adapter(bindings=[binding(server.general)])
    ref = await adapter.send(outbound("v1", server.general))
    fake.delete_webhook(next(iter(fake.webhooks)))
    adapter._webhooks.forget(server.general)

    with pytest.raises(PermanentSendError, match="no longer exists"):
        await adapter.edit(ref, outbound("v2", server.general))


async def test_typing_indicator(fake, server, make_adapter) -> None:
    thread = fake.add_thread(server.guild, server.general, "t")
    adapter = await make_adapter(bindings=[binding(server.general)])

    await adapter.typing(str(server.general))
    await adapter.typing(str(server.general), str(thread))
    fake.fail_next("typing", status=403, code=50013)
    await adapter.typing(str(server.general))  # a failure is only logged

    assert [c.params["channel"] for c in fake.calls_to("typing")] == [
        str(server.general), str(thread), str(server.general)
    ]


async def test_a_send_before_the_first_connection_waits_for_it(fake, server, make_adapter) -> None:
    adapter = await make_adapter(bindings=[binding(server.general)], start=False)
    sending = asyncio.create_task(adapter.send(outbound("queued at start", server.general)))
    async with asyncio.timeout(WAIT):  # until the send waits for the login, not a guess
        while not adapter._ready._waiters:  # type: ignore[attr-defined]
            await asyncio.sleep(0.005)
    assert not sending.done() and not fake.shown(server.general)
    await adapter.start()

    ref = await sending
    assert isinstance(ref, PlatformRef)
    assert [m.content for m in fake.shown(server.general)] == ["queued at start"]
