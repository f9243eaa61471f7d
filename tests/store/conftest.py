from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bridge.store import Store, open_store


@pytest.fixture(params=["memory", "sqlite"])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Store]:
    url = "memory://" if request.param == "memory" else f"sqlite:///{tmp_path}/state.db"
    async with open_store(url) as opened:
        yield opened
