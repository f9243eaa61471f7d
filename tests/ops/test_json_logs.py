"""JSON logs: every line a process prints is one JSON object, the path of a message is tied
together by its ids, and no secret gets in."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

import aiohttp
import pytest
from ops_support import WAIT, echo_bot, free_port, webchat_bridge_config

from tests.support.bridge_process import REPO, BridgeProcess, HubProcess, write_config
from tests.webchat.webchat_clients import open_client

LINK_TOKEN = "link-token-never-logged-4711"


def objects(lines: list[str]) -> list[dict]:  # type: ignore[type-arg]
    """Every line parsed; a line that is not one JSON object fails the test."""
    parsed = []
    for line in lines:
        try:
            item = json.loads(line)
        except ValueError:
            raise AssertionError(f"not a JSON line: {line!r}") from None
        assert isinstance(item, dict), line
        assert {"time", "level", "logger", "message"} <= item.keys(), line
        parsed.append(item)
    return parsed


@pytest.mark.slow
async def test_a_bridge_logging_json_from_its_config(tmp_path: Path) -> None:
    hub_port, web_port = free_port(), free_port()
    hub = HubProcess(write_config(tmp_path / "hub.yaml", {
        "hub": {"listen": f"127.0.0.1:{hub_port}", "data_dir": str(tmp_path / "hub"),
                "link_tokens": [LINK_TOKEN], "bot_reply_default": "observe",
                "groups": [{"id": "demo", "driver": "Echo", "bots": ["Echo"]}]},
        "log": {"format": "json", "level": "info"},
    }))
    bridge = BridgeProcess(webchat_bridge_config(
        tmp_path / "bridge.yaml", hub_port=hub_port, web_port=web_port, hub=None,
        bcn={"url": f"ws://127.0.0.1:{hub_port}", "token": LINK_TOKEN},
        log={"format": "json", "level": "debug"},
    ))
    echo = echo_bot(hub_port, tmp_path / "echo.token", "--log-format", "json")
    try:
        await hub.start()
        await bridge.start()
        await echo.start()
        async with aiohttp.ClientSession() as session:
            client = await open_client(session, f"ws://127.0.0.1:{web_port}/webchat/main/ws")
            await client.join("lobby", "Ada")
            await client.say("trace me")
            async with asyncio.timeout(WAIT):
                while True:
                    message = (await client.next_frame()).get("message") or {}
                    if message.get("kind") == "final" and message["sender"]["name"] == "Echo":
                        break
        queued = await bridge.wait_for_line("reply (run")
    finally:
        await echo.stop()
        await bridge.stop()
        await hub.stop()

    bridge_lines = objects(bridge.lines)
    assert any("bcn-bridge up" in line["message"] for line in bridge_lines)  # the banner too
    handed = [line for line in bridge_lines if line["message"].startswith("handing message")]
    assert handed and handed[0]["channel"] == "webchat:main" and handed[0]["chat"] == "lobby"
    message_id = handed[0]["message_id"]
    reply = json.loads(queued)
    assert reply["message_id"] == message_id and reply["binding"]  # one id ties both ends
    assert any(line.get("lane", "").startswith("webchat:main|lobby") for line in bridge_lines)
    hub_lines = objects(hub.lines)
    assert any("hub listening on" in line["message"] for line in hub_lines)
    assert objects(echo.lines)
    for process in (hub, bridge, echo):
        assert LINK_TOKEN not in process.log()


def test_config_errors_are_json_lines_too(tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text("web:\n  listen: nowhere\nbindings:\n  - chat: x\n", encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "bridge.cli", "run", "-c", str(path), "--log-format", "json"],
        cwd=REPO, capture_output=True, text=True, timeout=60,
    )
    assert done.returncode == 2
    lines = objects([line for line in (done.stdout + done.stderr).splitlines() if line])
    assert any("web.listen" in line["message"] for line in lines)
    assert any("bindings[0].channel" in line["message"] for line in lines)
    assert {line["level"] for line in lines} == {"ERROR"}
