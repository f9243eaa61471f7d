"""After a restart: what was posted while the bridge was away is relayed, in order, once."""

from __future__ import annotations

import logging

import pytest
from discord_support import binding, outbound


async def test_messages_posted_while_away_are_relayed_in_order_once(
    fake, server, make_adapter, received
) -> None:
    bound = [binding(server.general)]
    first = await make_adapter(bindings=bound)
    fake.push_message(server.general, server.ada, "seen live")
    await received.next()
    await first.send(outbound("a bot's reply", server.general))
    await first.stop()

    missed = [fake.push_message(server.general, author, f"missed {n}")
              for n, author in enumerate((server.ada, server.bob, server.ada))]
    await make_adapter(bindings=bound)
    relayed = [await received.next() for _ in missed]
    live = fake.push_message(server.general, server.bob, "live again")

    assert [i.message_id for i in relayed] == [m["id"] for m in missed]
    assert [i.text for i in relayed] == ["missed 0", "missed 1", "missed 2"]
    assert (await received.next()).message_id == live["id"]  # not the bot's reply, no repeats
    assert received.empty()


async def test_the_first_start_does_not_replay_history(
    fake, server, make_adapter, received
) -> None:
    fake.push_message(server.general, server.ada, "long before the bridge")
    await make_adapter(bindings=[binding(server.general)])

    live = fake.push_message(server.general, server.ada, "after the start")

    assert (await received.next()).message_id == live["id"]


async def test_backfill_is_capped_at_the_latest_messages(
    fake, server, make_adapter, received, caplog: pytest.LogCaptureFixture
) -> None:
    first = await make_adapter(bindings=[binding(server.general)], backfill_limit=2)
    fake.push_message(server.general, server.ada, "seen")
    await received.next()
    await first.stop()
    missed = [fake.push_message(server.general, server.ada, f"missed {n}") for n in range(4)]

    with caplog.at_level(logging.WARNING, logger="adapters.discord"):
        await make_adapter(bindings=[binding(server.general)], backfill_limit=2)
        relayed = [await received.next() for _ in range(2)]

    assert [i.message_id for i in relayed] == [missed[2]["id"], missed[3]["id"]]
    assert any("more than 2 messages" in r.getMessage() for r in caplog.records)


async def test_backfill_can_be_switched_off(fake, server, make_adapter, received) -> None:
    first = await make_adapter(bindings=[binding(server.general)], backfill_limit=0)
    fake.push_message(server.general, server.ada, "seen")
    await received.next()
    await first.stop()
    fake.push_message(server.general, server.ada, "missed")

    await make_adapter(bindings=[binding(server.general)], backfill_limit=0)
    live = fake.push_message(server.general, server.ada, "live")

    assert (await received.next()).message_id == live["id"]
    assert fake.calls_to("history") == []


async def test_threads_catch_up_too_even_one_created_while_away(
    fake, server, make_adapter, received
) -> None:
    old_thread = fake.add_thread(server.guild, server.general, "old")
    first = await make_adapter(bindings=[binding(server.general)])
    fake.push_message(old_thread, server.ada, "seen in the old thread")
    fake.push_message(server.general, server.ada, "seen in the channel")
    await received.next(), await received.next()
    await first.stop()

    in_old = fake.push_message(old_thread, server.bob, "missed in the old thread")
    new_thread = fake.add_thread(server.guild, server.general, "new")
    in_new = fake.push_message(new_thread, server.bob, "missed in a new thread")
    await make_adapter(bindings=[binding(server.general)])
    relayed = {(await received.next()).message_id for _ in range(2)}

    assert relayed == {in_old["id"], in_new["id"]}


async def test_live_messages_wait_until_the_catch_up_is_done(
    fake, server, make_adapter, received
) -> None:
    """Even in a channel whose turn to catch up has not come yet."""
    other = fake.add_channel(server.guild, "random")
    bound = [binding(server.general), binding(other)]
    first = await make_adapter(bindings=bound)
    for channel in (server.general, other):
        fake.push_message(channel, server.ada, "seen")
        await received.next()
    await first.stop()
    missed = {channel: fake.push_message(channel, server.ada, "missed")
              for channel in (server.general, other)}
    fake.stall_next("history", 0.5)  # the first channel's catch-up takes a while

    await make_adapter(bindings=bound)
    await fake.wait_until(lambda: fake.calls_to("history"))
    live = fake.push_message(other, server.bob, "live, during the catch-up")
    order = [(await received.next()).message_id for _ in range(3)]

    assert order == [missed[server.general]["id"], missed[other]["id"], live["id"]]
