"""`bcn-bridge run` itself, as a subprocess, in both modes: fake Slack in this process, the
embedded hub in the bridge process, and the example bots started here against that hub."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from slack_support import ADA, CHANNEL, SECRETS

from bridge.demo import start_demo_bots
from tests.fakes.slack import APP_TOKEN, BOT_TOKEN, SIGNING_SECRET, FakeSlack, post_signed

ROOT = Path(__file__).resolve().parents[2]
PATIENCE = 30.0
"""A whole second process on a shared machine: be patient (no test asserts a duration)."""

pytestmark = pytest.mark.slow


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def config_text(tmp_path: Path, fake: FakeSlack, mode: str, hub_port: int, web_port: int) -> str:
    secret = ("      app_token: ${SLACK_APP_TOKEN}" if mode == "socket"
              else "      signing_secret: ${SLACK_SIGNING_SECRET}")
    return f"""
hub:
  listen: 127.0.0.1:{hub_port}
  data_dir: {tmp_path / "hub"}
  bot_reply_default: observe
  groups:
    - {{id: demo, driver: Echo, bots: [Echo, Rules], auto_join: true}}
bcn: {{url: embedded}}
store: sqlite:///{tmp_path / "bridge.db"}
web: {{enabled: {str(mode == "http").lower()}, listen: "127.0.0.1:{web_port}"}}
accounts:
  slack:
    main:
      bot_token: ${{SLACK_BOT_TOKEN}}
      mode: {mode}
{secret}
      api_base_url: {fake.api_url}
bindings:
  - {{channel: "slack:main", chat: "{CHANNEL}", group: demo}}
"""


@dataclass
class BridgeProcess:
    process: asyncio.subprocess.Process
    log: Path
    hub_url: str
    web_url: str
    bots: list[Any] = field(default_factory=list)

    def log_text(self) -> str:
        return self.log.read_text(encoding="utf-8", errors="replace")

    async def start_bots(self, tmp_path: Path) -> None:
        self.bots = await start_demo_bots(self.hub_url, tmp_path)

    async def stop(self) -> int:
        for bot in self.bots:
            await bot.stop()
        self.bots = []
        if self.process.returncode is None:
            self.process.send_signal(signal.SIGTERM)
        async with asyncio.timeout(PATIENCE):
            return await self.process.wait()


@pytest.fixture
async def run_bridge(tmp_path: Path, fake: FakeSlack) -> AsyncIterator[Any]:
    started: list[BridgeProcess] = []

    async def run(mode: str) -> BridgeProcess:
        hub_port, web_port = free_port(), free_port()
        config = tmp_path / "bridge.yaml"
        config.write_text(config_text(tmp_path, fake, mode, hub_port, web_port))
        env = {**os.environ, "SLACK_BOT_TOKEN": BOT_TOKEN, "SLACK_APP_TOKEN": APP_TOKEN,
               "SLACK_SIGNING_SECRET": SIGNING_SECRET, "NO_PROXY": "127.0.0.1,localhost"}
        log = tmp_path / "bridge.log"
        with log.open("wb") as sink:
            process = await asyncio.create_subprocess_exec(
                sys.executable, "-m", "bridge.cli", "run", "-c", str(config),
                "--log-level", "DEBUG", cwd=ROOT, env=env,
                stdout=asyncio.subprocess.DEVNULL, stderr=sink,
            )
        running = BridgeProcess(process, log, f"ws://127.0.0.1:{hub_port}",
                                f"http://127.0.0.1:{web_port}")
        started.append(running)
        return running

    yield run
    for running in started:
        await running.stop()


def echoed(fake: FakeSlack) -> list[str]:
    return [m["text"] for m in fake.posts(CHANNEL) if m.get("username") == "Echo"]


async def answered(fake: FakeSlack, text: str) -> None:
    await fake.wait_until(lambda: text in echoed(fake), PATIENCE)


def assert_clean_log(bridge: BridgeProcess) -> None:
    log = bridge.log_text()
    assert "slack:main connected as @bcn-bridge" in log
    assert "slack_sdk" in log  # debug lines of the library were written
    for secret in SECRETS:
        assert secret not in log
    assert "Traceback" not in log


async def test_run_in_socket_mode(
    run_bridge: Any, fake: FakeSlack, tmp_path: Path
) -> None:
    bridge = await run_bridge("socket")
    await fake.wait_until(lambda: fake.connected, PATIENCE)
    await bridge.start_bots(tmp_path)

    await fake.push(fake.human_message(CHANNEL, ADA, "hello from slack"))
    await answered(fake, "hello from slack")
    await fake.disconnect("refresh_requested")
    await fake.wait_until(lambda: fake.sockets_opened == 2 and fake.connected == 1, PATIENCE)
    await fake.push(fake.human_message(CHANNEL, ADA, "after the refresh"))
    await answered(fake, "after the refresh")

    assert fake.calls_to("chat.update")  # the reply streamed into place
    assert await bridge.stop() == 0
    assert echoed(fake) == ["hello from slack", "after the refresh"]
    assert_clean_log(bridge)


async def test_run_in_http_mode(run_bridge: Any, fake: FakeSlack, tmp_path: Path) -> None:
    bridge = await run_bridge("http")
    fake.events_url = f"{bridge.web_url}/slack/main/events"
    async with asyncio.timeout(PATIENCE):
        while True:  # the route answers 503 until the account has started
            try:
                status, text = await fake.url_verification("ready?")
            except OSError:
                status = 0
            if status == 200:
                break
            await asyncio.sleep(0.1)
    assert text == '{"challenge": "ready?"}'
    await bridge.start_bots(tmp_path)

    forged, _ = await post_signed(fake.events_url, "{}", secret="not-the-secret")
    first = await fake.push(fake.human_message(CHANNEL, ADA, "hello over http"))
    await answered(fake, "hello over http")
    again = await fake.redeliver(first)
    await fake.push(fake.human_message(CHANNEL, ADA, "second message"))
    await answered(fake, "second message")

    assert (forged, first.status, again.status) == (401, 200, 200)
    assert await bridge.stop() == 0
    assert echoed(fake) == ["hello over http", "second message"]
    assert fake.connections_opened == 0
    assert_clean_log(bridge)
    assert bridge.log_text().count("refused a request") == 1
