"""Two bridge instances handed the same inbound event: exactly one handles it.

Two `Relay`s (two instances, each with its own instance name) share one store: one memory
store, or two separate Redis store objects on one real Redis and one key prefix, as two
processes would have. Their links are never started, so each message ends where an instance
with the hub unreachable puts it (the spool) and a command's answer in the outbox: both are
in the store, where a doubled handling would show. A command is the sharp case, since it
acts before anything is handed to the hub, whose idempotency would hide a second run.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import UTC, datetime

import pytest

from bridge.core.model import Inbound, Sender
from bridge.core.relay import Relay
from bridge.store import Store
from tests.e2e.recording_adapter import RecordingAdapter
from tests.support.stores import redis_server

__all__ = ["redis_server"]

pytestmark = pytest.mark.usefixtures("fresh_chats")



async def answers(store: Store) -> int:
    """The bridge's answers to a command: posted already, or queued in the outbox."""
    posted = sum(len(chat.messages) for chat in RecordingAdapter.chats.values())
    return posted + len(await store.outbox.pending())


def message(text: str, message_id: str) -> Inbound:
    return Inbound(channel_type="testchat", account="main", chat_id="room",
                   message_id=message_id, sender=Sender("u-ada", "Ada", False), text=text,
                   timestamp=datetime(2026, 11, 29, 12, 0, tzinfo=UTC))


@pytest.mark.parametrize("text", ["/help", "hello bots"])
async def test_one_event_handed_to_two_instances_is_handled_once(
    two_stores: tuple[Store, Store], text: str, instance: Callable[[Store, str], Relay]
) -> None:
    a, b = instance(two_stores[0], "bridge-a"), instance(two_stores[1], "bridge-b")
    # The same event at both instances at once, several times over (a gateway replaying,
    # a webhook retried to the other instance while the first still works on it).
    msg = message(text, "m-1")
    await asyncio.gather(*(relay.inbound.handle(msg) for _ in range(3) for relay in (a, b)))

    store = two_stores[0]
    kept = await store.spool.pending()
    if text == "/help":
        assert (await answers(store), len(kept)) == (1, 0)  # the command ran once
    else:
        # One message for the hub, and one notice that it waits (one instance kept it).
        assert (await answers(store), len(kept)) == (1, 1)
    assert await store.seen.has("in:testchat:main|room|m-1")
    dropped = sum(relay.metrics.dropped.labels(msg.channel, "in", "duplicate")._value.get()
                  for relay in (a, b))
    assert dropped == 5  # the other five were told apart as repeats, not lost or run


async def test_a_failed_handling_frees_the_event_for_the_other_instance(
    two_stores: tuple[Store, Store], monkeypatch: pytest.MonkeyPatch,
    instance: Callable[[Store, str], Relay],
) -> None:
    a, b = instance(two_stores[0], "bridge-a"), instance(two_stores[1], "bridge-b")

    def broken(msg: Inbound) -> None:
        raise RuntimeError("this instance fails mid-handling")

    monkeypatch.setattr(a.inbound, "_binding", broken)  # the first stage after the claim
    msg = message("/help", "m-2")
    with pytest.raises(RuntimeError):
        await a.inbound.handle(msg)
    # Released, not left to expire: the redelivery, wherever it lands, is handled now.
    await b.inbound.handle(msg)
    assert await answers(two_stores[0]) == 1
    await a.inbound.handle(msg)  # and once handled, never again
    assert await answers(two_stores[0]) == 1
