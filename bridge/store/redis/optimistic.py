"""WATCH/MULTI with retry: read, decide in Python, write only if nobody wrote meanwhile.

This is how a Python rule (a conversation change, `guard_turn`) is applied atomically across
instances without a lock: WATCH the keys, read them, compute, and queue the writes in MULTI.
If another client wrote a watched key in between, EXEC does nothing and the whole attempt runs
again on the fresh values, which is why changes must be pure. Every failed attempt means
another writer succeeded, so the instances as a whole always make progress.

Within one instance, attempts on the same key take turns (`Turns`, a FIFO lock per key)
instead of racing: retries are then only ever caused by another instance, and N local
updates of one busy key cost N attempts rather than up to N² / 2.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from redis.asyncio import Redis
from redis.asyncio.client import Pipeline
from redis.exceptions import WatchError

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Plan(Generic[T]):
    """What one attempt decided: the writes to queue (None: write nothing) and how to make
    the result from EXEC's replies (one per queued command)."""

    write: Callable[[Pipeline], Awaitable[None]] | None
    result: Callable[[list[Any]], T]


Attempt = Callable[[Pipeline], Awaitable[Plan[T]]]
"""Reads the watched keys through the pipeline (commands run at once while watching) and
returns its plan; it may raise to abort, and then nothing is written."""


class Turns:
    """One attempt at a time per key in this process; a key's lock lives while it is used."""

    __slots__ = ("_locks",)

    def __init__(self) -> None:
        self._locks: dict[str, tuple[asyncio.Lock, int]] = {}

    @asynccontextmanager
    async def turn(self, key: str) -> AsyncIterator[None]:
        lock, users = self._locks.get(key) or (asyncio.Lock(), 0)
        self._locks[key] = (lock, users + 1)
        try:
            async with lock:
                yield
        finally:
            lock, users = self._locks[key]
            if users == 1:
                del self._locks[key]
            else:
                self._locks[key] = (lock, users - 1)


async def optimistic(
    redis: Redis, watch: Sequence[str], attempt: Attempt[T], turns: Turns | None = None
) -> T:
    """Run `attempt` until its writes commit; with `turns`, local callers on `watch[0]`
    queue up first (the lock is taken before any connection, so waiting holds none)."""
    if turns is None:
        return await _attempts(redis, watch, attempt)
    async with turns.turn(watch[0]):
        return await _attempts(redis, watch, attempt)


async def _attempts(redis: Redis, watch: Sequence[str], attempt: Attempt[T]) -> T:
    async with redis.pipeline(transaction=True) as pipe:
        while True:
            try:
                await pipe.watch(*watch)
                plan = await attempt(pipe)
                if plan.write is None:
                    await pipe.unwatch()
                    return plan.result([])
                pipe.multi()
                await plan.write(pipe)
                replies = await pipe.execute()
            except WatchError:
                continue  # another instance wrote a watched key: decide again on its value
            return plan.result(replies)
