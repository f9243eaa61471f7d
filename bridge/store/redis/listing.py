"""Walking index zsets newest first from a cursor, in bounded steps: what `page` reads.

Each step asks every key of the union (one status zset per wanted status, or one zset) for
its next `size` members older than the place reached, `ZRANGE key <score> -inf BYSCORE REV
LIMIT`, and yields the newest `size` of them all: a member among those is among its own
key's newest `size`, so nothing is skipped, and the next step starts below the last one
yielded, so nothing repeats. A step's cost is `size` members per key, never the size of the
set. Members created in the cursor's very microsecond are told apart by request id; those at
or before the cursor's are read and dropped (a few, unless thousands share one microsecond).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence

from redis.asyncio import Redis

from bridge.store.paging import Place


async def newest_first(
    redis: Redis, keys: Sequence[str], after: Place | None, size: int, most: int
) -> AsyncIterator[list[Place]]:
    """The members of the union of `keys` older than `after`, newest first, in steps of
    `size` (doubling up to `most` while the caller keeps asking)."""
    while True:
        merged: list[Place] = []
        ended = True
        for key in keys:
            found, exhausted = await _older(redis, key, after, size)
            merged += found
            ended = ended and exhausted
        merged.sort(reverse=True)
        step = merged[:size]
        if not step:
            return
        yield step
        if ended and len(merged) <= size:
            return
        after, size = step[-1], min(most, size * 2)


async def _older(
    redis: Redis, key: str, after: Place | None, count: int
) -> tuple[list[Place], bool]:
    """Up to `count` members of `key` older than `after`, newest first, and whether the key
    has no more of them."""
    top = "+inf" if after is None else after[0]
    found: list[Place] = []
    offset = 0
    while True:
        batch = await redis.zrange(
            key, top, "-inf", desc=True, byscore=True, offset=offset, num=count, withscores=True
        )
        offset += len(batch)
        found += [
            (int(score), member)
            for member, score in batch
            if after is None or (int(score), member) < after
        ]
        if len(found) >= count:
            return found[:count], False
        if len(batch) < count:
            return found, True
