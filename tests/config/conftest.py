from __future__ import annotations

import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest

from bridge.core import registry

WriteConfig = Callable[..., Path]



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
