"""Paused bindings in Redis: one hash, binding key -> JSON `{"by", "at"}` (µs).

HSETNX is the whole `pause` (the first pause wins, atomically across instances) and HDEL the
whole `resume`. An operator pauses a handful of bindings, so `all` reads the hash at once.
No TTL: a pause lasts until someone resumes it.
"""

from __future__ import annotations

from datetime import datetime

from bridge.fastjson import dumps, loads
from bridge.store.micros import from_micros, to_micros
from bridge.store.pauses import Paused, PauseStore, checked_at
from bridge.store.redis.concern import RedisConcern


class RedisPauseStore(RedisConcern, PauseStore):
    __slots__ = ()

    async def pause(self, key: str, by: str, at: datetime) -> bool:
        value = dumps({"by": by, "at": to_micros(checked_at(at))})
        return bool(await self._redis.hsetnx(self._keys.pauses, key, value))

    async def resume(self, key: str) -> bool:
        return bool(await self._redis.hdel(self._keys.pauses, key))

    async def all(self) -> dict[str, Paused]:
        found = await self._redis.hgetall(self._keys.pauses)
        return {
            key: Paused(data["by"], from_micros(data["at"]))
            for key, data in ((key, loads(text)) for key, text in sorted(found.items()))
        }
