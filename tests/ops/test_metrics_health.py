"""`/metrics`, `/healthz` and `/readyz` of a real `bcn-bridge run` and its hub, over HTTP."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import aiohttp
import pytest
from ops_support import (
    WAIT,
    echo_bot,
    eventually_status,
    free_port,
    get,
    hub_and_webchat_bridge,
    value,
    webchat_bridge_config,
)

from tests.support.bridge_process import BridgeProcess
from tests.webchat.webchat_clients import open_client

pytestmark = pytest.mark.slow


async def reply_from(client, sender: str) -> dict:  # type: ignore[no-untyped-def]
    """The next final message from `sender` in the room."""
    async with asyncio.timeout(WAIT):
        while True:
            frame = await client.next_frame()
            message = frame.get("message") or {}
            if message.get("kind") == "final" and message["sender"]["name"] == sender:
                return message


async def test_a_relayed_message_shows_in_the_bridge_and_hub_metrics(tmp_path: Path) -> None:
    hub_port, web_port = free_port(), free_port()
    bridge = BridgeProcess(
        webchat_bridge_config(tmp_path / "bridge.yaml", hub_port=hub_port, web_port=web_port)
    )
    echo = echo_bot(hub_port, tmp_path / "echo.token")
    web = f"http://127.0.0.1:{web_port}"
    try:
        await bridge.start()
        await echo.start()
        ready = json.loads(await eventually_status(f"{web}/readyz", 200))
        assert ready["status"] == "ready" and "down" not in ready
        async with aiohttp.ClientSession() as session:
            client = await open_client(session, f"ws://127.0.0.1:{web_port}/webchat/main/ws")
            await client.join("lobby", "Ada")
            await client.say("hello metrics")
            answer = await reply_from(client, "Echo")
        assert answer["html"].endswith("hello metrics") or "hello metrics" in answer["html"]

        status, text = await get(f"{web}/metrics")
        assert status == 200
        channel = "webchat:main"
        assert value(text, "bcn_bridge_messages_in_total", channel=channel) == 1
        assert (value(text, "bcn_bridge_messages_out_total", channel=channel) or 0) >= 1
        assert value(text, "bcn_bridge_relay_seconds_count", channel=channel) == 1
        assert value(text, "bcn_bridge_link_up") == 1
        assert value(text, "bcn_bridge_adapter_up", channel=channel) == 1
        assert value(text, "bcn_bridge_outbox_depth") == 0
        assert value(text, "bcn_bridge_conversations_open") == 0
        # The webchat posts in process: a reply to a person is posted during its delivery,
        # never queued in the outbox (`Outbox.post_now`).
        assert (value(text, "bcn_bridge_outputs_queued_total", channel=channel,
                      kind="final") or 0) == 0

        status, hub_text = await get(f"http://127.0.0.1:{hub_port}/metrics")
        assert status == 200
        assert value(hub_text, "bcn_hub_bots_online") == 1
        assert value(hub_text, "bcn_hub_links") == 1
        assert value(hub_text, "bcn_hub_runs_started_total") == 1
        assert value(hub_text, "bcn_hub_runs_ended_total", state="final") == 1
        assert value(hub_text, "bcn_hub_runs_running") == 0
        assert "bcn_bridge_" not in hub_text  # each process serves its own registry

        status, health = await get(f"{web}/healthz")
        assert status == 200 and json.loads(health)["status"] == "ok"
    finally:
        await echo.stop()
        await bridge.stop()


async def test_readyz_names_a_lost_bcn_link_and_recovers(tmp_path: Path) -> None:
    hub, bridge, hub_port, web_port = hub_and_webchat_bridge(tmp_path)
    readyz = f"http://127.0.0.1:{web_port}/readyz"
    try:
        await hub.start()
        await bridge.start()
        await eventually_status(readyz, 200)

        await hub.kill()
        down = json.loads(await eventually_status(readyz, 503))
        assert down["status"] == "not ready"
        assert list(down["down"]) == ["bcn"]
        assert f"127.0.0.1:{hub_port}" in down["down"]["bcn"]
        _, text = await get(f"http://127.0.0.1:{web_port}/metrics")
        assert value(text, "bcn_bridge_link_up") == 0
        status, _ = await get(f"http://127.0.0.1:{web_port}/healthz")
        assert status == 200  # alive all the same: nothing to restart

        await hub.start()
        await eventually_status(readyz, 200)
    finally:
        await bridge.stop()
        await hub.stop()
