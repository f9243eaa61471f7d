"""The Redis store's connection pool hands connections out in the order they were asked for.

redis-py's `BlockingConnectionPool` lets a caller that asks just as a connection comes back
take it ahead of the one already waiting; under steady load a waiter could lose that race
until its wait ran out ("No connection available", seen filling 100,000 conversations).
These run against a real server, one connection in the pool, so the order is deterministic.
"""

from __future__ import annotations

import asyncio
import socket
import uuid
from collections.abc import AsyncIterator

import pytest
from redis.asyncio import Redis
from redis.exceptions import ConnectionError as RedisConnectionError

from bridge.store.redis.pool import FairConnectionPool


@pytest.fixture
async def pool(redis_server: str) -> AsyncIterator[FairConnectionPool]:
    opened = FairConnectionPool.from_url(redis_server, max_connections=1, timeout=30)
    yield opened
    await opened.disconnect()


async def waiting(task: asyncio.Task[object]) -> None:
    """Let `task` run until it is queued for a connection."""
    for _ in range(20):
        await asyncio.sleep(0)
    assert not task.done()


async def test_a_connection_coming_back_goes_to_the_caller_waiting_first(
    pool: FairConnectionPool,
) -> None:
    held = await pool.get_connection()
    first = asyncio.ensure_future(pool.get_connection())
    await waiting(first)

    async def give_back_then_ask_again() -> object:
        await pool.release(held)
        return await pool.get_connection()  # asks before the waiter has had a turn

    late = asyncio.ensure_future(give_back_then_ask_again())
    done, _ = await asyncio.wait({first, late}, return_when=asyncio.FIRST_COMPLETED)
    assert done == {first}, "the caller that asked later took the connection"

    await pool.release(first.result())
    second = await late  # and the later caller is served next
    await pool.release(second)


async def test_many_more_callers_than_connections_all_get_one_and_give_it_back(
    pool: FairConnectionPool,
) -> None:
    client = Redis.from_pool(pool)
    key = f"fair-pool-test-{uuid.uuid4().hex}"
    replies = await asyncio.gather(*(client.incr(key) for _ in range(200)))
    assert sorted(replies) == list(range(1, 201))
    await client.delete(key)
    assert not pool._in_use_connections and pool._turns._value == 1


async def test_a_caller_that_waits_too_long_is_told_why(redis_server: str) -> None:
    pool = FairConnectionPool.from_url(redis_server, max_connections=1, timeout=0.05)
    held = await pool.get_connection()
    with pytest.raises(RedisConnectionError, match=r"no Redis connection came free within 0.05 s"):
        await pool.get_connection()
    await pool.release(held)
    again = await pool.get_connection()  # the timed-out wait took no turn with it
    await pool.release(again)
    await pool.disconnect()


async def test_a_cancelled_wait_leaves_the_turns_as_they_were(pool: FairConnectionPool) -> None:
    held = await pool.get_connection()
    waiter = asyncio.ensure_future(pool.get_connection())
    await waiting(waiter)
    waiter.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiter
    await pool.release(held)
    again = await pool.get_connection()
    await pool.release(again)
    assert pool._turns._value == 1


async def test_a_failed_connect_gives_its_turn_back_once() -> None:
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    pool = FairConnectionPool.from_url(
        f"redis://127.0.0.1:{port}/0", max_connections=1, timeout=5, socket_connect_timeout=1
    )
    for _ in range(3):  # a leaked turn would make the next one wait and time out instead
        with pytest.raises(RedisConnectionError) as failure:
            await pool.get_connection()
        assert "came free" not in str(failure.value)
    await pool.disconnect()
