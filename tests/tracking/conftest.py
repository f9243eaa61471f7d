"""The `tracker` fixture: every tracking test runs on the memory, SQLite and Redis stores
(`tests/support/stores.py`)."""

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bridge.tracking import Tracker
from tests.support.stores import STORE_KINDS, redis_server, store_of_kind

__all__ = ["redis_server"]  # the session's Redis, as a fixture of this directory's tests


@pytest.fixture(params=STORE_KINDS)
async def tracker(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Tracker]:
    async with store_of_kind(request.param, tmp_path, request) as store:
        yield Tracker(store)
