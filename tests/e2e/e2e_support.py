"""What the end-to-end tests share: config, the running system, waiting helpers."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from recording_adapter import Chat, Posted, RecordingAdapter

from bridge.app import BridgeApp
from bridge.bcn.bot import Bot
from bridge.config.schema import BridgeConfig
from bridge.core import registry

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
                await relay._refresh_group("demo")
                await asyncio.sleep(0.02)


def texts(messages: list[Posted], sender: str | None = None) -> list[str]:
    return [m.text for m in messages if sender is None or m.sender == sender]
