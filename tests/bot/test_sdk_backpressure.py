"""What the SDK does when BCN says it is behind, and how it keeps its own observers bounded.

Against the scripted BCN (`bot_fake_bcn.py`): real sockets, the hub's notice and close
frames as the hub sends them (`bridge/hub/backpressure.py`). The hub's side of shedding is
tested with the real hub in `tests/hub/test_hub_backpressure.py`.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

import pytest
from bot_fake_bcn import FakeBcn, send_params

from bridge.bcn.bot import Bot, IncomingMessage


async def ignore(_message: IncomingMessage) -> None:
    """An observe handler that does nothing (the bot must have one to start)."""


async def test_a_backpressure_notice_is_logged_and_counted(
    fake_bcn: FakeBcn, make_bot: Callable[..., Bot], caplog: pytest.LogCaptureFixture
) -> None:
    async with make_bot(fake_bcn.url, on_observe=ignore) as bot:
        assert fake_bcn.connection is not None
        await fake_bcn.connection.send_event("bot.backpressure", {
            "state": "shedding", "waiting": 500, "message": "You are not keeping up"})
        await fake_bcn.connection.send_event("bot.backpressure", {
            "state": "caught_up", "shed": 7, "message": "You caught up; 7 were dropped"})
        await fake_bcn.wait_until(lambda: bot.injects_shed == 7)
        assert bot.backpressure is not None and bot.backpressure["state"] == "caught_up"
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert "BCN backpressure (shedding): You are not keeping up" in warnings
    assert "BCN backpressure (caught_up): You caught up; 7 were dropped" in warnings


async def test_the_close_reason_of_a_cut_off_bot_is_logged(
    fake_bcn: FakeBcn, make_bot: Callable[..., Bot], caplog: pytest.LogCaptureFixture
) -> None:
    async with make_bot(fake_bcn.url, on_observe=ignore) as bot:
        assert fake_bcn.connection is not None
        await fake_bcn.connection.close(4003, "too slow: 1000 chat.inject shed in a row")
        await fake_bcn.wait_until(lambda: bot.connect_count >= 2)  # and it comes back
    assert any("BCN closed the connection (4003: too slow: 1000 chat.inject shed in a row)"
               in r.getMessage() for r in caplog.records)


async def test_observe_handlers_are_bounded_and_the_next_answer_waits(
    fake_bcn: FakeBcn, make_bot: Callable[..., Bot]
) -> None:
    """At `max_observing` the SDK answers the next inject only once a handler is done, so
    BCN sees the bot behind (and sheds) instead of this process piling up handlers."""
    release = asyncio.Event()
    started: list[str] = []

    async def observe(message: IncomingMessage) -> None:
        started.append(message.text)
        await release.wait()

    async with make_bot(fake_bcn.url, on_observe=observe, max_observing=2) as bot:
        answers: list[asyncio.Task[dict[str, Any]]] = [
            asyncio.create_task(fake_bcn.request("chat.inject", send_params(f"seen {n}")))
            for n in range(5)]
        await fake_bcn.wait_until(lambda: len(started) == 2)
        await fake_bcn.wait_until(lambda: sum(task.done() for task in answers) == 2)
        assert len(bot._background) == 2  # two handlers running, three answers waiting
        release.set()
        assert [await task for task in answers] == [{}] * 5
        await fake_bcn.wait_until(lambda: len(started) == 5)
    assert started == [f"seen {n}" for n in range(5)]
