"""The hub's SQLite file (`hub.db` under `data_dir`): what must survive a restart.

Only rare events write here — a bot registering or onboarding, a group auto-join, a
channel session opening or ending — never a message. Deliveries, transcripts and runs live in memory
(docs/hub.md says what that means after a restart). The connection and migration helpers
are the store layer's, so the hub's schema evolves by numbered steps the same way.
"""

from __future__ import annotations

import secrets
import sqlite3
from pathlib import Path

from bridge.store.sqlite.connection import connect, write_transaction
from bridge.store.sqlite.migrations import Migration, migrate

HUB_MIGRATIONS: tuple[Migration, ...] = (
    Migration(
        1,
        "bots, auto-joined group members, active channel sessions, hub secrets",
        (
            """
            CREATE TABLE bots (
                bot_uuid    TEXT PRIMARY KEY,
                name        TEXT NOT NULL UNIQUE COLLATE NOCASE,
                token_hash  TEXT NOT NULL UNIQUE,
                provisioned INTEGER NOT NULL DEFAULT 0,
                created_at  REAL NOT NULL
            )
            """,
            """
            CREATE TABLE group_members (
                group_id TEXT NOT NULL,
                bot_uuid TEXT NOT NULL,
                PRIMARY KEY (group_id, bot_uuid)
            ) WITHOUT ROWID
            """,
            """
            CREATE TABLE channel_sessions (
                binding_id   TEXT NOT NULL,
                scope_key    TEXT NOT NULL,
                session_id   TEXT NOT NULL UNIQUE,
                group_id     TEXT NOT NULL,
                channel_type TEXT NOT NULL,
                created_at   REAL NOT NULL,
                PRIMARY KEY (binding_id, scope_key)
            ) WITHOUT ROWID
            """,
            "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID",
        ),
    ),
    Migration(
        2,
        "bot descriptors sent through POST /bots/onboard",
        (
            """
            CREATE TABLE bot_profiles (
                bot_uuid     TEXT PRIMARY KEY,
                descriptor   TEXT NOT NULL,
                onboarded_at REAL NOT NULL
            ) WITHOUT ROWID
            """,
        ),
    ),
)


class HubDatabase:
    """The open `hub.db`; the registry, groups and sessions each read and write their tables."""

    def __init__(self, path: Path | str) -> None:
        self.path = str(path)
        self.db = connect(self.path)
        try:
            migrate(self.db, HUB_MIGRATIONS)
        except BaseException:
            self.db.close()
            raise

    @classmethod
    def in_data_dir(cls, data_dir: Path) -> HubDatabase:
        return cls(Path(data_dir) / "hub.db")

    def write(self, sql: str, params: tuple[object, ...] = ()) -> None:
        with write_transaction(self.db) as db:
            db.execute(sql, params)

    def rows(self, sql: str, params: tuple[object, ...] = ()) -> list[sqlite3.Row]:
        cursor = self.db.execute(sql, params)
        return list(cursor.fetchall())

    def secret(self, key: str) -> str:
        """A random secret generated once and kept, so pseudonyms stay stable across restarts."""
        found = self.rows("SELECT value FROM meta WHERE key = ?", (key,))
        if found:
            return str(found[0][0])
        value = secrets.token_hex(32)
        self.write("INSERT OR IGNORE INTO meta (key, value) VALUES (?, ?)", (key, value))
        return str(self.rows("SELECT value FROM meta WHERE key = ?", (key,))[0][0])

    def close(self) -> None:
        self.db.close()
