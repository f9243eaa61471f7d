"""Bounded series (a session's transcript lines, a binding's accepted msg_ids) kept in one
append-only table each.

Keyed by series (`(session_id, seq)`), every message's row landed on its series' own page,
so a commit under fifty busy chats wrote fifty scattered pages for two rows each: the commit
was most of what a message cost the hub's database (bench/hub_overhead.py). Keyed by an id
the hub hands out in order, every insert lands on the table's last page, and a commit of any
number of messages writes a few pages.

The bound is the hub's to keep: it knows each series' rows (their ids, in memory), and the
rows a series evicts past its bound are deleted `TRIM_BATCH` at a time, by id — lazily: a
delete lost to a kill -9 leaves rows a start trims again (`trim_at_start`). So at most
`TRIM_BATCH` - 1 rows stay beyond the bounds, whatever the number of series.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable

from bridge.fastjson import dumps
from bridge.hub.batched_writes import BatchedWrites
from bridge.hub.storage import HubDatabase

TRIM_BATCH = 256


class AppendLog:
    def __init__(self, db: HubDatabase, table: str) -> None:
        self._db = db
        self._writes: BatchedWrites = db.writes
        self._delete = f"DELETE FROM {table} WHERE id IN (SELECT value FROM json_each(?))"
        last = db.rows(f"SELECT COALESCE(MAX(id), 0) FROM {table}")[0][0]
        self._ids = itertools.count(int(last) + 1)
        self._evicted: list[int] = []

    def next_id(self) -> int:
        return next(self._ids)

    def evict(self, ids: Iterable[int]) -> None:
        """Rows no longer kept: deleted with the next batch."""
        self._evicted.extend(ids)
        if len(self._evicted) >= TRIM_BATCH:
            self._writes.add(self._delete, (dumps(self._evicted),), lazy=True)
            self._evicted = []

    def trim_at_start(self, ids: list[int]) -> None:
        """Rows read back past their bounds (their deletes were lost, or not due yet):
        deleted now, before the hub serves."""
        if ids:
            self._db.write(self._delete, (dumps(ids),))
