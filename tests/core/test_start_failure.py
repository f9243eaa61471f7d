"""An account that cannot start stops `bcn-bridge run` with one line, not a traceback."""

from __future__ import annotations

import logging
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


async def test_serve_reports_an_adapter_start_error_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setitem(registry.ADAPTERS, "refusing", f"{__name__}:RefusingAdapter")
    config = BridgeConfig.model_validate({
        "hub": {"listen": "127.0.0.1:0", "data_dir": str(tmp_path / "hub"),
                "groups": [{"id": "team", "bots": []}]},
        "bcn": {"url": "embedded"},
        "store": f"sqlite:///{tmp_path / 'bridge.db'}",
        "web": {"enabled": False},
    }).model_copy(update={"accounts": {"refusing": {"main": RefusingAccount()}}})
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
