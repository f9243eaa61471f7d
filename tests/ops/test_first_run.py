"""A first run without surprises: each thing a newcomer tripped over, tried again as they would."""

from __future__ import annotations

import asyncio
import re
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from ops_support import free_port

from bridge import __version__
from bridge.bcn.examples.echo import build_echo_bot
from bridge.cli import COMMAND_MODULES, build_parser
from bridge.core.registry import ADAPTERS, cli_modules
from bridge.demo import DEMO_CONFIG, demo_config
from bridge.hub import Hub
from bridge.hub.config import HubConfig
from tests.support.bridge_process import REPO, write_config

TRACEBACK = "Traceback (most recent call last)"


def bcn_bridge(*args: str, env: dict[str, str] | None = None,
               cwd: Path = REPO) -> subprocess.CompletedProcess[str]:
    """`bcn-bridge ARGS` as a process of this checkout."""
    import os

    environ = {**os.environ, "NO_PROXY": "127.0.0.1,localhost", **(env or {})}
    for name in [k for k, v in (env or {}).items() if v is None]:
        environ.pop(name)
    return subprocess.run([sys.executable, "-m", "bridge.cli", *args], cwd=cwd, env=environ,
                          capture_output=True, text=True, timeout=90)


def error_lines(done: subprocess.CompletedProcess[str]) -> list[str]:
    return [line for line in (done.stdout + done.stderr).splitlines() if "ERROR" in line]


def test_an_unreachable_telegram_stops_the_bridge_with_one_line(tmp_path: Path) -> None:
    closed = free_port()  # nothing listens there
    config = write_config(tmp_path / "bridge.yaml", {
        "hub": {"listen": "127.0.0.1:0", "data_dir": str(tmp_path / "hub"),
                "groups": [{"id": "team", "bots": []}]},
        "bcn": {"url": "embedded"},
        "store": f"sqlite:///{tmp_path / 'bridge.db'}",
        "web": {"enabled": False},
        "accounts": {"telegram": {"main": {
            "token": "123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsawQ",
            "api_base_url": f"http://127.0.0.1:{closed}/", "connect_timeout": 2}}},
        "bindings": [{"channel": "telegram:main", "chat": "-100123", "group": "team"}],
    })
    done = bcn_bridge("run", "-c", str(config))

    assert done.returncode == 1
    assert TRACEBACK not in done.stderr + done.stdout
    [line] = error_lines(done)
    assert "could not start: telegram:main could not reach the Bot API" in line
    assert "accounts.telegram.main.api_base_url" in line  # what to do
    assert "AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsawQ" not in done.stderr


def test_a_busy_web_port_suggests_port_and_port_moves_it(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        config = write_config(tmp_path / "bridge.yaml", {
            "hub": {"listen": "127.0.0.1:0", "data_dir": str(tmp_path / "hub"),
                    "groups": [{"id": "demo", "bots": []}]},
            "store": "memory://",
            "web": {"listen": f"127.0.0.1:{port}"},
            "accounts": {"webchat": {"main": {}}},
            "bindings": [{"channel": "webchat:main", "chat": "lobby", "group": "demo"}],
        })
        done = bcn_bridge("run", "-c", str(config))

    assert done.returncode == 1 and TRACEBACK not in done.stderr
    [line] = error_lines(done)
    assert f"web.listen 127.0.0.1:{port} is already in use" in line
    assert "pass --port PORT" in line


async def test_port_overrides_the_web_listen_port(tmp_path: Path) -> None:
    from ops_support import eventually_status

    from tests.support.bridge_process import ServiceProcess

    config = write_config(tmp_path / "bridge.yaml", {
        "hub": {"listen": "127.0.0.1:0", "data_dir": str(tmp_path / "hub"),
                "groups": [{"id": "demo", "bots": []}]},
        "store": "memory://", "web": {"listen": "127.0.0.1:1"},
        "accounts": {"webchat": {"main": {}}},
        "bindings": [{"channel": "webchat:main", "chat": "lobby", "group": "demo"}],
    })
    port = free_port()
    bridge = ServiceProcess(["run", "-c", str(config), "--port", str(port)], "bcn-bridge up")
    try:
        await bridge.start()
        await eventually_status(f"http://127.0.0.1:{port}/readyz", 200)
    finally:
        await bridge.stop()


async def test_example_bot_without_its_token_ends_on_a_taken_name(tmp_path: Path) -> None:
    hub = Hub(HubConfig(listen="127.0.0.1:0", data_dir=tmp_path / "hub"))
    await hub.start()
    first = build_echo_bot(f"{hub.url}/ws/bot", name="Echo", token_file=tmp_path / "t")
    try:
        await first.start(timeout=10)
        await first.stop()  # gone, but the hub keeps the name for its token
        process = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "bridge.cli", "example-bot", "echo", "--url",
            f"{hub.url}/ws/bot", "--name", "Echo", cwd=REPO,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        )
        _, err = await asyncio.wait_for(process.communicate(), 60)
    finally:
        await hub.stop()

    assert process.returncode == 1  # ended, instead of retrying forever
    text = err.decode()
    assert "BCN refused the bot: the name 'Echo' is taken" in text
    assert "--token-file" in text and "reconnecting" not in text


