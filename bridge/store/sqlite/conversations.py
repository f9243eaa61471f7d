"""Conversations in SQLite: one row each, history rows in their own table.

An update reads the row and its history, applies the change and writes the row plus only the
new history entries, all in one write step (`write_step`: atomic, durable when it returns,
committed with the other updates of the same turn of the loop); `due` and `remove_finished`
are range queries on partial indexes (see migration 1), so their cost follows the number of
rows they return, not the number stored. `page` reads one index range backwards from its
cursor and the history of the page's conversations only (`listing.py` says which index); the
same step as the row keeps a conversation's folded bot names in `conversation_bots`.

Recently read or written conversations are kept with the row's `revision` token; when the row
still carries that token, its history is reused instead of re-read, which keeps a busy
conversation's updates from growing with its history. Any write, from any process, replaces
the token, so a stale copy is never used.
"""

from __future__ import annotations

import secrets
import sqlite3
from collections.abc import Collection, Iterable, Sequence
from datetime import datetime
from typing import Any

from bridge.store.base import (
    ConversationChange,
    ConversationPage,
    ConversationStore,
    Updated,
    check_replacement,
)
from bridge.store.micros import from_micros, to_micros
from bridge.store.paging import PageQuery, encode_cursor, place
from bridge.store.records import Conversation, HistoryEntry
from bridge.store.sqlite.connection import write_step, write_transaction
from bridge.store.sqlite.listing import DELETE_BOT, INSERT_BOT, bot_rows, counts_sql, page_sql

# How many conversations to keep for reuse; about 1 KB each.
RECENT_LIMIT = 2048

_COLUMNS = (
    "request_id, type, from_name, to_name, status, task, depth_current, depth_max,"
    " original_from, chat, created_at, updated_at, deadline, last_type"
)
_REVISIONED = f"{_COLUMNS}, revision"
_HISTORY_COLUMNS = "request_id, seq, type, from_name, to_name, status, at, content, fingerprint"

_UPSERT = f"""
    INSERT INTO conversations ({_REVISIONED})
    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
    ON CONFLICT (request_id) DO UPDATE SET
        type = excluded.type, from_name = excluded.from_name, to_name = excluded.to_name,
        status = excluded.status, task = excluded.task,
        depth_current = excluded.depth_current, depth_max = excluded.depth_max,
        original_from = excluded.original_from, chat = excluded.chat,
        created_at = excluded.created_at, updated_at = excluded.updated_at,
        deadline = excluded.deadline, last_type = excluded.last_type,
        revision = excluded.revision
"""
_INSERT_HISTORY = (
    f"INSERT INTO conversation_history ({_HISTORY_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
)


