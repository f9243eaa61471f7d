"""An account that cannot start stops `bcn-bridge run` with one line, not a traceback."""

from __future__ import annotations

import importlib
import inspect
import logging
from importlib.util import find_spec
from pathlib import Path
from typing import ClassVar

import pytest
from pydantic import BaseModel, ConfigDict

from bridge.cli.run import serve
from bridge.config.schema import BridgeConfig
from bridge.core import registry
from bridge.core.adapter import Adapter, AdapterStartError, Capabilities
from bridge.core.model import Outbound, PlatformRef


class RefusingAccount(BaseModel):
    model_config = ConfigDict(extra="forbid")


class RefusingAdapter(Adapter):
    """Starts like a platform whose owner has a setting to fix."""

    channel_type: ClassVar[str] = "refusing"
    capabilities: ClassVar[Capabilities] = Capabilities(dialect="plain", max_length=100)
    config_model: ClassVar[type[BaseModel]] = RefusingAccount
    stopped: ClassVar[int] = 0

    async def start(self) -> None:
        raise AdapterStartError(f"{self.channel}: the platform refused; turn the switch on")

    async def stop(self) -> None:
        RefusingAdapter.stopped += 1

    async def send(self, out: Outbound) -> PlatformRef:
        raise AssertionError("never started, never sends")


class SurprisedAdapter(RefusingAdapter):
    """Fails to start with an error class nobody taught the CLI (a library's own error)."""

    async def start(self) -> None:
        raise LookupError("the platform answered something new")


def refusing_config(tmp_path: Path) -> BridgeConfig:
    return BridgeConfig.model_validate({
        "hub": {"listen": "127.0.0.1:0", "data_dir": str(tmp_path / "hub"),
                "groups": [{"id": "team", "bots": []}]},
        "bcn": {"url": "embedded"},
        "store": f"sqlite:///{tmp_path / 'bridge.db'}",
        "web": {"enabled": False},
    }).model_copy(update={"accounts": {"refusing": {"main": RefusingAccount()}}})


async def test_serve_reports_an_adapter_start_error_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setitem(registry.ADAPTERS, "refusing", f"{__name__}:RefusingAdapter")
    config = refusing_config(tmp_path)
    RefusingAdapter.stopped = 0

    with caplog.at_level(logging.ERROR):
        code = await serve(config)

    assert code == 1
    [record] = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert record.getMessage() == (
        "could not start: refusing:main: the platform refused; turn the switch on"
    )
    assert record.exc_info is None
    assert RefusingAdapter.stopped == 1  # everything started so far is stopped again


async def test_any_error_an_adapter_starts_with_is_one_line_too(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """The class of the Slack bug (issue 31 item 7): a start error that is not an
    `AdapterStartError` must not reach `bcn-bridge run` as a traceback."""
    monkeypatch.setitem(registry.ADAPTERS, "refusing", f"{__name__}:SurprisedAdapter")
    RefusingAdapter.stopped = 0

    with caplog.at_level(logging.ERROR):
        code = await serve(refusing_config(tmp_path))

    assert code == 1
    [record] = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert record.getMessage() == (
        "could not start: refusing:main: LookupError: the platform answered something new"
    )
    assert record.exc_info is None
    assert RefusingAdapter.stopped == 1


WITH_ERRORS = sorted(t for t in registry.ADAPTERS if find_spec(f"adapters.{t}.errors"))
"""The platforms with start errors of their own (the webchat has none: it cannot fail)."""


@pytest.mark.parametrize("channel_type", WITH_ERRORS)
def test_every_adapters_start_errors_are_adapter_start_errors(channel_type: str) -> None:
    """Each platform's own start error says what to fix; it must be one the CLI prints as
    one line (SlackStartError was a bare RuntimeError)."""
    errors = importlib.import_module(f"adapters.{channel_type}.errors")
    start_errors = [
        cls for name, cls in inspect.getmembers(errors, inspect.isclass)
        if name.endswith("StartError") and cls.__module__ == errors.__name__
    ]
    assert start_errors, f"adapters.{channel_type}.errors defines no start error"
    for cls in start_errors:
        assert issubclass(cls, AdapterStartError), cls
