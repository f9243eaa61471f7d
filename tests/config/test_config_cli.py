"""`bcn-bridge config check|schema`, run in-process through `bridge.cli.main`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from config_test_env import ENV

import bridge.cli

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def only_the_config_command(monkeypatch: pytest.MonkeyPatch) -> None:
    """Other commands are written in parallel; these tests need only this one to import."""
    monkeypatch.setattr(bridge.cli, "COMMAND_MODULES", ("bridge.cli.config",))


def test_config_is_a_registered_command() -> None:
    source = (REPO / "bridge" / "cli" / "__init__.py").read_text(encoding="utf-8")
    assert '"bridge.cli.config"' in source


def test_check_prints_a_summary_without_secrets(monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    for name, value in ENV.items():
        monkeypatch.setenv(name, value)
    assert bridge.cli.main(["config", "check", str(REPO / "config" / "example.yaml")]) == 0
    out = capsys.readouterr().out
    assert "example.yaml: OK" in out
    assert "accounts: webchat:main, telegram:main" in out
    assert "telegram:main -1001234567890 -> ops (protocol on)" in out
    assert "hub: listening on 127.0.0.1:8765; groups: ops (Lotbot, Rules), demo (Echo)" in out
    for secret in ENV.values():
        assert secret not in out


def test_check_of_a_file_whose_secrets_are_not_set_here_lists_them(
    monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    """A deployment's secrets are set where it runs, not where its file is checked: the
    file is valid, and what it needs is listed."""
    for name in ENV:
        monkeypatch.delenv(name, raising=False)
    assert bridge.cli.main(["config", "check", str(REPO / "config" / "example.yaml")]) == 0
    out = capsys.readouterr().out
    assert "example.yaml: OK, once these environment variables are set where it runs: " in out
    assert "TELEGRAM_BOT_TOKEN" in out and "SLACK_APP_TOKEN" in out


def test_an_unset_secret_is_told_how_to_be_given(write_config, capsys) -> None:
    path = write_config(
        """
        hub: {groups: [{id: ops}]}
        bcn: {url: embedded, token: "${NO_SUCH_LINK_TOKEN}"}
        bindings:
          - {channel: "webchat:main", chat: lobby, grop: ops}
        """
    )
    assert bridge.cli.main(["config", "check", str(path)]) == 2
    err = capsys.readouterr().err
    assert ("bcn.token: environment variable NO_SUCH_LINK_TOKEN is not set: it holds a "
            "secret, so set it where the bridge runs (export NO_SUCH_LINK_TOKEN=…), or keep "
            "it in a file and write 'token_file: /path' instead") in err
    assert ":-default" not in err  # no fallback advice for a secret
    assert "unknown key 'grop'" in err


def test_check_reports_every_problem_and_exits_2(write_config, capsys) -> None:
    path = write_config(
        """
        hub:
          groups: [{id: ops}]
          link_tokens: ["${LINK_TOKEN}"]
        bcn: {url: embedded, token: "${LINK_TOKEN}"}
        bindings:
          - {channel: "webchat:main", chat: lobby, grop: ops}
        """
    )
    assert bridge.cli.main(["config", "check", str(path)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert f"{path}:3: hub.link_tokens[0]: environment variable LINK_TOKEN is not set" in (
        captured.err
    )
    assert f"{path}:6: bindings[0].grop: unknown key 'grop'; did you mean 'group'?" in captured.err


def test_check_never_prints_a_secret_from_a_bad_value(
    write_config, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    monkeypatch.setenv("LINK_TOKEN", "tok-do-not-print")
    path = write_config(
        """
        hub: {groups: [{id: ops}], link_tokens: [other-token-do-not-print]}
        bcn: {url: embedded, token: "${LINK_TOKEN}", link_name: ""}
        """
    )
    assert bridge.cli.main(["config", "check", str(path)]) == 2
    err = capsys.readouterr().err
    assert "bcn.link_name" in err
    assert "do-not-print" not in err


def test_check_cross_section_problem(write_config, capsys) -> None:
    path = write_config(
        """
        bcn: {url: embedded, token: tok-do-not-print}
        """
    )
    assert bridge.cli.main(["config", "check", str(path)]) == 2
    err = capsys.readouterr().err
    assert f"{path}:1: bcn.url: 'embedded' runs the BCN hub inside the bridge" in err
    assert "do-not-print" not in err


def test_check_missing_file(tmp_path: Path, capsys) -> None:
    assert bridge.cli.main(["config", "check", str(tmp_path / "none.yaml")]) == 2
    assert "none.yaml: config file not found" in capsys.readouterr().err


def test_schema_prints_json_schema(capsys) -> None:
    assert bridge.cli.main(["config", "schema"]) == 0
    schema = json.loads(capsys.readouterr().out)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert {"hub", "bcn", "store", "web", "accounts", "bindings", "commands"} <= set(
        schema["properties"]
    )


def test_config_without_an_action_shows_usage(capsys) -> None:
    assert bridge.cli.main(["config"]) == 2
    assert "check" in capsys.readouterr().err
