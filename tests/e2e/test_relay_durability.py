"""Nothing lost, nothing doubled: platform outages, bridge restarts and a dropped hub link."""

from __future__ import annotations

import asyncio

from bridge.bcn.bot import Bot, IncomingMessage, Run
from tests.e2e.e2e_support import WAIT, System, make_config, texts
from tests.e2e.recording_adapter import RecordingAdapter
from tests.support.bridge_process import free_port
from tests.support.running_bridge import BridgeStarter


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
    guard_store = relay.ctx.store.loop_guard  # a bot's final is queued through it
    real_post = guard_store.post
    failures = []

    async def post_failing_once(lane, item, **kwargs):
        if not failures:
            failures.append(item)
            raise OSError("disk full")
        return await real_post(lane, item, **kwargs)

    guard_store.post = post_failing_once
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


async def hub_down(system) -> None:
    await system.app.hub.stop()
    async with asyncio.timeout(WAIT):
        while system.app.relay.link.connected:
            await asyncio.sleep(0.01)


async def test_messages_sent_while_the_bcn_is_down_are_kept_and_delivered_in_order(
    start_system,
):
    system = await start_system(stream=False, hub={"listen": f"127.0.0.1:{free_port()}"})
    await hub_down(system)
    for n in range(3):
        await system.chat_adapter.say("room", f"while away {n}")
    notices = await system.wait_for(lambda ms: [m for m in ms if "unreachable" in m.text])
    assert await system.app.relay.ctx.store.spool.count() == 3

    await system.app.hub.start()
    await system.wait_for(lambda ms: len(texts(ms, "Echo")) == 3)
    assert texts(system.chat.messages, "Echo") == [f"while away {n}" for n in range(3)]
    assert len(notices) == 1  # told once per outage, not once per message
    assert await system.app.relay.ctx.store.spool.count() == 0


async def test_kept_messages_survive_a_bridge_restart(tmp_path):
    config = make_config(tmp_path, hub={"listen": f"127.0.0.1:{free_port()}"})
    starter = BridgeStarter(tmp_path)
    try:
        first = await starter.start(config, bots=False, wrap=System)
        await hub_down(first)
        await first.chat_adapter.say("room", "kept across a restart")
        await first.wait_for(lambda ms: [m for m in ms if "unreachable" in m.text])
        await first.stop()
        starter.started.remove(first)

        second = await starter.start(config, stream=False, wrap=System)
        await second.wait_for(lambda ms: texts(ms, "Echo") == ["kept across a restart"])
    finally:
        await starter.close()


async def test_past_the_spool_limit_a_message_is_refused_with_a_notice(tmp_path):
    config = make_config(tmp_path, hub={"listen": f"127.0.0.1:{free_port()}"})
    config = config.model_copy(update={"bcn": config.bcn.model_copy(update={"spool_limit": 2})})
    starter = BridgeStarter(tmp_path)
    try:
        system = await starter.start(config, stream=False, wrap=System)
        await hub_down(system)
        for n in range(3):
            await system.chat_adapter.say("room", f"message {n}")
        [refusal] = await system.wait_for(
            lambda ms: [m for m in ms if "was not kept" in m.text]
        )
        assert "2 messages are already waiting" in refusal.text
        await system.app.hub.start()
        await system.wait_for(lambda ms: len(texts(ms, "Echo")) == 2)
        await system.app.relay.outbox.wait_idle()
        assert texts(system.chat.messages, "Echo") == ["message 0", "message 1"]
    finally:
        await starter.close()
