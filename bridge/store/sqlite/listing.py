"""The SQL behind `page` and `counts` in SQLite: which index a page reads, and how far.

Every page index ends in `(created_at, request_id)` (migration 9), so a page is one range of
an index read backwards from the cursor, `(created_at, request_id) < (?, ?)`, that stops after
`limit + 1` rows (the extra row says whether an older page exists). Which index:

- statuses given: one such range per status on `(status, …)`, or `(chat, status, …)` with a
  chat, merged by a UNION ALL of at most `limit + 1` rows each;
- else a chat: `(chat, …)`;
- else a bot: the `conversation_bots` rows of its folded name, joined to their conversations;
- else every conversation: `(created_at, request_id)`.

A bot given beside a status or a chat is checked per row read, by primary key in
`conversation_bots`; so is nothing else. The cost is the rows read until the page is full:
`limit + 1` when only the index's own filters are given, more when a bot filter beside them
rejects rows. `counts` is one GROUP BY over a covering index: of a chat's or a bot's rows
when one is given, of the whole status index otherwise.
"""

from __future__ import annotations

from collections.abc import Iterable

from bridge.store.paging import PageQuery, bot_key

_ORDER = "ORDER BY created_at DESC, request_id DESC LIMIT ?"
_OLDER = "(created_at, request_id) < (?, ?)"
_HAS_BOT = (
    "EXISTS (SELECT 1 FROM conversation_bots AS b WHERE b.bot = ?"
    " AND b.created_at = conversations.created_at AND b.request_id = conversations.request_id)"
)
_BOTS_JOINED = (
    "conversation_bots AS b CROSS JOIN conversations AS c ON c.request_id = b.request_id"
)  # CROSS JOIN: SQLite keeps this order, so the bot's rows drive the walk

INSERT_BOT = (
    "INSERT OR IGNORE INTO conversation_bots (bot, created_at, request_id) VALUES (?, ?, ?)"
)
DELETE_BOT = "DELETE FROM conversation_bots WHERE bot = ? AND created_at = ? AND request_id = ?"


def bot_rows(
    request_id: str, created_at: int, names: Iterable[str | None]
) -> list[tuple[str, int, str]]:
    """The `conversation_bots` rows of one conversation: one per distinct folded name."""
    folded = {bot_key(name) for name in names if name is not None}
    return [(bot, created_at, request_id) for bot in sorted(folded)]


def page_sql(columns: str, query: PageQuery) -> tuple[str, list[object]]:
    """The statement for a page (`limit + 1` rows of `columns`, newest first)."""
    rows = query.limit + 1
    chat = ["chat = ?"] if query.chat is not None else []
    chat_args: list[object] = [query.chat] if query.chat is not None else []
    if query.statuses is not None:
        parts = [
            _range(columns, [*chat, "status = ?"], [*chat_args, status], query)
            for status in sorted(query.statuses)
        ]
        if len(parts) == 1:
            return parts[0]
        union = " UNION ALL ".join(f"SELECT * FROM ({sql})" for sql, _ in parts)
        return f"{union} {_ORDER}", [*(arg for _, args in parts for arg in args), rows]
    if query.chat is not None or query.bot is None:
        return _range(columns, chat, chat_args, query)
    joined = ", ".join(f"c.{name.strip()}" for name in columns.split(","))
    where, args = ["b.bot = ?"], [query.bot]
    if query.after is not None:
        where.append("(b.created_at, b.request_id) < (?, ?)")
        args += list(query.after)
    return (
        f"SELECT {joined} FROM {_BOTS_JOINED} WHERE {' AND '.join(where)}"
        " ORDER BY b.created_at DESC, b.request_id DESC LIMIT ?",
        [*args, rows],
    )


def _range(
    columns: str, where: list[str], args: list[object], query: PageQuery
) -> tuple[str, list[object]]:
    """One range of an index ending in (created_at, request_id), newest first."""
    where, args = list(where), list(args)
    if query.after is not None:
        where.append(_OLDER)
        args += list(query.after)
    if query.bot is not None:
        where.append(_HAS_BOT)
        args.append(query.bot)
    condition = f"WHERE {' AND '.join(where)} " if where else ""
    return f"SELECT {columns} FROM conversations {condition}{_ORDER}", [*args, query.limit + 1]


def counts_sql(query: PageQuery) -> tuple[str, list[object]]:
    """The statement counting conversations per status under the chat and bot filters."""
    if query.bot is None:
        if query.chat is None:
            return "SELECT status, COUNT(*) FROM conversations GROUP BY status", []
        return "SELECT status, COUNT(*) FROM conversations WHERE chat = ? GROUP BY status", [
            query.chat
        ]
    chat = " AND c.chat = ?" if query.chat is not None else ""
    return (
        f"SELECT c.status, COUNT(*) FROM {_BOTS_JOINED} WHERE b.bot = ?{chat} GROUP BY c.status",
        [query.bot, *([query.chat] if query.chat is not None else [])],
    )
