"""Writes nobody waits for (`SeenStore.note`, `write_soon`): read at once by the store, made
durable with the next commit somebody waits for, or soon after on their own, and at close.

Nothing here times anything: `LAZY_COMMIT` is set out of reach where a test needs the
write to stay uncommitted, and a test that needs the timer waits for it, bounded.
"""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
import time
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from bridge.store.sqlite import SqliteStore, connection

T0 = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
WAIT = 10.0


def committed_keys(path: Path) -> set[str]:
    """What another connection (another process, after a kill -9) finds."""
    other = sqlite3.connect(path)
    try:
        return {row[0] for row in other.execute("SELECT key FROM seen_keys")}
    finally:
        other.close()


@contextlib.asynccontextmanager
async def store_whose_lazy_commits_wait(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, seconds: float
) -> AsyncIterator[tuple[SqliteStore, Path]]:
    monkeypatch.setattr(connection, "LAZY_COMMIT", seconds)
    path = tmp_path / "bridge.db"
    store = SqliteStore(str(path))
    try:
        yield store, path
    finally:
        await store.close()


async def test_a_noted_key_is_read_at_once_and_made_durable_by_the_next_waited_commit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with store_whose_lazy_commits_wait(tmp_path, monkeypatch, 3600.0) as (store, path):
        await store.seen.note("in:webchat:main|lobby|m-1", T0)
        assert await store.seen.has("in:webchat:main|lobby|m-1")  # this store reads it at once
        assert await store.seen.seen_at(["in:webchat:main|lobby|m-1"]) == {
            "in:webchat:main|lobby|m-1": T0}
        assert committed_keys(path) == set()  # not yet durable: nobody waited for it
        assert await store.seen.add("evt:1", T0)  # a write that waits for its commit...
        assert committed_keys(path) == {"in:webchat:main|lobby|m-1", "evt:1"}  # ...takes it


async def test_a_noted_key_alone_is_committed_soon_after(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with store_whose_lazy_commits_wait(tmp_path, monkeypatch, 0.01) as (store, path):
        await store.seen.note("in:a|b|m-2", T0)
        give_up = time.monotonic() + WAIT
        while committed_keys(path) != {"in:a|b|m-2"}:
            assert time.monotonic() < give_up, "the lazy commit never came"
            await asyncio.sleep(0.01)


async def test_closing_the_store_commits_what_was_noted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with store_whose_lazy_commits_wait(tmp_path, monkeypatch, 3600.0) as (store, path):
        await store.seen.note("in:a|b|m-3", T0)
    assert committed_keys(path) == {"in:a|b|m-3"}  # closed on the way out of the block
