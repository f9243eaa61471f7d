"""Pruning by age in bounded batches: the one way seen keys, message-map entries and
abandoned runs are forgotten.

Each of them has an age index (a zset scored by microseconds). The PRUNE script removes at
most one batch of members older than the cut-off, together with what they stand for, in one
atomic step; the loop awaits between batches, so neither the server nor the event loop is
held long however much is pruned, and a member refreshed meanwhile (scored again) stays.
"""

from __future__ import annotations

from datetime import datetime

from bridge.store.micros import to_micros
from bridge.store.redis.scripts import Scripts

PRUNE_BATCH = 500


async def prune_by_age(
    scripts: Scripts,
    index: str,
    before: datetime,
    *,
    fields_of: str | None = None,
    keys_under: str | None = None,
) -> int:
    """Forget members of `index` scored before `before`; also their fields in the hash
    `fields_of` or the keys `keys_under` + member. Returns how many members went."""
    keys = [index] if fields_of is None else [index, fields_of]
    args: list[str | int] = [to_micros(before), PRUNE_BATCH]
    if keys_under is not None:
        args.append(keys_under)
    removed = 0
    while True:
        batch = int(await scripts.prune(keys=keys, args=args))
        removed += batch
        if batch < PRUNE_BATCH:
            return removed
