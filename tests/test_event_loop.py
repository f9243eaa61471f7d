"""The long-running commands run on uvloop when it is installed, asyncio on request."""

from __future__ import annotations

import asyncio
import gc

import pytest

from bridge import event_loop


async def _which_loop() -> str:
    return type(asyncio.get_running_loop()).__module__.split(".")[0]


def test_uvloop_is_used_when_installed(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("uvloop", reason="uvloop is not installed on this platform")
    monkeypatch.delenv(event_loop.LOOP_VARIABLE, raising=False)
    assert event_loop.loop_name() == "uvloop"
    assert event_loop.run(_which_loop()) == "uvloop"


def test_the_standard_loop_on_request(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(event_loop.LOOP_VARIABLE, "asyncio")
    assert event_loop.loop_name() == "asyncio"
    assert event_loop.run(_which_loop()) == "asyncio"


def test_the_collector_is_tuned_and_startup_frozen(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(event_loop.LOOP_VARIABLE, "asyncio")
    before = gc.get_threshold()

    async def up() -> tuple[tuple[int, int, int], int]:
        event_loop.settle()
        return gc.get_threshold(), gc.get_freeze_count()

    try:
        thresholds, frozen = event_loop.run(up())
    finally:
        gc.unfreeze()
        gc.set_threshold(*before)
    assert thresholds == event_loop.GC_THRESHOLDS
    assert frozen > 0  # what existed once the command was up left the collected generations
