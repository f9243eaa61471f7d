from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest
from hub_clients import StartHub, hub_config

from bridge.hub import Hub


@pytest.fixture
async def http() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession() as session:
        yield session


@pytest.fixture
async def start_hub(tmp_path: Any) -> AsyncIterator[StartHub]:
    """Start hubs with test-sized timings; every one is stopped after the test."""
    hubs: list[Hub] = []

    async def start(**overrides: Any) -> Hub:
        hub = Hub(hub_config(tmp_path, **overrides))
        await hub.start()
        hubs.append(hub)
        return hub

    yield start
    for hub in hubs:
        await hub.stop()


@pytest.fixture
async def hub(start_hub: StartHub) -> Hub:
    return await start_hub()
