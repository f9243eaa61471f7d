"""Paused bindings in SQLite: one row per paused binding key (migration 10)."""

from __future__ import annotations

import sqlite3
from datetime import datetime

from bridge.store.micros import from_micros, to_micros
from bridge.store.pauses import Paused, PauseStore, checked_at
from bridge.store.sqlite.connection import write_step


class SqlitePauseStore(PauseStore):
    __slots__ = ("_db",)

    def __init__(self, db: sqlite3.Connection) -> None:
        self._db = db

    async def pause(self, key: str, by: str, at: datetime) -> bool:
        when = to_micros(checked_at(at))
        async with write_step(self._db):
            cursor = self._db.execute(
                "INSERT OR IGNORE INTO pauses (key, by_name, at) VALUES (?, ?, ?)", (key, by, when)
            )
        return cursor.rowcount == 1

    async def resume(self, key: str) -> bool:
        async with write_step(self._db):
            cursor = self._db.execute("DELETE FROM pauses WHERE key = ?", (key,))
        return cursor.rowcount == 1

    async def all(self) -> dict[str, Paused]:
        rows = self._db.execute("SELECT key, by_name, at FROM pauses ORDER BY key")
        return {key: Paused(by, from_micros(at)) for key, by, at in rows}
