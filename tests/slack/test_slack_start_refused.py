"""`bcn-bridge run` as a real process, against a fake Slack that refuses the bot token:
one line that names the key to check, exit 1, no traceback, no token (issue 31 item 7)."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

import pytest
from slack_support import CHANNEL

from tests.fakes.slack import APP_TOKEN, FakeSlack

ROOT = Path(__file__).resolve().parents[2]
PATIENCE = 60.0
"""A whole second process on a shared machine (never asserted, only a bound on waiting)."""
STALE = "xoxb-1111111111-2222222222-ThisTokenWasRevokedLongAgo"
"""A well-formed bot token the fake does not know: `auth.test` answers `invalid_auth`."""

pytestmark = pytest.mark.slow


def config_text(tmp_path: Path, fake: FakeSlack) -> str:
    return f"""
hub:
  listen: 127.0.0.1:0
  data_dir: {tmp_path / "hub"}
  groups:
    - {{id: demo, bots: [Echo]}}
bcn: {{url: embedded}}
store: sqlite:///{tmp_path / "bridge.db"}
web: {{enabled: false}}
accounts:
  slack:
    main:
      bot_token: ${{SLACK_BOT_TOKEN}}
      app_token: ${{SLACK_APP_TOKEN}}
      mode: socket
      api_base_url: {fake.api_url}
bindings:
  - {{channel: "slack:main", chat: "{CHANNEL}", group: demo}}
"""


async def test_a_refused_bot_token_stops_run_with_one_line(
    tmp_path: Path, fake: FakeSlack
) -> None:
    config = tmp_path / "bridge.yaml"
    config.write_text(config_text(tmp_path, fake))
    env = {**os.environ, "SLACK_BOT_TOKEN": STALE, "SLACK_APP_TOKEN": APP_TOKEN,
           "NO_PROXY": "127.0.0.1,localhost", "no_proxy": "127.0.0.1,localhost"}
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "bridge.cli", "run", "-c", str(config), cwd=ROOT, env=env,
        stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    try:
        async with asyncio.timeout(PATIENCE):
            output, _ = await process.communicate()
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
    log = output.decode("utf-8", "replace")

    assert process.returncode == 1, log
    assert "Traceback" not in log
    errors = [line for line in log.splitlines() if "ERROR" in line]
    assert len(errors) == 1, log
    assert "could not start: slack:main: Slack rejected the bot token" in errors[0]
    assert "accounts.slack.main.bot_token" in errors[0]  # what to fix
    assert STALE not in log
    assert [call.method for call in fake.calls] == ["auth.test"]  # it stopped right there
