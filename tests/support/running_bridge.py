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
from bridge.hub.server import Hub

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


LINK_TOKEN = "test-link-token-of-every-instance"
"""The credential each instance of a several-instance bridge links to the hub with."""


def instances_of(config: BridgeConfig, store: str, hub_url: str,
                 count: int = 2) -> list[BridgeConfig]:
    """`count` instances of the bridge `config` describes, as an operator runs them: one
    store for all (`store`, e.g. a Redis URL), one standalone hub (`hub_url`, from
    `BridgeStarter.start_hub`), each instance under its own link name."""
    return [
        config.model_copy(update={
            "store": store, "hub": None,
            "bcn": config.bcn.model_copy(update={"url": hub_url, "token": LINK_TOKEN,
                                                 "link_name": f"bridge-{letter}"}),
        })
        for letter in "abcdefgh"[:count]
    ]


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
        self.hubs: list[Hub] = []
        self.bots: list[Bot] = []

    async def start(
        self, config: BridgeConfig, *, bots: bool = True, stream: bool = True,
        wrap: type[RunningBridge] = RunningBridge, instance: str | None = None, **extra: Any,
    ) -> Any:
        clock = FakeClock()
        options: dict[str, Any] = {"outbox_retry_initial": 0.02}
        if instance is not None:
            options["instance"] = instance
        app = BridgeApp(config, clock=clock, sweep_interval=3600, relay_options=options)
        await app.start()
        running = wrap(app, clock, **extra)
        self.started.append(running)
        assert app.relay is not None
        await app.relay.link.wait_ready(WAIT)
        if bots:
            running.bots = await start_demo_bots(app.bcn_url, self.tmp_path, stream=stream)
            await running.wait_for_bots("Echo", "Rules")
        return running

    async def start_hub(self, config: BridgeConfig) -> str:
        """The hub `config` describes, standalone (as `bcn-bridge hub` runs it), taking
        `LINK_TOKEN`; its URL."""
        assert config.hub is not None
        hub = Hub(config.hub.model_copy(
            update={"link_tokens": [*config.hub.link_tokens, LINK_TOKEN]}))
        await hub.start()
        self.hubs.append(hub)
        return str(hub.url)

    async def start_instances(
        self, configs: list[BridgeConfig], *, bots: bool = True, stream: bool = True,
        wrap: type[RunningBridge] = RunningBridge, **extra: Any,
    ) -> list[Any]:
        """The instances `instances_of` described, then the example bots on their hub
        (which outlive any one instance a test stops); each knows the bots before this
        returns."""
        # Named as if each ran on a host of its own: instances in one process would
        # otherwise take each other's leases as a dead predecessor's (bridge.core.instance:
        # the same pid), which real instances never share.
        running = [await self.start(config, bots=False, wrap=wrap,
                                    instance=f"{config.bcn.link_name}@test-host-{n}:1:{n:06x}",
                                    **extra)
                   for n, config in enumerate(configs)]
        if bots:
            self.bots += await start_demo_bots(configs[0].bcn.url, self.tmp_path,
                                               stream=stream)
            for each in running:
                await each.wait_for_bots("Echo", "Rules")
        return running

    async def stop(self, running: RunningBridge) -> None:
        """Stop one of the bridges (an orderly stop: what it holds it hands over)."""
        self.started.remove(running)
        await running.stop()

    async def close(self) -> None:
        for running in reversed(self.started):
            await running.stop()
        for bot in self.bots:
            await bot.stop()
        for hub in reversed(self.hubs):
            await hub.stop()
