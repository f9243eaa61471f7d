"""One run's deliveries, shuffled across two bridge instances, show exactly one reply.

Issue 32: order and exactly-once must be properties of the design, not of one process. Two
`Relay`s (two instances) share one store — one memory store, or two clients of one real
Redis — and one chat. The deliveries of a streamed run (its deltas and its final, each with
the hub's `seq` and `event_id`) reach them in any order, each to either instance, some of
them twice (a replay after a lost ack, to the other instance). Whatever hypothesis draws:
the chat shows exactly one message of the bot, it is the final, its text is the final's,
and no preview is left behind.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bridge.core.inbound import accepted_key
from bridge.core.relay import Relay
from bridge.store import Store
from tests.core.conftest import BINDING
from tests.e2e.recording_adapter import RecordingAdapter

pytestmark = pytest.mark.usefixtures("fresh_chats")

SHOWN_WAIT = 5.0
"""Generous bound for the chat to settle; nothing here asserts how long it took."""
_runs = itertools.count()

ONE_RUN = st.integers(min_value=0, max_value=4).flatmap(lambda deltas: st.tuples(
    st.just(deltas),
    st.permutations(range(deltas + 1)),  # the order the deliveries arrive in
    st.lists(st.booleans(), min_size=deltas + 1, max_size=deltas + 1),  # which instance
    st.lists(st.booleans(), min_size=deltas + 1, max_size=deltas + 1),  # replayed?
))


async def _started(relay: Relay) -> Relay:
    relay.link.bindings_by_id["b-room"] = BINDING
    relay.outbox.orphan_scan = 0.05  # an item queued by the other instance is found soon
    relay.outbox.linger = 0.05
    await relay.outbox.start()
    for adapter in relay.ctx.adapters.values():
        await adapter.start()
    return relay


async def _settled(store: Store, final: str) -> list[Any]:
    """The bot's messages once the final shows and nothing is queued any more."""
    async with asyncio.timeout(SHOWN_WAIT):
        while True:
            chat = RecordingAdapter.chats.get("main|room")
            shown = [m for m in chat.messages if m.sender == "Echo"] if chat else []
            if (any(m.kind == "final" and m.text == final for m in shown)
                    and not await store.outbox.pending()):
                return shown
            await asyncio.sleep(0.01)


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(run=ONE_RUN)
async def test_a_runs_deliveries_in_any_order_on_any_instance_show_one_reply(
    two_stores: tuple[Store, Store], instance: Callable[[Store, str], Relay],
    relays: list[Relay], run: tuple[int, list[int], list[bool], list[bool]],
) -> None:
    deltas, order, on_second, replayed = run
    if not relays:
        a = await _started(instance(two_stores[0], "bridge-a"))
        b = await _started(instance(two_stores[1], "bridge-b"))
    else:
        a, b = relays
    RecordingAdapter.chats.clear()
    run_id = f"run-{next(_runs)}"
    # The reply answers a person's message the bridge accepted (as Echo's replies do), so
    # the loop guard counts it as an answer, not as bots talking among themselves.
    source = f"m-{run_id}"
    await two_stores[0].seen.add(accepted_key(BINDING.channel, BINDING.chat, source),
                                 datetime.now(UTC))
    words = [f"w{n} " for n in range(deltas)]
    final = "".join(words) + "end"
    deliveries: list[dict[str, Any]] = [
        {"kind": "delta", "text": words[n], "seq": n + 1} for n in range(deltas)
    ] + [{"kind": "final", "text": final, "seq": deltas + 1}]
    for position in order:
        params = {**deliveries[position], "binding_id": "b-room", "run_id": run_id,
                  "event_id": f"{run_id}-evt-{position}", "sender": {"name": "Echo"},
                  "source_msg_id": source}
        first, other = (b, a) if on_second[position] else (a, b)
        await first.outbound.deliver(dict(params))
        if replayed[position]:
            await other.outbound.deliver(dict(params))
    shown = await _settled(two_stores[0], final)
    assert [(m.kind, m.text) for m in shown] == [("final", final)], shown
