"""End-to-end fixtures: the real hub, the real bridge and real example bots over sockets."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.e2e_support import System, make_config, register_testchat
from tests.support.running_bridge import BridgeStarter


@pytest.fixture(autouse=True)
def _testchat_registered(monkeypatch: pytest.MonkeyPatch) -> None:
    register_testchat(monkeypatch)


@pytest.fixture
async def start_system(tmp_path: Path) -> AsyncIterator[Callable[..., Any]]:
    """Start hub + bridge (+ the demo bots); everything is stopped at the end."""
    starter = BridgeStarter(tmp_path)

    async def start(*, bots: bool = True, stream: bool = True, **config: Any) -> System:
        return await starter.start(make_config(tmp_path, **config), bots=bots, stream=stream,
                                   wrap=System)

    yield start
    await starter.close()
