"""One store of each kind for a test: the fixtures that run a test on memory, SQLite and Redis.

Redis is a real server (`redis_server.py`); each store opened here has a key prefix of its
own, deleted when the test ends, so tests neither see each other's keys nor leave any.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest

from bridge.store import Store, open_store
from bridge.store.redis.store import RedisStore
from tests.support.redis_server import drop_prefix, server_or_skip, with_prefix

STORE_KINDS = ["memory", "sqlite", "redis"]


@pytest.fixture(scope="session")
def redis_server() -> Iterator[str]:
    """The URL of a real Redis for the session (found, or started privately)."""
    with server_or_skip() as url:
        yield url


@asynccontextmanager
async def store_of_kind(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> AsyncIterator[Store]:
    """An open store of `kind` (one of `STORE_KINDS`); a Redis one under a fresh prefix."""
    prefix = None
    if kind == "memory":
        url = "memory://"
    elif kind == "sqlite":
        url = f"sqlite:///{tmp_path}/state.db"
    else:
        url, prefix = with_prefix(request.getfixturevalue("redis_server"))
    async with open_store(url) as opened:
        try:
            yield opened
        finally:
            if isinstance(opened, RedisStore) and prefix is not None:
                await drop_prefix(opened.redis, prefix)
