"""A platform that posts in process (the webchat) gets a reply to a person during its delivery.

The test chat is told it posts in process (and, like the webchat, neither echoes the
bridge's posts nor lets people reply to one); the hub, bridge and bots are the real ones.
Each test names what must still go through the outbox: whatever keeps the lane's order, the
loop guard's count or a streamed preview.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from bridge.core.inbound import sent_key
from tests.e2e.e2e_support import texts
from tests.e2e.recording_adapter import RecordingAdapter
from tests.support.counted import CountedCalls

LANE = "testchat:main|room|"


@pytest.fixture(autouse=True)
def _posts_in_process(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(RecordingAdapter, "capabilities", replace(
        RecordingAdapter.capabilities, posts_in_process=True, replies=False,
        echoes_own_posts=False,
    ))


def finals(messages, sender="Echo"):  # type: ignore[no-untyped-def]
    return [m for m in messages if m.sender == sender and m.kind == "final"]


def queued(system: Any, kind: str = "final") -> float:
    """How many outputs of `kind` the outbox queued for the test chat."""
    value = system.app.relay.metrics.registry.get_sample_value(
        "bcn_bridge_outputs_queued_total", {"channel": "testchat:main", "kind": kind})
    return value or 0.0


def delivery(binding_id: str, n: int, **extra: object) -> dict[str, object]:
    return {"event_id": f"now-{n}", "binding_id": binding_id, "bcs_session_id": "demo:x",
            "run_id": f"r-now-{n}", "sender": {"bot_uuid": "b", "name": "Echo"},
            "kind": "final", "text": f"reply {n}", "seq": 1, **extra}


async def test_a_reply_to_a_person_is_posted_during_its_delivery(start_system):
    system = await start_system(stream=False)
    relay = system.app.relay
    await system.chat_adapter.say("room", "hello there", message_id="m-1")
    [reply] = await system.wait_for(finals)
    assert reply.text == "hello there"
    assert queued(system) == 0  # never written to the outbox and read back
    assert await relay.ctx.store.outbox.pending() == []
    # Nothing reads a record of the post on such a platform, so none is kept.
    assert await relay.ctx.store.message_map.get(sent_key("testchat:main", "room",
                                                          reply.ref.message_id)) is None
    # The hub's replay of that delivery (a link that dropped before the ack) is dropped.
    [binding_id] = relay.link.bindings_by_id
    again = delivery(binding_id, 1, source_msg_id="m-1")
    await relay.outbound.deliver(again)
    await relay.outbound.deliver(again)
    assert texts(finals(system.chat.messages)) == ["hello there", "reply 1"]
    assert queued(system) == 0


async def test_a_reply_waits_behind_what_its_lane_has_queued(start_system):
    """A post that failed went to the queue; the next reply must not overtake it."""
    system = await start_system(stream=False)
    relay = system.app.relay
    adapter = system.chat_adapter
    await adapter.say("room", "first", message_id="m-1")
    await adapter.say("room", "second", message_id="m-2")
    await system.wait_for(lambda ms: finals(ms)[1:])
    [binding_id] = relay.link.bindings_by_id
    adapter.down = True  # every post fails for now (a transient failure: retried)
    await relay.outbound.deliver(delivery(binding_id, 1, source_msg_id="m-1"))
    assert queued(system) == 1
    await relay.outbound.deliver(delivery(binding_id, 2, source_msg_id="m-2"))
    assert queued(system) == 2  # behind the first, not posted past it
    adapter.down = False
    await relay.outbox.wait_idle()
    assert texts(finals(system.chat.messages)) == ["first", "second", "reply 1", "reply 2"]


async def test_output_the_loop_guard_counts_goes_through_the_queue(start_system):
    system = await start_system(stream=False)
    relay = system.app.relay
    [binding_id] = relay.link.bindings_by_id
    await system.chat_adapter.say("room", "a person", message_id="m-1")
    await system.wait_for(finals)
    assert queued(system) == 0
    # A bot speaking up answers no person's message: the guard counts it.
    await relay.outbound.deliver(delivery(binding_id, 1))
    await relay.outbox.wait_idle()
    assert queued(system) == 1
    assert not await relay.ctx.store.loop_guard.quiet(LANE)
    # While the guard counts in the lane, a reply to a person is counted there too.
    await relay.outbound.deliver(delivery(binding_id, 2, source_msg_id="m-1"))
    await relay.outbox.wait_idle()
    assert queued(system) == 2
    assert texts(finals(system.chat.messages)) == ["a person", "reply 1", "reply 2"]


async def test_a_streamed_reply_replaces_its_preview_through_the_queue(start_system):
    system = await start_system(stream=True)
    await system.chat_adapter.say("room", "stream this reply please")
    [reply] = await system.wait_for(finals)
    assert reply.text == "stream this reply please" and reply.edits >= 1
    await system.app.relay.outbox.wait_idle()
    assert len([m for m in system.chat.messages if m.sender == "Echo"]) == 1
    assert queued(system) == 1 and queued(system, "delta") >= 1


async def test_a_platform_that_echoes_keeps_a_record_of_each_post(start_system, monkeypatch):
    """The record is what the own-echo filter (and a reply to a CLARIFY) looks up."""
    monkeypatch.setattr(RecordingAdapter, "capabilities", replace(
        RecordingAdapter.capabilities, echoes_own_posts=True))
    system = await start_system(stream=False)
    await system.chat_adapter.say("room", "remember me")
    [reply] = await system.wait_for(finals)
    record = await system.app.relay.ctx.store.message_map.get(
        sent_key("testchat:main", "room", reply.ref.message_id))
    assert record is not None and record["sender"] == "Echo"
    assert queued(system) == 0


async def test_only_a_reply_that_may_have_streamed_reads_the_stream_store(start_system):
    """The BCN numbers a run's outputs from 1, deltas included: a final numbered 1 streamed
    nothing, so nothing is read for it; one after deltas takes them, and so does one from
    a BCN that does not number its outputs."""
    system = await start_system(stream=False)
    relay = system.app.relay
    streams = relay.ctx.store.streams = CountedCalls(relay.ctx.store.streams, "take")
    await system.chat_adapter.say("room", "hello there", message_id="m-1")
    [reply] = await system.wait_for(finals)
    assert reply.text == "hello there"
    assert streams.calls["take"] == 0  # the hub's final of a run that did not stream: seq 1
    [binding_id] = relay.link.bindings_by_id
    run = {"binding_id": binding_id, "bcs_session_id": "demo:x", "run_id": "r-streamed",
           "sender": {"bot_uuid": "b", "name": "Echo"}}
    await relay.outbound.deliver({**run, "event_id": "s-1", "kind": "delta",
                                  "text": "words that streamed", "seq": 1})
    await relay.outbound.deliver({**run, "event_id": "s-2", "kind": "final", "text": "",
                                  "seq": 2})
    await relay.outbox.wait_idle()
    assert streams.calls["take"] == 1
    assert texts(finals(system.chat.messages))[-1] == "words that streamed"
    await relay.outbound.deliver({**run, "run_id": "r-unnumbered", "event_id": "u-1",
                                  "kind": "final", "text": "no seq here"})
    await relay.outbox.wait_idle()
    assert streams.calls["take"] == 2
    assert texts(finals(system.chat.messages))[-1] == "no seq here"
