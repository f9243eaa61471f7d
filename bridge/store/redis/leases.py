"""Leases in Redis: a key that expires with the lease, and a counter for fencing tokens.

The lease key holds `token:holder` and is set with PX, so Redis's own clock ends a lease whose
holder died; no instance's clock matters. Every new grant takes the next INCR of the lease's
counter, which never expires, so a token is never handed out twice. Acquire, renew and release
are scripts: each checks who holds the lease and writes in one step.

A write fenced by a grant WATCHes the counter (`watch_fence`): it is refused when the counter
is past the grant's token, and its MULTI fails if a new grant comes in between.
"""

from __future__ import annotations

import math
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from redis.asyncio import Redis
from redis.asyncio.client import Pipeline
from redis.exceptions import WatchError

from bridge.store.leases import Lease, LeaseStore, StaleLease
from bridge.store.redis.concern import RedisConcern
from bridge.store.redis.keys import Keys


def ttl_ms(ttl: float) -> int:
    if not isinstance(ttl, int | float) or not math.isfinite(ttl) or ttl <= 0:
        raise ValueError(f"a lease TTL must be a positive number of seconds, got {ttl!r}")
    return max(1, math.ceil(ttl * 1000))


def _granted(lease: Lease) -> str:
    return f"{lease.token}:{lease.holder}"


class RedisLeaseStore(RedisConcern, LeaseStore):
    __slots__ = ()

    async def acquire(self, name: str, holder: str, ttl: float) -> Lease | None:
        token = await self._scripts.acquire(
            keys=[self._keys.lease(name), self._keys.lease_token(name)], args=[holder, ttl_ms(ttl)]
        )
        return None if token is None else Lease(name, holder, int(token))

    async def take_over(
        self, name: str, dead_holder: str, holder: str, ttl: float
    ) -> Lease | None:
        token = await self._scripts.take_over(
            keys=[self._keys.lease(name), self._keys.lease_token(name)],
            args=[dead_holder, holder, ttl_ms(ttl)],
        )
        return None if token is None else Lease(name, holder, int(token))

    async def renew(self, lease: Lease, ttl: float) -> bool:
        renewed = await self._scripts.renew(
            keys=[self._keys.lease(lease.name)], args=[_granted(lease), ttl_ms(ttl)]
        )
        return bool(renewed)

    async def release(self, lease: Lease) -> None:
        await self._scripts.release(keys=[self._keys.lease(lease.name)], args=[_granted(lease)])

    async def holder(self, name: str) -> str | None:
        current = await self._redis.get(self._keys.lease(name))
        return None if current is None else current.partition(":")[2]


@asynccontextmanager
async def fenced_transaction(
    redis: Redis, keys: Keys, fence: Lease | None
) -> AsyncIterator[Pipeline]:
    """A MULTI pipeline whose EXEC happens only while `fence` is the lease's newest grant:
    `StaleLease` (nothing written) if a newer one exists, before or during the write. The
    body queues its commands and calls `execute()` inside the block."""
    async with redis.pipeline(transaction=True) as pipe:
        if fence is None:
            yield pipe
            return
        counter = keys.lease_token(fence.name)
        await pipe.watch(counter)
        newest = int(await pipe.get(counter) or 0)
        if newest > fence.token:
            raise StaleLease(fence, newest)
        pipe.multi()
        try:
            yield pipe
        except WatchError:
            raise StaleLease(fence, int(await redis.get(counter) or 0)) from None
