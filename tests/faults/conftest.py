"""Fixtures of the fault tests."""

from collections.abc import Iterator

import pytest

from tests.support.redis_server import server_or_skip


@pytest.fixture(scope="session")
def redis_server() -> Iterator[str]:
    """A real Redis (see tests/support/redis_server.py); each test takes a key prefix of
    its own (`prefixed`)."""
    with server_or_skip() as url:
        yield url
