"""The SQLite schema as numbered migrations, applied in order, each exactly once.

`PRAGMA user_version` records the last applied number. To add a concern (seen message ids,
the outbox, …) append a `Migration` with the next number; never edit one that has shipped,
because existing databases have already run it.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from dataclasses import dataclass

from bridge.store.sqlite.connection import write_transaction
from bridge.store.sqlite.listing import INSERT_BOT, bot_rows


@dataclass(frozen=True, slots=True)
class Migration:
    version: int
    description: str
    statements: tuple[str, ...]
    fill: Callable[[sqlite3.Connection], None] | None = None
    """Runs after the statements, in the same transaction: for rows SQL alone cannot derive
    (a value Python computes, such as a casefolded name)."""


def fill_conversation_bots(db: sqlite3.Connection) -> None:
    """Index the conversations stored before migration 9 by their bots' folded names."""
    rows = db.execute(
        "SELECT request_id, created_at, from_name, to_name, original_from FROM conversations"
    ).fetchall()
    db.executemany(
        INSERT_BOT,
        (row for request_id, created_at, *names in rows
         for row in bot_rows(request_id, created_at, names)),
    )  # fmt: skip


MIGRATIONS: tuple[Migration, ...] = (
    Migration(
        1,
        "tracked conversations, their history, and the deadline index",
        (
            # Times are integer microseconds since the epoch (UTC): exact, and ordered.
            # `revision` is a random token rewritten on every write, so a process can tell
            # whether the copy it holds is still current without re-reading the history.
            """
            CREATE TABLE conversations (
                request_id    TEXT PRIMARY KEY,
                type          TEXT NOT NULL,
                from_name     TEXT NOT NULL,
                to_name       TEXT NOT NULL,
                status        TEXT NOT NULL,
                task          TEXT,
                depth_current INTEGER,
                depth_max     INTEGER,
                original_from TEXT,
                chat          TEXT,
                created_at    INTEGER NOT NULL,
                updated_at    INTEGER NOT NULL,
                deadline      INTEGER,
                last_type     TEXT NOT NULL,
                revision      INTEGER NOT NULL
            )
            """,
            # Waiting conversations by deadline: what `due` range-scans.
            "CREATE INDEX conversations_deadline ON conversations (deadline)"
            " WHERE deadline IS NOT NULL",
            # Finished conversations by age: what `remove_finished` range-scans.
            "CREATE INDEX conversations_finished ON conversations (updated_at)"
            " WHERE deadline IS NULL",
            # A chat's open requests (the relay asks after every tracked message). No index
            # on status alone: every index costs each write a page, and only the CLI lists
            # by status across all chats.
            "CREATE INDEX conversations_chat ON conversations (chat, status)",
            """
            CREATE TABLE conversation_history (
                request_id  TEXT NOT NULL,
                seq         INTEGER NOT NULL,
                type        TEXT NOT NULL,
                from_name   TEXT NOT NULL,
                to_name     TEXT NOT NULL,
                status      TEXT NOT NULL,
                at          INTEGER NOT NULL,
                content     TEXT,
                fingerprint TEXT,
                PRIMARY KEY (request_id, seq)
            ) WITHOUT ROWID
            """,
        ),
    ),
    Migration(
        2,
        "the relay: seen keys, the durable outbox, the platform-message map",
        (
            "CREATE TABLE seen_keys (key TEXT PRIMARY KEY, seen_at INTEGER NOT NULL)"
            " WITHOUT ROWID",
            "CREATE INDEX seen_keys_age ON seen_keys (seen_at)",
            # AUTOINCREMENT: ids never reused, so queue order survives deletes and restarts.
            """
            CREATE TABLE outbox (
                id         INTEGER PRIMARY KEY AUTOINCREMENT,
                lane       TEXT NOT NULL,
                body       TEXT NOT NULL,
                created_at INTEGER
            )
            """,
            "CREATE TABLE message_map (key TEXT PRIMARY KEY, value TEXT NOT NULL,"
            " at INTEGER NOT NULL) WITHOUT ROWID",
            "CREATE INDEX message_map_age ON message_map (at)",
        ),
    ),
    Migration(
        3,
        "the inbound spool: human messages waiting for the BCN link",
        (
            """
            CREATE TABLE spool (
                id         INTEGER PRIMARY KEY AUTOINCREMENT,
                body       TEXT NOT NULL,
                created_at INTEGER
            )
            """,
        ),
    ),
    Migration(
        4,
        "the loop guard: per-lane state and the bot outputs held while a lane is paused",
        (
            "CREATE TABLE loop_guard (lane TEXT PRIMARY KEY, state TEXT NOT NULL) WITHOUT ROWID",
            """
            CREATE TABLE loop_held (
                id         INTEGER PRIMARY KEY AUTOINCREMENT,
                lane       TEXT NOT NULL,
                body       TEXT NOT NULL,
                created_at INTEGER
            )
            """,
            "CREATE INDEX loop_held_lane ON loop_held (lane, id)",
        ),
    ),
    Migration(
        5,
        "streamed text per run, one row per delta",
        (
            "CREATE TABLE run_deltas (run_id TEXT NOT NULL, seq INTEGER NOT NULL,"
            " text TEXT NOT NULL, at INTEGER NOT NULL, PRIMARY KEY (run_id, seq)) WITHOUT ROWID",
            "CREATE INDEX run_deltas_age ON run_deltas (at)",
        ),
    ),
    Migration(
        6,
        "leases: work one instance may do at a time, with fencing tokens",
        (
            "CREATE TABLE leases (name TEXT PRIMARY KEY, holder TEXT NOT NULL,"
            " token INTEGER NOT NULL, expires_at REAL NOT NULL) WITHOUT ROWID",
        ),
    ),
    Migration(
        7,
        "the outbox read lane by lane (each lane is sent by one instance at a time)",
        ("CREATE INDEX outbox_lane ON outbox (lane, id)",),
    ),
    Migration(
        8,
        "a row per posted part instead of rewriting the item's body for each",
        (
            "CREATE TABLE outbox_parts (item_id INTEGER NOT NULL, idx INTEGER NOT NULL,"
            " message_id TEXT NOT NULL, PRIMARY KEY (item_id, idx)) WITHOUT ROWID",
        ),
    ),
    Migration(
        9,
        "the dashboard: conversations newest first by status, chat or bot, and paused lanes",
        (
            # Each ends in (created_at, request_id), the page order, so a page is one range
            # read backwards from its cursor and stops at LIMIT, whatever else is stored.
            "CREATE INDEX conversations_created ON conversations (created_at, request_id)",
            "CREATE INDEX conversations_status_created"
            " ON conversations (status, created_at, request_id)",
            "CREATE INDEX conversations_chat_created"
            " ON conversations (chat, created_at, request_id)",
            # Replaces (chat, status): the relay's lookup of a chat's open requests reads the
            # same prefix, and a chat's page under a status filter reads it in order.
            "DROP INDEX conversations_chat",
            "CREATE INDEX conversations_chat_status_created"
            " ON conversations (chat, status, created_at, request_id)",
            # The `bot` filter: one row per distinct casefolded name among from/to/original
            # from (folded in Python, as the hub folds names; SQL's lower() is ASCII only).
            """
            CREATE TABLE conversation_bots (
                bot        TEXT NOT NULL,
                created_at INTEGER NOT NULL,
                request_id TEXT NOT NULL,
                PRIMARY KEY (bot, created_at, request_id)
            ) WITHOUT ROWID
            """,
            # The lanes paused right now (few) without reading every lane's state.
            "CREATE INDEX loop_guard_paused ON loop_guard (lane)"
            " WHERE json_extract(state, '$.paused')",
        ),
        fill_conversation_bots,
    ),
    Migration(
        10,
        "bindings an operator paused, with who paused them and when",
        (
            "CREATE TABLE pauses (key TEXT PRIMARY KEY, by_name TEXT NOT NULL,"
            " at INTEGER NOT NULL) WITHOUT ROWID",
        ),
    ),
    Migration(
        11,
        "claims on inbound events: which instance handles a key now, until when",
        (
            # Beside seen_keys, not in it: every write that marks a key seen stays as it is.
            "CREATE TABLE seen_claims (key TEXT PRIMARY KEY, holder TEXT NOT NULL,"
            " until INTEGER NOT NULL) WITHOUT ROWID",
        ),
    ),
)


