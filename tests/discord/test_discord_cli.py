"""`bcn-bridge run` as a real process against the fake Discord, and the Discord CLI helpers."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import socket
import sys
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

import pytest
from discord_support import TOKEN, Server

import bridge.cli
from bridge.config import load_config
from bridge.demo import start_demo_bots
from tests.fakes.discord import BOT_ID, FakeDiscord

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "config" / "discord.example.yaml"
ELSEWHERE = "bcn:\n  url: ws://127.0.0.1:9/ws/channel\n  token: link-secret\n"
"""A BCN elsewhere, so a config needs no hub section."""
WAIT = 30.0
"""A whole process starting (imports included) on a busy machine; never asserted."""


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def write_config(tmp_path: Path, fake: FakeDiscord, server: Server, port: int,
                 token: str) -> Path:  # fmt: skip
    (tmp_path / "discord-token").write_text(token + "\n")
    config = tmp_path / "bridge.yaml"
    config.write_text(f"""
hub:
  listen: 127.0.0.1:{port}
  data_dir: {tmp_path / "hub"}
  bot_reply_default: observe
  groups:
    - {{id: demo, driver: Echo, bots: [Echo, Rules], auto_join: true}}
bcn: {{url: embedded}}
store: sqlite:///{tmp_path / "bridge.db"}
web: {{enabled: false}}
accounts:
  discord:
    main:
      token_file: {tmp_path / "discord-token"}
      api_base_url: {fake.api_url}
      gateway_url: {fake.gateway_url}
      guild_ready_timeout: 0.05
bindings:
  - {{channel: "discord:main", chat: "{server.general}", group: demo}}
