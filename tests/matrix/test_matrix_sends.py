"""A bot's reply part is posted once, even when the first send landed unrecorded: the
adapter sends a run's part under a txnId derived from (run, part), and the real Synapse
answers the repeat with the first event (adapters/matrix/send_journal.py). The repeat is
what the next instance does after a kill -9 between Synapse applying a send and the outbox
recording it; here the same adapter sends twice, which is the same call with the same store.
"""

from __future__ import annotations

from matrix_support import BRIDGE_USER, bot_messages, edits_of, messages
from test_matrix_e2e import ECHO
from test_matrix_transactions import matrix_adapter

from bridge.core.model import Outbound, OutboundKind


def reply(system, text: str, *, run_id: str | None = "run-once", part: int = 1,
          kind: OutboundKind = OutboundKind.FINAL, label: str = "Echo") -> Outbound:
    relay = system.app.relay
    binding = relay.ctx.bindings.find("matrix:main", system.room_id, None)
    assert binding is not None
    return Outbound(binding=binding, conversation="", sender_label=label, text=text,
                    kind=kind, run_id=run_id, part=part)


async def test_a_part_sent_again_is_one_event_showing_the_newest_text(start_system, ada):
    room = await ada.create_room(invite=[BRIDGE_USER])
    system = await start_system(room, bots=False)
    adapter = matrix_adapter(system)
    first = await adapter.send(reply(system, "a preview", kind=OutboundKind.DELTA))
    # The first send landed, its record did not: the stream moved on, the part goes again.
    again = await adapter.send(reply(system, "a preview that grew", kind=OutboundKind.DELTA))
    same = await adapter.send(reply(system, "a preview that grew", kind=OutboundKind.DELTA))
    assert again.message_id == first.message_id == same.message_id
    events = await ada.events(room)
    assert [text for _, text in bot_messages(events, ECHO)] == ["a preview that grew"]
    # One edit brought the newer text; the repeat with the same text needed none.
    assert len(edits_of(events, first.message_id)) == 1


async def test_other_parts_runs_and_notices_are_posts_of_their_own(start_system, ada):
    room = await ada.create_room(invite=[BRIDGE_USER])
    system = await start_system(room, bots=False)
    adapter = matrix_adapter(system)
    one = await adapter.send(reply(system, "part one", run_id="run-a", part=1))
    two = await adapter.send(reply(system, "part two", run_id="run-a", part=2))
    other = await adapter.send(reply(system, "part one", run_id="run-b", part=1))
    notices = [await adapter.send(reply(system, "a notice", run_id=None, label="",
                                        kind=OutboundKind.SYSTEM)) for _ in range(2)]
    assert len({one.message_id, two.message_id, other.message_id,
                *(n.message_id for n in notices)}) == 5
    events = await ada.events(room)
    assert [text for _, text in bot_messages(events, ECHO)] == ["part one", "part two",
                                                                "part one"]
    assert [m["content"]["body"] for m in messages(events)
            if m["sender"] == BRIDGE_USER] == ["a notice", "a notice"]
