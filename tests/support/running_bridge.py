"""Starting a whole bridge (embedded hub + relay + example bots) for end-to-end tests.

Shared by the relay's own end-to-end tests and each platform's: they differ only in the
accounts and bindings of the config they pass in.
"""

from __future__ import annotations

import asyncio
import os
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from bridge.app import BridgeApp
from bridge.bcn.bot import Bot
from bridge.config.schema import BridgeConfig
from bridge.demo import start_demo_bots

os.environ.setdefault("NO_PROXY", "127.0.0.1,localhost")

WAIT = 10.0
"""Upper bound for something to show up; tests never assert how long it took."""

DEMO_GROUP = "demo"


class FakeClock:
    """An injectable clock for the relay (tracking, timeouts)."""

    def __init__(self) -> None:
        self.now = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now

    def advance(self, delta: timedelta) -> None:
        self.now += delta


def demo_hub(tmp_path: Path, **overrides: Any) -> dict[str, Any]:
    """A hub section with the group `demo` of Echo (driver) and Rules."""
    return {
        "listen": "127.0.0.1:0",
        "data_dir": str(tmp_path / "hub"),
        "bot_reply_default": "observe",
        "groups": [{"id": DEMO_GROUP, "driver": "Echo", "bots": ["Echo", "Rules"],
                    "auto_join": True}],
        **overrides,
    }


def bridge_config(
    tmp_path: Path, *, bindings: list[dict[str, Any]], accounts: dict[str, Any],
    hub: dict[str, Any] | None = None, web: bool = False,
) -> BridgeConfig:
    """A config with the embedded demo hub; `accounts` are model instances per type/name."""
    return BridgeConfig.model_validate({
        "hub": demo_hub(tmp_path, **(hub or {})),
        "bcn": {"url": "embedded"},
        "store": f"sqlite:///{tmp_path / 'bridge.db'}",
        "web": {"listen": "127.0.0.1:0", "enabled": web},
        "bindings": bindings,
    }).model_copy(update={"accounts": accounts})


@dataclass
class RunningBridge:
    app: BridgeApp
    clock: FakeClock
    bots: list[Bot] = field(default_factory=list)

    async def wait_for_bots(self, *names: str, group: str = DEMO_GROUP) -> None:
        """Until the relay knows these bots are in the group (so it can route to them)."""
        relay = self.app.relay
        assert relay is not None
        async with asyncio.timeout(WAIT):
            while not set(names) <= set((await relay.ctx.state.group_bots(group)).names):
                await relay._refresh_group(group)
                await asyncio.sleep(0.02)

    async def wait_queued(self, count: int) -> None:
        """Until the outbox holds `count` outputs it could not deliver yet."""
        relay = self.app.relay
        assert relay is not None
        async with asyncio.timeout(WAIT):
            while relay.outbox.pending_count() < count:
                await asyncio.sleep(0.01)

    async def wait_delivered(self) -> None:
        """Until the outbox has handled everything it holds."""
        relay = self.app.relay
        assert relay is not None
        await relay.outbox.wait_idle()

    async def stop(self) -> None:
        for bot in self.bots:
            await bot.stop()
        self.bots = []
        await self.app.stop()


class BridgeStarter:
    """Starts bridges for one test and stops every one of them at the end."""

    def __init__(self, tmp_path: Path) -> None:
        self.tmp_path = tmp_path
        self.started: list[RunningBridge] = []

    async def start(
        self, config: BridgeConfig, *, bots: bool = True, stream: bool = True,
        wrap: type[RunningBridge] = RunningBridge, **extra: Any,
    ) -> Any:
        clock = FakeClock()
        app = BridgeApp(config, clock=clock, sweep_interval=3600,
                        relay_options={"outbox_retry_initial": 0.02})
        await app.start()
        running = wrap(app, clock, **extra)
        self.started.append(running)
        assert app.relay is not None
        await app.relay.link.wait_ready(WAIT)
        if bots:
            running.bots = await start_demo_bots(app.bcn_url, self.tmp_path, stream=stream)
            await running.wait_for_bots("Echo", "Rules")
        return running

    async def close(self) -> None:
        for running in reversed(self.started):
            await running.stop()
