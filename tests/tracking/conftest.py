from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bridge.store import open_store
from bridge.tracking import Tracker


@pytest.fixture(params=["memory", "sqlite"])
async def tracker(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Tracker]:
    url = "memory://" if request.param == "memory" else f"sqlite:///{tmp_path}/state.db"
    async with open_store(url) as store:
        yield Tracker(store)
