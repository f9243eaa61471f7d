"""Redis connections whose writes never swallow a cancellation.

redis-py bounds each write with `asyncio.wait_for(send, socket_timeout)`. On Python 3.11,
`wait_for` drops a cancellation that arrives in the same loop turn as the write completes
(CPython gh-86296, fixed in 3.12 by rewriting `wait_for` on `asyncio.timeout`): the command
returns normally, and the task that was told to stop goes on. A loop that retries a Redis
call — a standby asking for a lease every few milliseconds, a lane renewing — then never
ends, and whatever awaits it (an orderly stop, a test's teardown) hangs for good. Seen
about once in 30 cancellations of a task looping on GET against a local Redis.

Here the write runs under `asyncio.timeout` instead, which counts cancellations and so
cannot lose one; a write that runs out of time still fails the way redis-py's does
(connection closed, `redis.exceptions.TimeoutError`).
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Iterable
from typing import Any

from redis.asyncio import Connection, SSLConnection
from redis.exceptions import TimeoutError as RedisTimeoutError

WAIT_FOR_LOSES_CANCELS = sys.version_info < (3, 12)


class _CancelSafeWrites:
    """Mixin for a redis-py connection class: the write timeout via `asyncio.timeout`."""

    socket_timeout: float | None

    async def send_packed_command(
        self, command: bytes | str | Iterable[bytes], check_health: bool = True
    ) -> None:
        limit = self.socket_timeout
        if not limit or not WAIT_FOR_LOSES_CANCELS:
            await super().send_packed_command(command, check_health)  # type: ignore[misc]
            return
        # While this connection writes, nothing else uses it (the pool hands it to one
        # caller), so its own timeout can step aside for the one that keeps cancels.
        self.socket_timeout = None
        try:
            async with asyncio.timeout(limit):
                await super().send_packed_command(command, check_health)  # type: ignore[misc]
        except TimeoutError:
            await self.disconnect(nowait=True)  # type: ignore[attr-defined]
            raise RedisTimeoutError("Timeout writing to socket") from None
        finally:
            self.socket_timeout = limit


class CancelSafeConnection(_CancelSafeWrites, Connection):
    """A plain TCP connection (see the module doc)."""


class CancelSafeSSLConnection(_CancelSafeWrites, SSLConnection):
    """A TLS connection (see the module doc)."""


def connection_class(tls: bool) -> type[Any]:
    return CancelSafeSSLConnection if tls else CancelSafeConnection
