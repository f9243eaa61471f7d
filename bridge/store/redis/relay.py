"""The relay's concerns in Redis: seen keys, the outbox, the spool, the message map."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from redis.asyncio import Redis

from bridge.fastjson import dumps, loads
from bridge.store.leases import Lease
from bridge.store.micros import from_micros, to_micros
from bridge.store.redis.aging import prune_by_age
from bridge.store.redis.codec import (
    decode_queued_item,
    decode_spool_entry,
    encode_message_id,
    encode_queued_item,
    encode_spool_entry,
)
from bridge.store.redis.concern import RedisConcern
from bridge.store.redis.keys import Keys
from bridge.store.redis.leases import fenced_transaction, ttl_ms
from bridge.store.redis.queue import Queue
from bridge.store.redis.scripts import Scripts
from bridge.store.relay import (
    MessageMapStore,
    OutboxItem,
    OutboxStore,
    SeenStore,
    SpoolEntry,
    SpoolStore,
)


class RedisSeenStore(RedisConcern, SeenStore):
    """One zset: member = key, score = when it was first seen (µs); and one string per
    claimed key holding its claimant, expiring (PX) with the claim, so nothing prunes it."""

    __slots__ = ()

    async def add(self, key: str, now: datetime) -> bool:
        return bool(await self._redis.zadd(self._keys.seen, {key: to_micros(now)}, nx=True))

    async def claim(self, key: str, holder: str, now: datetime, ttl: float) -> bool:
        # One script, one round trip: "not seen" and SET NX checked and written together.
        claimed = await self._scripts.claim(
            keys=[self._keys.seen, self._keys.claim(key)], args=[key, holder, ttl_ms(ttl)]
        )
        return bool(claimed)

    async def release(self, key: str, holder: str) -> None:
        # The leases' compare-and-delete: the claim goes only if `holder` still has it.
        await self._scripts.release(keys=[self._keys.claim(key)], args=[holder])

    async def claimant(self, key: str) -> str | None:
        holder = await self._redis.get(self._keys.claim(key))
        if holder is None or await self.has(key):
            return None
        return holder.decode() if isinstance(holder, bytes) else str(holder)

    async def take_over(self, key: str, dead: str, holder: str, now: datetime,
                        ttl: float) -> bool:
        taken = await self._scripts.take_claim(
            keys=[self._keys.seen, self._keys.claim(key)], args=[key, dead, holder, ttl_ms(ttl)]
        )
        return bool(taken)

    async def has(self, key: str) -> bool:
        return await self._redis.zscore(self._keys.seen, key) is not None

    async def seen_at(self, keys: Sequence[str]) -> dict[str, datetime]:
        if not keys:
            return {}
        scores = await self._redis.zmscore(self._keys.seen, list(keys))
        return {key: from_micros(int(score))
                for key, score in zip(keys, scores, strict=True) if score is not None}

    async def prune(self, before: datetime) -> int:
        return await prune_by_age(self._scripts, self._keys.seen, before)


class RedisOutboxStore(RedisConcern, OutboxStore):
    __slots__ = ("queue",)

    def __init__(self, redis: Redis, scripts: Scripts, keys: Keys) -> None:
        super().__init__(redis, scripts, keys)
        self.queue = Queue(redis, scripts, keys.queue("outbox"), keys.seen)
        """Shared with the loop guard, which moves held items into it."""

    async def append(
        self, item: OutboxItem, *, once: str | None = None, now: datetime | None = None
    ) -> int | None:
        item_id = await self.queue.append(
            encode_queued_item(item), once=once, seen_at=now or item.created_at, group=item.lane
        )
        if item_id is not None:
            item.id = item_id
        return item_id

    async def pending(
        self, lane: str | None = None, limit: int | None = None
    ) -> list[OutboxItem]:
        return [
            decode_queued_item(elements, item_id)
            async for item_id, elements in self.queue.entries(limit, group=lane)
        ]

    async def lanes(self) -> list[str]:
        return await self.queue.groups()

    async def count(self) -> int:
        return await self.queue.count()

    async def record_part(
        self,
        item_id: int,
        index: int,
        message_id: str,
        *,
        remember: Mapping[str, dict[str, Any]] | None = None,
        now: datetime | None = None,
        done: bool = False,
        fence: Lease | None = None,
    ) -> None:
        if not isinstance(index, int) or index < 0:
            raise IndexError(f"outbox item {item_id} has no part {index!r}")
        at = to_micros(now or datetime.now(UTC))
        lane = None
        if done:
            head = await self._redis.lindex(self.queue.item_key(item_id), 0)
            lane = decode_queued_item([head], item_id).lane if head is not None else None
        async with fenced_transaction(self._redis, self._keys, fence) as pipe:
            await self._scripts.record_part(
                keys=[self.queue.item_key(item_id)],
                args=[index + 1, encode_message_id(message_id)], client=pipe,
            )
            for key, value in (remember or {}).items():
                pipe.hset(self._keys.message_map, key, dumps(value))
                pipe.zadd(self._keys.message_map_ages, {key: at})
            if done:
                await self.queue.remove(item_id, group=lane, client=pipe)
            replies = await pipe.execute()
        if replies[0] == -1:
            raise IndexError(f"outbox item {item_id} has no part {index}")

    async def complete(self, item_id: int, *, fence: Lease | None = None) -> None:
        head = await self._redis.lindex(self.queue.item_key(item_id), 0)
        lane = decode_queued_item([head], item_id).lane if head is not None else None
        async with fenced_transaction(self._redis, self._keys, fence) as pipe:
            await self.queue.remove(item_id, group=lane, client=pipe)
            await pipe.execute()


class RedisSpoolStore(SpoolStore):
    __slots__ = ("_queue",)

    def __init__(self, redis: Redis, scripts: Scripts, keys: Keys) -> None:
        self._queue = Queue(redis, scripts, keys.queue("spool"), keys.seen)

    async def append(self, entry: SpoolEntry, *, once: str, now: datetime) -> int | None:
        entry_id = await self._queue.append(encode_spool_entry(entry, now), once=once,
                                            seen_at=now)
        if entry_id is not None:
            entry.id = entry_id
        return entry_id

    async def pending(self, limit: int = 100) -> list[SpoolEntry]:
        return [
            decode_spool_entry(elements, entry_id)
            async for entry_id, elements in self._queue.entries(limit)
        ]

    async def complete(self, entry_id: int) -> None:
        await self._queue.remove(entry_id)

    async def count(self) -> int:
        return await self._queue.count()


class RedisMessageMapStore(RedisConcern, MessageMapStore):
    """A hash key -> JSON, and a zset key -> when it was last put (µs) for `prune`."""

    __slots__ = ()

    async def put(self, key: str, value: dict[str, Any], now: datetime) -> None:
        async with self._redis.pipeline(transaction=True) as pipe:
            pipe.hset(self._keys.message_map, key, dumps(value))
            pipe.zadd(self._keys.message_map_ages, {key: to_micros(now)})
            await pipe.execute()

    async def get(self, key: str) -> dict[str, Any] | None:
        found = await self._redis.hget(self._keys.message_map, key)
        return None if found is None else loads(found)

    async def prune(self, before: datetime) -> int:
        return await prune_by_age(
            self._scripts, self._keys.message_map_ages, before, fields_of=self._keys.message_map
        )
