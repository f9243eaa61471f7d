"""Conversations in SQLite: one row each, history rows in their own table.

An update reads the row and its history (one statement; the row alone when a current copy is
held, see below), applies the change and writes the row plus only the new history entries, all
in one write step (`write_step`: atomic, durable when it returns, committed with the other
updates of the same turn of the loop). A new conversation is one INSERT; a stored one is an
UPDATE of only the columns the change altered, compared with the row just read, so the indexes
on the others are left alone (an index entry rewritten, even with its old value, is one more
page for the commit to write); its folded bot names change only where they differ. `due` and
`remove_finished` are range queries on partial indexes (see migration 1), so their cost follows
the number of rows they return, not the number stored. `page` reads one index range backwards
from its cursor and the history of the page's conversations only (`listing.py` says which
index); the same step as the row keeps a conversation's folded bot names in `conversation_bots`.

Recently read or written conversations are kept with the row's `revision` token; when the row
still carries that token, its history is reused instead of re-read, which keeps a busy
conversation's updates from growing with its history. Any write, from any process, replaces
the token, so a stale copy is never used.
"""

from __future__ import annotations

import random
import secrets
import sqlite3
from collections import OrderedDict
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
_COLUMN_NAMES = tuple(name.strip() for name in _COLUMNS.split(","))
"""In the order of `_row`; the stored row, as `_read` returns it, is in the same order."""
_REVISIONED = f"{_COLUMNS}, revision"
_HISTORY_COLUMNS = "request_id, seq, type, from_name, to_name, status, at, content, fingerprint"
_PLACES = range(1, len(_COLUMN_NAMES))
"""The places of a row an update may change (`request_id`, at 0, never changes)."""
# Where the columns `conversation_bots` is kept from sit in a row.
_REQUEST_ID, _FROM, _TO, _ORIGINAL_FROM, _CREATED_AT = 0, 2, 3, 8, 10

_SELECT = f"SELECT {_REVISIONED} FROM conversations WHERE request_id = ?"
_SELECT_HISTORY = (
    f"SELECT {_HISTORY_COLUMNS} FROM conversation_history WHERE request_id = ? ORDER BY seq"
)
# The row and its history in one statement: one result row per history entry, each led by the
# conversation's columns and revision (one row with NULL entry columns if it has none). Both
# tables are searched by their key on request_id, and the history's key gives the seq order.
_SELECT_WITH_HISTORY = (
    f"SELECT {', '.join(f'c.{name}' for name in _COLUMN_NAMES)}, c.revision,"
    f" {', '.join(f'h.{name.strip()}' for name in _HISTORY_COLUMNS.split(','))}"
    " FROM conversations AS c LEFT JOIN conversation_history AS h"
    " ON h.request_id = c.request_id WHERE c.request_id = ? ORDER BY h.seq"
)
_JOINED_HISTORY = len(_COLUMN_NAMES) + 1
"""Where the history columns start in a `_SELECT_WITH_HISTORY` row."""
_INSERT = f"INSERT INTO conversations ({_REVISIONED}) VALUES ({', '.join('?' * 15)})"
_INSERT_HISTORY = (
    f"INSERT INTO conversation_history ({_HISTORY_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
)


def _insert_bots_sql(count: int) -> str:
    """`INSERT_BOT` of `count` rows in one statement."""
    return INSERT_BOT.replace("(?, ?, ?)", ", ".join(["(?, ?, ?)"] * count))


_INSERT_BOTS = {count: _insert_bots_sql(count) for count in (1, 2, 3)}
"""A conversation has at most three bot names (`from_`, `to`, `original_from`)."""


def _update_sql(changed: tuple[int, ...]) -> str:
    """The UPDATE of the columns at these places of a row (maybe none), and of the revision."""
    assignments = "".join(f"{_COLUMN_NAMES[place]} = ?, " for place in changed)
    return f"UPDATE conversations SET {assignments}revision = ? WHERE request_id = ?"