class SchemaTooNew(RuntimeError):
    """The file was written by a newer bcn-bridge; running old code on it would corrupt it."""


def migrate(db: sqlite3.Connection, migrations: tuple[Migration, ...] = MIGRATIONS) -> int:
    """Bring the schema up to date; return the version it is at afterwards.

    Each step runs in its own IMMEDIATE transaction and re-reads the version inside it, so
    two processes opening the same fresh file never apply a step twice.
    """
    check_numbering(migrations)
    newest = migrations[-1].version if migrations else 0
    if (found := schema_version(db)) > newest:
        raise SchemaTooNew(
            f"database schema is version {found}, this bcn-bridge knows up to {newest}; "
            "upgrade bcn-bridge"
        )
    for migration in migrations:
        with write_transaction(db):
            if migration.version <= schema_version(db):
                continue
            for statement in migration.statements:
                db.execute(statement)
            if migration.fill is not None:
                migration.fill(db)
            # user_version lives in the file header and is written inside the transaction.
            db.execute(f"PRAGMA user_version = {migration.version}")
    return schema_version(db)


def schema_version(db: sqlite3.Connection) -> int:
    return int(db.execute("PRAGMA user_version").fetchone()[0])


def check_numbering(migrations: tuple[Migration, ...]) -> None:
    """Migrations must be numbered 1, 2, 3, … with no gap or repeat."""
    for expected, migration in enumerate(migrations, start=1):
        if migration.version != expected:
            raise ValueError(
                f"migration {migration.description!r} is numbered {migration.version}, "
                f"expected {expected}"
            )
