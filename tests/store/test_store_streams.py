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
    assert await store.streams.take("r1", T0) == "Hello!"
    assert await store.streams.take("r1", T0) == ""


async def test_runs_that_never_ended_are_pruned(store: Store) -> None:
    await store.streams.append("old", 1, "abandoned", T0)
    await store.streams.append("new", 1, "going on", T0 + timedelta(hours=2))
    assert await store.streams.prune(T0 + timedelta(hours=1)) >= 1
    assert await store.streams.take("old", T0) == ""
    assert await store.streams.take("new", T0) == "going on"


async def test_a_late_delta_of_an_ended_run_shows_nothing(store: Store) -> None:
    """Issue 32: a delta that arrives after its run's final (retried, or replayed to
    another instance) must never bring a preview back."""
    assert await store.streams.append("r1", 1, "alpha ", T0) == "alpha "
    assert await store.streams.take("r1", T0) == "alpha "
    assert await store.streams.append("r1", 2, "beta", T0) == ""
    assert await store.streams.take("r1", T0) == ""
    # A run whose final came before any of its deltas is ended all the same.
    assert await store.streams.take("r2", T0) == ""
    assert await store.streams.append("r2", 1, "late", T0) == ""
    # The marks go with the runs they end.
    await store.streams.prune(T0 + timedelta(hours=1))
    assert await store.streams.append("r1", 3, "again", T0 + timedelta(hours=2)) == "again"


async def test_deltas_without_a_seq_are_numbered_by_the_store_in_arrival_order(
    store: Store,
) -> None:
    """Issue 32: a BCN that gives no seq had its deltas ordered by one instance's
    `time.monotonic_ns()`, which another host's cannot be compared with."""
    assert await store.streams.append("r1", None, "alpha ", T0) == "alpha "
    assert await store.streams.append("r1", None, "beta ", T0) == "alpha beta "
    assert await store.streams.append("r1", None, "gamma", T0) == "alpha beta gamma"
    assert await store.streams.take("r1", T0) == "alpha beta gamma"
    assert await store.streams.append("r1", None, "late", T0) == ""