""")
    return config


class BridgeProcess:
    """`python -m bridge.cli run -c FILE` from this worktree, its stderr collected."""

    def __init__(self, config: Path) -> None:
        self.config = config
        self.process: asyncio.subprocess.Process | None = None
        self.stderr: list[str] = []
        self._reader: asyncio.Task[None] | None = None

    async def start(self) -> None:
        env = {**os.environ, "NO_PROXY": "127.0.0.1,localhost", "no_proxy": "127.0.0.1,localhost"}
        self.process = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "bridge.cli", "run", "-c", str(self.config),
            cwd=ROOT, env=env, stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.PIPE,
        )
        self._reader = asyncio.create_task(self._read())

    async def _read(self) -> None:
        assert self.process is not None and self.process.stderr is not None
        async for line in self.process.stderr:
            self.stderr.append(line.decode(errors="replace"))

    async def wait(self) -> int:
        assert self.process is not None
        async with asyncio.timeout(WAIT):
            code = await self.process.wait()
            if self._reader is not None:
                await self._reader
        return code

    async def terminate(self) -> int:
        assert self.process is not None
        if self.process.returncode is None:
            self.process.send_signal(signal.SIGTERM)
        return await self.wait()

    async def kill(self) -> None:
        if self.process is not None and self.process.returncode is None:
            self.process.kill()
            with contextlib.suppress(Exception):
                await self.process.wait()
        if self._reader is not None:
            self._reader.cancel()

    @property
    def log(self) -> str:
        return "".join(self.stderr)


@pytest.fixture
async def bridge_process(tmp_path: Path, fake: FakeDiscord, server: Server) -> Any:
    started: list[BridgeProcess] = []
    port = free_port()

    async def start(token: str = TOKEN) -> tuple[BridgeProcess, int]:
        process = BridgeProcess(write_config(tmp_path, fake, server, port, token))
        await process.start()
        started.append(process)
        return process, port

    yield start
    for process in started:
        await process.kill()


@pytest.mark.slow
async def test_bcn_bridge_run_relays_a_discord_channel(
    bridge_process, fake: FakeDiscord, server: Server, tmp_path: Path
) -> None:
    process, port = await bridge_process()
    await fake.wait_until(lambda: fake.identifies(), timeout=WAIT)
    bots = await start_demo_bots(f"ws://127.0.0.1:{port}", tmp_path, stream=False)
    try:
        await fake.wait_until(lambda: fake.commands.get(server.guild.id), timeout=WAIT)
        # The bridge learns about the bots from the hub; ask until Echo answers.
        async with asyncio.timeout(WAIT):
            while not [p for p in fake.from_bridge(server.general) if p.author == "Echo"]:
                fake.push_message(server.general, server.ada, "hello from a real process")
                with contextlib.suppress(TimeoutError):
                    await fake.wait_until(lambda: fake.from_bridge(server.general), timeout=5)
    finally:
        for bot in bots:
            await bot.stop()
    code = await process.terminate()

    [reply, *_] = [p for p in fake.from_bridge(server.general) if p.author == "Echo"]
    assert reply.content == "hello from a real process" and reply.webhook_id in fake.webhooks
    assert code == 0, process.log
    assert "Traceback" not in process.log and "voice will NOT be supported" not in process.log
    assert fake.token not in process.log


async def test_a_privileged_intent_switched_off_stops_run_with_one_line(
    bridge_process, fake: FakeDiscord
) -> None:
    fake.enable_intent("message_content", False)

    process, _ = await bridge_process()
    code = await process.wait()

    assert code == 1
    errors = [line for line in process.stderr if "ERROR" in line]
    assert len(errors) == 1 and "could not start: discord:main" in errors[0]
    assert "Message Content Intent" in errors[0] and "4014" in errors[0]
    assert "Traceback" not in process.log


async def test_a_rejected_token_stops_run_without_showing_it(
    bridge_process, fake: FakeDiscord
) -> None:
    stale = "OTg3NjU0MzIxMDk4NzY1NDMy.AbCdEf.a-token-that-was-reset-long-ago-0123456789"

    process, _ = await bridge_process(token=stale)
    code = await process.wait()

    assert code == 1 and "rejected the bot token" in process.log
    assert stale not in process.log and "Traceback" not in process.log


def test_invite_url_names_the_application_scopes_and_permissions(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DISCORD_BOT_TOKEN", TOKEN)

    assert bridge.cli.main(["discord", "invite-url", "-c", str(EXAMPLE)]) == 0

    url = urlparse(capsys.readouterr().out.strip())
    query = parse_qs(url.query)
    assert (url.netloc, url.path) == ("discord.com", "/oauth2/authorize")
    assert query["client_id"] == [str(BOT_ID)]  # read from the token itself
    assert query["scope"] == ["bot applications.commands"]
    wanted = (1 << 10) | (1 << 11) | (1 << 14) | (1 << 16) | (1 << 29) | (1 << 38)
    assert int(query["permissions"][0]) == wanted


def test_invite_url_uses_a_configured_application_id(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "bridge.yaml"
    config.write_text(f"{ELSEWHERE}accounts:\n  discord:\n    main:\n"
                      "      token: not-a-discord-token\n      application_id: '42424242'\n")

    assert bridge.cli.main(["discord", "invite-url", "-c", str(config)]) == 0

    assert "client_id=42424242" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("accounts:\n  discord:\n    main:\n      token: not-a-discord-token\n",
         "set accounts.discord.main.application_id"),
        ("bindings: []\n", "no accounts.discord"),
        ("accounts:\n  discord:\n    main:\n      tokn: typo\n", "tokn"),
    ],
)
def test_invite_url_explains_what_is_missing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, problem: str
) -> None:
    config = tmp_path / "bridge.yaml"
    config.write_text(ELSEWHERE + text)

    assert bridge.cli.main(["discord", "invite-url", "-c", str(config)]) == 2

    assert problem in capsys.readouterr().err


def test_the_shipped_example_config_passes_config_check(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DISCORD_BOT_TOKEN", TOKEN)

    assert bridge.cli.main(["config", "check", str(EXAMPLE)]) == 0

    out = capsys.readouterr().out
    assert "accounts: discord:main" in out and TOKEN not in out
    account = load_config(EXAMPLE, environ={"DISCORD_BOT_TOKEN": TOKEN}).account("discord:main")
    assert account.token.get_secret_value() == TOKEN  # type: ignore[attr-defined]
