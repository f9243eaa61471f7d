"""Streamed text per run in Redis: a hash seq -> delta per run, TTL'd, and an age zset.

`append` is one MULTI (HSETNX the delta, refresh the TTL and the run's age, read every
delta), so a replayed delta changes nothing and the text returned is consistent. A run whose
bot died mid-stream expires by itself; `prune` forgets runs older than a cut-off sooner.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime

from bridge.store.micros import to_micros
from bridge.store.redis.aging import prune_by_age
from bridge.store.redis.concern import RedisConcern
from bridge.store.redis.keys import RUN_TTL_MS
from bridge.store.streams import StreamStore

ENDED = "ended"
"""The field that marks a run's hash as ended (`take`): its deltas are gone, a late one
added after it is never shown."""
NEXT_SEQ = "next"
"""The counter that numbers the deltas of a run whose BCN gave them no `seq`."""


def _text(deltas: Mapping[str, str]) -> str:
    if ENDED in deltas:
        return ""
    return "".join(deltas[seq] for seq in sorted(
        (field for field in deltas if field != NEXT_SEQ), key=int))


class RedisStreamStore(RedisConcern, StreamStore):
    __slots__ = ()

    async def append(self, run_id: str, seq: int | None, text: str, now: datetime) -> str:
        key = self._keys.run(run_id)
        if seq is None:  # numbered by the store: one more round trip, only for such a BCN
            seq = int(await self._redis.hincrby(key, NEXT_SEQ, 1))
        async with self._redis.pipeline(transaction=True) as pipe:
            pipe.hsetnx(key, str(int(seq)), text)
            pipe.pexpire(key, RUN_TTL_MS)
            pipe.zadd(self._keys.run_ages, {run_id: to_micros(now)}, gt=True)
            pipe.hgetall(key)
            *_, deltas = await pipe.execute()
        return _text(deltas)

    async def take(self, run_id: str, now: datetime) -> str:
        key = self._keys.run(run_id)
        async with self._redis.pipeline(transaction=True) as pipe:
            pipe.hgetall(key)
            pipe.delete(key)
            pipe.hset(key, ENDED, "1")
            pipe.pexpire(key, RUN_TTL_MS)
            pipe.zadd(self._keys.run_ages, {run_id: to_micros(now)})
            deltas, *_ = await pipe.execute()
        return _text(deltas)

    async def prune(self, before: datetime) -> int:
        return await prune_by_age(
            self._scripts, self._keys.run_ages, before, keys_under=self._keys.run_prefix()
        )
