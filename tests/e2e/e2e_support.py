"""What the relay's end-to-end tests share: their config and a view of the test chat."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from bridge.config.schema import BridgeConfig
from bridge.core import registry
from tests.e2e.recording_adapter import Chat, Posted, RecordingAdapter
from tests.support.running_bridge import WAIT, RunningBridge, bridge_config

__all__ = ["WAIT", "System", "make_config", "register_testchat", "texts"]


def register_testchat(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make `testchat` a known channel type for one test, with a fresh record of its chats."""
    monkeypatch.setitem(
        registry.ADAPTERS, "testchat", "tests.e2e.recording_adapter:RecordingAdapter"
    )
    RecordingAdapter.instances.clear()
    RecordingAdapter.chats.clear()


def make_config(tmp_path: Path, *, binding: dict[str, Any] | None = None,
                hub: dict[str, Any] | None = None, webchat: bool = False,
                extra_chats: tuple[str, ...] = ()) -> BridgeConfig:
    """`extra_chats`: more `testchat:main` chats bound to the same group as "room"."""
    bindings = [{"channel": "testchat:main", "chat": chat, "group": "demo",
                 "protocol": {"enabled": True, "deliver": "raw"}, **(binding or {})}
                for chat in ("room", *extra_chats)]
    accounts: dict[str, Any] = {"testchat": {"main": RecordingAdapter.config_model()}}
    if webchat:
        bindings.append({"channel": "webchat:main", "chat": "lobby", "group": "demo",
                         "protocol": {"enabled": True, "deliver": "raw"}})
        accounts["webchat"] = {"main": registry.account_config_model("webchat")()}
    return bridge_config(tmp_path, bindings=bindings, accounts=accounts, hub=hub, web=webchat)


@dataclass
class System(RunningBridge):
    """A running bridge whose one chat is the in-test `testchat:main` room."""

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


def texts(messages: list[Posted], sender: str | None = None) -> list[str]:
    return [m.text for m in messages if sender is None or m.sender == sender]
