"""A task told to stop while it talks to Redis stops, whatever moment the cancel lands in.

On Python 3.11 redis-py's write timeout (`asyncio.wait_for`) could drop a cancellation that
arrived as the write completed: the call returned normally and the task went on. A standby
asking for a lease in a loop then never ended, and CI hung in the lease keeper's teardown.
Here a real store on a real redis-server is cancelled at every loop turn of a command in
turn, many times over, so the moment that used to lose the cancel is always among them.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from redis.exceptions import TimeoutError as RedisTimeoutError

from bridge.store import Store
from bridge.store.redis.connections import CancelSafeConnection
from tests.support.stores import redis_server, store_of_kind

__all__ = ["redis_server"]

TURNS = 40
"""Loop turns to cancel after: more than one acquire takes here (6–30), so every moment
of a command, and of the next one, is among them."""
ROUNDS = 20


@pytest.fixture
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Store]:
    async with store_of_kind("redis", tmp_path, request) as opened:
        yield opened


async def asking_forever(store: Store, asks: list[int]) -> None:
    """A standby asking for a lease another instance holds, as fast as it can."""
    while True:
        await store.leases.acquire("poll", "instance-b", 5.0)
        asks[0] += 1


async def test_a_cancel_is_never_lost_whichever_turn_of_a_command_it_lands_in(
    store: Store,
) -> None:
    assert await store.leases.acquire("poll", "instance-a", 600.0) is not None
    asks = [0]
    for _ in range(ROUNDS):
        for turns in range(TURNS):
            task = asyncio.create_task(asking_forever(store, asks))
            for _ in range(turns):
                await asyncio.sleep(0)
            task.cancel()
            # Generous: a cancel that is kept ends the task within a few loop turns; one
            # that is lost never ends it.
            done, _ = await asyncio.wait({task}, timeout=10)
            if not done:
                task.cancel()  # let the fixture close the store
                await asyncio.wait({task}, timeout=10)
            assert done, f"a cancel {turns} loop turns into a command was lost"
            assert task.cancelled()
    assert asks[0] > 0  # the commands did run between the cancels


async def test_a_write_that_runs_out_of_time_fails_as_redis_py_s_does(redis_server: str) -> None:
    """The write timeout still holds: once the server stops reading (here a proxy in front
    of the real one), the write fails with redis-py's own TimeoutError and the connection
    is closed, not left half written."""
    target = urlsplit(redis_server)
    deaf = asyncio.Event()
    pumps: list[asyncio.Task[None]] = []

    async def pump(reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                   to_server: bool) -> None:
        while chunk := await reader.read(65536):
            writer.write(chunk)
            await writer.drain()
            if to_server and deaf.is_set():
                await asyncio.Event().wait()  # reads nothing more from the client

    async def proxy(client_r: asyncio.StreamReader, client_w: asyncio.StreamWriter) -> None:
        server_r, server_w = await asyncio.open_connection(target.hostname, target.port)
        pumps.extend([asyncio.create_task(pump(client_r, server_w, True)),
                      asyncio.create_task(pump(server_r, client_w, False))])

    server = await asyncio.start_server(proxy, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    connection = CancelSafeConnection(host="127.0.0.1", port=port, socket_timeout=0.5)
    try:
        await connection.connect()
        await connection.send_command("PING")
        assert await connection.read_response() in (b"PONG", "PONG")
        deaf.set()
        with pytest.raises(RedisTimeoutError, match="writing"):
            await connection.send_command("SET", "k", b"x" * (64 << 20))
        assert not connection.is_connected
        assert connection.socket_timeout == 0.5  # its own timeout is back for next time
    finally:
        await connection.disconnect()
        for task in pumps:
            task.cancel()
        await asyncio.gather(*pumps, return_exceptions=True)
        server.close()
