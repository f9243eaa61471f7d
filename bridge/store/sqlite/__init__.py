"""The SQLite store: the default; one file in WAL mode that survives restarts."""

from __future__ import annotations

from bridge.store.base import Store
from bridge.store.pacing import MemoryPacingStore
from bridge.store.sqlite.checkpoint import start_checkpoints
from bridge.store.sqlite.connection import IN_MEMORY, connect
from bridge.store.sqlite.conversations import SqliteConversationStore
from bridge.store.sqlite.migrations import migrate
from bridge.store.sqlite.pauses import SqlitePauseStore
from bridge.store.sqlite.relay import (
    SqliteLeaseStore,
    SqliteLoopGuardStore,
    SqliteMessageMapStore,
    SqliteOutboxStore,
    SqliteSeenStore,
    SqliteSpoolStore,
    SqliteStreamStore,
)


class SqliteStore(Store):
    """Every concern in one SQLite database, schema brought up to date on open."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._db = connect(path)
        try:
            migrate(self._db)
        except BaseException:
            self._db.close()
            raise
        self.conversations = SqliteConversationStore(self._db)
        self.seen = SqliteSeenStore(self._db)
        self.outbox = SqliteOutboxStore(self._db)
        self.spool = SqliteSpoolStore(self._db)
        self.loop_guard = SqliteLoopGuardStore(self._db)
        self.streams = SqliteStreamStore(self._db)
        self.leases = SqliteLeaseStore(self._db)
        self.message_map = SqliteMessageMapStore(self._db)
        self.pauses = SqlitePauseStore(self._db)
        self.pacing = MemoryPacingStore()  # one instance: its windows live in its memory
        self._checkpointer = start_checkpoints(path)

    async def close(self) -> None:
        group = getattr(self._db, "group", None)
        if group is not None:
            group.commit_now()  # the steps of this turn are durable before the file closes
        if self._checkpointer is not None:
            self._checkpointer.stop()
        self._db.close()


__all__ = ["IN_MEMORY", "SqliteStore"]
