"""Slash commands: registered per bound server when changed, answered through the interaction."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from discord_support import binding, outbound

from bridge.config.sections import CommandNames
from bridge.core.account_state import AccountState
from bridge.store.memory import MemoryStore
from tests.fakes import discord_payloads as p

EPHEMERAL = 64


def names_registered(fake, guild) -> list[str]:
    return sorted(command["name"] for command in fake.commands.get(guild.id, []))


async def test_commands_are_registered_in_bound_servers_only_when_they_change(
    fake, server, make_adapter, received
) -> None:
    elsewhere = fake.add_guild("Unbound")
    fake.add_channel(elsewhere, "general")
    bound = [binding(server.general)]
    first = await make_adapter(bindings=bound)
    await fake.wait_until(lambda: fake.calls_to("put_commands"))
    await first.stop()

    same = await make_adapter(bindings=bound)
    await same.stop()
    renamed = CommandNames(ask="delegate", new=False)
    await make_adapter(bindings=bound, commands=renamed)
    await fake.wait_until(lambda: len(fake.calls_to("put_commands")) == 2)

    puts = fake.calls_to("put_commands")
    assert [call.params["guild"] for call in puts] == [str(server.guild.id)] * 2
    assert [sorted(c["name"] for c in call.body) for call in puts] == [
        ["ask", "new", "requests", "stop"], ["delegate", "requests", "stop"]
    ]
    ask = next(c for c in puts[1].body if c["name"] == "delegate")
    assert [o["name"] for o in ask["options"]] == ["bot", "task"]
    assert names_registered(fake, elsewhere) == []


async def test_a_lost_store_means_one_sync_more_never_a_missing_command(
    fake, server, make_adapter
) -> None:
    first = await make_adapter(bindings=[binding(server.general)])
    await fake.wait_until(lambda: fake.calls_to("put_commands"))
    await first.stop()

    lost = AccountState(MemoryStore(), "discord:main")
    await make_adapter(bindings=[binding(server.general)], own_state=lost)
    await fake.wait_until(lambda: len(fake.calls_to("put_commands")) == 2)

    assert names_registered(fake, server.guild) == ["ask", "new", "requests", "stop"]


async def started(fake, server, make_adapter, **options):
    options.setdefault("bindings", [binding(server.general)])
    adapter = await make_adapter(**options)
    await fake.wait_until(lambda: fake.commands.get(server.guild.id))
    return adapter


async def test_requests_is_deferred_at_once_and_answered_only_to_its_caller(
    fake, server, make_adapter, received
) -> None:
    adapter = await started(fake, server, make_adapter)

    interaction = fake.push_interaction(server.general, server.ada, "requests")
    inbound = await received.next()

    [callback] = fake.calls_to("interaction_callback")
    assert callback.body["type"] == 5 and callback.body["data"]["flags"] == EPHEMERAL
    assert inbound.message_id == str(interaction.id) and inbound.text == "/requests"
    assert (inbound.sender.name, inbound.chat_id) == ("Ada", str(server.general))

    ref = await adapter.send(outbound("No open requests in this chat.", server.general,
                                      sender="bcn-bridge", reply_to=inbound.message_id))

    [answer] = fake.calls_to("followup")
    assert answer.body["content"] == "No open requests in this chat."
    assert answer.body["allowed_mentions"] == {"parse": [], "users": []}
    assert ref.message_id == str(interaction.original)
    assert fake.posted[interaction.original].content == "No open requests in this chat."
    assert fake.posted[interaction.original].ephemeral
    assert fake.webhooks == {}  # nothing was posted to the channel


async def test_stop_answers_where_everyone_sees_it(fake, server, make_adapter, received) -> None:
    adapter = await started(fake, server, make_adapter)

    interaction = fake.push_interaction(server.general, server.bob, "stop")
    inbound = await received.next()
    await adapter.send(outbound("Nothing is running here.", server.general, sender="bcn-bridge",
                                reply_to=inbound.message_id))

    [callback] = fake.calls_to("interaction_callback")
    assert callback.body["type"] == 5 and not callback.body.get("data", {}).get("flags")
    assert [m.content for m in fake.shown(server.general)] == ["Nothing is running here."]
    assert fake.shown(server.general)[0].id == interaction.original


async def test_ask_says_at_once_what_was_asked_and_becomes_the_text_command(
    fake, server, make_adapter, received
) -> None:
    adapter = await started(fake, server, make_adapter)

    interaction = fake.push_interaction(server.general, server.ada, "ask",
                                        {"bot": "Rulez", "task": "what is 6 times 7"})
    inbound = await received.next()
    await adapter.send(outbound("No bot called 'Rulez' here", server.general,
                                sender="bcn-bridge", reply_to=inbound.message_id))

    [callback] = fake.calls_to("interaction_callback")
    assert callback.body["type"] == 4 and callback.body["data"]["flags"] == EPHEMERAL
    assert "/ask Rulez what is 6 times 7" in callback.body["data"]["content"]
    assert inbound.text == "/ask Rulez what is 6 times 7"
    [followup] = fake.calls_to("followup")
    assert followup.body["flags"] == EPHEMERAL
    assert [fake.posted[i].ephemeral for i in interaction.followups] == [True]


async def test_an_expired_interaction_is_answered_in_the_channel(
    fake, server, make_adapter, received
) -> None:
    adapter = await started(fake, server, make_adapter)
    interaction = fake.push_interaction(server.general, server.ada, "requests")
    inbound = await received.next()
    fake.expire_interaction(interaction.id)

    await adapter.send(outbound("No open requests in this chat.", server.general,
                                sender="bcn-bridge", reply_to=inbound.message_id))

    assert [(m.author, m.content) for m in fake.from_bridge(server.general)][-1] == (
        "bcn-bridge", "No open requests in this chat."
    )


async def test_an_answer_after_fifteen_minutes_does_not_try_the_interaction(
    fake, server, make_adapter, received
) -> None:
    adapter = await started(fake, server, make_adapter,
                            bindings=[binding(server.general, display="prefix")])
    old = datetime.now(UTC) - timedelta(minutes=20)
    fake.push_interaction(server.general, server.ada, "new", created=old)
    inbound = await received.next()

    await adapter.send(outbound("Started a fresh conversation.", server.general,
                                sender="bcn-bridge", reply_to=inbound.message_id,
                                binding=binding(server.general, display="prefix")))

    assert fake.calls_to("followup") == []
    [posted] = fake.calls_to("create_message")
    assert posted.body["content"] == "**bcn-bridge**\nStarted a fresh conversation."
    assert "message_reference" not in posted.body  # an interaction is no message to reply to


async def test_a_command_in_a_thread_is_a_command_of_the_thread(
    fake, server, make_adapter, received
) -> None:
    thread = fake.add_thread(server.guild, server.general, "deploy")
    await started(fake, server, make_adapter)

    fake.push_interaction(thread, server.ada, "new")
    inbound = await received.next()

    assert (inbound.chat_id, inbound.thread_id, inbound.text) == (
        str(server.general), str(thread), "/new"
    )


async def test_text_commands_still_reach_the_core(fake, server, make_adapter, received) -> None:
    await started(fake, server, make_adapter)

    fake.push_message(server.general, server.ada, "/ask Rules what is 6 times 7")
    inbound = await received.next()

    assert inbound.text == "/ask Rules what is 6 times 7"
    assert fake.calls_to("interaction_callback") == []
    assert p.snowflake_time(int(inbound.message_id)) <= datetime.now(UTC)


async def test_a_command_in_an_unbound_channel_is_answered_at_once(
    fake, server, make_adapter, received
) -> None:
    other = fake.add_channel(server.guild, "random")
    await started(fake, server, make_adapter)

    fake.push_interaction(other, server.ada, "stop")
    await fake.wait_until(lambda: fake.calls_to("interaction_callback"))

    [callback] = fake.calls_to("interaction_callback")
    assert callback.body["type"] == 4 and callback.body["data"]["flags"] == EPHEMERAL
    assert "not connected" in callback.body["data"]["content"]
    probe = fake.push_message(server.general, server.ada, "probe")
    assert (await received.next()).message_id == probe["id"]  # the command never got in


async def test_after_a_restart_the_answer_still_goes_through_the_interaction(
    fake, server, make_adapter, received
) -> None:
    first = await started(fake, server, make_adapter)
    interaction = fake.push_interaction(server.general, server.ada, "requests")
    inbound = await received.next()
    await first.stop()

    second = await make_adapter(bindings=[binding(server.general)])
    await second.send(outbound("No open requests in this chat.", server.general,
                               sender="bcn-bridge", reply_to=inbound.message_id))

    assert fake.posted[interaction.original].content == "No open requests in this chat."
    assert fake.from_bridge(server.general) == []
