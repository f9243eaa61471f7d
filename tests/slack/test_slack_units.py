"""Pure parts of the Slack adapter: config, error mapping, pacing, event reading, manifest."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError
from slack_sdk.errors import SlackApiError, SlackRequestError
from slack_sdk.web.async_slack_response import AsyncSlackResponse

from adapters.slack import SlackAccountConfig
from adapters.slack.commands import addressed_command, response_type
from adapters.slack.errors import send_error
from adapters.slack.inbound import message_of, thread_of
from adapters.slack.manifest import BOT_SCOPES, manifest
from adapters.slack.pacing import Pacer
from adapters.slack.redaction import HOOK_URL, SLACK_TOKEN, SOCKET_TICKET
from bridge.cli import main
from bridge.config import ConfigError, load_config
from bridge.config.sections import CommandNames
from bridge.core.adapter import PermanentSendError, TransientSendError
from bridge.logs import SecretRedactor
from tests.fakes.slack import APP_TOKEN, BOT_TOKEN, SIGNING_SECRET

ROOT = Path(__file__).parents[2]
REMOTE_BCN = "bcn: {url: ws://127.0.0.1:1, token: link-token}\n"

# -- config -------------------------------------------------------------------------------


def config(**values: Any) -> SlackAccountConfig:
    return SlackAccountConfig.model_validate({"bot_token": BOT_TOKEN, **values})


def test_socket_mode_is_the_default_and_needs_the_app_token_only() -> None:
    settings = config(app_token=APP_TOKEN)

    assert settings.mode == "socket" and settings.signing_secret is None
    assert settings.api_base_url == "https://slack.com/api/"
    with pytest.raises(ValidationError, match="socket mode needs app_token"):
        config()


def test_http_mode_needs_the_signing_secret_only() -> None:
    settings = config(mode="http", signing_secret=SIGNING_SECRET)

    assert settings.app_token is None
    assert settings.events_path("main") == "/slack/main/events"
    assert config(mode="http", signing_secret="s", path="/x").events_path("main") == "/x"
    with pytest.raises(ValidationError, match="http mode needs signing_secret"):
        config(mode="http", app_token=APP_TOKEN)


@pytest.mark.parametrize(
    ("values", "problem"),
    [
        ({"bot_token": "xoxp-user-token", "app_token": APP_TOKEN}, "starting with xoxb-"),
        ({"app_token": "xoxb-not-an-app-token"}, "starting with xapp-"),
        ({"app_token": APP_TOKEN, "api_base_url": "slack.com/api"}, "http:// or https://"),
        ({"app_token": APP_TOKEN, "path": "slack/events"}, 'starting with "/"'),
        ({"app_token": APP_TOKEN, "icons": {"Echo": "robot"}}, ":emoji:"),
        ({"app_token": APP_TOKEN, "tokn": "x"}, "Extra inputs"),
        ({"mode": "http", "signing_secret": " "}, "signing secret is empty"),
    ],
)
def test_bad_values_are_refused_with_a_clear_message(values: dict[str, Any], problem: str) -> None:
    with pytest.raises(ValidationError, match=problem) as raised:
        config(**values)

    assert BOT_TOKEN not in str(raised.value)


def test_the_api_root_always_ends_in_a_slash() -> None:
    settings = config(app_token=APP_TOKEN, api_base_url="http://127.0.0.1:9/api")

    assert settings.api_base_url == "http://127.0.0.1:9/api/"


def test_icons_are_urls_or_emoji_by_bot_name() -> None:
    settings = config(app_token=APP_TOKEN,
                      icons={"Echo": ":robot_face:", "Rules": "https://x.example/r.png"})

    assert settings.icon_for("echo") == {"icon_emoji": ":robot_face:"}
    assert settings.icon_for("Rules") == {"icon_url": "https://x.example/r.png"}
    assert settings.icon_for("Other") == {}


def test_the_shipped_example_config_is_valid() -> None:
    example = ROOT / "config" / "slack.example.yaml"
    environ = {"SLACK_BOT_TOKEN": BOT_TOKEN, "SLACK_APP_TOKEN": APP_TOKEN}

    loaded = load_config(example, environ=environ)

    account = loaded.account("slack:main")
    assert isinstance(account, SlackAccountConfig)
    assert account.bot_token.get_secret_value() == BOT_TOKEN
    assert [binding.channel for binding in loaded.bindings] == ["slack:main"]


def test_bcn_bridge_config_check_accepts_the_example() -> None:
    example = ROOT / "config" / "slack.example.yaml"
    env = {"SLACK_BOT_TOKEN": BOT_TOKEN, "SLACK_APP_TOKEN": APP_TOKEN, "PATH": ""}

    done = subprocess.run(
        [sys.executable, "-m", "bridge.cli", "config", "check", str(example)],
        cwd=ROOT, env=env, capture_output=True, text=True, check=False,
    )

    assert done.returncode == 0, done.stdout + done.stderr
    assert BOT_TOKEN not in done.stdout + done.stderr


def test_a_bot_token_from_a_file_works(tmp_path: Path) -> None:
    (tmp_path / "bot-token").write_text(BOT_TOKEN + "\n")
    path = tmp_path / "bridge.yaml"
    path.write_text(
        f"{REMOTE_BCN}accounts:\n  slack:\n    main:\n      bot_token_file: bot-token\n"
        "      mode: http\n      signing_secret: s3cret\n"
    )

    loaded = load_config(path, environ={})

    assert loaded.account("slack:main").bot_token.get_secret_value() == BOT_TOKEN  # type: ignore[attr-defined]


def test_a_missing_secret_is_reported_at_its_line(tmp_path: Path) -> None:
    path = tmp_path / "bridge.yaml"
    path.write_text(f"{REMOTE_BCN}accounts:\n  slack:\n    main:\n      bot_token: xoxb-1-2-3\n")

    with pytest.raises(ConfigError) as raised:
        load_config(path, environ={})

    assert str(raised.value).startswith(f"{path}:4: accounts.slack.main: socket mode needs")


# -- errors -------------------------------------------------------------------------------


def api_error(
    error: str, status: int = 200, headers: dict[str, str] | None = None
) -> SlackApiError:
    response = AsyncSlackResponse(
        client=None, http_verb="POST", api_url="https://slack.com/api/chat.postMessage",
        req_args={}, data={"ok": False, "error": error}, headers=headers or {},
        status_code=status,
    )  # type: ignore[arg-type]
    return SlackApiError("failed", response)


def test_a_429_carries_its_retry_after() -> None:
    error = send_error(api_error("ratelimited", 429, {"Retry-After": "12"}), "chat.update")

    assert isinstance(error, TransientSendError) and error.retry_after == 12


@pytest.mark.parametrize(
    ("error", "kind"),
    [
        (api_error("fatal_error"), TransientSendError),
        (api_error("", 502), TransientSendError),
        (TimeoutError(), TransientSendError),
        (OSError("connection refused"), TransientSendError),
        (api_error("missing_scope"), PermanentSendError),
        (api_error("invalid_auth"), PermanentSendError),
        (api_error("some_new_error"), PermanentSendError),
        (SlackRequestError("bad arguments"), PermanentSendError),
    ],
)
def test_errors_are_sorted_into_wait_and_give_up(error: Exception, kind: type) -> None:
    assert isinstance(send_error(error, "chat.postMessage"), kind)


# -- pacing -------------------------------------------------------------------------------


class FakeTime:
    """A clock that only moves when the pacer sleeps, recording every sleep."""

    def __init__(self) -> None:
        self.now = 100.0
        self.sleeps: list[float] = []

    def __call__(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds


async def test_the_pacer_allows_a_burst_then_spaces_calls() -> None:
    clock = FakeTime()
    pacer = Pacer(60, burst=3, clock=clock, sleep=clock.sleep)

    for _ in range(5):
        await pacer.wait()

    assert clock.sleeps == [1.0, 1.0]  # three at once, then one a second


async def test_a_hold_delays_the_next_turn_by_the_retry_after() -> None:
    clock = FakeTime()
    pacer = Pacer(60, burst=1, clock=clock, sleep=clock.sleep)
    await pacer.wait()

    pacer.hold(30)
    assert pacer.wait_time() == 30
    await pacer.wait()

    assert clock.sleeps == [30.0]


# -- reading events -----------------------------------------------------------------------


def test_a_thread_parent_is_a_channel_message() -> None:
    assert thread_of({"ts": "1.1", "thread_ts": "1.1"}) is None
    assert thread_of({"ts": "1.2", "thread_ts": "1.1"}) == "1.1"


def test_a_deleted_thread_parent_is_a_delete() -> None:
    event = {"type": "message", "subtype": "message_changed", "channel": "C1", "ts": "9.9",
             "message": {"subtype": "tombstone", "ts": "1.1", "text": "This message was deleted."},
             "previous_message": {"ts": "1.1", "text": "the plan", "user": "U1"}}

    found = message_of(event)

    assert found is not None and found.is_delete and found.message["text"] == "the plan"


@pytest.mark.parametrize(
    "text", ["<@UAPP> ask Rules go", "  <@UAPP|bcn-bridge>  ask Rules go", "<@UAPP>, ask Rules go"]
)
def test_asking_the_app_by_mention_is_the_command(text: str) -> None:
    assert addressed_command(text, "UAPP", ["ask"]) == "/ask Rules go"


def test_only_the_apps_own_mention_and_known_words_make_commands() -> None:
    assert addressed_command("<@UOTHER> ask Rules go", "UAPP", ["ask"]) is None
    assert addressed_command("<@UAPP> tell Rules go", "UAPP", ["ask"]) is None
    assert addressed_command("<@UAPP> help", "UAPP", ["ask"]) == "/help"


def test_answers_that_change_the_channel_are_shown_to_everyone() -> None:
    names = CommandNames(stop="halt")

    assert response_type("/halt", names) == "in_channel"
    assert response_type("/new", names) == "in_channel"
    assert response_type("/requests", names) == "ephemeral"
    assert response_type("/ask", names) == "ephemeral"


def test_slack_secrets_are_masked_by_shape() -> None:
    redactor = SecretRedactor()
    redactor.add_pattern(SLACK_TOKEN)
    redactor.add_pattern(SOCKET_TICKET)
    redactor.add_pattern(HOOK_URL)
    line = (f"token {BOT_TOKEN} app {APP_TOKEN} url wss://x/link/?ticket=abc123&app_id=A1 "
            "'response_url': 'https://hooks.slack.com/commands/T0/123/aBcDeF'")

    assert redactor.redact(line) == (
        "token <redacted> app <redacted> url wss://x/link/?ticket=<redacted>&app_id=A1 "
        "'response_url': 'https://hooks.slack.com/<redacted>'"
    )


# -- the manifest -------------------------------------------------------------------------


def test_the_socket_manifest_turns_socket_mode_on_and_has_no_urls() -> None:
    document = manifest(mode="socket", commands=CommandNames(new=False))

    assert document["settings"]["socket_mode_enabled"] is True
    assert "request_url" not in document["settings"]["event_subscriptions"]
    commands = document["features"]["slash_commands"]
    assert [c["command"] for c in commands] == ["/ask", "/requests", "/stop"]
    assert all("url" not in c for c in commands)
    assert "chat:write.customize" in document["oauth_config"]["scopes"]["bot"]


def test_the_manifest_lets_people_message_the_app_when_dms_are_bindable() -> None:
    """DMs are bindable (message.im is subscribed), and Slack lets people write to an app
    only with its App Home Messages tab on and writable."""
    document = manifest(mode="socket")
    assert "message.im" in document["settings"]["event_subscriptions"]["bot_events"]
    home = document["features"]["app_home"]
    assert home["messages_tab_enabled"] is True
    assert home["messages_tab_read_only_enabled"] is False


def test_the_http_manifest_points_events_and_commands_at_the_bridge() -> None:
    document = manifest(mode="http", public_url="https://b.example.org/", path="/slack/x/events")

    url = "https://b.example.org/slack/x/events"
    assert document["settings"]["socket_mode_enabled"] is False
    assert document["settings"]["event_subscriptions"]["request_url"] == url
    assert {c["url"] for c in document["features"]["slash_commands"]} == {url}


def test_the_manifest_command_prints_yaml_or_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["slack", "manifest", "--mode", "http", "--url", "https://b.example.org",
                 "--json"]) == 0
    document = json.loads(capsys.readouterr().out)

    assert document["oauth_config"]["scopes"]["bot"] == list(BOT_SCOPES)
    assert main(["slack", "manifest"]) == 0
    assert "socket_mode_enabled: true" in capsys.readouterr().out


def test_the_manifest_follows_a_configs_commands_and_path(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "bridge.yaml"
    path.write_text(
        f"{REMOTE_BCN}commands: {{ask: bcnask}}\n"
        "accounts:\n  slack:\n    team:\n      bot_token: xoxb-1-2\n"
        "      mode: http\n      signing_secret: s3cret\n      path: /hooks/team\n"
    )

    assert main(["slack", "manifest", "-c", str(path), "--account", "team", "--json",
                 "--url", "https://b.example.org"]) == 0
    document = json.loads(capsys.readouterr().out)

    assert document["features"]["slash_commands"][0]["command"] == "/bcnask"
    assert document["settings"]["event_subscriptions"]["request_url"] == (
        "https://b.example.org/hooks/team"
    )
