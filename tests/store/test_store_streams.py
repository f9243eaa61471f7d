"""Streamed text per run: one contract for every backend."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from bridge.store import Store

T0 = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)


async def test_deltas_make_the_text_in_seq_order_and_replays_change_nothing(store: Store) -> None:
    assert await store.streams.append("r1", 1, "Hel", T0) == "Hel"
    assert await store.streams.append("r1", 3, "!", T0) == "Hel!"
    assert await store.streams.append("r1", 2, "lo", T0) == "Hello!"
    assert await store.streams.append("r1", 2, "lo", T0) == "Hello!"  # replayed
    assert await store.streams.append("r2", 1, "other run", T0) == "other run"
    assert await store.streams.take("r1") == "Hello!"
    assert await store.streams.take("r1") == ""


async def test_runs_that_never_ended_are_pruned(store: Store) -> None:
    await store.streams.append("old", 1, "abandoned", T0)
    await store.streams.append("new", 1, "going on", T0 + timedelta(hours=2))
    assert await store.streams.prune(T0 + timedelta(hours=1)) >= 1
    assert await store.streams.take("old") == ""
    assert await store.streams.take("new") == "going on"
