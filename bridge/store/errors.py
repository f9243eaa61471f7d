"""Which failures of the store (or a socket under it) may pass by themselves.

A delivery, a post or a sweep that fails on one of these is tried again later: the server
comes back, the lock is released, the timeout does not repeat. Anything else — a bug, or an
input that can never be handled — fails the same way every time, so trying it again only
repeats the traceback (issue 31: one reply retried three times a minute, for ever).
"""

from __future__ import annotations

import sqlite3

from redis.exceptions import RedisError

TRANSIENT_ERRORS: tuple[type[BaseException], ...] = (
    OSError,  # sockets, StoreUnavailable, a dropped BCN link (ConnectionClosed)
    TimeoutError,
    sqlite3.OperationalError,  # "database is locked", a full disk
    RedisError,  # connection, timeout, loading, read-only replica
)


def transient(error: BaseException) -> bool:
    """Whether trying again later may succeed where this attempt failed."""
    return isinstance(error, TRANSIENT_ERRORS)
