"""Send budgets (bridge.store.pacing), alike on every backend: sliding windows, all or
nothing across a send's budgets, and on Redis one window for every instance."""

from __future__ import annotations

import asyncio

import pytest

from bridge.store import Store, open_store
from bridge.store.pacing import Budget, MemoryPacingStore

CHAT = Budget("t:main|chat:-100", limit=3, window=60.0)
BOT = Budget("t:main|bot", limit=5, window=60.0)


async def test_a_window_lets_its_limit_through_then_says_how_long_to_wait(store: Store) -> None:
    assert [await store.pacing.take([CHAT]) for _ in range(3)] == [0, 0, 0]
    wait = await store.pacing.take([CHAT])
    assert 0 < wait <= CHAT.window
    assert 0 < await store.pacing.room([CHAT]) <= CHAT.window  # asking spends nothing
    assert await store.pacing.room([Budget("t:main|chat:other", 3, 60.0)]) == 0


async def test_a_send_spends_from_all_its_budgets_or_from_none(store: Store) -> None:
    for _ in range(3):
        assert await store.pacing.take([CHAT, BOT]) == 0
    assert await store.pacing.take([CHAT, BOT]) > 0  # the chat is full: the bot spent nothing
    other_chat = Budget("t:main|chat:-200", limit=3, window=60.0)
    assert [await store.pacing.take([other_chat, BOT]) for _ in range(2)] == [0, 0]
    assert await store.pacing.take([other_chat, BOT]) > 0  # now the bot's 5 are spent


async def test_a_place_frees_as_the_window_slides(store: Store) -> None:
    short = Budget("t:main|chat:fast", limit=2, window=0.2)
    assert [await store.pacing.take([short]) for _ in range(2)] == [0, 0]
    wait = await store.pacing.take([short])
    assert 0 < wait <= 0.2
    await asyncio.sleep(wait + 0.05)
    assert await store.pacing.take([short]) == 0


async def test_no_budgets_never_wait(store: Store) -> None:
    assert await store.pacing.take([]) == 0 and await store.pacing.room([]) == 0


def test_a_budget_must_allow_something() -> None:
    with pytest.raises(ValueError):
        Budget("k", limit=0, window=1.0)
    with pytest.raises(ValueError):
        Budget("k", limit=1, window=0)


async def test_the_wait_is_until_the_send_limit_back_leaves_the_window() -> None:
    now = [100.0]
    pacing = MemoryPacingStore(clock=lambda: now[0])
    budget = Budget("k", limit=2, window=10.0)
    for at in (100.0, 103.0):
        now[0] = at
        assert await pacing.take([budget]) == 0
    now[0] = 104.0
    assert await pacing.take([budget]) == pytest.approx(6.0)  # the send at 100 leaves at 110
    now[0] = 110.5
    assert await pacing.take([budget]) == 0
    assert await pacing.take([budget]) == pytest.approx(2.5)  # the send at 103 leaves at 113


async def test_instances_on_one_redis_share_one_window(redis_url: str) -> None:
    async with open_store(redis_url) as first, open_store(redis_url) as second:
        results = await asyncio.gather(*(
            (first if n % 2 else second).pacing.take([CHAT]) for n in range(8)))
    assert sorted(wait == 0 for wait in results) == [False] * 5 + [True] * 3
