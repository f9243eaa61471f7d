"""The sweep works in bounded batches and yields to the event loop between them.

Nothing here reads a clock: a task that records how many expiries were closed each time it
gets a turn on the loop shows how much work ran without a yield, and counting store calls
shows the work grows linearly with the number due.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from itertools import pairwise

import pytest
from tracking_messages import request

from bridge.store import ConversationChange, ConversationStore, Updated
from bridge.tracking import Tracker
from bridge.tracking.tracker import SWEEP_BATCH

T0 = datetime(2025, 3, 1, 12, 0, tzinfo=UTC)
LATER = T0 + timedelta(hours=1)


@dataclass
class Counting:
    """A conversation store that counts what the sweep asks of it."""

    inner: ConversationStore
    updates: int = 0
    due_limits: list[int | None] = field(default_factory=list)
    due_returned: int = 0
    ghosts: list[str] = field(default_factory=list)

    async def due(self, now: datetime, limit: int | None = None) -> list[str]:
        self.due_limits.append(limit)
        found = self.ghosts + await self.inner.due(now, limit)
        found = found if limit is None else found[:limit]
        self.due_returned += len(found)
        return found

    async def update(self, request_id: str, change: ConversationChange) -> Updated:
        self.updates += 1
        return await self.inner.update(request_id, change)

    def __getattr__(self, name: str) -> object:
        return getattr(self.inner, name)


@dataclass
class CountingStore:
    conversations: Counting


async def _counted_tracker(
    tracker: Tracker, due: int, prefix: str = "r"
) -> tuple[Tracker, Counting]:
    for i in range(due):
        await tracker.track(request(f"{prefix}-{i}"), now=T0)
    await tracker.track(request("not-yet"), now=LATER)  # still waiting at the sweep
    counting = Counting(tracker._conversations)  # type: ignore[arg-type]
    return Tracker(CountingStore(counting)), counting  # type: ignore[arg-type]


async def _sweep_watched(tracker: Tracker, counting: Counting) -> tuple[int, list[int]]:
    """Sweep while another task notes the number of updates done at each of its turns."""
    turns: list[int] = []
    sweeping = asyncio.create_task(tracker.sweep(now=T0 + timedelta(minutes=30)))
    while not sweeping.done():
        turns.append(counting.updates)
        await asyncio.sleep(0)
    turns.append(counting.updates)
    return len(await sweeping), turns


@pytest.mark.parametrize("due", [3 * SWEEP_BATCH + 7, 30 * SWEEP_BATCH + 7])
async def test_the_sweep_yields_to_the_loop_at_least_every_batch(
    tracker: Tracker, due: int
) -> None:
    counted, counting = await _counted_tracker(tracker, due)
    closed, turns = await _sweep_watched(counted, counting)
    assert closed == due
    steps = [after - before for before, after in pairwise(turns)]
    assert max(steps) <= SWEEP_BATCH  # never more than one batch between two turns
    assert len(turns) >= due // SWEEP_BATCH  # and the other task got a turn for each batch
    assert all(limit is not None and limit <= 2 * SWEEP_BATCH for limit in counting.due_limits)
    assert (await tracker.get("not-yet")).status == "open"  # type: ignore[union-attr]


async def test_the_sweeps_work_grows_linearly_with_the_number_due(tracker: Tracker) -> None:
    work = []
    for due in (5 * SWEEP_BATCH, 50 * SWEEP_BATCH):
        counted, counting = await _counted_tracker(tracker, due, prefix=f"size{due}")
        assert len(await counted.sweep(now=T0 + timedelta(minutes=30))) == due
        work.append(counting.updates + counting.due_returned + len(counting.due_limits))
    assert work[1] <= 12 * work[0]  # 10x the expiries: at most 12x the store work


async def test_a_due_id_that_never_closes_is_tried_once_and_the_sweep_ends(
    tracker: Tracker,
) -> None:
    counted, counting = await _counted_tracker(tracker, 2 * SWEEP_BATCH)
    counting.ghosts = [f"ghost-{i}" for i in range(SWEEP_BATCH + 1)]  # stale index entries
    closed = await counted.sweep(now=T0 + timedelta(minutes=30))
    assert len(closed) == 2 * SWEEP_BATCH
    assert counting.updates == 2 * SWEEP_BATCH + len(counting.ghosts)


async def test_sweep_batches_hands_out_what_it_closed_batch_by_batch(tracker: Tracker) -> None:
    for i in range(25):
        await tracker.track(request(f"r-{i}"), now=T0 + timedelta(seconds=i))
    batches = [
        [conversation.request_id for conversation in batch]
        async for batch in tracker.sweep_batches(now=T0 + timedelta(hours=1), batch_size=10)
    ]
    expected = [[f"r-{i}" for i in range(start, min(start + 10, 25))] for start in (0, 10, 20)]
    assert batches == expected
    with pytest.raises(ValueError, match="batch_size"):
        await anext(tracker.sweep_batches(batch_size=0))


async def test_a_batchs_expiries_are_committed_together_in_sqlite(tmp_path) -> None:
    """One commit per batch, not one per expiry: each commit writes the pages it touched to
    the WAL, and one per expiry grew it to the loop's own checkpoint within a sweep."""
    from bridge.store import open_store

    async with open_store(f"sqlite:///{tmp_path}/state.db") as store:
        tracker = Tracker(store)
        for i in range(3 * SWEEP_BATCH):
            await tracker.track(request(f"r-{i}"), now=T0)
        statements: list[str] = []
        store.conversations._db.set_trace_callback(statements.append)  # type: ignore[attr-defined]
        closed = await tracker.sweep(now=T0 + timedelta(hours=1))
        store.conversations._db.set_trace_callback(None)  # type: ignore[attr-defined]
    assert len(closed) == 3 * SWEEP_BATCH
    assert statements.count("COMMIT") == 3  # three batches


async def test_a_failed_close_ends_the_sweep_after_its_batch_is_handed_out(
    tracker: Tracker,
) -> None:
    """The batch's other closes happened in the store: the caller still hears of them (the
    relay posts their notices), then the error ends the sweep as it did before."""
    counted, counting = await _counted_tracker(tracker, SWEEP_BATCH + 5)
    update = counting.update
    asked: list[str] = []

    async def failing(request_id: str, change: ConversationChange) -> Updated:
        asked.append(request_id)
        if request_id == asked[0]:  # the first of the first batch, whichever the store has
            raise RuntimeError("the store went away for this one")
        return await update(request_id, change)

    counting.update = failing  # type: ignore[method-assign]
    handed: list[str] = []
    with pytest.raises(RuntimeError, match="went away"):
        async for batch in counted.sweep_batches(now=T0 + timedelta(minutes=30)):
            handed.extend(conversation.request_id for conversation in batch)
    assert asked[0] not in handed and len(handed) == SWEEP_BATCH - 1
    assert (await tracker.get(asked[0])).status == "open"  # type: ignore[union-attr]
    for request_id in handed:
        assert (await tracker.get(request_id)).status == "timeout"  # type: ignore[union-attr]
