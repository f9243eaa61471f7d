"""`FairConnectionPool`: a bounded Redis pool that hands connections out in the order asked.

redis-py's `BlockingConnectionPool` waits on a condition: a caller that asks just after a
connection comes back takes it ahead of the caller that was woken for it, which goes back
to the end of the queue. With more callers than connections (a busy instance: 64 updates in
flight on 32 connections) one unlucky caller can lose that race again and again until its
20 s wait runs out and its write fails with "No connection available" — seen filling a
100,000-conversation store with redis-py 8.2. Here a FIFO semaphore in front of the plain
pool gives one turn per connection: whoever asked first gets the next one, and nobody waits
longer than the callers ahead of them take.
"""

from __future__ import annotations

import asyncio
from typing import Any

from redis.asyncio.connection import AbstractConnection, ConnectionPool
from redis.exceptions import ConnectionError as RedisConnectionError


class FairConnectionPool(ConnectionPool):
    """At most `max_connections` connections; a caller past that queues, first come first served."""

    def __init__(self, *, max_connections: int, timeout: float, **connection_kwargs: Any) -> None:
        super().__init__(max_connections=max_connections, **connection_kwargs)
        self.timeout = timeout
        self._turns = asyncio.BoundedSemaphore(max_connections)
        self._holding_turn: set[AbstractConnection] = set()
        """Connections handed out by `get_connection`, each holding a turn. Not the same as
        the pool's in-use set: when connecting fails, redis-py releases the connection
        inside its own `get_connection`, before it is handed out, and that turn is given
        back by the `except` below — once, not twice."""

    async def get_connection(self, *args: Any, **kwargs: Any) -> AbstractConnection:
        try:
            async with asyncio.timeout(self.timeout):
                await self._turns.acquire()
        except TimeoutError:
            raise RedisConnectionError(
                f"no Redis connection came free within {self.timeout:g} s "
                f"(all {self.max_connections} of this instance's are in use)"
            ) from None
        try:
            connection = await super().get_connection(*args, **kwargs)
        except BaseException:
            self._turns.release()
            raise
        self._holding_turn.add(connection)
        return connection

    async def release(self, connection: AbstractConnection) -> None:
        try:
            await super().release(connection)
        finally:
            # A release cancelled before it took the pool's lock leaves the connection in
            # use and finishes in the background (calling this again): the turn goes back
            # only once the connection really has.
            if connection not in self._in_use_connections and connection in self._holding_turn:
                self._holding_turn.discard(connection)
                self._turns.release()
