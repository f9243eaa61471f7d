"""The `store` fixture: every contract test runs against memory, SQLite and Redis alike.

Redis runs against a real server (see `redis_server.py`); each test gets its own key prefix
and its keys are deleted afterwards, so tests neither see each other's state nor leave any.
"""

import shutil
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from bridge.store import Store, open_store
from bridge.store.redis.store import RedisStore
from tests.support.redis_server import drop_prefix, private_server, skip_reason, with_prefix
from tests.support.stores import STORE_KINDS, redis_server, store_of_kind

__all__ = ["redis_server"]  # the session's Redis, a fixture of this directory's tests too


@pytest.fixture(scope="session")
def private_redis() -> Iterator[str]:
    """A redis-server nobody else writes to, for tests that look at every key in it."""
    reason = skip_reason()
    if reason is not None:
        pytest.skip(reason)
    binary = shutil.which("redis-server")
    if binary is None:
        pytest.skip("needs redis-server on PATH: only a private server shows every key written")
    with private_server(binary) as url:
        yield url


@pytest.fixture
async def redis_url(redis_server: str) -> AsyncIterator[str]:
    """A store URL with a prefix of this test's own; whatever it wrote is deleted after."""
    url, prefix = with_prefix(redis_server)
    yield url
    async with open_store(url) as store:
        assert isinstance(store, RedisStore)
        await drop_prefix(store.redis, prefix)


@pytest.fixture(params=STORE_KINDS)
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Store]:
    async with store_of_kind(request.param, tmp_path, request) as opened:
        yield opened
