"""The hub's SQLite file (`hub.db` under `data_dir`): what must survive a restart.

Rare events are written at once, one transaction each: a bot registering or onboarding, a
group auto-join, a channel session opening or ending. Per-message state — un-acked
deliveries, transcripts, runs in flight, messages held for a reconnecting bot — goes
through `writes` (`BatchedWrites`), many statements per transaction, flushed before the hub
relies on them. The connection and migration helpers are the store layer's, so the hub's
schema evolves by numbered steps the same way.
"""

from __future__ import annotations

import secrets
import sqlite3
from pathlib import Path

from bridge.hub.batched_writes import BatchedWrites
from bridge.store.sqlite.checkpoint import start_checkpoints
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
    Migration(
        3,
        "what a hub restart must not lose: deliveries, transcripts, runs, held messages",
        (
            # Un-acked channel.deliver requests, in creation order per binding (AUTOINCREMENT:
            # ids are never reused, so the order survives deletes and restarts).
            """
            CREATE TABLE deliveries (
                id         INTEGER PRIMARY KEY AUTOINCREMENT,
                event_id   TEXT NOT NULL UNIQUE,
                binding_id TEXT NOT NULL,
                params     TEXT NOT NULL,
                created_at REAL NOT NULL
            )
            """,
            "CREATE INDEX deliveries_binding ON deliveries (binding_id, id)",
            # The last `transcript_limit` lines of each known session (channel.history).
            """
            CREATE TABLE transcripts (
                session_id TEXT NOT NULL,
                seq        INTEGER NOT NULL,
                entry      TEXT NOT NULL,
                PRIMARY KEY (session_id, seq)
            ) WITHOUT ROWID
            """,
            # Reset or completed sessions that stay reachable (history, late replies).
            """
            CREATE TABLE retired_sessions (
                session_id   TEXT PRIMARY KEY,
                binding_id   TEXT NOT NULL,
                scope_key    TEXT NOT NULL,
                group_id     TEXT NOT NULL,
                channel_type TEXT NOT NULL,
                status       TEXT NOT NULL,
                output       TEXT,
                error        TEXT,
                retired_at   REAL NOT NULL
            )
            """,
            # chat.sends not answered yet (run_id null) and runs in flight, by the
            # delivery's idempotency key; a finished run's row is deleted.
            """
            CREATE TABLE runs (
                send_key      TEXT PRIMARY KEY,
                bot_uuid      TEXT NOT NULL,
                run_id        TEXT,
                session_id    TEXT NOT NULL,
                binding_id    TEXT NOT NULL,
                session_key   TEXT NOT NULL,
                source_msg_id TEXT,
                thread_id     TEXT,
                task_id       TEXT,
                seq           INTEGER NOT NULL DEFAULT 0,
                bot_seq       INTEGER,
                started_at    REAL NOT NULL
            ) WITHOUT ROWID
            """,
            # Bots connected right now: after a crash, the ones the hub waits for.
            "CREATE TABLE bots_online (bot_uuid TEXT PRIMARY KEY, since REAL NOT NULL)"
            " WITHOUT ROWID",
            # Human messages waiting for a reconnecting bot, in order per binding.
            """
            CREATE TABLE held_messages (
                id         INTEGER PRIMARY KEY AUTOINCREMENT,
                hold_key   TEXT NOT NULL UNIQUE,
                binding_id TEXT NOT NULL,
                body       TEXT NOT NULL,
                created_at REAL NOT NULL
            )
            """,
        ),
    ),
    Migration(
        4,
        "accepted inbound msg_ids, so a message resent after a hub crash is not routed twice",
        (
            """
            CREATE TABLE accepted_msgs (
                binding_id TEXT NOT NULL,
                seq        INTEGER NOT NULL,
                msg_id     TEXT NOT NULL,
                session_id TEXT NOT NULL,
                PRIMARY KEY (binding_id, seq)
            ) WITHOUT ROWID
            """,
        ),
    ),
    Migration(
        5,
        "when a bot first connected, so registrations that never connect can be forgotten",
        (
            "ALTER TABLE bots ADD COLUMN connected_at REAL",
            # Bots from before this step may well have connected: they are kept.
            "UPDATE bots SET connected_at = created_at",
        ),
    ),
    Migration(
        6,
        "deliveries in one b-tree: written and deleted on every bot reply",
        (
            # Keyed by event_id (what the delete names) with the order as a plain column:
            # an insert or a delete touches one b-tree, where the rowid table with its
            # AUTOINCREMENT, its unique event_id and its binding index touched four
            # (sqlite_sequence too). The order is read once, at start (`DeliveryRows.load`).
            """
            CREATE TABLE deliveries_keyed (
                event_id   TEXT PRIMARY KEY,
                ord        INTEGER NOT NULL,
                binding_id TEXT NOT NULL,
                params     TEXT NOT NULL,
                created_at REAL NOT NULL
            ) WITHOUT ROWID
            """,
            "INSERT INTO deliveries_keyed (event_id, ord, binding_id, params, created_at)"
            " SELECT event_id, id, binding_id, params, created_at FROM deliveries",
            "DROP TABLE deliveries",
            "ALTER TABLE deliveries_keyed RENAME TO deliveries",
        ),
    ),
    Migration(
        7,
        "transcripts and accepted msg_ids as append-only logs (bridge/hub/append_log.py)",
        (
            # Ids the hub hands out in order: every insert lands on the last page, where
            # (session_id, seq) keys put each chat's row on a page of its own.
            "CREATE TABLE transcript_lines (id INTEGER PRIMARY KEY, session_id TEXT NOT NULL,"
            " entry TEXT NOT NULL)",
            "INSERT INTO transcript_lines (session_id, entry)"
            " SELECT session_id, entry FROM transcripts ORDER BY session_id, seq",
            "DROP TABLE transcripts",
            "CREATE TABLE accepted_log (id INTEGER PRIMARY KEY, binding_id TEXT NOT NULL,"
            " msg_id TEXT NOT NULL, session_id TEXT NOT NULL)",
            "INSERT INTO accepted_log (binding_id, msg_id, session_id)"
            " SELECT binding_id, msg_id, session_id FROM accepted_msgs ORDER BY binding_id, seq",
            "DROP TABLE accepted_msgs",
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
        self.writes = BatchedWrites(self.db)
        """Per-message writes, batched (see the module docstring)."""
        # As the relay store's: the WAL copied back by a thread of its own, not by the commit
        # that crosses `wal_autocheckpoint` (30 ms with the loop stopped, under 50
        # conversations at once: bench/relay.py).
        self._checkpointer = start_checkpoints(self.path)

    @classmethod
    def in_data_dir(cls, data_dir: Path) -> HubDatabase:
        return cls(Path(data_dir) / "hub.db")

    def write(self, sql: str, params: tuple[object, ...] = ()) -> None:
        with write_transaction(self.db) as db:
            db.execute(sql, params)

    def write_all(self, statements: list[tuple[str, tuple[object, ...]]]) -> None:
        """Several statements in one transaction: all of them happen, or none."""
        with write_transaction(self.db) as db:
            for sql, params in statements:
                db.execute(sql, params)

    def rows(self, sql: str, params: tuple[object, ...] = ()) -> list[sqlite3.Row]:
        cursor = self.db.execute(sql, params)
        return list(cursor.fetchall())

    def secret(self, key: str) -> str:
        """A random secret generated once and kept, so pseudonyms stay stable across restarts.

        It is kept in the `meta` table, in this file: created 0600 (`connect`), so it is as
        private as the tokens' hashes and the transcripts beside it. Set `identity_secret`
        in the config (e.g. from a secret file) to keep it out of the data directory.
        """
        found = self.rows("SELECT value FROM meta WHERE key = ?", (key,))
        if found:
            return str(found[0][0])
        value = secrets.token_hex(32)
        self.write("INSERT OR IGNORE INTO meta (key, value) VALUES (?, ?)", (key, value))
        return str(self.rows("SELECT value FROM meta WHERE key = ?", (key,))[0][0])

    def close(self) -> None:
        """Commit the batched writes still queued, then close the file."""
        try:
            self.writes.close()
        finally:
            if self._checkpointer is not None:
                self._checkpointer.stop()
            self.db.close()
