"""`bcn-bridge doctor -c FILE` as a process, against a real hub and the fake Telegram and Slack."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from bridge.hub import Hub
from bridge.hub.config import HubConfig
from bridge.store import open_store
from tests.fakes.slack import APP_TOKEN, BOT_TOKEN, FakeSlack
from tests.fakes.telegram import FakeTelegram
from tests.support.bridge_process import REPO, free_port, write_config

TG_TOKEN = "123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsawQ"
LINK_TOKEN = "doctor-link-token-0042"


@pytest.fixture
async def platforms() -> AsyncIterator[tuple[FakeTelegram, FakeSlack]]:
    telegram, slack = FakeTelegram(), FakeSlack()
    telegram.add_bot(TG_TOKEN, "BridgeBot")
    await telegram.start()
    await slack.start()
    yield telegram, slack
    await slack.stop()
    await telegram.stop()


@pytest.fixture
async def hub(tmp_path: Path) -> AsyncIterator[Hub]:
    running = Hub(HubConfig(listen="127.0.0.1:0", data_dir=tmp_path / "hub",
                            link_tokens=[LINK_TOKEN],
                            groups=[{"id": "team", "bots": ["Echo"]}],  # type: ignore[list-item]
                            bots=[{"name": "Echo", "token": "echo-token-0042"}]))  # type: ignore[list-item]
    await running.start()
    yield running
    await running.stop()


def deployment(tmp_path: Path, hub: Hub, telegram: FakeTelegram, slack: FakeSlack,
               **changes: Any) -> Path:
    config: dict[str, Any] = {
        "bcn": {"url": hub.url, "token": LINK_TOKEN},
        "store": f"sqlite:///{tmp_path / 'bridge.db'}",
        "web": {"listen": f"127.0.0.1:{free_port()}"},
        "accounts": {
            "telegram": {"main": {"token": TG_TOKEN, "api_base_url": telegram.url,
                                  "connect_timeout": 2, "read_timeout": 2}},
            "slack": {"main": {"bot_token": BOT_TOKEN, "app_token": APP_TOKEN,
                               "api_base_url": slack.api_url, "request_timeout": 5}},
        },
        "bindings": [
            {"channel": "telegram:main", "chat": "-100123", "group": "team"},
            {"channel": "slack:main", "chat": "C0123ABCD", "group": "team"},
        ],
    }
    for key, value in changes.items():
        config[key] = {**config[key], **value} if isinstance(value, dict) else value
    return write_config(tmp_path / "bridge.yaml", config)


async def doctor(config: Path) -> tuple[int, list[str]]:
    """Run `bcn-bridge doctor -c FILE`; its exit code and output lines."""
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "bridge.cli", "doctor", "-c", str(config), cwd=REPO,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
    )
    output, _ = await asyncio.wait_for(process.communicate(), 120)
    assert process.returncode is not None
    return process.returncode, output.decode().splitlines()


def line_about(lines: list[str], fragment: str) -> str:
    [line] = [line for line in lines if fragment in line]
    return line


async def test_a_healthy_deployment_passes_every_check(
    tmp_path: Path, hub: Hub, platforms: tuple[FakeTelegram, FakeSlack]
) -> None:
    telegram, slack = platforms
    code, lines = await doctor(deployment(tmp_path, hub, telegram, slack))

    assert code == 0, "\n".join(lines)
    assert all(line.startswith(("✓", "!")) for line in lines), lines
    assert line_about(lines, "config ").startswith("✓")
    assert "not created yet" in line_about(lines, "store sqlite")  # and left so
    assert not (tmp_path / "bridge.db").exists()
    assert "link accepted" in line_about(lines, "BCN ws://")
    assert "1 bot(s), online: none yet" in line_about(lines, "BCN group team")
    assert "@BridgeBot" in line_about(lines, "telegram:main: logged in")
    assert line_about(lines, "telegram:main: no webhook").startswith("✓")
    assert line_about(lines, "slack:main: logged in").startswith("✓")
    assert line_about(lines, "slack:main: has the scopes").startswith("✓")
    assert line_about(lines, "Socket Mode accepts").startswith("✓")
    assert [call for call in slack.calls if call.method == "apps.connections.open"]
    assert not slack.sockets_opened  # checked, not connected
    assert not telegram.calls_to("getUpdates")  # nothing polled


async def test_a_store_that_exists_is_written_and_read_back(
    tmp_path: Path, hub: Hub, platforms: tuple[FakeTelegram, FakeSlack]
) -> None:
    telegram, slack = platforms
    config = deployment(tmp_path, hub, telegram, slack)
    async with open_store(f"sqlite:///{tmp_path / 'bridge.db'}"):
        pass  # what a first run leaves
    code, lines = await doctor(config)
    assert code == 0, "\n".join(lines)
    assert "opened, written and read back" in line_about(lines, "store sqlite")


async def test_doctor_creates_nothing_where_it_runs(tmp_path: Path) -> None:
    """A first-time user's `doctor -c config/demo.yaml` left ./data/*.db behind: a store and a
    hub folder not created yet are checked to be creatable, and left uncreated."""
    data = tmp_path / "data"
    config = write_config(tmp_path / "demo.yaml", {
        "hub": {"listen": f"127.0.0.1:{free_port()}", "data_dir": str(data / "hub"),
                "groups": [{"id": "demo", "bots": []}]},
        "bcn": {"url": "embedded"},
        "store": f"sqlite:///{data / 'demo.db'}",
        "web": {"listen": f"127.0.0.1:{free_port()}"},
        "accounts": {"webchat": {"main": {}}},
        "bindings": [{"channel": "webchat:main", "chat": "lobby", "group": "demo"}],
    })
    code, lines = await doctor(config)
    assert code == 0, "\n".join(lines)
    assert "not created yet" in line_about(lines, "store sqlite")
    assert "not created yet" in line_about(lines, "hub.data_dir")
    assert not data.exists()

    # A path under a file can never be created (whoever runs it, root too).
    (tmp_path / "a-file").write_text("", encoding="utf-8")
    impossible = write_config(tmp_path / "impossible.yaml", {
        **yaml.safe_load(config.read_text(encoding="utf-8")),
        "store": f"sqlite:///{tmp_path / 'a-file' / 'sub' / 'demo.db'}"})
    code, lines = await doctor(impossible)
    assert code != 0 and line_about(lines, "store sqlite").startswith("✗")


async def test_each_broken_part_is_one_line_with_its_fix(
    tmp_path: Path, hub: Hub, platforms: tuple[FakeTelegram, FakeSlack]
) -> None:
    telegram, slack = platforms
    slack.scopes = ["chat:write", "users:read"]
    wrong_tg = "123456789:AAwrongwrongwrongwrongwrongwrongwro"
    config = deployment(
        tmp_path, hub, telegram, slack,
        bcn={"token": "not-the-link-token"},
        accounts={
            "telegram": {"main": {"token": wrong_tg, "api_base_url": telegram.url}},
            "slack": {"main": {"bot_token": BOT_TOKEN, "app_token": "xapp-1-wrong-app-token",
                               "api_base_url": slack.api_url, "request_timeout": 5}},
        },
    )
    code, lines = await doctor(config)

    assert code == 1
    bcn = line_about(lines, "refused bcn.token")
    assert bcn.startswith("✗") and "fix: set bcn.token" in bcn
    token = line_about(lines, "rejected the bot token")
    assert token.startswith("✗") and "accounts.telegram.main.token" in token
    scopes = line_about(lines, "missing scopes")
    assert scopes.startswith("✗") and "channels:history" in scopes and "commands" in scopes
    assert line_about(lines, "chat:write.customize").startswith("!")
    app = line_about(lines, "app token")
    assert app.startswith("✗") and "accounts.slack.main.app_token" in app
    output = "\n".join(lines)
    for secret in (wrong_tg.partition(":")[2], "not-the-link-token", "xapp-1-wrong-app-token"):
        assert secret not in output


async def test_a_bound_group_the_bcn_lacks_fails(
    tmp_path: Path, hub: Hub, platforms: tuple[FakeTelegram, FakeSlack]
) -> None:
    telegram, slack = platforms
    config = deployment(tmp_path, hub, telegram, slack, bindings=[
        {"channel": "telegram:main", "chat": "-100123", "group": "nowhere"},
    ])
    code, lines = await doctor(config)

    assert code == 1
    group = line_about(lines, "BCN group nowhere")
    assert group.startswith("✗") and "unknown group" in group and "fix:" in group


async def test_an_invalid_config_lists_every_problem_and_stops_there(tmp_path: Path) -> None:
    config = tmp_path / "bad.yaml"
    config.write_text("store: nowhere://x\nweb:\n  listen: 99999\n", encoding="utf-8")
    code, lines = await doctor(config)

    assert code == 1
    assert lines[0].startswith("✗ config") and "3 problem(s)" in lines[0]  # bcn.url too
    assert any("store" in line for line in lines[1:]) and any("web.listen" in line
                                                              for line in lines[1:])
    assert not any("store " in line and "opened" in line for line in lines)


async def test_an_odd_webhook_info_is_one_line_not_a_traceback(
    tmp_path: Path, hub: Hub, platforms: tuple[FakeTelegram, FakeSlack]
) -> None:
    """Issue 31 item 7: the Bot API (or a proxy) answering getWebhookInfo with `true`."""
    telegram, slack = platforms
    telegram.answer_oddly("getWebhookInfo", {"ok": True, "result": True})
    code, lines = await doctor(deployment(tmp_path, hub, telegram, slack))

    assert code == 1
    assert not any("Traceback" in line for line in lines), "\n".join(lines)
    webhook = line_about(lines, "getWebhookInfo")
    assert webhook.startswith("✗ telegram:main:") and "api_base_url" in webhook
    assert line_about(lines, "slack:main: logged in").startswith("✓")  # the rest checked too
