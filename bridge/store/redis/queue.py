"""A durable queue in id order (the outbox and the spool share it).

Each entry is a list key `<name>:item:<id>` (its JSON first; the outbox adds one element per
part, so recording a sent part is one LSET) and its id in the `<name>:queue` zset. Ids come
from INCR inside the ENQUEUE script, which also claims the `once` key in `seen`: an id is
assigned when the entry becomes visible, so ids increase in the order entries were queued
whichever instance queued them, and a replayed delivery is queued exactly once.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from datetime import datetime

from redis.asyncio import Redis
from redis.asyncio.client import Pipeline

from bridge.store.micros import to_micros
from bridge.store.redis.keys import QueueKeys
from bridge.store.redis.scripts import Scripts

# Ids read per ZRANGE, and entries fetched per pipeline, when listing.
PAGE = 200


class Queue:
    __slots__ = ("_keys", "_redis", "_scripts", "_seen")

    def __init__(self, redis: Redis, scripts: Scripts, keys: QueueKeys, seen: str) -> None:
        self._redis = redis
        self._scripts = scripts
        self._keys = keys
        self._seen = seen

    async def append(
        self,
        elements: Sequence[str],
        *,
        once: str | None,
        seen_at: datetime | None,
        group: str | None = None,
        client: Redis | Pipeline | None = None,
    ) -> int | None:
        """Queue an entry (of `group`, e.g. its outbox lane), claiming `once` in `seen` in the
        same step; None if it was seen.

        With `client` a pipeline in MULTI, the step is queued in that transaction (and the
        id is among its replies, not returned here).
        """
        keys = self._keys
        reply = await self._scripts.enqueue(
            keys=[self._seen, keys.next_id, keys.order, keys.group(group or ""), keys.groups],
            args=[
                once or "", to_micros(seen_at) if seen_at is not None else 0,
                keys.item_prefix, group or "", *elements,
            ],
            client=client,
        )  # fmt: skip
        if client is not None:
            return None
        return None if reply is None else int(reply)

    async def entries(
        self, limit: int | None = None, group: str | None = None
    ) -> AsyncIterator[tuple[int, list[str]]]:
        """(id, list elements) of queued entries (of one group), lowest id first, a page at
        a time."""
        order = self._keys.order if group is None else self._keys.group(group)
        after = "-inf"
        given = 0
        while limit is None or given < limit:
            page = PAGE if limit is None else min(PAGE, limit - given)
            ids = await self._redis.zrange(order, after, "+inf", byscore=True, offset=0, num=page)
            if not ids:
                return
            async with self._redis.pipeline(transaction=False) as pipe:
                for item_id in ids:
                    pipe.lrange(self._keys.item(int(item_id)), 0, -1)
                found = await pipe.execute()
            for item_id, elements in zip(ids, found, strict=True):
                if elements:  # an empty list: completed since the ids were read
                    given += 1
                    yield int(item_id), elements
            if len(ids) < page:
                return
            after = f"({ids[-1]}"

    def item_key(self, item_id: int) -> str:
        return self._keys.item(item_id)

    def group_key(self, group: str) -> str:
        """The sorted set of one group's queued ids (empty or absent: nothing queued)."""
        return self._keys.group(group)

    async def remove(
        self, item_id: int, group: str | None = None, client: Redis | Pipeline | None = None
    ) -> None:
        keys = self._keys
        await self._scripts.dequeue(
            keys=[keys.item(item_id), keys.order, keys.group(group or ""), keys.groups],
            args=[item_id, group or ""], client=client,
        )

    async def groups(self) -> list[str]:
        """The groups that have queued entries."""
        return sorted(await self._redis.smembers(self._keys.groups))

    async def count(self) -> int:
        return int(await self._redis.zcard(self._keys.order))
