from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
from bot_fake_bcn import FakeBcn

from bridge.bcn.bot import Bot
from bridge.retry import Backoff


@pytest.fixture
async def fake_bcn() -> AsyncIterator[FakeBcn]:
    fake = FakeBcn()
    await fake.start()
    yield fake
    await fake.stop()


@pytest.fixture
def make_bot(tmp_path: Path) -> Callable[..., Bot]:
    """Bots with test-sized intervals; each test stops the bots it started."""

    def make(url: str, **options: Any) -> Bot:
        options.setdefault("name", "Tester")
        options.setdefault("token_file", tmp_path / "bot.token")
        options.setdefault("backoff", Backoff(initial=0.01, maximum=0.05))
        options.setdefault("abort_grace", 2.0)
        return Bot(url, **options)

    return make
