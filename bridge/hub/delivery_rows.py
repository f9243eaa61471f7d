"""Un-acked `channel.deliver` requests in `hub.db`, so a restart replays them.

A delivery's row is written (batched) when it is made, and the outbox flushes before it
sends anything, so no link ever sees a delivery that a crash could forget. The row is
deleted once a link acks it (or it is dropped, with a log line), lazily: with the next
commit, within `LAZY_DELAY`. A crash between the ack and the deletion means one replay with
the same `event_id`, which the bridge drops as a repeat: at least once, never lost.

Ages are kept as wall-clock times (the outbox works in loop time, which restarts with the
process), so the 24 h bound holds across restarts.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import time
from dataclasses import dataclass

from bridge.fastjson import dumps, loads
from bridge.hub.batched_writes import BatchedWrites
from bridge.hub.storage import HubDatabase

log = logging.getLogger(__name__)


@dataclass(slots=True)
class StoredDelivery:
    event_id: str
    params: dict[str, object]
    age: float
    """Seconds since the delivery was made (wall clock)."""


class DeliveryRows:
    def __init__(self, db: HubDatabase) -> None:
        self._db = db
        self._writes: BatchedWrites = db.writes
        self._order: itertools.count[int] | None = None
        """Each new delivery's `ord`: after every kept one, so a restart replays in order
        (read on the first save: the rows that only load at start never need it)."""

    def saved(self, binding_id: str, event_id: str, params: dict[str, object],
              created: float) -> None:
        """A new delivery (`created` in loop time)."""
        wall = time.time() - (asyncio.get_running_loop().time() - created)
        self._writes.add(
            "INSERT OR IGNORE INTO deliveries (event_id, ord, binding_id, params, created_at)"
            " VALUES (?, ?, ?, ?, ?)",
            (event_id, next(self._next_order()), binding_id, dumps(params), wall),
            key=("delivery", event_id),
        )

    def _next_order(self) -> itertools.count[int]:
        if self._order is None:
            last = self._db.rows("SELECT COALESCE(MAX(ord), 0) FROM deliveries")[0][0]
            self._order = itertools.count(int(last) + 1)
        return self._order

    def removed(self, event_id: str) -> None:
        """Acked or dropped: not replayed after a restart. Lazy: a kill -9 that loses it
        costs one replay with the same `event_id`, which the bridge drops as a repeat."""
        self._writes.add("DELETE FROM deliveries WHERE event_id = ?", (event_id,), lazy=True,
                         supersedes=(("delivery", event_id),))

    async def flush(self) -> None:
        await self._writes.flush()

    def load(self) -> dict[str, list[StoredDelivery]]:
        """Every kept delivery, by binding, oldest first; unreadable rows are dropped, logged."""
        now = time.time()
        out: dict[str, list[StoredDelivery]] = {}
        for event_id, binding_id, params, created_at in self._db.rows(
            "SELECT event_id, binding_id, params, created_at FROM deliveries ORDER BY ord"
        ):
            try:
                decoded = loads(params)
                if not isinstance(decoded, dict):
                    raise ValueError("not an object")
            except ValueError as exc:
                log.error("binding %s: stored delivery %s is unreadable (%s); dropped",
                          binding_id, event_id, exc)
                self.removed(event_id)
                continue
            out.setdefault(binding_id, []).append(
                StoredDelivery(event_id, decoded, max(0.0, now - created_at)))
        return out
