"""The relay's concerns in SQLite (tables from migration 2)."""

from __future__ import annotations

import json
import sqlite3
from datetime import datetime
from typing import Any

from bridge.store.relay import (
    MessageMapStore,
    OutboxItem,
    OutboxStore,
    SeenStore,
    SpoolEntry,
    SpoolStore,
)
from bridge.store.sqlite.connection import write_transaction
from bridge.store.sqlite.conversations import from_micros, to_micros


class SqliteSeenStore(SeenStore):
    __slots__ = ("_db",)

    def __init__(self, db: sqlite3.Connection) -> None:
        self._db = db

    async def add(self, key: str, now: datetime) -> bool:
        with write_transaction(self._db):
            cursor = self._db.execute(
                "INSERT OR IGNORE INTO seen_keys (key, seen_at) VALUES (?, ?)",
                (key, to_micros(now)),
            )
        return cursor.rowcount == 1

    async def has(self, key: str) -> bool:
        row = self._db.execute("SELECT 1 FROM seen_keys WHERE key = ?", (key,)).fetchone()
        return row is not None

    async def prune(self, before: datetime) -> int:
        with write_transaction(self._db):
            cursor = self._db.execute(
                "DELETE FROM seen_keys WHERE seen_at < ?", (to_micros(before),)
            )
        return cursor.rowcount


class SqliteOutboxStore(OutboxStore):
    __slots__ = ("_db",)

    def __init__(self, db: sqlite3.Connection) -> None:
        self._db = db

    async def append(
        self, item: OutboxItem, *, once: str | None = None, now: datetime | None = None
    ) -> int | None:
        body = {
            "lane": item.lane,
            "kind": item.kind,
            "sender_label": item.sender_label,
            "parts": item.parts,
            "conversation": item.conversation,
            "run_id": item.run_id,
            "reply_to": item.reply_to,
            "protocol": item.protocol,
            "sent": item.sent,
        }
        created = to_micros(item.created_at) if item.created_at else None
        with write_transaction(self._db):
            if once is not None:
                at = now or item.created_at
                claimed = self._db.execute(
                    "INSERT OR IGNORE INTO seen_keys (key, seen_at) VALUES (?, ?)",
                    (once, to_micros(at) if at else 0),
                )
                if claimed.rowcount != 1:
                    return None
            cursor = self._db.execute(
                "INSERT INTO outbox (lane, body, created_at) VALUES (?, ?, ?)",
                (item.lane, json.dumps(body), created),
            )
        item.id = int(cursor.lastrowid or 0)
        return item.id

    async def pending(self) -> list[OutboxItem]:
        rows = self._db.execute("SELECT id, body, created_at FROM outbox ORDER BY id").fetchall()
        items = []
        for row_id, body, created in rows:
            data = json.loads(body)
            items.append(
                OutboxItem(
                    lane=data["lane"],
                    kind=data["kind"],
                    sender_label=data["sender_label"],
                    parts=list(data["parts"]),
                    conversation=data.get("conversation", ""),
                    run_id=data.get("run_id"),
                    reply_to=data.get("reply_to"),
                    protocol=data.get("protocol"),
                    created_at=from_micros(created) if created is not None else None,
                    id=row_id,
                    sent=list(data.get("sent") or []),
                )
            )
        return items

    async def record_part(self, item_id: int, index: int, message_id: str) -> None:
        with write_transaction(self._db):
            row = self._db.execute("SELECT body FROM outbox WHERE id = ?", (item_id,)).fetchone()
            if row is None:
                return
            data = json.loads(row[0])
            data["sent"][index] = message_id
            self._db.execute(
                "UPDATE outbox SET body = ? WHERE id = ?", (json.dumps(data), item_id)
            )

    async def complete(self, item_id: int) -> None:
        with write_transaction(self._db):
            self._db.execute("DELETE FROM outbox WHERE id = ?", (item_id,))


class SqliteMessageMapStore(MessageMapStore):
    __slots__ = ("_db",)

    def __init__(self, db: sqlite3.Connection) -> None:
        self._db = db

    async def put(self, key: str, value: dict[str, Any], now: datetime) -> None:
        with write_transaction(self._db):
            self._db.execute(
                "INSERT INTO message_map (key, value, at) VALUES (?, ?, ?)"
                " ON CONFLICT (key) DO UPDATE SET value = excluded.value, at = excluded.at",
                (key, json.dumps(value), to_micros(now)),
            )

    async def get(self, key: str) -> dict[str, Any] | None:
        row = self._db.execute("SELECT value FROM message_map WHERE key = ?", (key,)).fetchone()
        return json.loads(row[0]) if row else None

    async def prune(self, before: datetime) -> int:
        with write_transaction(self._db):
            cursor = self._db.execute("DELETE FROM message_map WHERE at < ?", (to_micros(before),))
        return cursor.rowcount


class SqliteSpoolStore(SpoolStore):
    __slots__ = ("_db",)

    def __init__(self, db: sqlite3.Connection) -> None:
        self._db = db

    async def append(self, entry: SpoolEntry, *, once: str, now: datetime) -> int | None:
        body = {"lane": entry.lane, "binding": entry.binding, "params": entry.params}
        created = to_micros(entry.created_at or now)
        with write_transaction(self._db):
            claimed = self._db.execute(
                "INSERT OR IGNORE INTO seen_keys (key, seen_at) VALUES (?, ?)",
                (once, to_micros(now)),
            )
            if claimed.rowcount != 1:
                return None
            cursor = self._db.execute(
                "INSERT INTO spool (body, created_at) VALUES (?, ?)", (json.dumps(body), created)
            )
        entry.id = int(cursor.lastrowid or 0)
        return entry.id

    async def pending(self, limit: int = 100) -> list[SpoolEntry]:
        rows = self._db.execute(
            "SELECT id, body, created_at FROM spool ORDER BY id LIMIT ?", (limit,)
        ).fetchall()
        entries = []
        for row_id, body, created in rows:
            data = json.loads(body)
            entries.append(SpoolEntry(
                lane=data["lane"], binding=data["binding"], params=data["params"],
                created_at=from_micros(created) if created is not None else None, id=row_id,
            ))
        return entries

    async def complete(self, entry_id: int) -> None:
        with write_transaction(self._db):
            self._db.execute("DELETE FROM spool WHERE id = ?", (entry_id,))

    async def count(self) -> int:
        return int(self._db.execute("SELECT COUNT(*) FROM spool").fetchone()[0])