class SqliteConversationStore(ConversationStore):
    """The conversation concern of `SqliteStore`, sharing its connection."""

    __slots__ = ("_cursor", "_db", "_recent", "_revisions", "_updates")

    def __init__(self, db: sqlite3.Connection) -> None:
        self._db = db
        self._cursor = db.cursor()
        """The statements of `update`, one after the other (no cursor made and freed per
        statement). Each result is read to its end before the next statement, which is
        what leaves the statement reset, as a cursor of its own would when freed."""
        self._recent: OrderedDict[str, tuple[int, Conversation]] = OrderedDict()
        """Recency order, oldest first (an OrderedDict drops its oldest in constant time; a
        dict's first key is found by stepping over every slot deleted before it)."""
        # Revision tokens: random 63-bit numbers, as unlikely as ever to repeat, without a
        # system call per write (a generator of this store's own, seeded from the system's).
        self._revisions = random.Random(secrets.randbits(128))
        self._updates: dict[tuple[int, ...], str] = {}
        """`_update_sql` per set of changed columns (a handful in practice)."""

    async def get(self, request_id: str) -> Conversation | None:
        return self._read(request_id)[1]

    async def update(self, request_id: str, change: ConversationChange) -> Updated:
        # A write step, so the updates of one turn of the loop (a sweep's batch, many chats'
        # messages) share one commit and write each page they share to the WAL once.
        async with write_step(self._db):
            stored, current = self._read(request_id)
            new = change(current)
            if new is not None:
                revision = self._write(request_id, stored, current, new)
        if new is None:
            return Updated(current, False)
        self._remember(request_id, revision, new)
        return Updated(new, True)

    def _write(
        self,
        request_id: str,
        stored: Sequence[Any] | None,
        current: Conversation | None,
        new: Conversation,
    ) -> int:
        """The row (`stored` is it as read), its bot names and its new history entries;
        returns the row's revision."""
        check_replacement(request_id, current, new)
        cursor = self._cursor
        revision = self._revisions.getrandbits(63)
        row = _row(new)
        if stored is None:
            cursor.execute(_INSERT, (*row, revision))
        else:
            changed = tuple([place for place in _PLACES if row[place] != stored[place]])
            sql = self._updates.get(changed)
            if sql is None:
                sql = self._updates[changed] = _update_sql(changed)
            cursor.execute(sql, (*[row[place] for place in changed], revision, request_id))
        self._rebot(stored, row)
        first_new = len(current.history) if current else 0
        added = new.history[first_new:]
        if len(added) == 1:
            cursor.execute(_INSERT_HISTORY, _history_row(request_id, first_new, added[0]))
        elif added:
            cursor.executemany(
                _INSERT_HISTORY,
                (
                    _history_row(request_id, seq, entry)
                    for seq, entry in enumerate(added, start=first_new)
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

    def _rebot(self, stored: Sequence[Any] | None, row: Sequence[Any]) -> None:
        """Keep `conversation_bots` in step with the row (inside the caller's transaction):
        delete the rows of the names it no longer has, insert those of its new ones."""
        if stored is not None and all(
            stored[place] == row[place]
            for place in (_FROM, _TO, _ORIGINAL_FROM, _CREATED_AT, _REQUEST_ID)
        ):
            return  # the same names, the same rows
        old = [] if stored is None else _bot_rows(stored)
        rows = _bot_rows(row)
        gone = [bot_row for bot_row in old if bot_row not in rows]
        if len(gone) == 1:
            self._cursor.execute(DELETE_BOT, gone[0])
        elif gone:
            self._cursor.executemany(DELETE_BOT, gone)
        added = [bot_row for bot_row in rows if bot_row not in old]
        if added:  # one statement, however many (a new conversation has two or three)
            self._cursor.execute(
                _INSERT_BOTS[len(added)], [value for bot_row in added for value in bot_row]
            )

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

    def _read(self, request_id: str) -> tuple[tuple[Any, ...] | None, Conversation | None]:
        """The stored row (its columns in `_row` order, without the revision) and the
        conversation; both None when there is none.

        A conversation held in `_recent` costs a read of its row (the revision says whether
        the copy is current; only if not is its history read too); any other is read with
        its history in one statement."""
        recent = self._recent.get(request_id)
        if recent is None:
            rows = self._cursor.execute(_SELECT_WITH_HISTORY, (request_id,)).fetchall()
            if not rows:
                return None, None
            columns, revision = rows[0][: _JOINED_HISTORY - 1], rows[0][_JOINED_HISTORY - 1]
            history = [
                _entry(row, _JOINED_HISTORY) for row in rows if row[_JOINED_HISTORY] is not None
            ]
        else:
            rows = self._cursor.execute(_SELECT, (request_id,)).fetchall()
            if not rows:
                del self._recent[request_id]
                return None, None
            columns, revision = rows[0][:-1], rows[0][-1]
            if recent[0] == revision:
                return columns, recent[1]
            history = [
                _entry(row)
                for row in self._cursor.execute(_SELECT_HISTORY, (request_id,)).fetchall()
            ]
        conversation = _conversation(columns, history)
        self._remember(request_id, revision, conversation)
        return columns, conversation

    def _remember(self, request_id: str, revision: int, conversation: Conversation) -> None:
        recent = self._recent
        recent[request_id] = (revision, conversation)
        recent.move_to_end(request_id)
        if len(recent) > RECENT_LIMIT:
            recent.popitem(last=False)


def _bot_rows(row: Sequence[Any]) -> list[tuple[str, int, str]]:
    """The `conversation_bots` rows of a conversation's row."""
    return bot_rows(row[_REQUEST_ID], row[_CREATED_AT], (row[_FROM], row[_TO], row[_ORIGINAL_FROM]))


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


def _entry(row: Sequence[Any], start: int = 0) -> HistoryEntry:
    """The entry of a history row (`_HISTORY_COLUMNS`) that starts at `start` of `row`."""
    _, _, type_, from_, to, status, at, content, fingerprint = row[start:] if start else row
    return HistoryEntry(
        type=type_,
        from_=from_,
        to=to,
        status=status,
        at=from_micros(at),
        content=content,
        fingerprint=fingerprint,
    )
