"""End-to-end fixtures: the real hub, the real bridge and real example bots over sockets."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
from e2e_support import WAIT, FakeClock, System, make_config
from recording_adapter import RecordingAdapter

from bridge.app import BridgeApp
from bridge.core import registry
from bridge.demo import start_demo_bots


@pytest.fixture(autouse=True)
def _testchat_registered(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(registry.ADAPTERS, "testchat", "recording_adapter:RecordingAdapter")
    RecordingAdapter.instances.clear()
    RecordingAdapter.chats.clear()


@pytest.fixture
async def start_system(tmp_path: Path) -> AsyncIterator[Callable[..., Any]]:
    """Start hub + bridge (+ the demo bots); everything is stopped at the end."""
    started: list[System] = []

    async def start(*, bots: bool = True, stream: bool = True, **config: Any) -> System:
        clock = FakeClock()
        app = BridgeApp(make_config(tmp_path, **config), clock=clock, sweep_interval=3600,
                        relay_options={"outbox_retry_initial": 0.02})
        await app.start()
        system = System(app, clock)
        started.append(system)
        await app.relay.link.wait_ready(WAIT)
        if bots:
            system.bots = await start_demo_bots(app.bcn_url, tmp_path, stream=stream)
            await system.wait_for_bots("Echo", "Rules")
        return system

    yield start
    for system in reversed(started):
        for bot in system.bots:
            await bot.stop()
        await system.app.stop()