def test_the_hub_example_names_the_variable_it_needs() -> None:
    done = bcn_bridge("hub", "-c", "config/hub.example.yaml", env={"BCN_LINK_TOKEN": None})

    assert done.returncode == 2 and TRACEBACK not in done.stderr
    assert "hub.link_tokens[0]: environment variable BCN_LINK_TOKEN is not set" in done.stderr
    example = (REPO / "config" / "hub.example.yaml").read_text(encoding="utf-8").splitlines()
    line = next(n for n, text in enumerate(example, start=1) if "link_tokens:" in text)
    assert f"hub.example.yaml:{line}" in done.stderr


def test_every_environment_variable_of_the_examples_is_documented() -> None:
    operations = (REPO / "docs" / "operations.md").read_text(encoding="utf-8")
    files = [*sorted((REPO / "config").glob("*.yaml")), *sorted((REPO / "deploy").rglob("*.yaml"))]
    needed = {
        name
        for path in files
        for name in re.findall(r"\$\{([A-Za-z_][A-Za-z0-9_]*)", path.read_text(encoding="utf-8"))
    }
    needed.discard("VAR")  # how the examples spell the syntax itself
    assert {"BCN_LINK_TOKEN", "TELEGRAM_BOT_TOKEN", "HOSTNAME"} <= needed
    missing = sorted(name for name in needed if f"`{name}`" not in operations)
    assert missing == [], f"docs/operations.md does not list {missing}"


def test_config_errors_of_every_section_come_in_one_pass(tmp_path: Path) -> None:
    config = tmp_path / "bridge.yaml"
    config.write_text(
        "hub:\n  groups: [{id: team, bots: [Echo]}]\n"
        "web:\n  listen: nonsense\n"
        "accounts:\n  telegram:\n    main:\n      token: ${NO_SUCH_TOKEN}\n"
        "bindings:\n"
        "  - {channel: 'telegram:mian', chat: '-100', group: teem}\n"
        "  - {channel: 'telegram:main', chat: '-200', grop: team}\n",
        encoding="utf-8",
    )
    done = bcn_bridge("config", "check", str(config))

    assert done.returncode == 2
    found = done.stderr
    assert "6 problems in the config" in found
    for where in ("web.listen", "accounts.telegram.main.token: environment variable NO_SUCH_TOKEN",
                  "bindings[0].channel: no account 'telegram:mian'",
                  "bindings[0].group: unknown group 'teem'", "bindings[1].group: required",
                  "bindings[1].grop: unknown key"):
        assert where in found, where


def test_help_offers_only_what_this_build_has() -> None:
    parser = build_parser()
    text = parser.format_help()
    for platform in ("Discord", "Slack", "Telegram"):
        assert (platform in text) == (platform.lower() in ADAPTERS), platform
    listed = re.findall(r"^    (\S+)", text, flags=re.MULTILINE)
    commands = {name.rpartition(".")[2].replace("_", "-") for name in COMMAND_MODULES}
    commands |= set(cli_modules())  # a platform's own commands, named by its channel type
    assert set(listed) == commands
    for command in listed:
        assert bcn_bridge(command, "--help").returncode == 0, command


def test_the_demo_keeps_its_state_where_demo_yaml_says(tmp_path: Path) -> None:
    written = DEMO_CONFIG.read_text(encoding="utf-8")
    [store] = re.findall(r"^store: sqlite:///\./data/(\S+)", written, flags=re.MULTILINE)
    [hub_dir] = re.findall(r"^  data_dir: \./data/(\S+)", written, flags=re.MULTILINE)
    config = demo_config(tmp_path)
    assert config.store == f"sqlite:///{tmp_path / store}"
    assert config.hub is not None and config.hub.data_dir == tmp_path / hub_dir
    assert (REPO / "config" / "demo.yaml").read_text(encoding="utf-8") == written


def test_version_license_and_changelog() -> None:
    done = bcn_bridge("--version")
    assert done.returncode == 0 and done.stdout.strip() == f"bcn-bridge {__version__}"
    pyproject = (REPO / "pyproject.toml").read_text(encoding="utf-8")
    assert f'version = "{__version__}"' in pyproject and 'license = { text = "MIT" }' in pyproject
    assert (REPO / "LICENSE").read_text(encoding="utf-8").startswith("MIT License")
    changelog = (REPO / "CHANGELOG.md").read_text(encoding="utf-8")
    assert f"## {__version__}" in changelog and "## Unreleased" in changelog


OUTSIDE_NAMES = re.compile(
    r"\bseeds?\b(?! ?=)|seeds/|matterbridge|opsdroid|errbot|(?-i:CHANNEL_LINK)|"
    r"DESIGN\.md|DESIGN §|STYLE\.md", re.IGNORECASE,
)
"""Where the design came from: the project's own docs and code never point there (nor cite
sections of a design file this repository does not have). mautrix is not among them: it is
the Matrix adapter's library, which its docs name."""


@pytest.mark.parametrize("top", ["bridge", "adapters", "docs", "config", "deploy", "bench",
                                 "tests", "README.md", "CHANGELOG.md"])
def test_docs_and_code_speak_of_the_project_alone(top: str) -> None:
    root = REPO / top
    paths = [root] if root.is_file() else [
        p for p in root.rglob("*") if p.is_file() and "node_modules" not in p.parts
        and p.suffix in {".py", ".md", ".yaml", ".yml", ".js", ".html", ".css", ".toml",
                         ".service", ".json", ""}
    ]
    found = []
    for path in (p for p in paths if p != Path(__file__)):  # this file has to name them
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
        for number, line in enumerate(text.splitlines(), 1):
            if OUTSIDE_NAMES.search(line) and "random.seed" not in line:
                found.append(f"{path.relative_to(REPO)}:{number}: {line.strip()}")
    assert found == []