class SqliteConversationStore(ConversationStore):
    """The conversation concern of `SqliteStore`, sharing its connection."""

    __slots__ = ("_db", "_recent")

    def __init__(self, db: sqlite3.Connection) -> None:
        self._db = db
        self._recent: dict[str, tuple[int, Conversation]] = {}

    async def get(self, request_id: str) -> Conversation | None:
        return self._load(request_id)

    async def update(self, request_id: str, change: ConversationChange) -> Updated:
        # A write step, so the updates of one turn of the loop (a sweep's batch, many chats'
        # messages) share one commit and write each page they share to the WAL once.
        async with write_step(self._db):
            current = self._load(request_id)
            new = change(current)
            if new is not None:
                revision = self._write(request_id, current, new)
        if new is None:
            return Updated(current, False)
        self._remember(request_id, revision, new)
        return Updated(new, True)

    def _write(self, request_id: str, current: Conversation | None, new: Conversation) -> int:
        """The row, its bot names and its new history entries; returns the row's revision."""
        check_replacement(request_id, current, new)
        revision = secrets.randbits(63)
        self._db.execute(_UPSERT, (*_row(new), revision))
        self._rebot(current, new)
        first_new = len(current.history) if current else 0
        self._db.executemany(
            _INSERT_HISTORY,
            (
                _history_row(request_id, seq, entry)
                for seq, entry in enumerate(new.history[first_new:], start=first_new)
            ),
        )
        return revision

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
        # Sorted here, not by ORDER BY: `find` reads every match anyway, and an ORDER BY
        # would lure the planner to an index in that order (a chat's every conversation)
        # instead of the one its filters narrow most (a chat's open ones).
        rows = sorted(
            self._db.execute(f"SELECT {_COLUMNS} FROM conversations {where}", params),
            key=lambda row: (row[10], row[0]),  # created_at, request_id
        )
        histories: dict[str, list[HistoryEntry]] = {}
        for history_row in self._db.execute(
            f"SELECT {_HISTORY_COLUMNS} FROM conversation_history WHERE request_id IN"
            f" (SELECT request_id FROM conversations {where}) ORDER BY request_id, seq",
            params,
        ):
            histories.setdefault(history_row[0], []).append(_entry(history_row))
        return [_conversation(row, histories.get(row[0], ())) for row in rows]

    async def _page(self, query: PageQuery) -> ConversationPage:
        rows = self._db.execute(*page_sql(_COLUMNS, query)).fetchall()
        shown = rows[: query.limit]
        histories = self._histories([row[0] for row in shown])
        items = [_conversation(row, histories.get(row[0], ())) for row in shown]
        more = len(rows) > query.limit
        return ConversationPage(items, encode_cursor(place(items[-1])) if more else None)

    async def _counts(self, query: PageQuery) -> dict[str, int]:
        return {status: int(count) for status, count in self._db.execute(*counts_sql(query))}

    def _histories(self, request_ids: list[str]) -> dict[str, list[HistoryEntry]]:
        histories: dict[str, list[HistoryEntry]] = {}
        if not request_ids:
            return histories
        for history_row in self._db.execute(
            f"SELECT {_HISTORY_COLUMNS} FROM conversation_history WHERE request_id IN"
            f" ({', '.join('?' * len(request_ids))}) ORDER BY request_id, seq",
            request_ids,
        ):
            histories.setdefault(history_row[0], []).append(_entry(history_row))
        return histories

    def _rebot(self, current: Conversation | None, new: Conversation) -> None:
        """Keep `conversation_bots` in step with the row (inside the caller's transaction)."""
        old = [] if current is None else _bot_rows(current)
        rows = _bot_rows(new)
        if old != rows:
            self._db.executemany(DELETE_BOT, old)
            self._db.executemany(INSERT_BOT, rows)

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
            doomed = self._db.execute(
                "SELECT request_id, created_at, from_name, to_name, original_from"
                " FROM conversations WHERE deadline IS NULL AND updated_at < ?",
                (cutoff,),
            ).fetchall()
            self._db.executemany(
                DELETE_BOT,
                (row for request_id, created_at, *names in doomed
                 for row in bot_rows(request_id, created_at, names)),
            )  # fmt: skip
            self._db.execute(
                f"DELETE FROM conversation_history WHERE request_id IN ({finished})", (cutoff,)
            )
            removed = self._db.execute(
                f"DELETE FROM conversations WHERE request_id IN ({finished})", (cutoff,)
            ).rowcount
        return removed

    def _load(self, request_id: str) -> Conversation | None:
        row = self._db.execute(
            f"SELECT {_REVISIONED} FROM conversations WHERE request_id = ?", (request_id,)
        ).fetchone()
        if row is None:
            self._recent.pop(request_id, None)
            return None
        *columns, revision = row
        recent = self._recent.get(request_id)
        if recent is not None and recent[0] == revision:
            return recent[1]
        history = self._db.execute(
            f"SELECT {_HISTORY_COLUMNS} FROM conversation_history WHERE request_id = ?"
            " ORDER BY seq",
            (request_id,),
        )
        conversation = _conversation(columns, [_entry(history_row) for history_row in history])
        self._remember(request_id, revision, conversation)
        return conversation

    def _remember(self, request_id: str, revision: int, conversation: Conversation) -> None:
        recent = self._recent
        recent.pop(request_id, None)  # re-insert at the end: dict order is recency
        recent[request_id] = (revision, conversation)
        if len(recent) > RECENT_LIMIT:
            del recent[next(iter(recent))]

def _bot_rows(conversation: Conversation) -> list[tuple[str, int, str]]:
    return bot_rows(
        conversation.request_id,
        to_micros(conversation.created_at),
        (conversation.from_, conversation.to, conversation.original_from),
    )


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


def _conversation(row: Sequence[Any], history: Iterable[HistoryEntry]) -> Conversation:
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


def _entry(row: Sequence[Any]) -> HistoryEntry:
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
