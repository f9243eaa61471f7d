"""A delta that arrives after its run's final never edits the finished reply (issue 32).

Outputs of one run can reach the relay out of order: a delta refused once and retried, or
one replayed to another instance after the instance that posted the final died before
acking. Before, such a delta posted a preview again ("alpha") or edited the final back to
it. The deliveries here are the hub's own shape, handed to the real relay of a running
bridge (its store, outbox and chat).
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.e2e.e2e_support import texts

ORDERS = {
    "delta after final": [("delta", 1, "alpha "), ("final", 3, "alpha beta"),
                          ("delta", 2, "beta")],
    "every delta after final": [("final", 3, "alpha beta"), ("delta", 2, "beta"),
                                ("delta", 1, "alpha ")],
    "in order": [("delta", 1, "alpha "), ("delta", 2, "beta"), ("final", 3, "alpha beta")],
}


@pytest.mark.parametrize("order", sorted(ORDERS))
async def test_nothing_is_shown_or_edited_after_a_runs_final(start_system, order: str):
    system = await start_system(bots=False)
    relay = system.app.relay
    [binding_id] = [key for key, binding in relay.link.bindings_by_id.items()
                    if binding.chat == "room"]
    for n, (kind, seq, text) in enumerate(ORDERS[order]):
        params: dict[str, Any] = {
            "binding_id": binding_id, "kind": kind, "text": text, "run_id": "run-1",
            "seq": seq, "event_id": f"evt-{order}-{n}", "sender": {"name": "Echo"},
        }
        await relay.outbound.deliver(params)
    await relay.outbox.wait_idle()
    assert texts(system.chat.messages, "Echo") == ["alpha beta"]


async def test_edit_pacing_is_forgotten_when_each_run_ends(start_system):
    """Issue 32: the outbox kept one entry per streamed run for ever. The echo bot streams
    by default; once each reply is final, nothing of its run is left in the process."""
    system = await start_system()  # the example bots with their defaults: Echo streams
    relay = system.app.relay
    for n in range(5):
        await system.chat_adapter.say("room", f"alpha beta gamma {n}")
    # Each reply's final, not its last preview (which already shows the whole text).
    await system.wait_for(lambda ms: len([m for m in ms if m.sender == "Echo"
                                          and m.kind == "final"]) == 5)
    await relay.outbox.wait_idle()  # the last final's bookkeeping after its edit
    assert relay.outbox._last_edit == {}
