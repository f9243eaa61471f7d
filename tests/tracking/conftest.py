"""The `tracker` fixture: every tracking test runs on the memory, SQLite and Redis stores.

Redis is a real server (see `tests/support/redis_server.py`), each test under a key prefix
of its own that is deleted afterwards.
"""

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from bridge.store import open_store
from bridge.store.redis.store import RedisStore
from bridge.tracking import Tracker
from tests.support.redis_server import drop_prefix, server_or_skip, with_prefix


@pytest.fixture(scope="session")
def redis_server() -> Iterator[str]:
    with server_or_skip() as url:
        yield url


@pytest.fixture(params=["memory", "sqlite", "redis"])
async def tracker(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Tracker]:
    prefix = None
    if request.param == "memory":
        url = "memory://"
    elif request.param == "sqlite":
        url = f"sqlite:///{tmp_path}/state.db"
    else:
        url, prefix = with_prefix(request.getfixturevalue("redis_server"))
    async with open_store(url) as store:
        try:
            yield Tracker(store)
        finally:
            if isinstance(store, RedisStore) and prefix is not None:
                await drop_prefix(store.redis, prefix)
