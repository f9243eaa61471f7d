"""Concurrent track calls must not lose updates (each is one atomic store update)."""

import asyncio
from datetime import UTC, datetime, timedelta

from tracking_messages import handoff, request

from bridge.tracking import Tracker

T0 = datetime(2025, 3, 1, 12, 0, tzinfo=UTC)
CALLS = 1000


async def test_concurrent_tracks_on_one_request_id_keep_every_entry(tracker: Tracker) -> None:
    messages = [request(), *(handoff(to=f"Bot{i}") for i in range(1, CALLS))]
    results = await asyncio.gather(
        *(tracker.track(m, now=T0 + timedelta(seconds=i)) for i, m in enumerate(messages))
    )
    assert all(result.request_id == "lotbot-abc123" for result in results)
    stored = await tracker.get("lotbot-abc123")
    assert stored is not None
    assert len(stored.history) == CALLS
    assert {entry.to for entry in stored.history} == {"Weather"} | {
        f"Bot{i}" for i in range(1, CALLS)
    }
    assert stored.to == f"Bot{CALLS - 1}"  # gather starts them in order; the last one wins


async def test_concurrent_tracks_on_different_ids_keep_every_conversation(
    tracker: Tracker,
) -> None:
    await asyncio.gather(*(tracker.track(request(f"r-{i}"), now=T0) for i in range(CALLS)))
    # The same messages again, concurrently: all repeats, nothing changes.
    await asyncio.gather(*(tracker.track(request(f"r-{i}"), now=T0) for i in range(CALLS)))
    conversations = await tracker.list(status="open")
    assert len(conversations) == CALLS
    assert all(len(conversation.history) == 1 for conversation in conversations)
    assert len(await tracker.sweep(now=T0 + timedelta(minutes=30))) == CALLS
