"""The loop guard in Redis: per-lane state in a hash, held outputs in a list, both TTL'd.

`bot_spoke` applies the one rule, `guard_turn`, under WATCH/MULTI (retried when another
instance counted a message in the same lane meanwhile). `hold` is the HOLD script: the `once`
claim, the keep-or-count decision and the write are one step. `human_spoke` WATCHes both keys,
reads what was held, and in one MULTI deletes the lane's state and queues each held item in
the outbox through the same ENQUEUE script `append` uses, so ids keep increasing in queue
order; a hold that lands in between makes EXEC fail and the release is decided again.

The lanes paused right now are also members of one set (`Keys.paused_lanes`), added in the
MULTI that pauses a lane and removed in the one that releases it, so `held_lanes` reads a
few lanes instead of scanning every guard key. A paused lane nobody spoke in for the guard's
TTL expires by itself and leaves a stale member; `held_lanes` drops it (FORGET_UNPAUSED).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from redis.asyncio import Redis
from redis.asyncio.client import Pipeline

from bridge.store.loop_guard import (
    HeldLane,
    LaneGuard,
    LoopGuardStore,
    Posted,
    Released,
    Verdict,
    guard_turn,
)
from bridge.store.micros import to_micros
from bridge.store.redis.codec import (
    decode_guard,
    decode_item,
    encode_guard,
    encode_item,
    encode_queued_item,
)
from bridge.store.redis.concern import RedisConcern
from bridge.store.redis.keys import GUARD_SLACK_MS, HELD_TTL_MS, Keys
from bridge.store.redis.optimistic import Plan, Turns, optimistic
from bridge.store.redis.queue import Queue
from bridge.store.redis.scripts import Scripts
from bridge.store.relay import OutboxItem


def state_ttl_ms(state: LaneGuard, window: float) -> int:
    """A paused lane waits for a human for days; an unpaused one only remembers the window."""
    return HELD_TTL_MS if state.paused else int(window * 1000) + GUARD_SLACK_MS


class RedisLoopGuardStore(RedisConcern, LoopGuardStore):
    __slots__ = ("_outbox", "_turns")

    def __init__(self, redis: Redis, scripts: Scripts, keys: Keys, outbox: Queue) -> None:
        super().__init__(redis, scripts, keys)
        self._outbox = outbox
        self._turns = Turns()  # per lane: bot_spoke and human_spoke both go by the state key

    async def bot_spoke(
        self, lane: str, *, limit: int, window: float, now: datetime
    ) -> Verdict:
        key = self._keys.guard(lane)

        async def attempt(pipe: Pipeline) -> Plan[Verdict]:
            state = decode_guard(await pipe.hgetall(key))
            verdict = guard_turn(state, limit=limit, window=window, now=now.timestamp())

            async def write(pipe: Pipeline) -> None:
                pipe.hset(key, mapping=encode_guard(state))
                pipe.pexpire(key, state_ttl_ms(state, window))
                if state.paused:
                    pipe.sadd(self._keys.paused_lanes, lane)

            return Plan(write, lambda _: verdict)

        return await optimistic(self._redis, [key], attempt, self._turns)

    async def is_paused(self, lane: str) -> bool:
        return await self._redis.hget(self._keys.guard(lane), "paused") == "1"

    async def quiet(self, lane: str) -> bool:
        async with self._redis.pipeline(transaction=False) as pipe:  # one round trip
            pipe.exists(self._keys.guard(lane))
            pipe.zcard(self._outbox.group_key(lane))
            guarded, queued = await pipe.execute()
        return not guarded and not queued

    async def hold(
        self, lane: str, item: OutboxItem, *, keep: int, once: str | None, now: datetime
    ) -> bool:
        held = await self._scripts.hold(
            keys=[self._keys.seen, self._keys.guard(lane), self._keys.held(lane)],
            args=[once or "", to_micros(now), keep, encode_item(item), HELD_TTL_MS],
        )
        return bool(held)

    async def post(
        self,
        lane: str,
        item: OutboxItem,
        *,
        limit: int,
        window: float,
        keep: int,
        once: str | None,
        now: datetime,
        answers_human: bool = False,
    ) -> tuple[Posted, int | None]:
        if once is not None and await self._redis.zscore(self._keys.seen, once) is not None:
            return "seen", None  # a replay; the claim below settles a race with another one
        key = self._keys.guard(lane)
        seen_at = to_micros(now)

        async def attempt(pipe: Pipeline) -> Plan[tuple[Posted, int | None]]:
            fields = await pipe.hgetall(key)
            state = decode_guard(fields)
            counted = not (answers_human and not fields)
            verdict = (guard_turn(state, limit=limit, window=window, now=now.timestamp())
                       if counted else "allow")

            async def write(pipe: Pipeline) -> None:
                if counted:
                    pipe.hset(key, mapping=encode_guard(state))
                    pipe.pexpire(key, state_ttl_ms(state, window))
                if verdict == "allow":
                    await self._outbox.append(
                        encode_queued_item(item), once=once, seen_at=now, group=item.lane,
                        client=pipe,
                    )
                else:
                    await self._scripts.hold(
                        keys=[self._keys.seen, key, self._keys.held(lane)],
                        args=[once or "", seen_at, keep, encode_item(item), HELD_TTL_MS],
                        client=pipe,
                    )
                if counted and state.paused:  # last: the replies above keep their places
                    pipe.sadd(self._keys.paused_lanes, lane)

            def outcome(replies: list[Any]) -> tuple[Posted, int | None]:
                queued = replies[2 if counted else 0]
                if verdict == "allow":
                    if queued is None:
                        return "seen", None
                    item.id = int(queued)
                    return verdict, item.id
                return (verdict if queued else "seen"), None

            return Plan(write, outcome)

        return await optimistic(self._redis, [key], attempt, self._turns)

    async def human_spoke(self, lane: str) -> Released | None:
        state_key, held_key = self._keys.guard(lane), self._keys.held(lane)

        async def attempt(pipe: Pipeline) -> Plan[Released | None]:
            fields = await pipe.hgetall(state_key)
            if not fields:
                return Plan(None, lambda _: None)  # the common case: nothing to write
            state = decode_guard(fields)
            held = [decode_item(text) for text in await pipe.lrange(held_key, 0, -1)]

            async def write(pipe: Pipeline) -> None:
                pipe.delete(state_key, held_key)
                pipe.srem(self._keys.paused_lanes, lane)
                if state.paused:
                    for item in held:
                        await self._outbox.append(
                            encode_queued_item(item), once=None, seen_at=None, group=item.lane,
                            client=pipe,
                        )

            def released(replies: list[object]) -> Released | None:
                if not state.paused:
                    return None
                for item, item_id in zip(held, replies[2:], strict=True):
                    item.id = int(item_id)  # type: ignore[call-overload]
                return Released(held, state.held_over)

            return Plan(write, released)

        return await optimistic(self._redis, [state_key, held_key], attempt, self._turns)

    async def held_lanes(self) -> list[HeldLane]:
        lanes = sorted(await self._redis.smembers(self._keys.paused_lanes))
        if not lanes:
            return []
        async with self._redis.pipeline(transaction=True) as pipe:  # one consistent view
            for lane in lanes:
                pipe.hgetall(self._keys.guard(lane))
                pipe.llen(self._keys.held(lane))
            replies = await pipe.execute()
        found: list[HeldLane] = []
        for lane, fields, held in zip(lanes, replies[::2], replies[1::2], strict=True):
            state = decode_guard(fields)
            if state.paused:
                found.append(HeldLane(lane, int(held), state.held_over))
            else:  # expired, or released since the set was read: forgotten unless paused again
                await self._scripts.forget_unpaused(
                    keys=[self._keys.paused_lanes, self._keys.guard(lane)], args=[lane]
                )
        return found
