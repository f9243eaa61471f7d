from __future__ import annotations

import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest

from bridge.core import registry

WriteConfig = Callable[..., Path]

ENV = {
    "BCN_LINK_TOKEN": "link-token-do-not-print",
    "ECHO_BOT_TOKEN": "echo-token-do-not-print",
    "TELEGRAM_BOT_TOKEN": "123:telegram-token-do-not-print",
}
"""The variables config/example.yaml needs; values tests check never appear in output."""


@pytest.fixture
def write_config(tmp_path: Path) -> WriteConfig:
    """Write dedented YAML to a file in tmp_path and return its path."""

    def write(text: str, name: str = "bridge.yaml") -> Path:
        path = tmp_path / name
        path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
        return path

    return write


@pytest.fixture
def test_adapters(monkeypatch: pytest.MonkeyPatch) -> None:
    """Register the `testchat` and `keepsfile` channel types."""
    monkeypatch.setitem(registry.ADAPTERS, "testchat", "config_test_adapter:TestChatAdapter")
    monkeypatch.setitem(registry.ADAPTERS, "keepsfile", "config_test_adapter:KeepsFileAdapter")


ACCOUNT_ONLY_STAND_INS = {
    "telegram": "config_test_adapter:TelegramAccountOnly",
    "webchat": "config_test_adapter:WebchatAccountOnly",
}
"""Adapters whose class may not have landed yet, by a class carrying only their real model."""


@pytest.fixture
def real_account_models(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Make telegram and webchat accounts checkable with the adapters' own account models.

    Returns the types that needed a stand-in; once every adapter imports, it is empty
    and the shipped configs are loaded exactly as `bcn-bridge` would load them.
    """
    stood_in = []
    for channel_type, stand_in in ACCOUNT_ONLY_STAND_INS.items():
        try:
            registry.account_config_model(channel_type)
        except Exception:
            monkeypatch.setitem(registry.ADAPTERS, channel_type, stand_in)
            stood_in.append(channel_type)
    return stood_in
