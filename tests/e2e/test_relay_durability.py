"""Nothing lost, nothing doubled: platform outages, bridge restarts and a dropped hub link."""

from __future__ import annotations

import asyncio

from bridge.bcn.bot import Bot, IncomingMessage, Run
from tests.e2e.e2e_support import WAIT, texts
from tests.e2e.recording_adapter import RecordingAdapter


async def test_platform_outage_delays_but_keeps_order(start_system):
    system = await start_system(stream=False)
    system.chat_adapter.down = True
    for n in range(3):
        await system.chat_adapter.say("room", f"message number {n}")
    async with asyncio.timeout(WAIT):
        while system.app.relay.outbox.pending_count() < 3:
            await asyncio.sleep(0.01)
    assert system.chat.messages == []
    system.chat_adapter.down = False
    await system.wait_for(lambda ms: len(ms) == 3)
    assert texts(system.chat.messages) == [f"message number {n}" for n in range(3)]


async def test_restart_with_outputs_queued_delivers_them_once(start_system):
    first = await start_system(stream=False)
    first.chat_adapter.down = True
    for n in range(3):
        await first.chat_adapter.say("room", f"queued {n}")
    async with asyncio.timeout(WAIT):
        while first.app.relay.outbox.pending_count() < 3:
            await asyncio.sleep(0.01)
    for bot in first.bots:
        await bot.stop()
    first.bots = []
    await first.app.stop()

    second = await start_system(bots=False)
    await second.wait_for(lambda ms: len(ms) == 3)
    await second.app.relay.outbox.wait_idle()
    assert texts(second.chat.messages) == [f"queued {n}" for n in range(3)]


async def test_a_replayed_delivery_is_posted_once(start_system):
    """The hub replays un-acked deliveries after a reconnect with the same event id."""
    system = await start_system(bots=False)
    relay = system.app.relay
    [binding_id] = relay.link.bindings_by_id
    delivery = {
        "event_id": "evt-1", "binding_id": binding_id, "bcs_session_id": "demo:channel_x",
        "run_id": "run-1", "sender": {"bot_uuid": "b-1", "name": "Echo"}, "kind": "final",
        "text": "only once", "seq": 1,
    }
    await relay.outbound.deliver(dict(delivery))
    await relay.outbound.deliver(dict(delivery))
    await relay.outbound.deliver({**delivery, "event_id": "evt-2", "text": "and this"})
    await relay.outbox.wait_idle()
    assert texts(system.chat.messages) == ["only once", "and this"]


async def test_a_delivery_that_could_not_be_queued_is_replayed_not_lost(start_system):
    """Queueing failed after the event id would have been remembered: the hub's retry of
    the same event must still be posted (the id and the output commit together)."""
    system = await start_system(bots=False)
    relay = system.app.relay
    outbox_store = relay.ctx.store.outbox
    real_append = outbox_store.append
    failures = []

    async def append_failing_once(item, **kwargs):
        if not failures:
            failures.append(item)
            raise OSError("disk full")
        return await real_append(item, **kwargs)

    outbox_store.append = append_failing_once
    [binding_id] = relay.link.bindings_by_id
    delivery = {
        "event_id": "evt-9", "binding_id": binding_id, "bcs_session_id": "demo:channel_x",
        "run_id": "run-9", "sender": {"bot_uuid": "b-1", "name": "Echo"}, "kind": "final",
        "text": "survives a failed write", "seq": 1,
    }
    try:
        await relay.outbound.deliver(dict(delivery))
    except OSError:
        pass  # the link answers this with a retryable error; the hub retries
    await relay.outbound.deliver(dict(delivery))
    await relay.outbox.wait_idle()
    assert failures, "the failure was never injected"
    assert texts(system.chat.messages) == ["survives a failed write"]


async def test_link_dropped_mid_reply_loses_and_doubles_nothing(start_system):
    system = await start_system(bots=False)
    release = asyncio.Event()
    slow = Bot(f"{system.app.bcn_url}/ws/bot", name="Echo")

    @slow.on_message
    async def stream(msg: IncomingMessage, run: Run) -> None:
        await run.delta("first half, ")
        await release.wait()
        await run.delta("second half")
        await run.final("first half, second half")

    await slow.start(timeout=WAIT)
    system.bots = [slow]
    await system.wait_for_bots("Echo")
    await system.chat_adapter.say("room", "tell me in two halves")
    await system.wait_for(lambda ms: [m for m in ms if m.sender == "Echo"])
    link = system.app.relay.link
    connects = link.connects
    await link.drop()
    release.set()
    async with asyncio.timeout(WAIT):
        while link.connects == connects:
            await asyncio.sleep(0.01)
    done = await system.wait_for(
        lambda ms: [m for m in ms if m.sender == "Echo" and m.kind == "final"]
    )
    assert done[0].text == "first half, second half"
    await system.app.relay.outbox.wait_idle()
    assert len([m for m in system.chat.messages if m.sender == "Echo"]) == 1


async def test_identity_forwarding_as_seen_by_a_bot(start_system, tmp_path):
    for forwarding in (True, False):
        RecordingAdapter.chats.clear()
        system = await start_system(bots=False, binding={"identity_forwarding": forwarding})
        seen: list[IncomingMessage] = []
        spy = Bot(f"{system.app.bcn_url}/ws/bot", name="Echo", token_file=tmp_path / "spy.token")

        @spy.on_message
        async def record(msg: IncomingMessage, run: Run, seen=seen) -> str:
            seen.append(msg)
            return "noted"

        await spy.start(timeout=WAIT)
        system.bots = [spy]
        await system.wait_for_bots("Echo")
        await system.chat_adapter.say("room", "who am I?", name="Ada Lovelace", user_id="u-42")
        await system.wait_for(lambda ms: [m for m in ms if m.text == "noted"])
        channel = seen[0].channel
        if forwarding:
            assert channel.identity_forwarding is True
            assert channel.user_id == "u-42" and channel.actor_name == "Ada Lovelace"
        else:
            assert not channel.identity_forwarding
            assert channel.user_id and channel.user_id != "u-42"
            assert channel.actor_name != "Ada Lovelace"
        await spy.stop()
        system.bots = []
        await system.app.stop()


async def test_old_state_is_forgotten_after_the_retention(start_system):
    from datetime import timedelta

    system = await start_system()
    await system.chat_adapter.say("room", "remember me", message_id="old-1")
    await system.wait_for(lambda ms: [m for m in ms if m.kind == "final"])
    relay = system.app.relay
    assert await relay.forget_old() == 0  # nothing is a week old yet
    forgotten = await relay.forget_old(system.clock() + timedelta(days=8))
    assert forgotten >= 3  # the inbound id, the delivery id, the posted message
    # Forgotten ids are no longer duplicates (a platform would not redeliver after a week).
    assert await relay.ctx.store.seen.add("in:testchat:main|room|old-1", system.clock())
