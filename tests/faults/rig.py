"""The rig of the several-instance fault tests: a `bcn-bridge hub` process, the example bots
(with their defaults: Echo streams word by word), and N `bcn-bridge run` processes
(`bridge-a`, `bridge-b`, …) sharing one store.

"two hosts" gives each bridge its own `BCN_BRIDGE_HOST`, so neither can tell that the other's
process died (it must wait for the dead one's leases to expire); "one host" leaves them on
this machine's name, where a survivor sees a dead holder's pid is gone and takes over at once.
Whatever was started is killed on exit, the hub stopped.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import Any

from bridge.core.instance import HOST_VARIABLE
from bridge.demo import start_demo_bots
from tests.support.bridge_process import (
    BridgeProcess,
    HubProcess,
    ServiceProcess,
    free_port,
    write_config,
)

LINK_TOKEN = "link-token-for-the-fault-test"

BridgeConfig = Callable[[str, int], dict[str, Any]]
"""The config of one bridge, from its name (also its link name) and the hub's port."""


def hub_config(tmp_path: Path, port: int) -> dict[str, Any]:
    return {"hub": {
        "listen": f"127.0.0.1:{port}", "data_dir": str(tmp_path / "hub"),
        "link_tokens": [LINK_TOKEN], "bot_reply_default": "observe",
        "groups": [{"id": "demo", "driver": "Echo", "bots": ["Echo", "Rules"],
                    "auto_join": True}],
    }}


def bcn_section(hub_port: int, name: str) -> dict[str, Any]:
    return {"url": f"ws://127.0.0.1:{hub_port}", "token": LINK_TOKEN, "link_name": name}


def bridge_names(count: int) -> list[str]:
    return [f"bridge-{letter}" for letter in "abcdefgh"[:count]]


class Bridges:
    """`async with Bridges(...) as rig`: the hub, the bots and `count` bridges are running.

    `stream` is the example Echo bot's: True (its default, what users run) unless a test is
    about something else and says why.
    """

    def __init__(self, tmp_path: Path, hosts: str, bridge_config: BridgeConfig, *,
                 count: int = 2, stream: bool = True) -> None:  # fmt: skip
        self.tmp_path = tmp_path
        self.hosts = hosts
        self.bridge_config = bridge_config
        self.names = bridge_names(count)
        self.stream = stream
        self.hub_port = free_port()
        self.hub = HubProcess(write_config(tmp_path / "hub.yaml",
                                           hub_config(tmp_path, self.hub_port)))
        self.instances: dict[str, ServiceProcess] = {}
        self._configs: dict[str, Path] = {}
        self._bots: list[Any] = []

    async def __aenter__(self) -> Bridges:
        try:
            await self.hub.start()
            self._bots = await start_demo_bots(f"ws://127.0.0.1:{self.hub_port}",
                                               self.tmp_path, stream=self.stream)
            for name in self.names:
                self._configs[name] = write_config(self.tmp_path / f"{name}.yaml",
                                                   self.bridge_config(name, self.hub_port))
                self.instances[name] = self._launch(name)
                await self.instances[name].start()
        except BaseException:
            await self.close()
            raise
        return self

    async def __aexit__(self, kind: type[BaseException] | None, error: BaseException | None,
                        traceback: TracebackType | None) -> None:  # fmt: skip
        await self.close()

    def _launch(self, name: str) -> BridgeProcess:
        host = {HOST_VARIABLE: f"host-of-{name}"} if self.hosts == "two hosts" else {}
        return BridgeProcess(self._configs[name], env=host)

    async def restart(self, name: str) -> ServiceProcess:
        """Start a (killed) bridge again with its config; returns the new process."""
        self.instances[name] = self._launch(name)
        await self.instances[name].start()
        return self.instances[name]

    async def first_saying(self, fragment: str, *, timeout: float = 30.0) -> str:
        """The running bridge whose log says `fragment` (e.g. that it holds a lease)."""
        async with asyncio.timeout(timeout):
            while True:
                for name, process in self.instances.items():
                    if process.running and any(fragment in line for line in process.lines):
                        return name
                await asyncio.sleep(0.05)

    def other(self, name: str) -> str:
        return next(other for other in self.instances if other != name)

    def logs(self) -> str:
        """Every bridge's log and the hub's, for a failure message."""
        return "\n".join(f"--- {name} ---\n{process.log()}"
                         for name, process in [*self.instances.items(), ("hub", self.hub)])

    async def close(self) -> None:
        for bot in self._bots:
            await bot.stop()
        self._bots = []
        for process in self.instances.values():
            await process.kill()
        await self.hub.stop()
