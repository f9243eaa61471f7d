"""Conversations in SQLite: one row each, history rows in their own table.

An update reads the row and its history, applies the change and writes the row plus only the
new history entries, all in one IMMEDIATE transaction; `due` and `remove_finished` are range
queries on partial indexes (see migration 1), so their cost follows the number of rows they
return, not the number stored.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Collection, Iterable
from datetime import UTC, datetime, timedelta

from bridge.store.base import ConversationChange, ConversationStore, Updated, check_replacement
from bridge.store.records import Conversation, HistoryEntry
from bridge.store.sqlite.connection import write_transaction

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)

_COLUMNS = (
    "request_id, type, from_name, to_name, status, task, depth_current, depth_max,"
    " original_from, chat, created_at, updated_at, deadline, last_type"
)
_HISTORY_COLUMNS = "request_id, seq, type, from_name, to_name, status, at, content, fingerprint"

_UPSERT = f"""
    INSERT INTO conversations ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
    ON CONFLICT (request_id) DO UPDATE SET
        type = excluded.type, from_name = excluded.from_name, to_name = excluded.to_name,
        status = excluded.status, task = excluded.task,
        depth_current = excluded.depth_current, depth_max = excluded.depth_max,
        original_from = excluded.original_from, chat = excluded.chat,
        created_at = excluded.created_at, updated_at = excluded.updated_at,
        deadline = excluded.deadline, last_type = excluded.last_type
"""
_INSERT_HISTORY = (
    f"INSERT INTO conversation_history ({_HISTORY_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
)


def to_micros(moment: datetime) -> int:
    """Exact integer microseconds since the epoch (floats would lose the last digit)."""
    return (moment - _EPOCH) // timedelta(microseconds=1)


def from_micros(micros: int) -> datetime:
    return _EPOCH + timedelta(microseconds=micros)


class SqliteConversationStore(ConversationStore):
    """The conversation concern of `SqliteStore`, sharing its connection."""

    __slots__ = ("_db",)

    def __init__(self, db: sqlite3.Connection) -> None:
        self._db = db

    async def get(self, request_id: str) -> Conversation | None:
        return self._load(request_id)

    async def update(self, request_id: str, change: ConversationChange) -> Updated:
        with write_transaction(self._db):
            current = self._load(request_id)
            new = change(current)
            if new is None:
                return Updated(current, False)
            check_replacement(request_id, current, new)
            self._db.execute(_UPSERT, _row(new))
            first_new = len(current.history) if current else 0
            self._db.executemany(
                _INSERT_HISTORY,
                (
                    _history_row(request_id, seq, entry)
                    for seq, entry in enumerate(new.history[first_new:], start=first_new)
                ),
            )
        return Updated(new, True)

    async def find(
        self,
        *,
        statuses: Collection[str] | None = None,
        from_: str | None = None,
        to: str | None = None,
        chat: str | None = None,
    ) -> list[Conversation]:
        clauses: list[str] = []
        params: list[object] = []
        if statuses is not None:
            statuses = list(statuses)
            clauses.append(f"status IN ({', '.join('?' * len(statuses))})")
            params.extend(statuses)
        for column, value in (("from_name", from_), ("to_name", to), ("chat", chat)):
            if value is not None:
                clauses.append(f"{column} = ?")
                params.append(value)
        where = f"WHERE {' AND '.join(clauses)}" if clauses else ""
        rows = self._db.execute(
            f"SELECT {_COLUMNS} FROM conversations {where} ORDER BY created_at, request_id",
            params,
        ).fetchall()
        histories: dict[str, list[HistoryEntry]] = {}
        for history_row in self._db.execute(
            f"SELECT {_HISTORY_COLUMNS} FROM conversation_history WHERE request_id IN"
            f" (SELECT request_id FROM conversations {where}) ORDER BY request_id, seq",
            params,
        ):
            histories.setdefault(history_row[0], []).append(_entry(history_row))
        return [_conversation(row, histories.get(row[0], ())) for row in rows]

    async def due(self, now: datetime, limit: int | None = None) -> list[str]:
        rows = self._db.execute(
            "SELECT request_id FROM conversations"
            " WHERE deadline IS NOT NULL AND deadline <= ? ORDER BY deadline LIMIT ?",
            (to_micros(now), -1 if limit is None else limit),
        )
        return [request_id for (request_id,) in rows]

    async def remove_finished(self, updated_before: datetime) -> int:
        cutoff = to_micros(updated_before)
        finished = "SELECT request_id FROM conversations WHERE deadline IS NULL AND updated_at < ?"
        with write_transaction(self._db):
            self._db.execute(
                f"DELETE FROM conversation_history WHERE request_id IN ({finished})", (cutoff,)
            )
            removed = self._db.execute(
                f"DELETE FROM conversations WHERE request_id IN ({finished})", (cutoff,)
            ).rowcount
        return removed

    def _load(self, request_id: str) -> Conversation | None:
        row = self._db.execute(
            f"SELECT {_COLUMNS} FROM conversations WHERE request_id = ?", (request_id,)
        ).fetchone()
        if row is None:
            return None
        history = self._db.execute(
            f"SELECT {_HISTORY_COLUMNS} FROM conversation_history WHERE request_id = ?"
            " ORDER BY seq",
            (request_id,),
        )
        return _conversation(row, [_entry(history_row) for history_row in history])


def _row(conversation: Conversation) -> tuple[object, ...]:
    depth_current, depth_max = conversation.depth or (None, None)
    return (
        conversation.request_id,
        conversation.type,
        conversation.from_,
        conversation.to,
        conversation.status,
        conversation.task,
        depth_current,
        depth_max,
        conversation.original_from,
        conversation.chat,
        to_micros(conversation.created_at),
        to_micros(conversation.updated_at),
        None if conversation.deadline is None else to_micros(conversation.deadline),
        conversation.last_type,
    )


def _conversation(row: tuple, history: Iterable[HistoryEntry]) -> Conversation:
    (request_id, type_, from_, to, status, task, depth_current, depth_max, original_from,
     chat, created_at, updated_at, deadline, last_type) = row  # fmt: skip
    return Conversation(
        request_id=request_id,
        type=type_,
        from_=from_,
        to=to,
        status=status,
        task=task,
        depth=None if depth_current is None else (depth_current, depth_max),
        original_from=original_from,
        chat=chat,
        created_at=from_micros(created_at),
        updated_at=from_micros(updated_at),
        deadline=None if deadline is None else from_micros(deadline),
        last_type=last_type,
        history=tuple(history),
    )


def _history_row(request_id: str, seq: int, entry: HistoryEntry) -> tuple[object, ...]:
    return (
        request_id,
        seq,
        entry.type,
        entry.from_,
        entry.to,
        entry.status,
        to_micros(entry.at),
        entry.content,
        entry.fingerprint,
    )


def _entry(row: tuple) -> HistoryEntry:
    _, _, type_, from_, to, status, at, content, fingerprint = row
    return HistoryEntry(
        type=type_,
        from_=from_,
        to=to,
        status=status,
        at=from_micros(at),
        content=content,
        fingerprint=fingerprint,
    )
