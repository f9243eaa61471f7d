"""Helpers for the operations tests: configs for real processes, HTTP probes, metric reading."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import aiohttp
from prometheus_client.parser import text_string_to_metric_families

from tests.support.bridge_process import (
    BridgeProcess,
    HubProcess,
    ServiceProcess,
    free_port,
    write_config,
)

WAIT = 20.0
"""Upper bound for something to happen; tests never assert how long it took."""


def webchat_bridge_config(
    path: Path, *, hub_port: int, web_port: int, **overrides: Any
) -> Path:
    """`bcn-bridge run` with its embedded hub (group `demo`, driver Echo) and one webchat room;
    an override of None leaves that section out."""
    config: dict[str, Any] = {
        "hub": {
            "listen": f"127.0.0.1:{hub_port}",
            "data_dir": str(path.parent / "hub"),
            "bot_reply_default": "observe",
            "groups": [{"id": "demo", "driver": "Echo", "bots": ["Echo"], "auto_join": True}],
        },
        "bcn": {"url": "embedded"},
        "store": f"sqlite:///{path.parent / 'bridge.db'}",
        "web": {"listen": f"127.0.0.1:{web_port}"},
        "accounts": {"webchat": {"main": {}}},
        "bindings": [{"channel": "webchat:main", "chat": "lobby", "group": "demo"}],
        **overrides,
    }
    return write_config(path, {key: item for key, item in config.items() if item is not None})


def echo_bot(hub_port: int, token_file: Path, *extra: str) -> ServiceProcess:
    """`bcn-bridge example-bot echo` as a process, ready once it is connected."""
    return ServiceProcess(
        ["example-bot", "echo", "--url", f"ws://127.0.0.1:{hub_port}/ws/bot", "--name", "Echo",
         "--token-file", str(token_file), "--no-stream", *extra],
        "connected to",
    )


async def get(url: str) -> tuple[int, str]:
    async with aiohttp.ClientSession() as session, session.get(url) as response:
        return response.status, await response.text()


async def eventually_status(url: str, status: int) -> str:
    """Poll `url` until it answers `status`; returns that body."""
    async with asyncio.timeout(WAIT):
        while True:
            try:
                code, body = await get(url)
            except aiohttp.ClientError:
                code, body = 0, ""
            if code == status:
                return body
            await asyncio.sleep(0.1)


def samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Every sample of a Prometheus text exposition: (name, sorted labels) -> value."""
    found: dict[tuple[str, tuple[tuple[str, str], ...]], float] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            found[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return found


def value(text: str, name: str, **labels: str) -> float | None:
    return samples(text).get((name, tuple(sorted(labels.items()))))


__all__ = ["WAIT", "echo_bot", "eventually_status", "free_port", "get", "samples", "value",
           "webchat_bridge_config"]


def hub_and_webchat_bridge(tmp_path: Path) -> tuple[HubProcess, BridgeProcess, int, int]:
    """A `bcn-bridge hub` (group `demo`) and a webchat bridge linked to it, not started yet;
    then the hub's port and the bridge's web port."""
    hub_port, web_port = free_port(), free_port()
    hub_config = write_config(tmp_path / "hub.yaml", {"hub": {
        "listen": f"127.0.0.1:{hub_port}", "data_dir": str(tmp_path / "hub"),
        "link_tokens": ["link-token-for-the-test"],
        "groups": [{"id": "demo", "bots": []}],
    }})
    bridge_config = webchat_bridge_config(
        tmp_path / "bridge.yaml", hub_port=hub_port, web_port=web_port,
        hub=None, bcn={"url": f"ws://127.0.0.1:{hub_port}", "token": "link-token-for-the-test"},
    )
    return HubProcess(hub_config), BridgeProcess(bridge_config), hub_port, web_port
