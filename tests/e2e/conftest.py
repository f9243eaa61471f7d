"""End-to-end fixtures: the real hub, the real bridge and real example bots over sockets."""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from bridge.app import BridgeApp
from bridge.bcn.bot import Bot
from bridge.config.schema import BridgeConfig
from bridge.core import registry
from bridge.demo import start_demo_bots
from recording_adapter import Chat, Posted, RecordingAdapter

os.environ.setdefault("NO_PROXY", "127.0.0.1,localhost")

WAIT = 10.0
"""Upper bound for something to show up; tests never assert how long it took."""


class FakeClock:
    def __init__(self) -> None:
        self.now = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now

    def advance(self, delta: timedelta) -> None:
        self.now += delta


@pytest.fixture(autouse=True)
def _testchat_registered(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(registry.ADAPTERS, "testchat", "recording_adapter:RecordingAdapter")
    RecordingAdapter.instances.clear()
    RecordingAdapter.chats.clear()


def make_config(tmp_path: Path, *, binding: dict[str, Any] | None = None,
                hub: dict[str, Any] | None = None, webchat: bool = False) -> BridgeConfig:
    bindings = [{"channel": "testchat:main", "chat": "room", "group": "demo",
                 "protocol": {"enabled": True, "deliver": "raw"}, **(binding or {})}]
    accounts: dict[str, Any] = {"testchat": {"main": RecordingAdapter.config_model()}}
    if webchat:
        bindings.append({"channel": "webchat:main", "chat": "lobby", "group": "demo",
                         "protocol": {"enabled": True, "deliver": "raw"}})
        accounts["webchat"] = {"main": registry.account_config_model("webchat")()}
    return BridgeConfig.model_validate({
        "hub": {"listen": "127.0.0.1:0", "data_dir": str(tmp_path / "hub"),
                "bot_reply_default": "observe",
                "groups": [{"id": "demo", "driver": "Echo", "bots": ["Echo", "Rules"],
                            "auto_join": True}], **(hub or {})},
        "bcn": {"url": "embedded"},
        "store": f"sqlite:///{tmp_path / 'bridge.db'}",
        "web": {"listen": "127.0.0.1:0", "enabled": webchat},
        "bindings": bindings,
    }).model_copy(update={"accounts": accounts})


@dataclass
class System:
    app: BridgeApp
    clock: FakeClock
    bots: list[Bot] = field(default_factory=list)

    @property
    def chat_adapter(self) -> RecordingAdapter:
        return RecordingAdapter.instances["main"]

    @property
    def chat(self) -> Chat:
        return self.chat_adapter.chat("room")

    async def wait_for(self, predicate: Callable[[list[Posted]], Any]) -> Any:
        """Until `predicate(messages)` is truthy; returns what it returned."""
        chat = self.chat
        async with asyncio.timeout(WAIT), chat.changed:
            while not (found := predicate(chat.messages)):
                await chat.changed.wait()
        return found

    async def wait_for_bots(self, *names: str) -> None:
        relay = self.app.relay
        assert relay is not None
        async with asyncio.timeout(WAIT):
            while not set(names) <= set(relay.ctx.participants.get("demo", [])):
                await relay._refresh_group("demo")  # noqa: SLF001
                await asyncio.sleep(0.02)


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


def texts(messages: list[Posted], sender: str | None = None) -> list[str]:
    return [m.text for m in messages if sender is None or m.sender == sender]
